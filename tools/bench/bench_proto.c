/* SPDX-License-Identifier: MIT */
/*
 * rdmasec-bench's protocol codec (bench_proto.h). As in lib/wire.c, each
 * message has a check (every limit, shared by both directions), a reader
 * and a writer that follow the same schema one guarded field at a time.
 */
#include <string.h>

#include "bench_proto.h"
#include "cursor.h"

/* ---- limits ---- */

static bool printable(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
			return false;
	return true;
}

const char *bench_params_check(const struct bench_params *p)
{
	if (p->version != BENCH_PROTO_VERSION)
		return "unknown protocol version";
	if (p->op < BENCH_OP_SEND || p->op > BENCH_OP_QP)
		return "unknown operation";
	if (p->lat > 1 || p->poll > BENCH_POLL_BUSY)
		return "bad test or poll mode";
	if (p->sealed > 1 || (p->sealed && p->op != BENCH_OP_READ && p->op != BENCH_OP_WRITE))
		return "sealed is for write and read";
	if (p->sealed && p->op == BENCH_OP_WRITE && p->duration_ms)
		return "a sealed write test needs iterations (a grant each)";
	if (p->lanes > BENCH_LANES_MAX)
		return "too many queue pairs";
	if (p->lanes && (p->lat || p->sealed || (p->op != BENCH_OP_READ && p->op != BENCH_OP_WRITE)))
		return "further queue pairs are for write and read bandwidth";
	if ((p->iters == 0) == (p->duration_ms == 0))
		return "need exactly one of iterations and duration";
	if (p->iters > BENCH_ITERS_MAX || p->duration_ms > BENCH_DURATION_MS_MAX)
		return "iterations or duration out of range";
	if (p->op == BENCH_OP_CONNECT) {
		if (p->size != 0 || p->iters == 0 || p->round < 1 || p->round > p->iters)
			return "bad connect round";
		return NULL;
	}
	if (p->op == BENCH_OP_QP)
		return p->size == 0 && p->iters >= 1 && p->iters <= BENCH_QP_ITERS_MAX && p->round == 0 && p->lat
			       ? NULL
			       : "bad queue pair set-up test";
	if (p->size < 1 || p->size > BENCH_SIZE_MAX)
		return "size out of range";
	return p->round == 0 ? NULL : "round is for connect only";
}

static const char *check_result(const struct bench_result *r)
{
	if (r->iters > BENCH_COUNT_MAX || r->cpu.user_us > BENCH_COUNT_MAX || r->cpu.sys_us > BENCH_COUNT_MAX)
		return "result out of range";
	return NULL;
}

static const char *check_msg(const struct bench_msg *m)
{
	switch (m->type) {
	case BENCH_MSG_PARAMS: return bench_params_check(&m->params);
	case BENCH_MSG_READY: return NULL;
	case BENCH_MSG_DATA: return NULL;
	case BENCH_MSG_END: return m->iters > BENCH_COUNT_MAX ? "iterations out of range" : NULL;
	case BENCH_MSG_RESULT: return check_result(&m->result);
	case BENCH_MSG_ERROR: {
		size_t n = strnlen(m->text, sizeof(m->text));
		return n <= BENCH_TEXT_MAX && printable(m->text, n) ? NULL : "text not printable";
	}
	default: return "unknown message type";
	}
}

/* ---- decoding ---- */

static bool known_type(uint8_t t)
{
	switch (t) {
	case BENCH_MSG_PARAMS:
	case BENCH_MSG_READY:
	case BENCH_MSG_DATA:
	case BENCH_MSG_END:
	case BENCH_MSG_RESULT:
	case BENCH_MSG_ERROR:
		return true;
	default:
		return false;
	}
}

static bool read_params(struct cur_in *c, struct bench_params *p)
{
	return cur_get_u8(c, &p->version) && cur_get_u8(c, &p->op) && cur_get_u8(c, &p->lat) &&
	       cur_get_u8(c, &p->poll) && cur_get_u8(c, &p->sealed) && cur_get_u8(c, &p->lanes) &&
	       cur_get_u64(c, &p->size) && cur_get_u64(c, &p->iters) && cur_get_u32(c, &p->duration_ms) &&
	       cur_get_u64(c, &p->round);
}

static bool read_result(struct cur_in *c, struct bench_result *r)
{
	return cur_get_u64(c, &r->iters) && cur_get_u64(c, &r->elapsed_ns) && cur_get_u64(c, &r->cpu.user_us) &&
	       cur_get_u64(c, &r->cpu.sys_us);
}

/* The rest of the message as text. */
static bool read_text(struct cur_in *c, char out[static BENCH_TEXT_MAX + 1])
{
	if (c->left > BENCH_TEXT_MAX)
		return false;
	size_t n = c->left;
	if (!cur_get_bytes(c, out, n))
		return false;
	out[n] = '\0';
	return !memchr(out, '\0', n); /* a NUL would hide the rest from check_msg */
}

static bool read_body(struct cur_in *c, struct bench_msg *m)
{
	switch (m->type) {
	case BENCH_MSG_PARAMS: return read_params(c, &m->params);
	case BENCH_MSG_READY: return cur_get_u64(c, &m->tag);
	case BENCH_MSG_END: return cur_get_u64(c, &m->iters);
	case BENCH_MSG_RESULT: return read_result(c, &m->result);
	case BENCH_MSG_ERROR: return read_text(c, m->text);
	default: return false;
	}
}

bool bench_decode(const uint8_t *in, size_t len, struct bench_msg *m, const char **why)
{
	struct cur_in c = { .p = in, .left = len };
	memset(m, 0, sizeof(*m));
	*why = "empty message";
	if (!cur_get_u8(&c, &m->type))
		return false;
	if (m->type == BENCH_MSG_DATA) {
		m->payload = c.p;
		m->payload_len = c.left;
		return true;
	}
	*why = "unknown message type";
	if (!known_type(m->type))
		goto bad;
	*why = "truncated";
	if (!read_body(&c, m))
		goto bad;
	*why = "trailing bytes";
	if (c.left)
		goto bad;
	*why = check_msg(m);
	if (*why)
		goto bad;
	return true;
bad:
	memset(m, 0, sizeof(*m)); /* no half-parsed message for a careless caller */
	return false;
}

/* ---- encoding ---- */

static bool write_params(struct cur_out *c, const struct bench_params *p)
{
	return cur_put_be(c, 1, p->version) && cur_put_be(c, 1, p->op) && cur_put_be(c, 1, p->lat) &&
	       cur_put_be(c, 1, p->poll) && cur_put_be(c, 1, p->sealed) && cur_put_be(c, 1, p->lanes) &&
	       cur_put_be(c, 8, p->size) && cur_put_be(c, 8, p->iters) && cur_put_be(c, 4, p->duration_ms) &&
	       cur_put_be(c, 8, p->round);
}

static bool write_result(struct cur_out *c, const struct bench_result *r)
{
	return cur_put_be(c, 8, r->iters) && cur_put_be(c, 8, r->elapsed_ns) && cur_put_be(c, 8, r->cpu.user_us) &&
	       cur_put_be(c, 8, r->cpu.sys_us);
}

static bool write_text(struct cur_out *c, const char *text)
{
	return cur_put_bytes(c, text, strnlen(text, BENCH_TEXT_MAX + 1));
}

static bool write_body(struct cur_out *c, const struct bench_msg *m)
{
	switch (m->type) {
	case BENCH_MSG_PARAMS: return write_params(c, &m->params);
	case BENCH_MSG_READY: return cur_put_be(c, 8, m->tag);
	case BENCH_MSG_DATA: return true;
	case BENCH_MSG_END: return cur_put_be(c, 8, m->iters);
	case BENCH_MSG_RESULT: return write_result(c, &m->result);
	case BENCH_MSG_ERROR: return write_text(c, m->text);
	default: return false;
	}
}

size_t bench_encode(const struct bench_msg *m, uint8_t *out, size_t cap)
{
	struct cur_out c = { .p = out, .left = cap };
	if (check_msg(m) || !cur_put_be(&c, 1, m->type) || !write_body(&c, m))
		return 0;
	return cap - c.left;
}

const char *bench_op_name(uint8_t op)
{
	switch (op) {
	case BENCH_OP_SEND: return "send";
	case BENCH_OP_WRITE: return "write";
	case BENCH_OP_READ: return "read";
	case BENCH_OP_CONNECT: return "connect";
	case BENCH_OP_QP: return "qp";
	default: return "unknown";
	}
}
