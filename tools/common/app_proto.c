/* SPDX-License-Identifier: MIT */
#include <string.h>

#include <openssl/evp.h>

#include "app_proto.h"
#include "cursor.h"

/* The rest of the message as text: printable ASCII, at most APP_ERROR_TEXT_MAX bytes. */
static bool take_text(struct cur_in *c, char out[static APP_ERROR_TEXT_MAX + 1], const char **why)
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
		cur_store_be(buf + n, 8, m->len);
		n += 8;
		break;
	case APP_WRITE_GRANTED:
	case APP_WRITE_DONE:
	case APP_READ_DONE:
		cur_store_be(buf + n, 8, m->tag);
		n += 8;
		break;
	case APP_WRITE_RESULT:
		cur_store_be(buf + n, 8, m->len);
		n += 8;
		memcpy(buf + n, m->sha256, APP_SHA256_LEN);
		n += APP_SHA256_LEN;
		break;
	case APP_READ_GRANTED:
		cur_store_be(buf + n, 8, m->tag);
		cur_store_be(buf + n + 8, 8, m->len);
		n += 16;
		memcpy(buf + n, m->sha256, APP_SHA256_LEN);
		n += APP_SHA256_LEN;
		break;
	case APP_STATS_REPLY: {
		const uint64_t f[] = { m->stats.connections, m->stats.mac_failures, m->stats.seq_violations,
				       m->stats.qp_errors, m->stats.refused_handshakes };
		for (size_t i = 0; i < 5; i++, n += 8)
			cur_store_be(buf + n, 8, f[i]);
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
	struct cur_in c = { in, len };
	memset(m, 0, sizeof(*m));
	*why = "truncated";
	if (!cur_get_bytes(&c, &m->op, 1))
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
		ok = cur_get_u64(&c, &m->len);
		break;
	case APP_WRITE_GRANTED:
	case APP_WRITE_DONE:
	case APP_READ_DONE:
		ok = cur_get_u64(&c, &m->tag);
		break;
	case APP_WRITE_RESULT:
		ok = cur_get_u64(&c, &m->len) && cur_get_bytes(&c, m->sha256, APP_SHA256_LEN);
		break;
	case APP_READ_GRANTED:
		ok = cur_get_u64(&c, &m->tag) && cur_get_u64(&c, &m->len) && cur_get_bytes(&c, m->sha256, APP_SHA256_LEN);
		break;
	case APP_STATS_REPLY:
		if (!(cur_get_u64(&c, &m->stats.connections) && cur_get_u64(&c, &m->stats.mac_failures) &&
		      cur_get_u64(&c, &m->stats.seq_violations) && cur_get_u64(&c, &m->stats.qp_errors) &&
		      cur_get_u64(&c, &m->stats.refused_handshakes)))
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

void app_sha256(const uint8_t *p, size_t n, uint8_t out[APP_SHA256_LEN])
{
	unsigned len = APP_SHA256_LEN;
	if (!EVP_Digest(p, n, out, &len, EVP_sha256(), NULL))
		memset(out, 0, APP_SHA256_LEN);
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
