/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "blk_wire.h"
#include "cursor.h"

static bool fail(const char **why, const char *text)
{
	*why = text;
	return false;
}

static bool name_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
	       ch == '_' || ch == '-';
}

static bool name_bytes_valid(const char *name, size_t n)
{
	if (n == 0 || n > BLK_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!name_char(name[i]))
			return false;
	return true;
}

bool blk_name_valid(const char *name)
{
	return name && name_bytes_valid(name, strnlen(name, BLK_NAME_MAX + 1));
}

uint8_t blk_type_of(const uint8_t *in, size_t len)
{
	return len ? in[0] : 0;
}

static bool version_spoken(uint8_t version)
{
	return version >= BLK_VERSION_MIN && version <= BLK_VERSION;
}

static bool open_valid(const struct blk_open *m)
{
	return version_spoken(m->version ? m->version : BLK_VERSION) && (m->flags & ~BLK_OPEN_WRITE) == 0 &&
	       m->queue_depth >= 1 && m->queue_depth <= BLK_QD_MAX &&
	       m->queues >= 1 && m->queues <= BLK_QUEUES_MAX && blk_name_valid(m->name);
}

size_t blk_open_encode(const struct blk_open *m, uint8_t *out, size_t cap)
{
	if (!open_valid(m))
		return 0;
	size_t n = strlen(m->name), total = BLK_OPEN_HDR + n;
	if (cap < total)
		return 0;
	uint8_t *p = out;
	*p++ = BLK_OPEN;
	*p++ = m->version ? m->version : BLK_VERSION;
	p = cur_store_be(p, 2, m->flags);
	p = cur_store_be(p, 2, m->queue_depth);
	*p++ = (uint8_t)m->queues;
	*p++ = (uint8_t)n;
	memcpy(p, m->name, n);
	return total;
}

bool blk_open_decode(const uint8_t *in, size_t len, struct blk_open *m, const char **why)
{
	struct cur_in c = { in, len };
	uint8_t type, queues, name_len;
	memset(m, 0, sizeof(*m));
	if (!cur_get_u8(&c, &type) || type != BLK_OPEN)
		return fail(why, "not an OPEN");
	if (!cur_get_u8(&c, &m->version) || !version_spoken(m->version))
		return fail(why, "unknown protocol version");
	if (!cur_get_u16(&c, &m->flags) || (m->flags & ~BLK_OPEN_WRITE))
		return fail(why, "unknown OPEN flags");
	if (!cur_get_u16(&c, &m->queue_depth) || m->queue_depth < 1 || m->queue_depth > BLK_QD_MAX)
		return fail(why, "queue depth out of range");
	if (!cur_get_u8(&c, &queues) || queues < 1 || queues > BLK_QUEUES_MAX)
		return fail(why, "queue count out of range");
	m->queues = queues;
	if (!cur_get_u8(&c, &name_len) || c.left != name_len)
		return fail(why, "export name length does not match the message");
	if (!name_bytes_valid((const char *)c.p, name_len))
		return fail(why, "export name empty, too long or not [A-Za-z0-9._-]");
	memcpy(m->name, c.p, name_len);
	m->name[name_len] = '\0';
	return true;
}

static bool is_multiple(uint64_t v, uint32_t unit)
{
	return unit && v % unit == 0;
}

static bool open_reply_valid(const struct blk_open_reply *m)
{
	if (m->status > BLK_S_MAX || !version_spoken(m->version ? m->version : BLK_VERSION))
		return false;
	if (m->status != BLK_S_OK)
		return m->flags == 0 && m->queue_depth == 0 && m->queues == 0 && m->block_size == 0 &&
		       m->max_transfer == 0 && m->max_inline == 0 && m->size == 0;
	return (m->flags & ~(BLK_EXPORT_READ_ONLY | BLK_EXPORT_FLUSH | BLK_EXPORT_FUA)) == 0 &&
	       m->queue_depth >= 1 && m->queue_depth <= BLK_QD_MAX && m->queues >= 1 &&
	       m->queues <= BLK_QUEUES_MAX && (m->block_size == BLK_BLOCK_MIN || m->block_size == BLK_BLOCK_MAX) &&
	       m->max_transfer >= m->block_size && m->max_transfer <= BLK_TRANSFER_MAX &&
	       is_multiple(m->max_transfer, m->block_size) && m->max_inline <= BLK_INLINE_MAX &&
	       m->max_inline <= m->max_transfer && is_multiple(m->max_inline, m->block_size) &&
	       m->size <= BLK_SIZE_MAX && is_multiple(m->size, m->block_size);
}

size_t blk_open_reply_encode(const struct blk_open_reply *m, uint8_t *out, size_t cap)
{
	if (!open_reply_valid(m) || cap < BLK_OPEN_REPLY_LEN)
		return 0;
	uint8_t *p = out;
	*p++ = BLK_OPEN_REPLY;
	*p++ = m->version ? m->version : BLK_VERSION;
	p = cur_store_be(p, 2, m->status);
	p = cur_store_be(p, 2, m->flags);
	p = cur_store_be(p, 2, m->queue_depth);
	p = cur_store_be(p, 2, m->queues);
	p = cur_store_be(p, 2, 0);
	p = cur_store_be(p, 4, m->block_size);
	p = cur_store_be(p, 4, m->max_transfer);
	p = cur_store_be(p, 4, m->max_inline);
	cur_store_be(p, 8, m->size);
	return BLK_OPEN_REPLY_LEN;
}

bool blk_open_reply_decode(const uint8_t *in, size_t len, struct blk_open_reply *m, const char **why)
{
	struct cur_in c = { in, len };
	uint8_t type;
	memset(m, 0, sizeof(*m));
	if (len != BLK_OPEN_REPLY_LEN)
		return fail(why, "OPEN_REPLY has the wrong length");
	if (!cur_get_u8(&c, &type) || type != BLK_OPEN_REPLY)
		return fail(why, "not an OPEN_REPLY");
	if (!cur_get_u8(&c, &m->version) || !version_spoken(m->version))
		return fail(why, "unknown protocol version");
	if (!cur_get_u16(&c, &m->status) || !cur_get_u16(&c, &m->flags) || !cur_get_u16(&c, &m->queue_depth) ||
	    !cur_get_u16(&c, &m->queues) || !cur_get_zero(&c, 2) || !cur_get_u32(&c, &m->block_size) ||
	    !cur_get_u32(&c, &m->max_transfer) || !cur_get_u32(&c, &m->max_inline) || !cur_get_u64(&c, &m->size))
		return fail(why, "OPEN_REPLY reserved field not zero");
	if (!open_reply_valid(m))
		return fail(why, "OPEN_REPLY field out of range");
	return true;
}

static bool mac_zero(const uint8_t mac[BLK_MAC_LEN])
{
	uint8_t any = 0;
	for (unsigned i = 0; i < BLK_MAC_LEN; i++)
		any |= mac[i];
	return any == 0;
}

/* The stateless rules of a command (docs/blk.md, "Command capsule"). */
static bool cmd_valid(const struct blk_cmd *m, const char **why)
{
	bool inl = m->flags & BLK_CMD_INLINE;
	switch (m->opcode) {
	case BLK_OP_READ:
		if (m->flags)
			return fail(why, "READ takes no flags");
		if (m->length == 0 || !mac_zero(m->mac) || m->key_id)
			return fail(why, "READ needs a length and carries no data MAC or key id");
		break;
	case BLK_OP_WRITE:
		if (m->flags & ~(BLK_CMD_FUA | BLK_CMD_INLINE))
			return fail(why, "unknown WRITE flags");
		if (m->length == 0)
			return fail(why, "WRITE needs a length");
		if (inl && (m->pool_off || m->window || !mac_zero(m->mac) || m->key_id || m->length > BLK_INLINE_MAX))
			return fail(why, "in-capsule WRITE with a pool offset or window, a data MAC, a key id or over "
					 "BLK_INLINE_MAX");
		break;
	case BLK_OP_FLUSH:
		if (m->flags || m->offset || m->length || m->pool_off || m->window || !mac_zero(m->mac) || m->key_id)
			return fail(why, "FLUSH takes no flags, offset, length, pool offset or window, data MAC or key id");
		break;
	default:
		return fail(why, "unknown opcode");
	}
	if (m->length > BLK_TRANSFER_MAX)
		return fail(why, "length over BLK_TRANSFER_MAX");
	if (m->cid >= BLK_QD_MAX)
		return fail(why, "command id over BLK_QD_MAX");
	if (m->seq == 0)
		return fail(why, "sequence number 0");
	return true;
}

size_t blk_cmd_encode_hdr(const struct blk_cmd *m, uint8_t *out, size_t cap)
{
	const char *why;
	if (!cmd_valid(m, &why) || cap < BLK_CMD_HDR)
		return 0;
	uint8_t *p = out;
	*p++ = BLK_CMD;
	*p++ = m->opcode;
	p = cur_store_be(p, 2, m->flags);
	p = cur_store_be(p, 2, m->cid);
	p = cur_store_be(p, 2, m->window);
	p = cur_store_be(p, 8, m->offset);
	p = cur_store_be(p, 4, m->length);
	p = cur_store_be(p, 4, m->pool_off);
	p = cur_store_be(p, 8, m->seq);
	p = cur_store_be(p, 8, m->key_id);
	memcpy(p, m->mac, BLK_MAC_LEN);
	return BLK_CMD_HDR;
}

bool blk_cmd_decode(const uint8_t *in, size_t len, struct blk_cmd *m, const char **why)
{
	struct cur_in c = { in, len };
	uint8_t type;
	memset(m, 0, sizeof(*m));
	if (len < BLK_CMD_HDR)
		return fail(why, "command shorter than its header");
	if (!cur_get_u8(&c, &type) || type != BLK_CMD)
		return fail(why, "not a command");
	if (!cur_get_u8(&c, &m->opcode) || !cur_get_u16(&c, &m->flags) || !cur_get_u16(&c, &m->cid) ||
	    !cur_get_u16(&c, &m->window) || !cur_get_u64(&c, &m->offset) || !cur_get_u32(&c, &m->length) ||
	    !cur_get_u32(&c, &m->pool_off) || !cur_get_u64(&c, &m->seq) || !cur_get_u64(&c, &m->key_id) ||
	    !cur_get_bytes(&c, m->mac, BLK_MAC_LEN))
		return fail(why, "command reserved field not zero");
	if (!cmd_valid(m, why))
		return false;
	if (m->flags & BLK_CMD_INLINE) {
		if (c.left != m->length)
			return fail(why, "in-capsule data length does not match the command");
		m->data = c.p;
	} else if (c.left != 0) {
		return fail(why, "data after a command that carries none");
	}
	return true;
}

size_t blk_cpl_encode(const struct blk_cpl *m, uint8_t *out, size_t cap)
{
	if (m->status > BLK_S_MAX || (m->status != BLK_S_OK && (m->length || !mac_zero(m->mac) || m->key_id)) ||
	    m->cid >= BLK_QD_MAX || cap < BLK_CPL_LEN)
		return 0;
	uint8_t *p = out;
	*p++ = BLK_CPL;
	*p++ = 0;
	p = cur_store_be(p, 2, m->cid);
	p = cur_store_be(p, 2, m->status);
	p = cur_store_be(p, 2, 0);
	p = cur_store_be(p, 4, m->length);
	p = cur_store_be(p, 4, 0);
	p = cur_store_be(p, 8, m->key_id);
	memcpy(p, m->mac, BLK_MAC_LEN);
	return BLK_CPL_LEN;
}

bool blk_cpl_decode(const uint8_t *in, size_t len, struct blk_cpl *m, const char **why)
{
	struct cur_in c = { in, len };
	uint8_t type;
	memset(m, 0, sizeof(*m));
	if (len != BLK_CPL_LEN)
		return fail(why, "completion has the wrong length");
	if (!cur_get_u8(&c, &type) || type != BLK_CPL)
		return fail(why, "not a completion");
	if (!cur_get_zero(&c, 1) || !cur_get_u16(&c, &m->cid) || !cur_get_u16(&c, &m->status) || !cur_get_zero(&c, 2) ||
	    !cur_get_u32(&c, &m->length) || !cur_get_zero(&c, 4) || !cur_get_u64(&c, &m->key_id) ||
	    !cur_get_bytes(&c, m->mac, BLK_MAC_LEN))
		return fail(why, "completion reserved field not zero");
	if (m->status > BLK_S_MAX)
		return fail(why, "unknown completion status");
	if (m->status != BLK_S_OK && (m->length || !mac_zero(m->mac) || m->key_id))
		return fail(why, "failed completion with a length, a data MAC or a key id");
	if (m->cid >= BLK_QD_MAX)
		return fail(why, "command id over BLK_QD_MAX");
	return true;
}

uint64_t blk_window_tag(uint16_t window, enum blk_pool_dir dir)
{
	return UINT64_C(0x20000) + 2u * (uint64_t)window + (unsigned)dir;
}

uint16_t blk_window_next(uint16_t window)
{
	return window >= BLK_WINDOW_MAX ? 1 : (uint16_t)(window + 1);
}

bool blk_cmd_pool_dir(const struct blk_cmd *m, enum blk_pool_dir *dir)
{
	if (m->opcode == BLK_OP_READ)
		*dir = BLK_POOL_TARGET_WRITES;
	else if (m->opcode == BLK_OP_WRITE && !(m->flags & BLK_CMD_INLINE))
		*dir = BLK_POOL_TARGET_READS;
	else
		return false;
	return true;
}

enum blk_status blk_cmd_check(const struct blk_cmd *m, const struct blk_limits *l)
{
	enum blk_pool_dir dir;
	if (m->cid >= l->queue_depth)
		return BLK_S_INVALID;
	/* cmd_valid already refused a window on a command without a pool transfer. */
	if (blk_cmd_pool_dir(m, &dir) && (m->window != 0) != (l->version >= 4))
		return BLK_S_INVALID;
	if (m->opcode == BLK_OP_FLUSH)
		return BLK_S_OK;
	if (!is_multiple(m->offset, l->block_size) || !is_multiple(m->length, l->block_size) ||
	    m->length > l->max_transfer)
		return BLK_S_INVALID;
	if ((m->flags & BLK_CMD_INLINE) && m->length > l->max_inline)
		return BLK_S_INVALID;
	if (m->offset > l->size || m->length > l->size - m->offset)
		return BLK_S_RANGE;
	return BLK_S_OK;
}

const char *blk_status_name(uint16_t status)
{
	static const char *const names[] = {
		[BLK_S_OK] = "ok",
		[BLK_S_INVALID] = "invalid field",
		[BLK_S_RANGE] = "out of range",
		[BLK_S_READ_ONLY] = "read-only",
		[BLK_S_IO] = "I/O error",
		[BLK_S_NO_SPACE] = "no space",
		[BLK_S_DENIED] = "access denied",
		[BLK_S_TRANSFER] = "transfer failed",
		[BLK_S_NO_EXPORT] = "no such export",
		[BLK_S_LIMIT] = "limit reached",
		[BLK_S_VERSION] = "protocol version not supported",
	};
	return status <= BLK_S_MAX ? names[status] : "unknown status";
}

const char *blk_opcode_name(uint8_t opcode)
{
	switch (opcode) {
	case BLK_OP_READ: return "read";
	case BLK_OP_WRITE: return "write";
	case BLK_OP_FLUSH: return "flush";
	default: return "unknown";
	}
}
