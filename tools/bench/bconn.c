/* SPDX-License-Identifier: MIT */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bconn.h"
#include "cli.h"
#include "clock.h"

int bconn_init(struct bench_conn *b, struct rsec_conn *c, int timeout_ms, size_t max_payload)
{
	*b = (struct bench_conn){ .c = c, .timeout_ms = timeout_ms };
	b->cap = max_payload + BENCH_MSG_FIXED_MAX;
	b->buf = malloc(b->cap);
	return b->buf ? 0 : RSEC_E_NOMEM;
}

int bconn_reserve(struct bench_conn *b, size_t max_payload)
{
	size_t cap = max_payload + BENCH_MSG_FIXED_MAX;
	if (cap <= b->cap)
		return 0;
	uint8_t *p = realloc(b->buf, cap);
	if (!p)
		return RSEC_E_NOMEM;
	b->buf = p;
	b->cap = cap;
	return 0;
}

void bconn_free(struct bench_conn *b)
{
	free(b->buf);
	b->buf = NULL;
}

static int fail(struct bench_conn *b, const char *what, int rc)
{
	const char *why = rsec_conn_error(b->c);
	if (why && *why)
		fprintf(stderr, "%s: %s: %s (%s)\n", PROG, what, rsec_strerror(rc), why);
	else
		fprintf(stderr, "%s: %s: %s\n", PROG, what, rsec_strerror(rc));
	return rc;
}

int bconn_send(struct bench_conn *b, const void *p, size_t len, const char *what)
{
	int rc = rsec_send(b->c, p, len, b->timeout_ms);
	return rc < 0 ? fail(b, what, rc) : 0;
}

int bconn_send_msg(struct bench_conn *b, const struct bench_msg *m, const char *what)
{
	uint8_t out[BENCH_MSG_FIXED_MAX];
	size_t n = bench_encode(m, out, sizeof(out));
	if (n == 0) {
		fprintf(stderr, "%s: %s: cannot encode the message\n", PROG, what);
		return RSEC_E_INVAL;
	}
	return bconn_send(b, out, n, what);
}

int bconn_recv(struct bench_conn *b, const char *what)
{
	int rc = rsec_recv(b->c, b->buf, b->cap, &b->len, b->timeout_ms);
	return rc < 0 ? fail(b, what, rc) : 0;
}

/* Decode the message in b->buf: it must be one of type want (0: any), not the peer's ERROR. */
static int take_msg(struct bench_conn *b, uint8_t want, struct bench_msg *m, const char *what)
{
	const char *why;
	if (!bench_decode(b->buf, b->len, m, &why)) {
		fprintf(stderr, "%s: %s: malformed message from the peer (%s)\n", PROG, what, why);
		return RSEC_E_PROTO;
	}
	if (m->type == BENCH_MSG_ERROR) {
		fprintf(stderr, "%s: %s: the peer says: %s\n", PROG, what, m->text);
		return RSEC_E_PROTO;
	}
	if (want && m->type != want) {
		fprintf(stderr, "%s: %s: unexpected message '%c' from the peer\n", PROG, what, m->type);
		return RSEC_E_PROTO;
	}
	return 0;
}

int bconn_recv_msg(struct bench_conn *b, uint8_t want, struct bench_msg *m, const char *what)
{
	int rc = bconn_recv(b, what);
	return rc < 0 ? rc : take_msg(b, want, m, what);
}

#define DRIVE_MAX 64

int bconn_recv_msg_driving(struct bench_conn *b, struct rsec_conn *const *more, unsigned n, uint8_t want,
			   struct bench_msg *m, const char *what)
{
	if (n == 0)
		return bconn_recv_msg(b, want, m, what);
	if (n >= DRIVE_MAX)
		return fail(b, what, RSEC_E_INVAL);
	uint64_t deadline = clock_mono_ns() + (uint64_t)b->timeout_ms * 1000000u;
	for (;;) {
		int rc = rsec_recv(b->c, b->buf, b->cap, &b->len, 0);
		if (rc == 0)
			return take_msg(b, want, m, what);
		if (rc != RSEC_E_AGAIN)
			return fail(b, what, rc);
		struct pollfd p[DRIVE_MAX] = { { .fd = rsec_conn_fd(b->c), .events = POLLIN } };
		for (unsigned i = 0; i < n; i++) {
			rc = rsec_conn_process(more[i]);
			if (rc < 0 && rc != RSEC_E_AGAIN) {
				fprintf(stderr, "%s: %s: queue pair %u: %s (%s)\n", PROG, what, i + 2, rsec_strerror(rc),
					rsec_conn_error(more[i]));
				return rc;
			}
			p[i + 1] = (struct pollfd){ .fd = rsec_conn_fd(more[i]), .events = POLLIN };
		}
		if (clock_mono_ns() >= deadline)
			return fail(b, what, RSEC_E_TIMEOUT);
		(void)poll(p, n + 1, 100);
	}
}

void bconn_send_error(struct bench_conn *b, const char *text)
{
	struct bench_msg m = { .type = BENCH_MSG_ERROR };
	snprintf(m.text, sizeof(m.text), "%s", text);
	uint8_t out[BENCH_MSG_FIXED_MAX];
	size_t n = bench_encode(&m, out, sizeof(out));
	if (n)
		(void)rsec_send(b->c, out, n, b->timeout_ms);
}

int bench_ctx_new(const struct bench_opts *o, bool server, struct rsec_ctx **ctx)
{
	const char *role = server ? "server" : "client";
	char err[256] = "";
	struct cli_certs files;
	if (!cli_certs_paths(&files, o->certs, role)) {
		fprintf(stderr, "%s: --certs: '%s' is too long\n", PROG, o->certs);
		return RSEC_E_INVAL;
	}
	/* The client's one-sided tests keep tx_depth operations in flight: the
	 * library's max_inflight, which also sizes the QP's send queue. */
	struct rsec_ctx_attr attr = {
		.comp_mask = RSEC_CTX_ATTR_POLL | RSEC_CTX_ATTR_RESUME | RSEC_CTX_ATTR_QPS |
			     (o->tx_depth ? RSEC_CTX_ATTR_DEPTH : 0),
		.is_server = server, .device = o->device, .local_addr = o->source,
		.ca_file = files.ca, .cert_file = files.cert, .key_file = files.key, .aead = o->aead,
		.handshake_timeout_ms = o->timeout_ms,
		.max_inflight = (uint32_t)o->tx_depth,
		.poll_mode = o->poll == BENCH_POLL_BUSY ? RSEC_POLL_BUSY : RSEC_POLL_EVENT,
		.tls_resume_s = o->no_resume ? 0 : RSEC_DEFAULT_RESUME_S,
		.recv_slots = o->recv_slots, .slot_size = o->slot_size,
		/* A server takes as many queue pairs as a client's -q may ask for. */
		.max_qps = server ? RSEC_MAX_QPS : o->op == BENCH_OP_QP ? 2 : (uint32_t)o->qps,
	};
	int rc = rsec_ctx_new(&attr, ctx, err, sizeof(err));
	if (rc < 0)
		fprintf(stderr, "%s: %s (%s)\n", PROG, err[0] ? err : "cannot set up", rsec_strerror(rc));
	return rc;
}
