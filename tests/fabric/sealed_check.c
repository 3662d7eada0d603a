/* SPDX-License-Identifier: MIT */
/*
 * sealed_check: sealed grants (RSEC_GRANT_SEALED) on the fabric, using only
 * include/rdmasec.h. tests/fabric/sealed.sh runs
 *   sealed_check serve PKI ADDR PORT N              on host 1: N connections, one after another
 *   sealed_check run PKI SERVER SOURCE PORT AEAD    on host 2, AEAD aes or chacha
 *
 * The server is the granter. Requests (text, over rdmasec messages):
 *   wgrant TAG N         a sealed WRITE grant for N plaintext bytes   -> "granted"
 *   wopen FLIP           (FLIP 1: change a byte of the grant first) rsec_grant_open
 *                        -> "ok LEN HASH" or "mac wiped" / "mac NOT wiped" / an error
 *   rgrant TAG SEED N    N pattern bytes, sealed in place, READ grant -> "granted"
 *   rflip                change a byte of the granted (sealed) range -> "flipped"
 *   pgrant TAG N         a plain WRITE grant over the first N bytes, beside the sealed one
 *                        (the window a forger writes through)    -> "granted"
 *   prevoke              revoke that plain grant                 -> "revoked"
 *   ropen                rsec_grant_open of the READ grant: plaintext back -> as wopen
 *   overlap              a plain grant over a live sealed READ grant's bytes, and a sealed
 *                        READ grant over a live plain grant's     -> "overlap RC RC"
 *   rekeys               the connection's rsec_conn_rekeys        -> "N"
 * Both sides renew their keys every REKEY_BYTES bytes of messages, so every
 * scenario runs across many rekeys (issue 26 item 6).
 * When a connection ends with a sealed READ grant out, the server prints
 *   RESULT restored-after-close=yes|no   (the region holds its plaintext again)
 * The client prints one "RESULT name=value" line per scenario:
 *   plain-on-sealed   rsec_write through a sealed grant is refused
 *   sealed-write      200000 bytes (4 chunks) sealed, written, opened by the granter, same hash
 *   tamper-write      the granter changes a byte after the write: RSEC_E_MAC, range wiped
 *   forged-write      8 bytes written through another window onto a sealed write: refused, wiped
 *   sealed-read       150000 bytes read through a sealed READ grant and opened; the granter
 *                     gets its plaintext back
 *   tamper-read       the granter changes a byte while granted: the reader gets RSEC_E_MAC
 *                     and a wiped buffer, the granter too
 *   alive             the connection still works after both
 *   overlap           both overlapping grants refused (RSEC_E_RANGE)
 *   posted-write      5000 bytes sealed in a region (rsec_region_seal), rsec_post, rsec_poll:
 *                     the granter opens them; posted-write-refusals: the unsealed bytes and a
 *                     second sealing for the used grant are refused
 *   posted-read       8 READs of one sealed READ grant in flight, each opened in place
 *                     (rsec_region_open); a READ of part of it is refused
 *   rekeys            "client N, server M": rekeys each side counted by then
 *   vanish            the client exits without closing while a sealed READ grant is out (last)
 */
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_util.h"
#include "rdmasec.h"

#define TIMEOUT_MS 60000
#define REGION (1u << 20)

/* FNV-1a: the server tells the client what it holds without sending it. */
static uint64_t hash(const uint8_t *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* ---- server ---- */

struct served {
	struct rsec_conn *c;
	struct rsec_region *r;
	uint64_t grant_id;
	size_t span;    /* the grant's length: the sealed form */
	uint64_t plain_id; /* pgrant's */
	bool read_out;  /* a sealed READ grant of read_len pattern bytes (read_seed) is out */
	uint32_t read_seed;
	size_t read_len;
};

/* Does the region hold the plaintext of the sealed READ grant that was out? */
static bool read_restored(const struct served *s)
{
	const uint8_t *mem = rsec_region_addr(s->r);
	for (size_t i = 0; i < s->read_len; i++)
		if (mem[i] != check_pattern_byte(s->read_seed, i))
			return false;
	return true;
}

/* A plain grant over a sealed READ grant's bytes, then a sealed READ grant over a plain grant's. */
static void overlaps(struct served *s, char *reply, size_t cap)
{
	uint64_t sealed_id, plain_id, unused;
	size_t span = rsec_sealed_len(1000);
	check_must(rsec_grant(s->c, s->r, 0, span, RSEC_ACCESS_READ | RSEC_GRANT_SEALED, 0, 90, &sealed_id), "grant",
		   s->c);
	int first = rsec_grant(s->c, s->r, 64, 64, RSEC_ACCESS_WRITE, 0, 91, &unused);
	check_must(rsec_revoke(s->c, sealed_id), "revoke", s->c);
	/* Elsewhere: the revoked grant's range stays ciphertext until its bind completes. */
	size_t at = 2 * span;
	check_must(rsec_grant(s->c, s->r, at, 64, RSEC_ACCESS_WRITE, 0, 92, &plain_id), "grant", s->c);
	int second = rsec_grant(s->c, s->r, at, span, RSEC_ACCESS_READ | RSEC_GRANT_SEALED, 0, 93, &unused);
	check_must(rsec_revoke(s->c, plain_id), "revoke", s->c);
	snprintf(reply, cap, "overlap %s %s", rsec_strerror(first), rsec_strerror(second));
}

static void open_reply(struct served *s, int rc, uint64_t off, uint64_t len, char *reply, size_t cap)
{
	uint8_t *mem = rsec_region_addr(s->r);
	if (rc == 0)
		snprintf(reply, cap, "ok %" PRIu64 " %016" PRIx64, len, hash(mem + off, len));
	else if (rc == RSEC_E_MAC)
		snprintf(reply, cap, "mac %s", all_zero(mem, s->span) ? "wiped" : "NOT wiped");
	else
		snprintf(reply, cap, "%s", rsec_strerror(rc));
}

static void answer(struct served *s, const char *req)
{
	char reply[96];
	unsigned long long tag, n;
	unsigned seed, flip;
	uint8_t *mem = rsec_region_addr(s->r);
	uint64_t off, len;
	if (sscanf(req, "wgrant %llu %llu", &tag, &n) == 2) {
		s->span = rsec_sealed_len(n);
		check_must(rsec_grant(s->c, s->r, 0, s->span, RSEC_ACCESS_WRITE | RSEC_GRANT_SEALED, 0, tag, &s->grant_id),
		     "sealed write grant", s->c);
		snprintf(reply, sizeof(reply), "granted");
	} else if (sscanf(req, "wopen %u", &flip) == 1) {
		if (flip)
			mem[5] ^= 0x20;
		int rc = rsec_grant_open(s->c, s->grant_id, &off, &len, TIMEOUT_MS);
		open_reply(s, rc, off, len, reply, sizeof(reply));
	} else if (sscanf(req, "rgrant %llu %u %llu", &tag, &seed, &n) == 3) {
		check_pattern_fill(mem, n, seed);
		s->span = rsec_sealed_len(n);
		check_must(rsec_grant(s->c, s->r, 0, s->span, RSEC_ACCESS_READ | RSEC_GRANT_SEALED, 0, tag, &s->grant_id),
		     "sealed read grant", s->c);
		s->read_out = true;
		s->read_seed = seed;
		s->read_len = n;
		snprintf(reply, sizeof(reply), "granted");
	} else if (strcmp(req, "overlap") == 0) {
		overlaps(s, reply, sizeof(reply));
	} else if (sscanf(req, "pgrant %llu %llu", &tag, &n) == 2) {
		check_must(rsec_grant(s->c, s->r, 0, n, RSEC_ACCESS_WRITE, 0, tag, &s->plain_id), "plain grant", s->c);
		snprintf(reply, sizeof(reply), "granted");
	} else if (strcmp(req, "prevoke") == 0) {
		check_must(rsec_revoke(s->c, s->plain_id), "revoke", s->c);
		snprintf(reply, sizeof(reply), "revoked");
	} else if (strcmp(req, "rflip") == 0) {
		mem[s->span / 2] ^= 0x01;
		snprintf(reply, sizeof(reply), "flipped");
	} else if (strcmp(req, "rekeys") == 0) {
		snprintf(reply, sizeof(reply), "%" PRIu64, rsec_conn_rekeys(s->c));
	} else if (strcmp(req, "ropen") == 0) {
		s->read_out = false;
		int rc = rsec_grant_open(s->c, s->grant_id, &off, &len, 0);
		open_reply(s, rc, off, len, reply, sizeof(reply));
	} else {
		snprintf(reply, sizeof(reply), "unknown request");
	}
	check_must(rsec_send(s->c, reply, strlen(reply), TIMEOUT_MS), "send reply", s->c);
}

/* Drive s; false once its connection is over. */
static bool serve_step(struct served *s)
{
	int rc = rsec_conn_process(s->c);
	if (rc == RSEC_E_AGAIN)
		return true;
	if (rc < 0)
		return false; /* the client is done, or failed: it says so itself */
	if (!s->r)
		check_must(rsec_region_alloc(s->c, REGION, RSEC_ACCESS_READ | RSEC_ACCESS_WRITE, &s->r), "region", s->c);
	char req[96];
	size_t len;
	while ((rc = rsec_recv(s->c, req, sizeof(req) - 1, &len, 0)) == 0) {
		req[len] = '\0';
		answer(s, req);
	}
	return rc == RSEC_E_AGAIN;
}

/* Keys renewed this often (bytes sent and received): a rekey every few requests. */
#define REKEY_BYTES 64u

static int serve(char **argv)
{
	struct rsec_ctx_attr attr = { .is_server = 1, .handshake_timeout_ms = TIMEOUT_MS,
				      .comp_mask = RSEC_CTX_ATTR_REKEY, .rekey_bytes = REKEY_BYTES };
	struct rsec_ctx *ctx = check_ctx(argv[2], "server", &attr);
	struct rsec_listener *l;
	int left = atoi(argv[5]);
	check_must(rsec_listen(ctx, argv[3], (uint16_t)atoi(argv[4]), 4, &l), "listen", NULL);
	struct served s = { 0 };
	while (left > 0) {
		struct pollfd p[2] = { { .fd = rsec_listener_fd(l), .events = POLLIN },
				       { .fd = s.c ? rsec_conn_fd(s.c) : -1, .events = POLLIN } };
		(void)poll(p, 2, 100);
		if (!s.c && rsec_accept(l, &s.c) < 0)
			s.c = NULL;
		if (s.c && !serve_step(&s)) {
			if (s.read_out) /* the library restored it when the connection ended */
				check_result("restored-after-close", "%s", read_restored(&s) ? "yes" : "no");
			rsec_region_free(s.r);
			rsec_conn_free(s.c);
			s = (struct served){ 0 };
			left--;
		}
	}
	rsec_listener_free(l);
	rsec_ctx_free(ctx);
	return 0;
}

/* ---- client ---- */

static void request(struct rsec_conn *c, const char *req, char *reply, size_t cap)
{
	size_t len;
	check_must(rsec_send(c, req, strlen(req), TIMEOUT_MS), "send request", c);
	check_must(rsec_recv(c, reply, cap - 1, &len, TIMEOUT_MS), "receive reply", c);
	reply[len] = '\0';
}

static struct rsec_remote_grant grant(struct rsec_conn *c, const char *req, uint64_t tag)
{
	char reply[96];
	request(c, req, reply, sizeof(reply));
	if (strcmp(reply, "granted") != 0)
		check_die("%s: %s", req, reply);
	struct rsec_remote_grant g;
	check_must(rsec_grant_wait(c, tag, &g, TIMEOUT_MS), "grant wait", c);
	return g;
}

static void expect_hash(const char *name, const char *reply, const uint8_t *p, size_t n, const char *ok)
{
	char want[96];
	snprintf(want, sizeof(want), "ok %zu %016" PRIx64, n, hash(p, n));
	if (strcmp(reply, want) == 0)
		check_result(name, "%s", ok);
	else
		check_result(name, "granter says '%s', expected '%s'", reply, want);
}

static void scenario_write(struct rsec_conn *c)
{
	size_t n = 200000;
	uint8_t *p = malloc(n);
	if (!p)
		check_die("out of memory");
	check_pattern_fill(p, n, 7);
	struct rsec_remote_grant g = grant(c, "wgrant 11 200000", 11);
	if ((g.access & (RSEC_GRANT_SEALED | RSEC_ACCESS_WRITE)) != (RSEC_GRANT_SEALED | RSEC_ACCESS_WRITE) ||
	    g.len != rsec_sealed_len(n))
		check_die("the grant is not a sealed WRITE grant of %zu bytes", rsec_sealed_len(n));
	check_result("plain-on-sealed", "%s", rsec_strerror(rsec_write(c, &g, 0, p, 16, TIMEOUT_MS)));
	check_must(rsec_write_sealed(c, &g, 0, p, n, TIMEOUT_MS), "sealed write", c);
	char reply[96];
	request(c, "wopen 0", reply, sizeof(reply));
	expect_hash("sealed-write", reply, p, n, "opened 200000");
	free(p);

	/* The granter changes a byte after the write: the grant must not open. */
	uint8_t text[64];
	check_pattern_fill(text, sizeof(text), 8);
	g = grant(c, "wgrant 12 64", 12);
	check_must(rsec_write_sealed(c, &g, 0, text, sizeof(text), TIMEOUT_MS), "sealed write", c);
	request(c, "wopen 1", reply, sizeof(reply));
	check_result("tamper-write", "%s", strcmp(reply, "mac wiped") == 0 ? "detected" : reply);

	/* A forger with a window over the same bytes overwrites part of a sealed write. */
	struct rsec_remote_grant sealed = grant(c, "wgrant 16 64", 16);
	struct rsec_remote_grant plain = grant(c, "pgrant 17 64", 17);
	check_must(rsec_write_sealed(c, &sealed, 0, text, sizeof(text), TIMEOUT_MS), "sealed write", c);
	check_must(rsec_write(c, &plain, 8, "FORGED!!", 8, TIMEOUT_MS), "forged write", c);
	request(c, "wopen 0", reply, sizeof(reply));
	check_result("forged-write", "%s", strcmp(reply, "mac wiped") == 0 ? "detected" : reply);
	request(c, "prevoke", reply, sizeof(reply));
}

static void scenario_read(struct rsec_conn *c)
{
	size_t n = 150000;
	struct rsec_remote_grant g = grant(c, "rgrant 13 9 150000", 13);
	if ((g.access & (RSEC_GRANT_SEALED | RSEC_ACCESS_READ)) != (RSEC_GRANT_SEALED | RSEC_ACCESS_READ) ||
	    g.len != rsec_sealed_len(n))
		check_die("the grant is not a sealed READ grant of %zu bytes", rsec_sealed_len(n));
	uint8_t *buf = malloc(g.len), *want = malloc(n);
	if (!buf || !want)
		check_die("out of memory");
	check_pattern_fill(want, n, 9);
	size_t got = 0;
	check_must(rsec_read_sealed(c, &g, buf, g.len, &got, TIMEOUT_MS), "sealed read", c);
	char reply[96];
	request(c, "ropen", reply, sizeof(reply));
	if (got != n || memcmp(buf, want, n) != 0)
		check_result("sealed-read", "read %zu bytes, not the pattern", got);
	else
		expect_hash("sealed-read", reply, want, n, "opened 150000, granter restored");

	/* The granter changes a byte while the grant is out: neither side gets the bytes. */
	g = grant(c, "rgrant 14 3 5000", 14);
	request(c, "rflip", reply, sizeof(reply));
	int rc = rsec_read_sealed(c, &g, buf, g.len, &got, TIMEOUT_MS);
	bool wiped = all_zero(buf, g.len);
	request(c, "ropen", reply, sizeof(reply));
	check_result("tamper-read", "%s%s; granter: %s", rsec_strerror(rc), wiped ? ", wiped" : ", NOT wiped", reply);
	free(buf);
	free(want);
}

/* The posted form: sealed in a registered region, rsec_post, rsec_poll, opened in place. */
static void scenario_posted(struct rsec_conn *c)
{
	const size_t n = 5000, copies = 8;
	struct rsec_remote_grant g = grant(c, "wgrant 21 5000", 21);
	size_t span = rsec_sealed_len(n);
	struct rsec_region *r;
	check_must(rsec_region_alloc(c, copies * rsec_sealed_len(20000), RSEC_ACCESS_LOCAL, &r), "region", c);
	uint8_t *mem = rsec_region_addr(r), want[5000];
	check_pattern_fill(want, n, 21);
	memcpy(mem, want, n);
	int unsealed = rsec_post_write(c, &g, 0, r, 0, (uint32_t)span, 1);
	check_must(rsec_region_seal(c, &g, 0, r, 0, n), "region seal", c);
	check_must(rsec_post_write(c, &g, 0, r, 0, (uint32_t)span, 2), "post sealed write", c);
	struct rsec_wc wc[8];
	int got = rsec_poll(c, wc, 8, TIMEOUT_MS);
	if (got != 1 || wc[0].user_id != 2 || wc[0].status != 0)
		check_die("posted sealed write: rsec_poll gave %d (%s)", got, got == 1 ? rsec_strerror(wc[0].status) : "");
	int again = rsec_region_seal(c, &g, 0, r, 0, n);
	char reply[96];
	request(c, "wopen 0", reply, sizeof(reply));
	expect_hash("posted-write", reply, want, n, "opened");
	check_result("posted-write-refusals", "%s %s", rsec_strerror(unsealed), rsec_strerror(again));

	/* copies READs of one sealed READ grant in flight at once, one signaled. */
	const size_t rn = 20000;
	g = grant(c, "rgrant 24 5 20000", 24);
	struct rsec_wr w[8];
	for (size_t k = 0; k < copies; k++)
		w[k] = (struct rsec_wr){ .user_id = 100 + k, .op = RSEC_OP_READ, .grant = &g, .local = r,
					 .local_off = k * g.len, .len = (uint32_t)g.len,
					 .flags = k + 1 < copies ? RSEC_WR_UNSIGNALED : 0 };
	struct rsec_wr part = w[0];
	part.len -= 16;
	int partial = rsec_post(c, &part, 1, NULL);
	unsigned posted = 0;
	check_must(rsec_post(c, w, copies, &posted), "post sealed reads", c);
	got = rsec_poll(c, wc, 8, TIMEOUT_MS);
	if (got != 1 || wc[0].user_id != 100 + copies - 1 || wc[0].status != 0)
		check_die("posted sealed reads: rsec_poll gave %d", got);
	uint8_t *pattern = malloc(rn);
	if (!pattern)
		check_die("out of memory");
	check_pattern_fill(pattern, rn, 5);
	size_t opened = 0;
	for (size_t k = 0; k < copies; k++) {
		size_t len = 0;
		if (rsec_region_open(c, &g, r, k * g.len, &len) == 0 && len == rn && memcmp(mem + k * g.len, pattern, rn) == 0)
			opened++;
	}
	request(c, "ropen", reply, sizeof(reply));
	check_result("posted-read", "%zu of %zu opened; partial read %s", opened, copies, rsec_strerror(partial));
	free(pattern);
	rsec_region_free(r);
}

static int run(char **argv)
{
	bool chacha = strcmp(argv[6], "chacha") == 0;
	struct rsec_ctx_attr attr = {
		.local_addr = argv[4], .handshake_timeout_ms = TIMEOUT_MS,
		.aead = chacha ? RSEC_AEAD_CHACHA20_POLY1305 : RSEC_AEAD_AES_256_GCM,
		.comp_mask = RSEC_CTX_ATTR_REKEY, .rekey_bytes = REKEY_BYTES,
	};
	struct rsec_ctx *ctx = check_ctx(argv[2], "client", &attr);
	struct rsec_conn *c;
	check_must(rsec_connect(ctx, argv[3], (uint16_t)atoi(argv[5]), NULL, TIMEOUT_MS, &c), "connect", NULL);
	scenario_write(c);
	scenario_read(c);
	/* Both failures were the data's, not the connection's. */
	uint8_t small[100];
	check_pattern_fill(small, sizeof(small), 1);
	struct rsec_remote_grant g = grant(c, "wgrant 15 100", 15);
	check_must(rsec_write_sealed(c, &g, 0, small, sizeof(small), TIMEOUT_MS), "sealed write", c);
	char reply[96];
	request(c, "wopen 0", reply, sizeof(reply));
	expect_hash("alive", reply, small, sizeof(small), "yes");
	request(c, "overlap", reply, sizeof(reply));
	check_result("overlap", "%s", reply);
	scenario_posted(c);
	request(c, "rekeys", reply, sizeof(reply));
	check_result("rekeys", "client %" PRIu64 ", server %s", rsec_conn_rekeys(c), reply);
	/* Gone without a word (no DISCONNECT, no close_notify) while a sealed READ grant is out. */
	request(c, "rgrant 19 4 3000", reply, sizeof(reply));
	check_result("vanish", "%s", reply);
	_exit(0);
}

int main(int argc, char **argv)
{
	return check_serve_or_run(argc, argv, "sealed_check", "aes|chacha", serve, run);
}
