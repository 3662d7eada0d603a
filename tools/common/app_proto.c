/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "app_proto.h"

struct cursor {
	const uint8_t *p;
	size_t left;
};

static bool take(struct cursor *c, void *out, size_t n)
{
	if (n > c->left)
		return false;
	memcpy(out, c->p, n);
	c->p += n;
	c->left -= n;
	return true;
}

static bool take_u64(struct cursor *c, uint64_t *v)
{
	uint8_t b[8];
	if (!take(c, b, sizeof(b)))
		return false;
	*v = 0;
	for (int i = 0; i < 8; i++)
		*v = *v << 8 | b[i];
	return true;
}

static void put_u64(uint8_t *out, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		out[i] = (uint8_t)v;
}

/* The rest of the message as text: printable ASCII, at most APP_ERROR_TEXT_MAX bytes. */
static bool take_text(struct cursor *c, char out[static APP_ERROR_TEXT_MAX + 1], const char **why)
{
	if (c->left > APP_ERROR_TEXT_MAX) {
		*why = "text too long";
		return false;
	}
	for (size_t i = 0; i < c->left; i++) {
		if (c->p[i] < 0x20 || c->p[i] > 0x7e) {
			*why = "text not printable";
			return false;
		}
	}
	memcpy(out, c->p, c->left);
	out[c->left] = '\0';
	c->p += c->left;
	c->left = 0;
	return true;
}

static size_t put_text(uint8_t *out, const char *text)
{
	size_t t = strnlen(text, APP_ERROR_TEXT_MAX);
	memcpy(out, text, t);
	return t;
}

size_t app_encode(const struct app_msg *m, uint8_t *out, size_t cap)
{
	uint8_t buf[APP_MSG_FIXED_MAX];
	size_t n = 0;
	buf[n++] = m->op;
	switch (m->op) {
	case APP_ECHO:
	case APP_ECHO_REPLY:
	case APP_READ_REQ:
	case APP_SEALED_READ_REQ:
	case APP_READ_RESULT:
	case APP_STATS_REQ:
		break;
	case APP_WRITE_REQ:
	case APP_SEALED_WRITE_REQ:
		put_u64(buf + n, m->len);
		n += 8;
		break;
	case APP_WRITE_GRANTED:
	case APP_WRITE_DONE:
	case APP_READ_DONE:
		put_u64(buf + n, m->tag);
		n += 8;
		break;
	case APP_WRITE_RESULT:
		put_u64(buf + n, m->len);
		n += 8;
		memcpy(buf + n, m->sha256, APP_SHA256_LEN);
		n += APP_SHA256_LEN;
		break;
	case APP_READ_GRANTED:
		put_u64(buf + n, m->tag);
		put_u64(buf + n + 8, m->len);
		n += 16;
		memcpy(buf + n, m->sha256, APP_SHA256_LEN);
		n += APP_SHA256_LEN;
		break;
	case APP_STATS_REPLY: {
		const uint64_t f[] = { m->stats.connections, m->stats.mac_failures, m->stats.seq_violations,
				       m->stats.qp_errors, m->stats.refused_handshakes };
		for (size_t i = 0; i < 5; i++, n += 8)
			put_u64(buf + n, f[i]);
		n += put_text(buf + n, m->text);
		break;
	}
	case APP_ERROR:
		n += put_text(buf + n, m->text);
		break;
	default:
		return 0;
	}
	if (n > cap)
		return 0;
	memcpy(out, buf, n);
	return n;
}

bool app_decode(const uint8_t *in, size_t len, struct app_msg *m, const char **why)
{
	struct cursor c = { in, len };
	memset(m, 0, sizeof(*m));
	*why = "truncated";
	if (!take(&c, &m->op, 1))
		return false;
	bool ok;
	switch (m->op) {
	case APP_ECHO:
	case APP_ECHO_REPLY:
		m->payload = c.p;
		m->payload_len = c.left;
		return true;
	case APP_READ_REQ:
	case APP_SEALED_READ_REQ:
	case APP_READ_RESULT:
	case APP_STATS_REQ:
		ok = true;
		break;
	case APP_WRITE_REQ:
	case APP_SEALED_WRITE_REQ:
		ok = take_u64(&c, &m->len);
		break;
	case APP_WRITE_GRANTED:
	case APP_WRITE_DONE:
	case APP_READ_DONE:
		ok = take_u64(&c, &m->tag);
		break;
	case APP_WRITE_RESULT:
		ok = take_u64(&c, &m->len) && take(&c, m->sha256, APP_SHA256_LEN);
		break;
	case APP_READ_GRANTED:
		ok = take_u64(&c, &m->tag) && take_u64(&c, &m->len) && take(&c, m->sha256, APP_SHA256_LEN);
		break;
	case APP_STATS_REPLY:
		if (!(take_u64(&c, &m->stats.connections) && take_u64(&c, &m->stats.mac_failures) &&
		      take_u64(&c, &m->stats.seq_violations) && take_u64(&c, &m->stats.qp_errors) &&
		      take_u64(&c, &m->stats.refused_handshakes)))
			return false;
		return take_text(&c, m->text, why);
	case APP_ERROR:
		return take_text(&c, m->text, why);
	default:
		*why = "unknown opcode";
		return false;
	}
	if (!ok)
		return false;
	if (c.left != 0) {
		*why = "trailing bytes";
		return false;
	}
	return true;
}

const char *app_op_name(uint8_t op)
{
	switch (op) {
	case APP_ECHO: return "echo";
	case APP_ECHO_REPLY: return "echo-reply";
	case APP_WRITE_REQ: return "write-request";
	case APP_WRITE_GRANTED: return "write-granted";
	case APP_WRITE_DONE: return "write-done";
	case APP_WRITE_RESULT: return "write-result";
	case APP_READ_REQ: return "read-request";
	case APP_SEALED_WRITE_REQ: return "sealed-write-request";
	case APP_SEALED_READ_REQ: return "sealed-read-request";
	case APP_READ_GRANTED: return "read-granted";
	case APP_READ_DONE: return "read-done";
	case APP_READ_RESULT: return "read-result";
	case APP_STATS_REQ: return "stats-request";
	case APP_STATS_REPLY: return "stats-reply";
	case APP_ERROR: return "error";
	default: return "unknown";
	}
}
