/* SPDX-License-Identifier: MIT */
/*
 * grant_check: the grant guarantees of rdmasec-server, exercised from the
 * client side on the fabric (tests/fabric/grants.sh runs it in the guest).
 *
 * One process holds several authenticated connections: the victim A (host 2,
 * identity "client") and a second client B (host 3, identity "client2") that
 * is handed A's grant descriptor. Each scenario prints one "RESULT name=value"
 * line; the shell script asserts them and the server's logs.
 *
 *   foreign-write / foreign-read  B uses A's grant from its own QP
 *   victim-write                  A's verified write still succeeds afterwards
 *   after-revoke                  A reuses the descriptor after the server revoked it
 *   after-expiry                  A uses a grant past its ttl
 *   tamper                        A changes a byte after its verified write
 *   verified-read                 A reads back through a verified READ grant
 *   foreign-invalidate            B sends SEND_WITH_INV naming A's grant key, under the
 *                                 library (it links the internals to reach B's QP)
 *   (no RESULT)                   A leaves holding a live grant; grants.sh finds the
 *                                 server's audited revoke "connection closed"
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app_proto.h"
#include "check_util.h"
#include "conn.h"
#include "rdmasec.h"

#define TIMEOUT_MS 60000
#define LEN 4096

/* Drive c until its data path has been rebuilt once: 0, or why not (its close code, RSEC_E_TIMEOUT). */
static int rebuilt_within(struct rsec_conn *c, int timeout_ms)
{
	for (int waited = 0; waited < timeout_ms; waited += 100) {
		struct rsec_conn_stats st;
		int rc = rsec_conn_process(c);
		if (rc < 0 && rc != RSEC_E_AGAIN)
			return rc;
		if (rsec_conn_stats(c, &st) == 0 && st.rebuilds > 0)
			return 0;
		(void)!rsec_conn_wait(c, 100);
	}
	return RSEC_E_TIMEOUT;
}

static const char *server_ip;
static uint16_t port = 7471;

static struct rsec_ctx *ctx_for(const char *dir, const char *name, const char *source)
{
	return check_client_ctx(dir, name, source, TIMEOUT_MS, 0, 0);
}

static struct rsec_conn *connect_to(struct rsec_ctx *ctx)
{
	struct rsec_conn *c;
	int rc = rsec_connect(ctx, server_ip, port, NULL, TIMEOUT_MS, &c);
	if (rc < 0)
		check_die("connect: %s", rsec_strerror(rc));
	return c;
}

static void send_app(struct rsec_conn *c, const struct app_msg *m)
{
	uint8_t buf[128];
	size_t n = app_encode(m, buf, sizeof(buf));
	int rc = n ? rsec_send(c, buf, n, TIMEOUT_MS) : RSEC_E_INVAL;
	if (rc < 0)
		check_die("send %s: %s", app_op_name(m->op), rsec_strerror(rc));
}

/* The next reply; an APP_ERROR is returned, not fatal. */
static void recv_app(struct rsec_conn *c, struct app_msg *m)
{
	static uint8_t buf[1 << 16];
	size_t len;
	const char *why;
	int rc = rsec_recv(c, buf, sizeof(buf), &len, TIMEOUT_MS);
	if (rc < 0)
		check_die("recv: %s (%s)", rsec_strerror(rc), rsec_conn_error(c));
	if (!app_decode(buf, len, m, &why))
		check_die("malformed reply: %s", why);
}

/* Ask for a WRITE grant of LEN bytes and wait for its descriptor. */
static struct rsec_remote_grant write_grant(struct rsec_conn *c, uint64_t *tag)
{
	struct app_msg m = { .op = APP_WRITE_REQ, .len = LEN };
	send_app(c, &m);
	recv_app(c, &m);
	if (m.op != APP_WRITE_GRANTED)
		check_die("no write grant: %s", m.op == APP_ERROR ? m.text : app_op_name(m.op));
	struct rsec_remote_grant g;
	int rc = rsec_grant_wait(c, m.tag, &g, TIMEOUT_MS);
	if (rc < 0)
		check_die("grant_wait: %s", rsec_strerror(rc));
	*tag = m.tag;
	return g;
}

/* WRITE_DONE; returns the server's reply (WRITE_RESULT or ERROR). */
static struct app_msg write_done(struct rsec_conn *c, uint64_t tag)
{
	struct app_msg m = { .op = APP_WRITE_DONE, .tag = tag };
	send_app(c, &m);
	recv_app(c, &m);
	return m;
}

static bool echo_works(struct rsec_conn *c)
{
	uint8_t req[] = { APP_ECHO, 'o', 'k' };
	uint8_t buf[64];
	size_t len;
	return rsec_send(c, req, sizeof(req), TIMEOUT_MS) == 0 &&
	       rsec_recv(c, buf, sizeof(buf), &len, TIMEOUT_MS) == 0 && len == 3 && buf[0] == APP_ECHO_REPLY;
}

static const char *outcome(int rc)
{
	return rc == 0 ? "succeeded" : rsec_strerror(rc);
}

int main(int argc, char **argv)
{
	check_prog = "grant_check";
	if (argc != 6)
		check_die("usage: grant_check PKI_DIR SERVER_IP SOURCE_A SOURCE_B TTL_MS");
	const char *pki = argv[1];
	server_ip = argv[2];
	int ttl_ms = atoi(argv[5]);
	struct rsec_ctx *ca = ctx_for(pki, "client", argv[3]);
	struct rsec_ctx *cb = ctx_for(pki, "client2", argv[4]);
	uint8_t data[LEN], evil[LEN], back[LEN];
	for (size_t i = 0; i < LEN; i++) {
		data[i] = (uint8_t)('a' + i % 26);
		evil[i] = 'E';
	}

	/* A gets a WRITE grant; B, handed its descriptor, tries it from B's own QP. */
	struct rsec_conn *a = connect_to(ca);
	uint64_t tag;
	struct rsec_remote_grant ga = write_grant(a, &tag);
	struct rsec_conn *b = connect_to(cb);
	int rc = rsec_write(b, &ga, 0, evil, LEN, TIMEOUT_MS);
	check_result("foreign-write", "%s", outcome(rc));
	rsec_conn_free(b);
	b = connect_to(cb);
	struct rsec_remote_grant as_read = ga;
	as_read.access |= RSEC_ACCESS_READ; /* B's library would refuse a READ on a WRITE grant */
	rc = rsec_read(b, &as_read, 0, back, LEN, TIMEOUT_MS);
	check_result("foreign-read", "%s", outcome(rc));
	rsec_conn_free(b);

	/* The victim's grant and connection are untouched. */
	rc = rsec_write_verified(a, &ga, 0, data, LEN, TIMEOUT_MS);
	struct app_msg m = rc == 0 ? write_done(a, tag) : (struct app_msg){ .op = APP_ERROR };
	check_result("victim-write", "%s", rc == 0 && m.op == APP_WRITE_RESULT ? "succeeded" : outcome(rc));
	check_result("victim-echo", "%s", echo_works(a) ? "succeeded" : "failed");

	/* The server revoked the grant before verifying: the descriptor is dead. */
	rc = rsec_write(a, &ga, 0, evil, LEN, TIMEOUT_MS);
	check_result("after-revoke", "%s", outcome(rc));
	rsec_conn_free(a);

	/* A grant past its ttl. */
	a = connect_to(ca);
	ga = write_grant(a, &tag);
	usleep((useconds_t)(ttl_ms + 1500) * 1000u);
	rc = rsec_write(a, &ga, 0, data, LEN, TIMEOUT_MS);
	check_result("after-expiry", "%s", outcome(rc));
	rsec_conn_free(a);

	/* A verified write, then one more byte changed by a plain write: the MAC must catch it. */
	a = connect_to(ca);
	ga = write_grant(a, &tag);
	rc = rsec_write_verified(a, &ga, 0, data, LEN, TIMEOUT_MS);
	if (rc == 0)
		rc = rsec_write(a, &ga, 7, "X", 1, TIMEOUT_MS);
	if (rc < 0)
		check_die("tamper: writes failed: %s", rsec_strerror(rc));
	m = write_done(a, tag);
	check_result("tamper", "%s", m.op == APP_ERROR && strstr(m.text, "data MAC") ? "detected"
			       : m.op == APP_WRITE_RESULT                       ? "undetected"
										: "other");
	check_result("tamper-echo", "%s", echo_works(a) ? "succeeded" : "failed");

	/* A clean verified write, then a verified read of it. */
	ga = write_grant(a, &tag);
	rc = rsec_write_verified(a, &ga, 0, data, LEN, TIMEOUT_MS);
	m = rc == 0 ? write_done(a, tag) : (struct app_msg){ .op = APP_ERROR };
	if (m.op != APP_WRITE_RESULT)
		check_die("clean write failed: %s", rc ? rsec_strerror(rc) : m.text);
	m = (struct app_msg){ .op = APP_READ_REQ };
	send_app(a, &m);
	recv_app(a, &m);
	if (m.op != APP_READ_GRANTED)
		check_die("no read grant: %s", m.op == APP_ERROR ? m.text : app_op_name(m.op));
	struct rsec_remote_grant gr;
	rc = rsec_grant_wait(a, m.tag, &gr, TIMEOUT_MS);
	if (rc == 0)
		rc = rsec_read_verified(a, &gr, back, sizeof(back), TIMEOUT_MS);
	check_result("verified-read", "%s", rc == 0 && memcmp(back, data, LEN) == 0 ? "succeeded" : outcome(rc));
	rsec_conn_free(a);

	/*
	 * B names A's live grant in a SEND_WITH_INV. rxe lets any QP invalidate
	 * any window (docs/verbs.md); the server must notice: it rebuilds B's
	 * data path (a forged packet could do the same), B's grants go with it.
	 */
	a = connect_to(ca);
	ga = write_grant(a, &tag);
	b = connect_to(cb);
	struct ibv_send_wr wr = { .opcode = IBV_WR_SEND_WITH_INV, .invalidate_rkey = ga.rkey }, *bad;
	if (ibv_post_send(b->path.qp.qp, &wr, &bad) != 0)
		check_die("cannot post SEND_WITH_INV");
	rc = rebuilt_within(b, TIMEOUT_MS);
	check_result("invalidator", "%s", rc == 0 ? "rebuilt by the server" : outcome(rc));
	rsec_conn_free(b);
	rc = rsec_write(a, &ga, 0, data, LEN, TIMEOUT_MS);
	check_result("invalidated-victim-write", "%s", outcome(rc));
	rsec_conn_free(a);

	/* A leaves with a live grant: the server revokes it as the connection closes (audited). */
	a = connect_to(ca);
	ga = write_grant(a, &tag);
	rsec_conn_free(a);

	rsec_ctx_free(ca);
	rsec_ctx_free(cb);
	return 0;
}
