/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "nvme_capsule.h"

/* A bounded little-endian cursor: every get and put checks the room left. */
struct le_cursor {
	uint8_t *wbuf;
	const uint8_t *rbuf;
	size_t len;
	size_t pos;
};

static RSEC_MUST_CHECK int le_put(struct le_cursor *c, uint64_t v, size_t n)
{
	RSEC_ENSURE(n <= c->len - c->pos, RSEC_E_RANGE);
	for (size_t i = 0; i < n; i++)
		c->wbuf[c->pos + i] = (uint8_t)(v >> (8 * i));
	c->pos += n;
	return 0;
}

static RSEC_MUST_CHECK int le_get(struct le_cursor *c, uint64_t *v, size_t n)
{
	RSEC_ENSURE(n <= c->len - c->pos, RSEC_E_PROTO);
	*v = 0;
	for (size_t i = 0; i < n; i++)
		*v |= (uint64_t)c->rbuf[c->pos + i] << (8 * i);
	c->pos += n;
	return 0;
}

static RSEC_MUST_CHECK int le_get8(struct le_cursor *c, uint8_t *v)
{
	uint64_t w;
	RSEC_GUARD(le_get(c, &w, 1));
	*v = (uint8_t)w;
	return 0;
}

static RSEC_MUST_CHECK int le_get16(struct le_cursor *c, uint16_t *v)
{
	uint64_t w;
	RSEC_GUARD(le_get(c, &w, 2));
	*v = (uint16_t)w;
	return 0;
}

static RSEC_MUST_CHECK int le_get32(struct le_cursor *c, uint32_t *v)
{
	uint64_t w;
	RSEC_GUARD(le_get(c, &w, 4));
	*v = (uint32_t)w;
	return 0;
}

const char *nvme_opcode_name(uint8_t opcode)
{
	switch (opcode) {
	case NVME_OP_FLUSH: return "flush";
	case NVME_OP_WRITE: return "write";
	case NVME_OP_READ: return "read";
	default: return NULL;
	}
}

static bool psdt_is_sgl(uint8_t flags)
{
	uint8_t psdt = flags & NVME_FLAG_PSDT_MASK;
	return psdt == NVME_FLAG_SGL_METABUF || psdt == NVME_FLAG_SGL_METASGL;
}

static bool sgl_keyed(uint8_t id)
{
	return id >> 4 == NVME_SGL_TYPE_KEYED;
}

/* SGL1, 16 bytes: keyed = address(8) length(3) key(4) id(1); data block = address(8) length(4) reserved(3) id(1). */
static RSEC_MUST_CHECK int put_sgl(struct le_cursor *c, const struct nvme_sgl *g)
{
	RSEC_GUARD(le_put(c, g->addr, 8));
	if (sgl_keyed(g->id)) {
		RSEC_GUARD(le_put(c, g->length, 3));
		RSEC_GUARD(le_put(c, g->key, 4));
	} else {
		RSEC_GUARD(le_put(c, g->length, 4));
		RSEC_GUARD(le_put(c, 0, 3));
	}
	return le_put(c, g->id, 1);
}

static RSEC_MUST_CHECK int get_sgl(struct le_cursor *c, struct nvme_sgl *g)
{
	uint64_t w;

	RSEC_GUARD(le_get(c, &g->addr, 8));
	/* The identifier is the last byte: it says how to read the middle. */
	RSEC_ENSURE(c->pos + 8 <= c->len, RSEC_E_PROTO);
	g->id = c->rbuf[c->pos + 7];
	if (sgl_keyed(g->id)) {
		RSEC_GUARD(le_get(c, &w, 3));
		g->length = (uint32_t)w;
		RSEC_GUARD(le_get32(c, &g->key));
	} else {
		RSEC_ENSURE(g->id >> 4 == NVME_SGL_TYPE_DATA, RSEC_E_PROTO);
		RSEC_GUARD(le_get32(c, &g->length));
		RSEC_GUARD(le_get(c, &w, 3));
		RSEC_ENSURE(w == 0, RSEC_E_PROTO);
		g->key = 0;
	}
	c->pos++; /* the identifier, read above */
	return 0;
}

int nvme_sqe_encode(const struct nvme_sqe *s, uint8_t out[static NVME_SQE_LEN])
{
	struct le_cursor c = { .wbuf = out, .len = NVME_SQE_LEN };

	RSEC_ENSURE_REF(s);
	RSEC_ENSURE(psdt_is_sgl(s->flags), RSEC_E_INVAL);
	RSEC_ENSURE(sgl_keyed(s->sgl.id) || s->sgl.id >> 4 == NVME_SGL_TYPE_DATA, RSEC_E_INVAL);
	RSEC_ENSURE(!sgl_keyed(s->sgl.id) || s->sgl.length <= NVME_SGL_KEYED_LEN_MAX, RSEC_E_INVAL);
	RSEC_GUARD(le_put(&c, s->opcode, 1));
	RSEC_GUARD(le_put(&c, s->flags, 1));
	RSEC_GUARD(le_put(&c, s->cid, 2));
	RSEC_GUARD(le_put(&c, s->nsid, 4));
	RSEC_GUARD(le_put(&c, 0, 8)); /* CDW2-3 */
	RSEC_GUARD(le_put(&c, s->mptr, 8));
	RSEC_GUARD(put_sgl(&c, &s->sgl));
	RSEC_GUARD(le_put(&c, s->slba, 8));
	RSEC_GUARD(le_put(&c, s->nlb, 2));
	RSEC_GUARD(le_put(&c, s->control, 2));
	RSEC_GUARD(le_put(&c, s->cdw13, 4));
	RSEC_GUARD(le_put(&c, s->cdw14, 4));
	RSEC_GUARD(le_put(&c, s->cdw15, 4));
	RSEC_ENSURE(c.pos == NVME_SQE_LEN, RSEC_E_INVAL);
	return 0;
}

int nvme_sqe_decode(const uint8_t *buf, size_t len, struct nvme_sqe *s)
{
	struct le_cursor c = { .rbuf = buf, .len = NVME_SQE_LEN };
	uint64_t ignored;

	RSEC_ENSURE(buf != NULL && s != NULL, RSEC_E_PROTO);
	RSEC_ENSURE(len >= NVME_SQE_LEN, RSEC_E_PROTO);
	memset(s, 0, sizeof(*s));
	RSEC_GUARD(le_get8(&c, &s->opcode));
	RSEC_GUARD(le_get8(&c, &s->flags));
	RSEC_ENSURE(psdt_is_sgl(s->flags), RSEC_E_PROTO);
	RSEC_GUARD(le_get16(&c, &s->cid));
	RSEC_GUARD(le_get32(&c, &s->nsid));
	RSEC_GUARD(le_get(&c, &ignored, 8)); /* CDW2-3: command specific or reserved */
	RSEC_GUARD(le_get(&c, &s->mptr, 8));
	RSEC_GUARD(get_sgl(&c, &s->sgl));
	RSEC_GUARD(le_get(&c, &s->slba, 8));
	RSEC_GUARD(le_get16(&c, &s->nlb));
	RSEC_GUARD(le_get16(&c, &s->control));
	RSEC_GUARD(le_get32(&c, &s->cdw13));
	RSEC_GUARD(le_get32(&c, &s->cdw14));
	RSEC_GUARD(le_get32(&c, &s->cdw15));
	RSEC_ENSURE(c.pos == NVME_SQE_LEN, RSEC_E_PROTO);
	return 0;
}

int nvme_capsule_build(const struct nvme_sqe *s, const uint8_t *data, size_t data_len, uint8_t *buf, size_t cap,
		       size_t *len)
{
	RSEC_ENSURE(s != NULL && buf != NULL && len != NULL, RSEC_E_INVAL);
	RSEC_ENSURE(data_len == 0 || data != NULL, RSEC_E_INVAL);
	RSEC_ENSURE(data_len <= NVME_MAX_INLINE, RSEC_E_RANGE);
	if (s->sgl.id == NVME_SGL_INLINE)
		RSEC_ENSURE(s->sgl.addr == 0 && s->sgl.length == data_len, RSEC_E_INVAL);
	else
		RSEC_ENSURE(data_len == 0, RSEC_E_INVAL);
	RSEC_ENSURE(cap >= NVME_SQE_LEN && data_len <= cap - NVME_SQE_LEN, RSEC_E_RANGE);
	RSEC_GUARD(nvme_sqe_encode(s, buf));
	if (data_len)
		memcpy(buf + NVME_SQE_LEN, data, data_len);
	*len = NVME_SQE_LEN + data_len;
	return 0;
}

int nvme_capsule_parse(const uint8_t *buf, size_t len, struct nvme_capsule *c)
{
	size_t after;

	RSEC_ENSURE(c != NULL, RSEC_E_PROTO);
	memset(c, 0, sizeof(*c));
	RSEC_GUARD(nvme_sqe_decode(buf, len, &c->sqe));
	after = len - NVME_SQE_LEN;
	RSEC_ENSURE(after <= NVME_MAX_INLINE, RSEC_E_PROTO);
	if (c->sqe.sgl.id != NVME_SGL_INLINE) {
		RSEC_ENSURE(after == 0, RSEC_E_PROTO);
		return 0;
	}
	/* Compared without adding: the offset is 64 attacker-chosen bits. */
	RSEC_ENSURE(c->sqe.sgl.addr <= after && c->sqe.sgl.length <= after - c->sqe.sgl.addr, RSEC_E_PROTO);
	c->data_len = c->sqe.sgl.length;
	c->data = c->data_len ? buf + NVME_SQE_LEN + c->sqe.sgl.addr : NULL;
	return 0;
}

int nvme_cqe_encode(const struct nvme_cqe *c, uint8_t out[static NVME_CQE_LEN])
{
	struct le_cursor w = { .wbuf = out, .len = NVME_CQE_LEN };

	RSEC_ENSURE_REF(c);
	RSEC_ENSURE(c->status <= 0x7fff, RSEC_E_INVAL);
	RSEC_GUARD(le_put(&w, c->result, 8));
	RSEC_GUARD(le_put(&w, c->sq_head, 2));
	RSEC_GUARD(le_put(&w, c->sq_id, 2));
	RSEC_GUARD(le_put(&w, c->cid, 2));
	RSEC_GUARD(le_put(&w, (uint32_t)c->status << 1 | (c->phase ? 1 : 0), 2));
	return 0;
}

int nvme_cqe_decode(const uint8_t *buf, size_t len, struct nvme_cqe *c)
{
	struct le_cursor r = { .rbuf = buf, .len = len };
	uint16_t sf;

	RSEC_ENSURE(buf != NULL && c != NULL, RSEC_E_PROTO);
	RSEC_ENSURE(len == NVME_CQE_LEN, RSEC_E_PROTO);
	memset(c, 0, sizeof(*c));
	RSEC_GUARD(le_get(&r, &c->result, 8));
	RSEC_GUARD(le_get16(&r, &c->sq_head));
	RSEC_GUARD(le_get16(&r, &c->sq_id));
	RSEC_GUARD(le_get16(&r, &c->cid));
	RSEC_GUARD(le_get16(&r, &sf));
	c->phase = sf & 1;
	c->status = sf >> 1;
	return 0;
}
