/* SPDX-License-Identifier: MIT */
/*
 * Control-message codec (docs/protocol.md). Each message has three small
 * functions: check_* holds every limit and is shared by both directions,
 * read_* and write_* are the schema, one guarded rsec_buf call per field.
 */
#include <string.h>
#include <infiniband/verbs.h>

#include "buf.h"
#include "wire.h"

/* The MTU field carries enum ibv_mtu as is. */
_Static_assert(IBV_MTU_256 == RSEC_WIRE_MTU_MIN && IBV_MTU_4096 == RSEC_WIRE_MTU_MAX,
	       "wire MTU codes must match enum ibv_mtu");
_Static_assert(-RSEC_E_DENIED <= (int)RSEC_WIRE_ERROR_CODE_MAX, "every RSEC_E_* must fit an ERROR code");
_Static_assert(RSEC_WIRE_ACCESS_READ == RSEC_ACCESS_READ && RSEC_WIRE_ACCESS_WRITE == RSEC_ACCESS_WRITE,
	       "wire access bits must match enum rsec_access");
_Static_assert(RSEC_WIRE_AEAD_AES_256_GCM == RSEC_AEAD_AES_256_GCM &&
		       RSEC_WIRE_AEAD_CHACHA20_POLY1305 == RSEC_AEAD_CHACHA20_POLY1305,
	       "wire AEAD codes must match enum rsec_aead_choice");

/* ---- limits, shared by encode and decode; each returns 0 or RSEC_E_RANGE ---- */

static RSEC_MUST_CHECK int check_text(const struct rsec_wire_text *t)
{
	RSEC_ENSURE(t->len <= RSEC_WIRE_MAX_TEXT, RSEC_E_RANGE);
	for (size_t i = 0; i < t->len; i++) {
		unsigned char c = (unsigned char)t->s[i];

		/* Printable only: no terminal escapes, newlines or NULs reach a log. */
		RSEC_ENSURE(c >= RSEC_WIRE_TEXT_MIN_CHAR && c <= RSEC_WIRE_TEXT_MAX_CHAR, RSEC_E_RANGE);
	}
	return 0;
}

static RSEC_MUST_CHECK int check_hello(const struct rsec_msg_hello *h)
{
	RSEC_ENSURE(h->min_version >= RSEC_WIRE_PROTO_MIN, RSEC_E_RANGE);
	RSEC_ENSURE(h->min_version <= h->max_version, RSEC_E_RANGE);
	RSEC_ENSURE(h->aead == RSEC_WIRE_AEAD_AES_256_GCM || h->aead == RSEC_WIRE_AEAD_CHACHA20_POLY1305,
		    RSEC_E_RANGE);
	/* features: unknown bits are for newer peers to offer; ignored, not rejected. */
	return 0;
}

static RSEC_MUST_CHECK int check_qp_info(const struct rsec_msg_qp_info *q)
{
	RSEC_ENSURE(q->qpn <= RSEC_WIRE_QPN_MAX, RSEC_E_RANGE);
	RSEC_ENSURE(q->psn <= RSEC_WIRE_PSN_MAX, RSEC_E_RANGE);
	RSEC_ENSURE(q->mtu >= RSEC_WIRE_MTU_MIN && q->mtu <= RSEC_WIRE_MTU_MAX, RSEC_E_RANGE);
	RSEC_ENSURE(q->link == RSEC_WIRE_LINK_IB || q->link == RSEC_WIRE_LINK_ETHERNET, RSEC_E_RANGE);
	RSEC_ENSURE(q->recv_slots >= RSEC_WIRE_RECV_SLOTS_MIN && q->recv_slots <= RSEC_WIRE_RECV_SLOTS_MAX,
		    RSEC_E_RANGE);
	RSEC_ENSURE(q->slot_size >= RSEC_WIRE_SLOT_SIZE_MIN && q->slot_size <= RSEC_WIRE_SLOT_SIZE_MAX,
		    RSEC_E_RANGE);
	RSEC_ENSURE(q->max_msg >= RSEC_WIRE_MAX_MSG_MIN && q->max_msg <= RSEC_WIRE_MAX_MSG_MAX, RSEC_E_RANGE);
	return 0;
}

static RSEC_MUST_CHECK int check_grant(const struct rsec_msg_grant *g)
{
	RSEC_ENSURE(g->len >= RSEC_WIRE_GRANT_LEN_MIN && g->len <= RSEC_WIRE_GRANT_LEN_MAX, RSEC_E_RANGE);
	/* The window's last byte, addr + len - 1, must be addressable. */
	RSEC_ENSURE(g->len - 1 <= UINT64_MAX - g->addr, RSEC_E_RANGE);
	RSEC_ENSURE(g->access != 0 && (g->access & ~RSEC_WIRE_ACCESS_MASK) == 0, RSEC_E_RANGE);
	uint32_t rw = g->access & (RSEC_WIRE_ACCESS_READ | RSEC_WIRE_ACCESS_WRITE);
	RSEC_ENSURE(rw != 0, RSEC_E_RANGE);
	RSEC_ENSURE(!(g->access & RSEC_WIRE_ACCESS_SEALED) || rw != (RSEC_WIRE_ACCESS_READ | RSEC_WIRE_ACCESS_WRITE),
		    RSEC_E_RANGE);
	return 0;
}

static RSEC_MUST_CHECK int check_keepalive(const struct rsec_msg_keepalive *k)
{
	RSEC_ENSURE(k->is_reply <= 1, RSEC_E_RANGE);
	return 0;
}

static RSEC_MUST_CHECK int check_disconnect(const struct rsec_msg_disconnect *d)
{
	RSEC_ENSURE(d->reason <= RSEC_DISC_MAX, RSEC_E_RANGE);
	RSEC_GUARD(check_text(&d->text));
	return 0;
}

static RSEC_MUST_CHECK int check_error(const struct rsec_msg_error *e)
{
	RSEC_ENSURE(e->code >= RSEC_WIRE_ERROR_CODE_MIN && e->code <= RSEC_WIRE_ERROR_CODE_MAX, RSEC_E_RANGE);
	RSEC_GUARD(check_text(&e->text));
	return 0;
}

static RSEC_MUST_CHECK int check_verify(const struct rsec_msg_verify *v)
{
	RSEC_ENSURE(v->len >= RSEC_WIRE_GRANT_LEN_MIN && v->len <= RSEC_WIRE_GRANT_LEN_MAX, RSEC_E_RANGE);
	/* The range lies inside some grant, so it ends by the largest grant length. */
	RSEC_ENSURE(v->offset <= RSEC_WIRE_GRANT_LEN_MAX - v->len, RSEC_E_RANGE);
	if (v->mac_alg == RSEC_WIRE_MAC_HMAC_SHA256)
		return 0;
	RSEC_ENSURE(v->mac_alg == RSEC_WIRE_MAC_SEALED, RSEC_E_RANGE);
	for (size_t i = RSEC_WIRE_SEALED_PREFIX_LEN; i < RSEC_WIRE_MAC_LEN; i++)
		RSEC_ENSURE(v->mac[i] == 0, RSEC_E_RANGE);
	return 0;
}

static RSEC_MUST_CHECK int check_rebuild(const struct rsec_msg_rebuild *r)
{
	RSEC_ENSURE(r->epoch >= RSEC_WIRE_EPOCH_MIN, RSEC_E_RANGE);
	RSEC_ENSURE(r->reason <= RSEC_WIRE_REBUILD_REASON_MAX, RSEC_E_RANGE);
	return check_qp_info(&r->qp);
}

static RSEC_MUST_CHECK int check_msg(const struct rsec_msg *m)
{
	RSEC_ENSURE(m->lane <= RSEC_WIRE_LANE_MAX, RSEC_E_RANGE);
	switch (m->type) {
	case RSEC_MSG_HELLO: return check_hello(&m->u.hello);
	case RSEC_MSG_QP_INFO: return check_qp_info(&m->u.qp_info);
	case RSEC_MSG_READY: return 0;
	case RSEC_MSG_GRANT: return check_grant(&m->u.grant);
	case RSEC_MSG_REVOKE: return 0;
	case RSEC_MSG_KEEPALIVE: return check_keepalive(&m->u.keepalive);
	case RSEC_MSG_DISCONNECT: return check_disconnect(&m->u.disconnect);
	case RSEC_MSG_ERROR: return check_error(&m->u.error);
	case RSEC_MSG_VERIFY: return check_verify(&m->u.verify);
	case RSEC_MSG_REBUILD: return check_rebuild(&m->u.rebuild);
	case RSEC_MSG_REBUILD_READY:
		RSEC_ENSURE(m->u.rebuild_ready.epoch >= RSEC_WIRE_EPOCH_MIN, RSEC_E_RANGE);
		return 0;
	case RSEC_MSG_SESSION:
	case RSEC_MSG_RESUME:
		RSEC_ENSURE(m->lane == 0, RSEC_E_RANGE); /* about the whole session */
		return 0;
	case RSEC_MSG_REKEY:
	case RSEC_MSG_REKEY_REPLY:
	case RSEC_MSG_REKEY_DONE:
		RSEC_ENSURE(m->u.rekey.gen >= RSEC_WIRE_REKEY_GEN_MIN, RSEC_E_RANGE);
		return 0;
	case RSEC_MSG_PATH_CHECK: return 0;
	default: return RSEC_E_RANGE;
	}
}

/* ---- decoding: one guarded read per field ---- */

static RSEC_MUST_CHECK int read_text(struct rsec_buf *in, struct rsec_wire_text *t)
{
	RSEC_GUARD(rsec_buf_get_u16(in, &t->len));
	RSEC_ENSURE(t->len <= RSEC_WIRE_MAX_TEXT, RSEC_E_PROTO);
	RSEC_GUARD(rsec_buf_get_bytes(in, t->s, t->len));
	t->s[t->len] = '\0';
	return 0;
}

static RSEC_MUST_CHECK int read_hello(struct rsec_buf *in, struct rsec_msg_hello *h)
{
	RSEC_GUARD(rsec_buf_get_u16(in, &h->min_version));
	RSEC_GUARD(rsec_buf_get_u16(in, &h->max_version));
	RSEC_GUARD(rsec_buf_get_u32(in, &h->features));
	RSEC_GUARD(rsec_buf_get_u8(in, &h->aead));
	return 0;
}

static RSEC_MUST_CHECK int read_qp_info(struct rsec_buf *in, struct rsec_msg_qp_info *q)
{
	RSEC_GUARD(rsec_buf_get_u32(in, &q->qpn));
	RSEC_GUARD(rsec_buf_get_u32(in, &q->psn));
	RSEC_GUARD(rsec_buf_get_u16(in, &q->lid));
	RSEC_GUARD(rsec_buf_get_bytes(in, q->gid, sizeof(q->gid)));
	RSEC_GUARD(rsec_buf_get_u8(in, &q->mtu));
	RSEC_GUARD(rsec_buf_get_u8(in, &q->link));
	RSEC_GUARD(rsec_buf_get_u32(in, &q->recv_slots));
	RSEC_GUARD(rsec_buf_get_u32(in, &q->slot_size));
	RSEC_GUARD(rsec_buf_get_u32(in, &q->max_msg));
	return 0;
}

static RSEC_MUST_CHECK int read_grant(struct rsec_buf *in, struct rsec_msg_grant *g)
{
	RSEC_GUARD(rsec_buf_get_u64(in, &g->grant_id));
	RSEC_GUARD(rsec_buf_get_u64(in, &g->addr));
	RSEC_GUARD(rsec_buf_get_u32(in, &g->rkey));
	RSEC_GUARD(rsec_buf_get_u64(in, &g->len));
	RSEC_GUARD(rsec_buf_get_u32(in, &g->access));
	RSEC_GUARD(rsec_buf_get_u32(in, &g->ttl_ms));
	RSEC_GUARD(rsec_buf_get_u64(in, &g->tag));
	g->has_key_id = rsec_buf_remaining(in) > 0;
	return g->has_key_id ? rsec_buf_get_u64(in, &g->key_id) : 0;
}

static RSEC_MUST_CHECK int read_keepalive(struct rsec_buf *in, struct rsec_msg_keepalive *k)
{
	RSEC_GUARD(rsec_buf_get_u64(in, &k->nonce));
	RSEC_GUARD(rsec_buf_get_u8(in, &k->is_reply));
	return 0;
}

static RSEC_MUST_CHECK int read_verify(struct rsec_buf *in, struct rsec_msg_verify *v)
{
	RSEC_GUARD(rsec_buf_get_u64(in, &v->grant_id));
	RSEC_GUARD(rsec_buf_get_u64(in, &v->offset));
	RSEC_GUARD(rsec_buf_get_u64(in, &v->len));
	RSEC_GUARD(rsec_buf_get_u8(in, &v->mac_alg));
	RSEC_GUARD(rsec_buf_get_bytes(in, v->mac, sizeof(v->mac)));
	return 0;
}

static RSEC_MUST_CHECK int read_rebuild(struct rsec_buf *in, struct rsec_msg_rebuild *r)
{
	RSEC_GUARD(rsec_buf_get_u32(in, &r->epoch));
	RSEC_GUARD(rsec_buf_get_u8(in, &r->reason));
	RSEC_GUARD(rsec_buf_get_u64(in, &r->opened));
	return read_qp_info(in, &r->qp);
}

/* The token, and the epoch if the sender added it (a peer without RSEC_WIRE_FEATURE_RESUME_EPOCH does not). */
static RSEC_MUST_CHECK int read_session(struct rsec_buf *in, struct rsec_msg_session *s)
{
	RSEC_GUARD(rsec_buf_get_bytes(in, s->token, sizeof(s->token)));
	s->has_epoch = rsec_buf_remaining(in) > 0;
	return s->has_epoch ? rsec_buf_get_u32(in, &s->epoch) : 0;
}

/* REKEY and REKEY_REPLY carry a public key, REKEY_DONE none. */
static RSEC_MUST_CHECK int read_rekey(struct rsec_buf *in, struct rsec_msg_rekey *r, bool with_key)
{
	RSEC_GUARD(rsec_buf_get_u32(in, &r->epoch));
	RSEC_GUARD(rsec_buf_get_u32(in, &r->gen));
	return with_key ? rsec_buf_get_bytes(in, r->pub, sizeof(r->pub)) : 0;
}

static RSEC_MUST_CHECK int read_body(struct rsec_buf *in, struct rsec_msg *m)
{
	switch (m->type) {
	case RSEC_MSG_HELLO: return read_hello(in, &m->u.hello);
	case RSEC_MSG_QP_INFO: return read_qp_info(in, &m->u.qp_info);
	case RSEC_MSG_READY: return 0;
	case RSEC_MSG_GRANT: return read_grant(in, &m->u.grant);
	case RSEC_MSG_REVOKE: return rsec_buf_get_u64(in, &m->u.revoke.grant_id);
	case RSEC_MSG_KEEPALIVE: return read_keepalive(in, &m->u.keepalive);
	case RSEC_MSG_DISCONNECT:
		RSEC_GUARD(rsec_buf_get_u32(in, &m->u.disconnect.reason));
		return read_text(in, &m->u.disconnect.text);
	case RSEC_MSG_ERROR:
		RSEC_GUARD(rsec_buf_get_u32(in, &m->u.error.code));
		return read_text(in, &m->u.error.text);
	case RSEC_MSG_VERIFY: return read_verify(in, &m->u.verify);
	case RSEC_MSG_REBUILD: return read_rebuild(in, &m->u.rebuild);
	case RSEC_MSG_REBUILD_READY: return rsec_buf_get_u32(in, &m->u.rebuild_ready.epoch);
	case RSEC_MSG_SESSION:
	case RSEC_MSG_RESUME: return read_session(in, &m->u.session);
	case RSEC_MSG_REKEY:
	case RSEC_MSG_REKEY_REPLY: return read_rekey(in, &m->u.rekey, true);
	case RSEC_MSG_REKEY_DONE: return read_rekey(in, &m->u.rekey, false);
	case RSEC_MSG_PATH_CHECK:
		RSEC_GUARD(rsec_buf_get_u32(in, &m->u.path_check.epoch));
		return rsec_buf_get_u64(in, &m->u.path_check.delivered);
	default: return RSEC_E_PROTO;
	}
}

static RSEC_MUST_CHECK int decode_header(const uint8_t *hdr, size_t n, uint8_t *type, uint16_t *lane_out,
					 uint32_t *body_len)
{
	struct rsec_buf in;
	uint8_t version, t;
	uint16_t lane;
	uint32_t len;

	RSEC_ENSURE_REF(hdr);
	RSEC_ENSURE_REF(type);
	RSEC_ENSURE_REF(body_len);
	RSEC_ENSURE(n >= RSEC_WIRE_HDR_LEN, RSEC_E_PROTO);
	rsec_buf_init_read(&in, hdr, RSEC_WIRE_HDR_LEN);
	RSEC_GUARD(rsec_buf_get_u8(&in, &version));
	RSEC_GUARD(rsec_buf_get_u8(&in, &t));
	RSEC_GUARD(rsec_buf_get_u16(&in, &lane));
	RSEC_GUARD(rsec_buf_get_u32(&in, &len));
	RSEC_ENSURE(version == RSEC_WIRE_VERSION, RSEC_E_PROTO);
	RSEC_ENSURE(t >= RSEC_MSG_TYPE_MIN && t <= RSEC_MSG_TYPE_MAX && t != RSEC_MSG_RESERVED, RSEC_E_PROTO);
	RSEC_ENSURE(lane <= RSEC_WIRE_LANE_MAX, RSEC_E_PROTO);
	RSEC_ENSURE(len <= RSEC_WIRE_MAX_BODY, RSEC_E_PROTO);
	*type = t;
	*lane_out = lane;
	*body_len = len;
	return 0;
}

int rsec_wire_decode_header(const uint8_t *hdr, size_t n, uint8_t *type, uint32_t *body_len)
{
	uint16_t lane;
	return decode_header(hdr, n, type, &lane, body_len);
}

static RSEC_MUST_CHECK int wire_decode(const uint8_t *frame, size_t len, struct rsec_msg *m)
{
	struct rsec_buf in;
	uint32_t body_len;

	RSEC_GUARD(decode_header(frame, len, &m->type, &m->lane, &body_len));
	RSEC_ENSURE(len - RSEC_WIRE_HDR_LEN == body_len, RSEC_E_PROTO);
	rsec_buf_init_read(&in, frame + RSEC_WIRE_HDR_LEN, body_len);
	/* Any short read is a truncated body: malformed input, not a range error. */
	RSEC_ENSURE(read_body(&in, m) == 0, RSEC_E_PROTO);
	RSEC_ENSURE(rsec_buf_remaining(&in) == 0, RSEC_E_PROTO);
	RSEC_ENSURE(check_msg(m) == 0, RSEC_E_PROTO);
	return 0;
}

int rsec_wire_decode(const uint8_t *frame, size_t len, struct rsec_msg *m)
{
	RSEC_ENSURE_REF(m);
	memset(m, 0, sizeof(*m));
	RSEC_ENSURE_REF(frame);
	int rc = wire_decode(frame, len, m);
	if (rc < 0)
		memset(m, 0, sizeof(*m)); /* no half-parsed message for a careless caller */
	return rc;
}

/* ---- encoding: the same schema, written ---- */

static RSEC_MUST_CHECK int write_text(struct rsec_buf *out, const struct rsec_wire_text *t)
{
	RSEC_GUARD(rsec_buf_put_u16(out, t->len));
	RSEC_GUARD(rsec_buf_put_bytes(out, t->s, t->len));
	return 0;
}

static RSEC_MUST_CHECK int write_hello(struct rsec_buf *out, const struct rsec_msg_hello *h)
{
	RSEC_GUARD(rsec_buf_put_u16(out, h->min_version));
	RSEC_GUARD(rsec_buf_put_u16(out, h->max_version));
	RSEC_GUARD(rsec_buf_put_u32(out, h->features));
	RSEC_GUARD(rsec_buf_put_u8(out, h->aead));
	return 0;
}

static RSEC_MUST_CHECK int write_qp_info(struct rsec_buf *out, const struct rsec_msg_qp_info *q)
{
	RSEC_GUARD(rsec_buf_put_u32(out, q->qpn));
	RSEC_GUARD(rsec_buf_put_u32(out, q->psn));
	RSEC_GUARD(rsec_buf_put_u16(out, q->lid));
	RSEC_GUARD(rsec_buf_put_bytes(out, q->gid, sizeof(q->gid)));
	RSEC_GUARD(rsec_buf_put_u8(out, q->mtu));
	RSEC_GUARD(rsec_buf_put_u8(out, q->link));
	RSEC_GUARD(rsec_buf_put_u32(out, q->recv_slots));
	RSEC_GUARD(rsec_buf_put_u32(out, q->slot_size));
	RSEC_GUARD(rsec_buf_put_u32(out, q->max_msg));
	return 0;
}

static RSEC_MUST_CHECK int write_grant(struct rsec_buf *out, const struct rsec_msg_grant *g)
{
	RSEC_GUARD(rsec_buf_put_u64(out, g->grant_id));
	RSEC_GUARD(rsec_buf_put_u64(out, g->addr));
	RSEC_GUARD(rsec_buf_put_u32(out, g->rkey));
	RSEC_GUARD(rsec_buf_put_u64(out, g->len));
	RSEC_GUARD(rsec_buf_put_u32(out, g->access));
	RSEC_GUARD(rsec_buf_put_u32(out, g->ttl_ms));
	RSEC_GUARD(rsec_buf_put_u64(out, g->tag));
	return g->has_key_id ? rsec_buf_put_u64(out, g->key_id) : 0;
}

static RSEC_MUST_CHECK int write_keepalive(struct rsec_buf *out, const struct rsec_msg_keepalive *k)
{
	RSEC_GUARD(rsec_buf_put_u64(out, k->nonce));
	RSEC_GUARD(rsec_buf_put_u8(out, k->is_reply));
	return 0;
}

static RSEC_MUST_CHECK int write_verify(struct rsec_buf *out, const struct rsec_msg_verify *v)
{
	RSEC_GUARD(rsec_buf_put_u64(out, v->grant_id));
	RSEC_GUARD(rsec_buf_put_u64(out, v->offset));
	RSEC_GUARD(rsec_buf_put_u64(out, v->len));
	RSEC_GUARD(rsec_buf_put_u8(out, v->mac_alg));
	RSEC_GUARD(rsec_buf_put_bytes(out, v->mac, sizeof(v->mac)));
	return 0;
}

static RSEC_MUST_CHECK int write_rebuild(struct rsec_buf *out, const struct rsec_msg_rebuild *r)
{
	RSEC_GUARD(rsec_buf_put_u32(out, r->epoch));
	RSEC_GUARD(rsec_buf_put_u8(out, r->reason));
	RSEC_GUARD(rsec_buf_put_u64(out, r->opened));
	return write_qp_info(out, &r->qp);
}

static RSEC_MUST_CHECK int write_session(struct rsec_buf *out, const struct rsec_msg_session *s)
{
	RSEC_GUARD(rsec_buf_put_bytes(out, s->token, sizeof(s->token)));
	return s->has_epoch ? rsec_buf_put_u32(out, s->epoch) : 0;
}

static RSEC_MUST_CHECK int write_rekey(struct rsec_buf *out, const struct rsec_msg_rekey *r, bool with_key)
{
	RSEC_GUARD(rsec_buf_put_u32(out, r->epoch));
	RSEC_GUARD(rsec_buf_put_u32(out, r->gen));
	return with_key ? rsec_buf_put_bytes(out, r->pub, sizeof(r->pub)) : 0;
}

static RSEC_MUST_CHECK int write_body(struct rsec_buf *out, const struct rsec_msg *m)
{
	switch (m->type) {
	case RSEC_MSG_HELLO: return write_hello(out, &m->u.hello);
	case RSEC_MSG_QP_INFO: return write_qp_info(out, &m->u.qp_info);
	case RSEC_MSG_READY: return 0;
	case RSEC_MSG_GRANT: return write_grant(out, &m->u.grant);
	case RSEC_MSG_REVOKE: return rsec_buf_put_u64(out, m->u.revoke.grant_id);
	case RSEC_MSG_KEEPALIVE: return write_keepalive(out, &m->u.keepalive);
	case RSEC_MSG_DISCONNECT:
		RSEC_GUARD(rsec_buf_put_u32(out, m->u.disconnect.reason));
		return write_text(out, &m->u.disconnect.text);
	case RSEC_MSG_ERROR:
		RSEC_GUARD(rsec_buf_put_u32(out, m->u.error.code));
		return write_text(out, &m->u.error.text);
	case RSEC_MSG_VERIFY: return write_verify(out, &m->u.verify);
	case RSEC_MSG_REBUILD: return write_rebuild(out, &m->u.rebuild);
	case RSEC_MSG_REBUILD_READY: return rsec_buf_put_u32(out, m->u.rebuild_ready.epoch);
	case RSEC_MSG_SESSION:
	case RSEC_MSG_RESUME: return write_session(out, &m->u.session);
	case RSEC_MSG_REKEY:
	case RSEC_MSG_REKEY_REPLY: return write_rekey(out, &m->u.rekey, true);
	case RSEC_MSG_REKEY_DONE: return write_rekey(out, &m->u.rekey, false);
	case RSEC_MSG_PATH_CHECK:
		RSEC_GUARD(rsec_buf_put_u32(out, m->u.path_check.epoch));
		return rsec_buf_put_u64(out, m->u.path_check.delivered);
	default: return RSEC_E_RANGE;
	}
}

int rsec_wire_encode(const struct rsec_msg *m, uint8_t *out, size_t cap, size_t *out_len)
{
	struct rsec_buf body, hdr;
	size_t body_cap;

	RSEC_ENSURE_REF(m);
	RSEC_ENSURE_REF(out);
	RSEC_ENSURE_REF(out_len);
	RSEC_GUARD(check_msg(m));
	RSEC_ENSURE(cap >= RSEC_WIRE_HDR_LEN, RSEC_E_RANGE);
	/* Bounding the body buffer itself keeps every frame within RSEC_WIRE_MAX_BODY. */
	body_cap = cap - RSEC_WIRE_HDR_LEN;
	if (body_cap > RSEC_WIRE_MAX_BODY)
		body_cap = RSEC_WIRE_MAX_BODY;
	rsec_buf_init(&body, out + RSEC_WIRE_HDR_LEN, body_cap);
	RSEC_GUARD(write_body(&body, m));

	rsec_buf_init(&hdr, out, RSEC_WIRE_HDR_LEN);
	RSEC_GUARD(rsec_buf_put_u8(&hdr, RSEC_WIRE_VERSION));
	RSEC_GUARD(rsec_buf_put_u8(&hdr, m->type));
	RSEC_GUARD(rsec_buf_put_u16(&hdr, m->lane));
	RSEC_GUARD(rsec_buf_put_u32(&hdr, (uint32_t)rsec_buf_written(&body)));
	*out_len = RSEC_WIRE_HDR_LEN + rsec_buf_written(&body);
	return 0;
}

const char *rsec_wire_type_name(uint8_t type)
{
	switch (type) {
	case RSEC_MSG_HELLO: return "HELLO";
	case RSEC_MSG_QP_INFO: return "QP_INFO";
	case RSEC_MSG_READY: return "READY";
	case RSEC_MSG_GRANT: return "GRANT";
	case RSEC_MSG_REVOKE: return "REVOKE";
	case RSEC_MSG_KEEPALIVE: return "KEEPALIVE";
	case RSEC_MSG_DISCONNECT: return "DISCONNECT";
	case RSEC_MSG_ERROR: return "ERROR";
	case RSEC_MSG_VERIFY: return "VERIFY";
	case RSEC_MSG_REBUILD: return "REBUILD";
	case RSEC_MSG_REBUILD_READY: return "REBUILD_READY";
	case RSEC_MSG_SESSION: return "SESSION";
	case RSEC_MSG_RESUME: return "RESUME";
	case RSEC_MSG_REKEY: return "REKEY";
	case RSEC_MSG_REKEY_REPLY: return "REKEY_REPLY";
	case RSEC_MSG_REKEY_DONE: return "REKEY_DONE";
	case RSEC_MSG_PATH_CHECK: return "PATH_CHECK";
	default: return "UNKNOWN";
	}
}

void rsec_wire_text_set(struct rsec_wire_text *t, const char *s)
{
	size_t n = 0;

	if (t == NULL)
		return;
	for (; s != NULL && s[n] != '\0' && n < RSEC_WIRE_MAX_TEXT; n++) {
		unsigned char c = (unsigned char)s[n];

		t->s[n] = c >= RSEC_WIRE_TEXT_MIN_CHAR && c <= RSEC_WIRE_TEXT_MAX_CHAR ? (char)c : '?';
	}
	t->s[n] = '\0';
	t->len = (uint16_t)n;
}
