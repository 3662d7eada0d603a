/* SPDX-License-Identifier: MIT */
/*
 * blk_check: a minimal synchronous rdmasec-blk client on librdmasec's public
 * API and the protocol's codec, for tests/fabric/blk_target.sh. Unlike the
 * real client it can send what a hostile one would: malformed capsules,
 * duplicate command ids, commands before OPEN, grants that never come.
 *
 *   blk_check PKI IDENTITY SERVER SOURCE EXPORT MODE [OUTDIR]
 *
 * MODE: io OUTDIR (writes, reads back, FLUSH, errors, many in flight, two
 * queues; what it wrote in OUTDIR/writes.txt and OUTDIR/w*.bin), ro, open,
 * hostile, fill (write 1 MiB blocks until the store is full), budget (memory_limit reserved whole at
 * OPEN, given back at close), rekey (the data keys follow the queue pair's rekeys; a target that renews
 * them often). Prints "RESULT name=value" lines.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "blk_data.h"
#include "blk_wire.h"
#include "check_util.h"
#include "rdmasec.h"

#define QD 16
#define QUEUES 2
#define TIMEOUT_MS 15000
#define SLOT (2u << 20) /* per command: at most 1 MiB, then room for a READ past the pool's end */

struct client {
	struct rsec_conn *conn[QUEUES];
	struct rsec_region *region[QUEUES];
	uint8_t *mem[QUEUES];
	struct blk_data_keys *keys[QUEUES];
	uint64_t seq[QUEUES]; /* of the last capsule sent on the queue */
	uint64_t read_key_id; /* the key id of the last READ completed */
	uint16_t window;      /* version 4: the pool window its commands name (1); version 3: 0 */
	bool raw_window;      /* send_cmd leaves m->window as it is */
	unsigned nq;
	struct blk_open_reply r;
};

static struct rsec_ctx *ctx;
static const char *server, *export_name;
static uint8_t speak = BLK_VERSION; /* the version open_session's OPEN asks for */

static void send_raw(struct rsec_conn *c, const void *buf, size_t len)
{
	check_must(rsec_send(c, buf, len, TIMEOUT_MS), "send", c);
}

/* Grant queue q's whole pool to the target with these rights, under tag. */
static void pool_grant(struct client *cl, unsigned q, unsigned access, uint64_t tag)
{
	uint64_t gid;
	int rc;
	while ((rc = rsec_grant(cl->conn[q], cl->region[q], 0, (size_t)SLOT * QD, access, 0, tag, &gid)) == RSEC_E_AGAIN) {
		int prc = rsec_conn_process(cl->conn[q]);
		if (prc != RSEC_E_AGAIN)
			check_must(prc, "process", cl->conn[q]);
	}
	check_must(rc, "pool grant", cl->conn[q]);
}

static int open_session(struct client *cl, uint16_t flags, unsigned queues, uint16_t *status)
{
	memset(cl, 0, sizeof(*cl));
	check_must(rsec_connect(ctx, server, BLK_DEFAULT_PORT, NULL, TIMEOUT_MS, &cl->conn[0]), "connect", NULL);
	struct blk_open o = { .version = speak, .flags = flags, .queue_depth = QD, .queues = (uint16_t)queues };
	snprintf(o.name, sizeof(o.name), "%s", export_name);
	uint8_t buf[BLK_OPEN_MAX];
	size_t n = blk_open_encode(&o, buf, sizeof(buf));
	if (!n)
		check_die("cannot encode OPEN");
	send_raw(cl->conn[0], buf, n);
	uint8_t in[64];
	size_t len = 0;
	check_must(rsec_recv(cl->conn[0], in, sizeof(in), &len, TIMEOUT_MS), "OPEN reply", cl->conn[0]);
	const char *why = NULL;
	if (!blk_open_reply_decode(in, len, &cl->r, &why))
		check_die("bad OPEN reply: %s", why);
	*status = cl->r.status;
	if (cl->r.status != BLK_S_OK)
		return -1;
	cl->nq = cl->r.queues;
	for (unsigned i = 1; i < cl->nq; i++)
		check_must(rsec_conn_add_qp(cl->conn[0], TIMEOUT_MS, &cl->conn[i]), "add queue pair", cl->conn[0]);
	for (unsigned i = 0; i < cl->nq; i++) {
		check_must(rsec_region_alloc(cl->conn[i], (size_t)SLOT * QD, RSEC_ACCESS_READ | RSEC_ACCESS_WRITE,
					     &cl->region[i]),
			   "region", cl->conn[i]);
		cl->mem[i] = rsec_region_addr(cl->region[i]);
		/* The pool, as rdmasec-blk grants it (docs/blk.md, "Pool windows"): version 4, window 1, one
		 * grant per direction; version 3, one grant for both. */
		cl->window = speak >= 4 ? 1 : 0;
		if (cl->window) {
			pool_grant(cl, i, RSEC_ACCESS_READ, blk_window_tag(1, BLK_POOL_TARGET_READS));
			pool_grant(cl, i, RSEC_ACCESS_WRITE, blk_window_tag(1, BLK_POOL_TARGET_WRITES));
		} else {
			pool_grant(cl, i, RSEC_ACCESS_READ | RSEC_ACCESS_WRITE, BLK_POOL_TAG);
		}
		cl->keys[i] = blk_data_keys_new(cl->conn[i], (uint16_t)i);
		if (!cl->keys[i])
			check_die("out of memory");
	}
	return 0;
}

static void close_session(struct client *cl)
{
	for (unsigned i = cl->nq; i-- > 0;) {
		rsec_region_free(cl->region[i]);
		blk_data_keys_free(cl->keys[i]);
		if (i)
			rsec_conn_free(cl->conn[i]);
	}
	if (cl->conn[0]) {
		(void)rsec_conn_close(cl->conn[0], "done");
		rsec_conn_free(cl->conn[0]);
	}
	memset(cl, 0, sizeof(*cl));
}

/* Sends m with the queue's next sequence number (m->seq set to it), unless m has one already. */
static void send_cmd(struct client *cl, unsigned q, struct blk_cmd *m, const void *inline_data)
{
	static uint8_t buf[BLK_CMD_MAX + 4096];
	enum blk_pool_dir dir;
	if (!m->seq)
		m->seq = ++cl->seq[q];
	if (!cl->raw_window && blk_cmd_pool_dir(m, &dir))
		m->window = cl->window;
	size_t n = blk_cmd_encode_hdr(m, buf, sizeof(buf));
	if (!n)
		check_die("cannot encode a command");
	if (inline_data) {
		memcpy(buf + n, inline_data, m->length);
		n += m->length;
	}
	send_raw(cl->conn[q], buf, n);
}

static struct blk_cpl recv_cpl(struct client *cl, unsigned q)
{
	uint8_t in[64];
	size_t len = 0;
	check_must(rsec_recv(cl->conn[q], in, sizeof(in), &len, TIMEOUT_MS), "completion", cl->conn[q]);
	struct blk_cpl c;
	const char *why = NULL;
	if (!blk_cpl_decode(in, len, &c, &why))
		check_die("bad completion: %s", why);
	return c;
}

static struct blk_data_ctx data_ctx(unsigned q, const struct blk_cmd *m, enum blk_data_dir dir)
{
	return (struct blk_data_ctx){ .dir = dir, .queue = (uint16_t)q, .cid = m->cid, .opcode = m->opcode,
				      .offset = m->offset, .seq = m->seq, .length = m->length };
}

/* The queue's data key of key id id. */
static struct blk_data_key *key_of(struct client *cl, unsigned q, uint64_t id)
{
	struct blk_data_key *k = NULL;
	check_must(blk_data_keys_get(cl->keys[q], id, &k), "data key", cl->conn[q]);
	return k;
}

/* A pulled WRITE's data, sealed into its slot of the pool under the keys of now; the tag into m->mac. */
static void seal_slot(struct client *cl, unsigned q, struct blk_cmd *m, const void *data)
{
	m->seq = ++cl->seq[q];
	m->pool_off = (uint32_t)m->cid * SLOT;
	m->key_id = rsec_conn_key_id(cl->conn[q]);
	struct blk_data_ctx x = data_ctx(q, m, BLK_DATA_TO_TARGET);
	if (!blk_data_seal(key_of(cl, q, m->key_id), &x, data, cl->mem[q] + m->pool_off, m->mac))
		check_die("cannot seal");
}

static uint16_t do_write(struct client *cl, unsigned q, uint64_t off, const void *data, uint32_t len, bool fua)
{
	struct blk_cmd m = { .opcode = BLK_OP_WRITE, .cid = 1, .offset = off, .length = len,
			     .flags = (uint16_t)(fua ? BLK_CMD_FUA : 0) };
	if (len <= cl->r.max_inline) {
		m.flags |= BLK_CMD_INLINE;
		send_cmd(cl, q, &m, data);
	} else {
		seal_slot(cl, q, &m, data);
		send_cmd(cl, q, &m, NULL);
	}
	struct blk_cpl c = recv_cpl(cl, q);
	if (c.cid != m.cid)
		check_die("completion for cid %u, expected %u", c.cid, m.cid);
	if (c.status == BLK_S_OK && c.length != len)
		check_die("write completed %u bytes of %u", c.length, len);
	return c.status;
}

/* READ into out, through the slot at pool_off (0: its cid's, 2), opened with the completion's tag. */
static uint16_t do_read(struct client *cl, unsigned q, uint64_t off, uint32_t len, uint8_t *out, uint32_t pool_off)
{
	struct blk_cmd m = { .opcode = BLK_OP_READ, .cid = 2, .offset = off, .length = len,
			     .pool_off = pool_off ? pool_off : 2 * SLOT };
	send_cmd(cl, q, &m, NULL);
	struct blk_cpl c = recv_cpl(cl, q);
	if (c.status != BLK_S_OK)
		return c.status;
	if (c.length != len)
		check_die("read completed %u bytes of %u", c.length, len);
	struct blk_data_ctx x = data_ctx(q, &m, BLK_DATA_TO_CLIENT);
	cl->read_key_id = c.key_id;
	if (!blk_data_open(key_of(cl, q, c.key_id), &x, cl->mem[q] + m.pool_off, out, c.mac))
		check_die("a READ's data did not open");
	return c.status;
}

static uint16_t do_flush(struct client *cl, unsigned q)
{
	struct blk_cmd m = { .opcode = BLK_OP_FLUSH, .cid = 3 };
	send_cmd(cl, q, &m, NULL);
	return recv_cpl(cl, q).status;
}

static void random_bytes(uint8_t *p, size_t n)
{
	while (n) {
		ssize_t got = getrandom(p, n, 0);
		if (got <= 0)
			check_die("getrandom failed");
		p += got;
		n -= (size_t)got;
	}
}

/* Writes at several offsets, in capsule and pulled, on both queues; each read back and compared. */
static void io_writes(struct client *cl, const char *outdir)
{
	const uint64_t size = cl->r.size;
	struct { uint64_t off; uint32_t len; } w[] = {
		{ 0, 4096 }, { 7 * 4096, 16384 }, { 1u << 20, 262144 }, { 3u << 20, 100 * 1024 },
		{ size - 131072, 131072 }, { (5u << 20) + 4096, 1u << 20 },
	};
	char path[512];
	snprintf(path, sizeof(path), "%s/writes.txt", outdir);
	FILE *list = fopen(path, "w");
	if (!list)
		check_die("cannot write %s", path);
	unsigned same = 0, inline_n = 0, pulled_n = 0, n = sizeof(w) / sizeof(w[0]);
	uint8_t *data = malloc(1u << 20), *back = malloc(1u << 20);
	if (!data || !back)
		check_die("out of memory");
	for (unsigned i = 0; i < n; i++) {
		unsigned q = i % cl->nq;
		random_bytes(data, w[i].len);
		uint16_t st = do_write(cl, q, w[i].off, data, w[i].len, false);
		if (st != BLK_S_OK)
			check_die("write %u at %llu: %s", w[i].len, (unsigned long long)w[i].off, blk_status_name(st));
		*(w[i].len <= cl->r.max_inline ? &inline_n : &pulled_n) += 1;
		st = do_read(cl, (q + 1) % cl->nq, w[i].off, w[i].len, back, 0);
		if (st != BLK_S_OK)
			check_die("read %u at %llu: %s", w[i].len, (unsigned long long)w[i].off, blk_status_name(st));
		same += memcmp(data, back, w[i].len) == 0;
		snprintf(path, sizeof(path), "%s/w%u.bin", outdir, i);
		FILE *f = fopen(path, "wb");
		if (!f || fwrite(data, 1, w[i].len, f) != w[i].len || fclose(f) != 0)
			check_die("cannot write %s", path);
		fprintf(list, "%llu %u %s\n", (unsigned long long)w[i].off, w[i].len, path);
	}
	if (fclose(list) != 0)
		check_die("cannot write writes.txt");
	check_result("readback", "%u of %u same (%u in capsule, %u pulled)", same, n, inline_n, pulled_n);
	free(data);
	free(back);
}

/* Many READs in flight on one queue, each through its own slot of the pool; completions in any order. */
static void io_inflight(struct client *cl)
{
	enum { N = 16 };
	struct blk_cmd sent[N];
	static uint8_t back[65536];
	for (uint16_t cid = 0; cid < N; cid++) {
		sent[cid] = (struct blk_cmd){ .opcode = BLK_OP_READ, .cid = cid, .offset = (uint64_t)cid * 65536,
					      .length = 65536, .pool_off = (uint32_t)cid * SLOT };
		send_cmd(cl, 0, &sent[cid], NULL);
	}
	unsigned ok = 0, seen = 0;
	for (unsigned i = 0; i < N; i++) {
		struct blk_cpl c = recv_cpl(cl, 0);
		if (c.cid >= N || (seen & (1u << c.cid)))
			check_die("completion for an unknown or finished cid %u", c.cid);
		seen |= 1u << c.cid;
		struct blk_data_ctx x = data_ctx(0, &sent[c.cid], BLK_DATA_TO_CLIENT);
		if (c.status == BLK_S_OK && c.length == 65536 &&
		    blk_data_open(key_of(cl, 0, c.key_id), &x, cl->mem[0] + sent[c.cid].pool_off, back, c.mac))
			ok++;
	}
	check_result("inflight", "%u of %u", ok, (unsigned)N);
}

static void io_errors(struct client *cl)
{
	uint8_t *buf = calloc(1, BLK_INLINE_MAX + 8192);
	if (!buf)
		check_die("out of memory");
	check_result("past-end", "%s", blk_status_name(do_read(cl, 0, cl->r.size - 4096, 8192, buf, 0)));
	check_result("misaligned", "%s", blk_status_name(do_read(cl, 0, 100, 4096, buf, 0)));
	/* A transfer past the end of the pool grant. */
	check_result("past-pool", "%s", blk_status_name(do_read(cl, 0, 0, 8192, buf, QD * SLOT - 4096)));
	/* In capsule, over the target's max_inline, and within what the protocol allows. */
	if (cl->r.max_inline < BLK_INLINE_MAX) {
		struct blk_cmd m = { .opcode = BLK_OP_WRITE, .cid = 4, .offset = 0, .length = BLK_INLINE_MAX,
				     .flags = BLK_CMD_INLINE };
		send_cmd(cl, 0, &m, buf);
		check_result("inline-over-max", "%s", blk_status_name(recv_cpl(cl, 0).status));
	}
	/* A pulled WRITE whose data does not open under its tag: nothing reaches the store. */
	struct blk_cmd m = { .opcode = BLK_OP_WRITE, .cid = 5, .offset = 0, .length = 1u << 20 };
	seal_slot(cl, 1 % cl->nq, &m, cl->mem[1 % cl->nq] + m.cid * SLOT);
	m.mac[0] ^= 1;
	send_cmd(cl, 1 % cl->nq, &m, NULL);
	check_result("bad-mac", "%s", blk_status_name(recv_cpl(cl, 1 % cl->nq).status));
	free(buf);
}

/* Version 4's pool windows: a transfer names one, and goes only where the window's rights allow. */
static void io_windows(struct client *cl)
{
	uint8_t buf[4096];
	cl->raw_window = true;
	struct blk_cmd m = { .opcode = BLK_OP_READ, .cid = 6, .length = 4096, .pool_off = 6 * SLOT, .window = 0 };
	send_cmd(cl, 0, &m, NULL);
	check_result("window-none", "%s", blk_status_name(recv_cpl(cl, 0).status));
	/* Window 2, its write grant without the right to write: a READ through it is refused, not tried. */
	pool_grant(cl, 0, RSEC_ACCESS_READ, blk_window_tag(2, BLK_POOL_TARGET_WRITES));
	m = (struct blk_cmd){ .opcode = BLK_OP_READ, .cid = 6, .length = 4096, .pool_off = 6 * SLOT, .window = 2 };
	send_cmd(cl, 0, &m, NULL);
	check_result("window-rights", "%s", blk_status_name(recv_cpl(cl, 0).status));
	cl->raw_window = false;
	check_result("window-after", "%s", blk_status_name(do_read(cl, 0, 0, sizeof(buf), buf, 0)));
}

/* A client of version 3 (one pool grant for both directions, no windows) is still served. */
static void io_version3(void)
{
	struct client cl;
	uint16_t st;
	uint8_t data[65536], back[65536];
	speak = 3;
	if (open_session(&cl, BLK_OPEN_WRITE, 1, &st) < 0)
		check_die("OPEN of version 3: %s", blk_status_name(st));
	speak = BLK_VERSION;
	random_bytes(data, sizeof(data));
	uint16_t w = do_write(&cl, 0, 10u << 20, data, sizeof(data), false); /* pulled: over max_inline */
	uint16_t r = do_read(&cl, 0, 10u << 20, sizeof(back), back, 0);
	check_result("version3", "%s %s %s", blk_status_name(w), blk_status_name(r),
		     memcmp(data, back, sizeof(data)) == 0 ? "same" : "different");
	close_session(&cl);
}

static int mode_io(const char *outdir)
{
	struct client cl;
	uint16_t st;
	if (open_session(&cl, BLK_OPEN_WRITE, QUEUES, &st) < 0)
		check_die("OPEN: %s", blk_status_name(st));
	check_result("open", "ok queues=%u queue_depth=%u size=%llu block_size=%u flags=0x%x", cl.r.queues,
		     cl.r.queue_depth, (unsigned long long)cl.r.size, cl.r.block_size, cl.r.flags);
	io_writes(&cl, outdir);
	uint8_t *data = malloc(8192);
	if (!data)
		check_die("out of memory");
	random_bytes(data, 8192);
	check_result("fua", "%s", blk_status_name(do_write(&cl, 0, 12 * 4096, data, 8192, true)));
	check_result("flush", "%s", blk_status_name(do_flush(&cl, 1 % cl.nq)));
	free(data);
	io_inflight(&cl);
	io_errors(&cl);
	io_windows(&cl);
	close_session(&cl);
	io_version3();
	return 0;
}

/* An export on a store smaller than itself: writes until it is full get `no space`, and the session goes on. */
static int mode_fill(void)
{
	struct client cl;
	uint16_t st;
	if (open_session(&cl, BLK_OPEN_WRITE, 1, &st) < 0)
		check_die("OPEN: %s", blk_status_name(st));
	uint8_t *data = malloc(1u << 20);
	if (!data)
		check_die("out of memory");
	random_bytes(data, 1u << 20);
	unsigned ok = 0, full = 0, other = 0;
	for (uint64_t off = 0; off + (1u << 20) <= cl.r.size; off += 1u << 20) {
		st = do_write(&cl, 0, off, data, 1u << 20, false);
		ok += st == BLK_S_OK;
		full += st == BLK_S_NO_SPACE;
		other += st != BLK_S_OK && st != BLK_S_NO_SPACE;
	}
	check_result("fill", "%s ok=%u", full && !other ? "no space" : "not refused", ok);
	check_result("after-full", "%s", blk_status_name(do_read(&cl, 0, 0, 4096, data, 0)));
	free(data);
	close_session(&cl);
	return 0;
}

static int mode_ro(void)
{
	struct client cl;
	uint16_t st;
	if (open_session(&cl, BLK_OPEN_WRITE, 1, &st) == 0)
		check_die("OPEN with WRITE accepted");
	check_result("open-write", "%s", blk_status_name(st));
	close_session(&cl);
	if (open_session(&cl, 0, 1, &st) < 0)
		check_die("read-only OPEN: %s", blk_status_name(st));
	check_result("ro-flag", "%s", (cl.r.flags & BLK_EXPORT_READ_ONLY) ? "yes" : "no");
	uint8_t buf[4096] = { 1 };
	check_result("ro-write", "%s", blk_status_name(do_write(&cl, 0, 0, buf, sizeof(buf), false)));
	check_result("ro-read", "%s", blk_status_name(do_read(&cl, 0, 0, sizeof(buf), buf, 0)));
	close_session(&cl);
	return 0;
}

static int mode_open(void)
{
	struct client cl;
	uint16_t st;
	(void)open_session(&cl, BLK_OPEN_WRITE, 1, &st);
	check_result("open", "%s", blk_status_name(st));
	close_session(&cl);
	return 0;
}

/* After a hostile message the target must close the session: what the next receive says. */
static void expect_closed(const char *name, struct client *cl, unsigned q)
{
	uint8_t in[64];
	size_t len;
	int rc = rsec_recv(cl->conn[q], in, sizeof(in), &len, TIMEOUT_MS);
	if (rc >= 0)
		check_result(name, "open (got a %zu-byte message)", len);
	else
		check_result(name, "closed (%s)", rsec_conn_error(cl->conn[0]));
	close_session(cl);
}

static int mode_hostile(void)
{
	struct client a, b;
	uint16_t st;
	if (open_session(&a, BLK_OPEN_WRITE, QUEUES, &st) < 0)
		check_die("OPEN: %s", blk_status_name(st));
	uint8_t data[8192], back[8192];
	random_bytes(data, sizeof(data));

	/* A capsule that does not decode: an unknown opcode. */
	if (open_session(&b, BLK_OPEN_WRITE, QUEUES, &st) < 0)
		check_die("OPEN: %s", blk_status_name(st));
	struct blk_cmd m = { .opcode = BLK_OP_FLUSH, .cid = 0, .seq = 1 };
	uint8_t raw[BLK_CMD_HDR];
	if (blk_cmd_encode_hdr(&m, raw, sizeof(raw)) != BLK_CMD_HDR)
		check_die("cannot encode");
	raw[1] = 9;
	send_raw(b.conn[1 % b.nq], raw, sizeof(raw));
	expect_closed("malformed", &b, 1 % b.nq);

	/* A cid already in flight: a READ (its store I/O on a worker thread), and the same cid again at once. */
	if (open_session(&b, BLK_OPEN_WRITE, QUEUES, &st) < 0)
		check_die("OPEN: %s", blk_status_name(st));
	struct blk_cmd r = { .opcode = BLK_OP_READ, .cid = 7, .offset = 0, .length = 1u << 20, .pool_off = 0 };
	send_cmd(&b, 0, &r, NULL);
	r.seq = 0;
	send_cmd(&b, 0, &r, NULL);
	expect_closed("dup-cid", &b, 0);

	/* A sequence number used again (its transfer's nonce would repeat). */
	if (open_session(&b, BLK_OPEN_WRITE, 1, &st) < 0)
		check_die("OPEN: %s", blk_status_name(st));
	struct blk_cmd f = { .opcode = BLK_OP_FLUSH, .cid = 1, .seq = 5 };
	send_cmd(&b, 0, &f, NULL);
	(void)recv_cpl(&b, 0);
	f.cid = 2;
	send_cmd(&b, 0, &f, NULL);
	expect_closed("old-seq", &b, 0);

	/* A command before OPEN. */
	memset(&b, 0, sizeof(b));
	check_must(rsec_connect(ctx, server, BLK_DEFAULT_PORT, NULL, TIMEOUT_MS, &b.conn[0]), "connect", NULL);
	send_raw(b.conn[0], raw, sizeof(raw));
	expect_closed("before-open", &b, 0);

	/* A second OPEN. */
	if (open_session(&b, BLK_OPEN_WRITE, 1, &st) < 0)
		check_die("OPEN: %s", blk_status_name(st));
	struct blk_open o = { .flags = 0, .queue_depth = 1, .queues = 1 };
	snprintf(o.name, sizeof(o.name), "%s", export_name);
	uint8_t ob[BLK_OPEN_MAX];
	send_raw(b.conn[0], ob, blk_open_encode(&o, ob, sizeof(ob)));
	expect_closed("second-open", &b, 0);

	/* Meanwhile the first session goes on, on both its queues. */
	uint16_t w = do_write(&a, 1 % a.nq, 8u << 20, data, sizeof(data), false);
	uint16_t rd = do_read(&a, 0, 8u << 20, sizeof(back), back, 0);
	check_result("survivor", "%s %s %s", blk_status_name(w), blk_status_name(rd),
		     memcmp(data, back, sizeof(data)) == 0 ? "same" : "different");
	close_session(&a);
	return 0;
}

/* OPEN asking for queues, and nothing more: no queue pair added. The reply's status, 0xffff if none came. */
static uint16_t open_bare(struct rsec_conn **c, unsigned queues, struct blk_open_reply *r)
{
	*c = NULL;
	if (rsec_connect(ctx, server, BLK_DEFAULT_PORT, NULL, TIMEOUT_MS, c) < 0)
		return 0xffff;
	struct blk_open o = { .flags = BLK_OPEN_WRITE, .queue_depth = QD, .queues = (uint16_t)queues };
	snprintf(o.name, sizeof(o.name), "%s", export_name);
	uint8_t buf[BLK_OPEN_MAX], in[64];
	size_t n = blk_open_encode(&o, buf, sizeof(buf)), len = 0;
	const char *why = NULL;
	if (!n || rsec_send(*c, buf, n, TIMEOUT_MS) < 0 || rsec_recv(*c, in, sizeof(in), &len, TIMEOUT_MS) < 0 ||
	    !blk_open_reply_decode(in, len, r, &why))
		return 0xffff;
	return r->status;
}

static void close_bare(struct rsec_conn *c)
{
	if (c && rsec_conn_state(c) != RSEC_CONN_CLOSED)
		(void)rsec_conn_close(c, "done");
	rsec_conn_free(c);
}

/*
 * The target's memory_limit holds two queues (and a half): a session granted two holds both from its
 * OPEN on, before it adds its second queue pair, so a second one gets nothing; closed, it gives them back.
 */
static int mode_budget(void)
{
	struct rsec_conn *a, *b;
	struct blk_open_reply ra = { 0 }, rb = { 0 };
	uint16_t st = open_bare(&a, QUEUES, &ra);
	check_result("first", "%s queues=%u", st == 0xffff ? "no reply" : blk_status_name(st), ra.queues);
	st = open_bare(&b, QUEUES, &rb);
	check_result("second", "%s", st == 0xffff ? "no reply" : blk_status_name(st));
	close_bare(b);
	close_bare(a);
	/* The target frees them once it saw the close: a few tries. */
	for (unsigned i = 0; i < 40; i++) {
		st = open_bare(&a, QUEUES, &ra);
		if (st == BLK_S_OK && ra.queues == QUEUES)
			break;
		close_bare(a);
		a = NULL;
		struct timespec pause = { 0, 250 * 1000 * 1000 };
		nanosleep(&pause, NULL);
	}
	check_result("after-close", "%s queues=%u", st == 0xffff ? "no reply" : blk_status_name(st),
		     st == BLK_S_OK ? ra.queues : 0);
	close_bare(a);
	return 0;
}

/*
 * The data keys follow the queue pair's rekeys (a target that renews its
 * keys every few MiB): pulled writes and reads of 256 KiB, each read back the
 * same, until READ completions named 6 key ids. Then a WRITE sealed under
 * the first key id, whose secret the target has wiped since, is refused and
 * changes nothing: old data keys cannot be made again.
 */
static int mode_rekey(void)
{
	enum { LEN = 256 << 10, SPAN = 8, ROUNDS_MAX = 400, IDS = 6, STALE_CID = 6 };
	const uint64_t base = 8u << 20; /* clear of what mode io writes */
	struct client cl;
	uint16_t st;
	if (open_session(&cl, BLK_OPEN_WRITE, 1, &st) < 0)
		check_die("OPEN: %s", blk_status_name(st));
	uint8_t *data = malloc(LEN), *back = malloc(LEN), *at0 = malloc(LEN);
	struct blk_data_keys *first_keys = blk_data_keys_new(cl.conn[0], 0);
	if (!data || !back || !at0 || !first_keys)
		check_die("out of memory");
	uint64_t first = rsec_conn_key_id(cl.conn[0]);
	struct blk_data_key *first_key = NULL;
	check_must(blk_data_keys_get(first_keys, first, &first_key), "first data key", cl.conn[0]);
	uint64_t read_id = UINT64_MAX, write_id = UINT64_MAX;
	unsigned read_ids = 0, write_ids = 0, same = 0, rounds = 0;
	for (; rounds < ROUNDS_MAX && read_ids < IDS; rounds++) {
		uint64_t off = base + (uint64_t)(rounds % SPAN) * LEN;
		random_bytes(data, LEN);
		uint64_t id = rsec_conn_key_id(cl.conn[0]);
		write_ids += id != write_id;
		write_id = id;
		if ((st = do_write(&cl, 0, off, data, LEN, false)) != BLK_S_OK)
			check_die("write of round %u: %s", rounds, blk_status_name(st));
		if ((st = do_read(&cl, 0, off, LEN, back, 0)) != BLK_S_OK)
			check_die("read of round %u: %s", rounds, blk_status_name(st));
		read_ids += cl.read_key_id != read_id;
		read_id = cl.read_key_id;
		same += memcmp(data, back, LEN) == 0;
		if (off == base)
			memcpy(at0, data, LEN);
	}
	check_result("rekey", "%u of %u same", same, rounds);
	check_result("key-ids", "reads %u writes %u", read_ids, write_ids);
	check_result("rekeys", "%llu", (unsigned long long)rsec_conn_rekeys(cl.conn[0]));

	struct blk_cmd m = { .opcode = BLK_OP_WRITE, .cid = STALE_CID, .offset = base, .length = LEN,
			     .seq = ++cl.seq[0], .pool_off = STALE_CID * SLOT, .key_id = first };
	random_bytes(data, LEN);
	struct blk_data_ctx x = data_ctx(0, &m, BLK_DATA_TO_TARGET);
	if (!blk_data_seal(first_key, &x, data, cl.mem[0] + m.pool_off, m.mac))
		check_die("cannot seal");
	send_cmd(&cl, 0, &m, NULL);
	check_result("stale-key", "%s", blk_status_name(recv_cpl(&cl, 0).status));
	if ((st = do_read(&cl, 0, base, LEN, back, 0)) != BLK_S_OK)
		check_die("read after the stale write: %s", blk_status_name(st));
	check_result("stale-unchanged", "%s", memcmp(back, at0, LEN) == 0 ? "yes" : "no");
	blk_data_keys_free(first_keys);
	free(data);
	free(back);
	free(at0);
	close_session(&cl);
	return 0;
}

int main(int argc, char **argv)
{
	check_prog = "blk_check";
	if (argc < 7) {
		fprintf(stderr, "usage: blk_check PKI IDENTITY SERVER SOURCE EXPORT io OUTDIR|ro|open|hostile|fill|budget|rekey\n");
		return 2;
	}
	struct rsec_ctx_attr attr = { .local_addr = argv[4], .handshake_timeout_ms = TIMEOUT_MS,
				      .recv_slots = QD + 8 };
	ctx = check_ctx(argv[1], argv[2], &attr);
	server = argv[3];
	export_name = argv[5];
	const char *mode = argv[6];
	int rc = 2;
	if (!strcmp(mode, "io") && argc == 8)
		rc = mode_io(argv[7]);
	else if (!strcmp(mode, "fill"))
		rc = mode_fill();
	else if (!strcmp(mode, "ro"))
		rc = mode_ro();
	else if (!strcmp(mode, "open"))
		rc = mode_open();
	else if (!strcmp(mode, "hostile"))
		rc = mode_hostile();
	else if (!strcmp(mode, "budget"))
		rc = mode_budget();
	else if (!strcmp(mode, "rekey"))
		rc = mode_rekey();
	else
		fprintf(stderr, "blk_check: unknown mode '%s'\n", mode);
	rsec_ctx_free(ctx);
	return rc;
}
