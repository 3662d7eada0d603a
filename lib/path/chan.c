/* SPDX-License-Identifier: MIT */
/*
 * The control channel (chan.h): wire.c frames carried in TLS records. Reads
 * are non-blocking and reassemble one frame at a time in a fixed buffer, so
 * a peer can never make us allocate; writes are queued and never block.
 */
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "base/clock.h"
#include "base/tls.h"
#include "chan.h"

void rsec_chan_init(struct rsec_chan *ch, int sock, int (*watch)(void *owner), void *owner)
{
	*ch = (struct rsec_chan){ .sock = sock, .watch = watch, .owner = owner };
	ch->last_rx_ms = ch->last_tx_ms = rsec_now_ms();
}

/*
 * Frames wait in a fixed queue until the socket takes them, so no peer can
 * make us block on a write: one that stops reading fills the queue (or
 * leaves it unread for RSEC_CHAN_STALL_MS) and its session fails.
 */
int rsec_chan_send(struct rsec_chan *ch, uint16_t lane, const struct rsec_msg *m)
{
	RSEC_ENSURE(ch && ch->ssl && !ch->closed, RSEC_E_CLOSED);
	struct rsec_chan_tx *q = &ch->tx;
	uint8_t frame[RSEC_WIRE_MAX_FRAME];
	size_t len = 0;
	struct rsec_msg tagged = *m;
	if (lane)
		tagged.lane = lane;
	int rc = rsec_wire_encode(&tagged, frame, sizeof(frame), &len);
	OPENSSL_cleanse(&tagged, sizeof(tagged));
	if (rc == 0 && len > sizeof(q->buf) - q->len) {
		q->overflow = true; /* the peer left RSEC_CHAN_TXQ_MAX bytes unread */
		rc = RSEC_E_LIMIT;
	}
	if (rc == 0) {
		if (q->len == 0)
			q->since_ms = rsec_now_ms();
		memcpy(q->buf + q->len, frame, len);
		q->len += len;
	}
	OPENSSL_cleanse(frame, sizeof(frame));
	RSEC_GUARD(rc);
	return rsec_chan_flush(ch);
}

int rsec_chan_flush(struct rsec_chan *ch)
{
	struct rsec_chan_tx *q = &ch->tx;
	int rc = 0;
	while (q->len > 0) {
		size_t done = 0;
		rc = rsec_tls_write_some(ch->ssl, q->buf, q->len, &done);
		if (rc < 0)
			break;
		/* Frames carry QPNs, PSNs and window keys: what left is wiped. */
		memmove(q->buf, q->buf + done, q->len - done);
		OPENSSL_cleanse(q->buf + q->len - done, done);
		q->len -= done;
		q->since_ms = rsec_now_ms();
	}
	if (rc < 0 && rc != RSEC_E_AGAIN)
		return rc;
	return ch->watch ? ch->watch(ch->owner) : 0;
}

bool rsec_chan_stalled(const struct rsec_chan *ch, uint64_t now_ms)
{
	const struct rsec_chan_tx *q = &ch->tx;
	return q->len > 0 && now_ms - q->since_ms > RSEC_CHAN_STALL_MS;
}

void rsec_chan_discard(struct rsec_chan *ch)
{
	OPENSSL_cleanse(ch->tx.buf, ch->tx.len);
	ch->tx.len = 0;
}

int rsec_chan_recv(struct rsec_chan *ch, struct rsec_msg *m)
{
	struct rsec_chan_rx *rx = &ch->rx;
	if (rx->need == 0)
		rx->need = RSEC_WIRE_HDR_LEN;
	for (;;) {
		while (rx->have < rx->need) {
			size_t got = 0;
			RSEC_GUARD(rsec_tls_read_some(ch->ssl, rx->buf + rx->have, rx->need - rx->have, &got));
			rx->have += got;
		}
		if (rx->need == RSEC_WIRE_HDR_LEN) {
			uint8_t type;
			uint32_t body_len;
			RSEC_GUARD(rsec_wire_decode_header(rx->buf, rx->have, &type, &body_len));
			rx->need = RSEC_WIRE_HDR_LEN + body_len;
			if (body_len > 0)
				continue;
		}
		int rc = rsec_wire_decode(rx->buf, rx->have, m);
		OPENSSL_cleanse(rx->buf, rx->have);
		rx->have = 0;
		rx->need = RSEC_WIRE_HDR_LEN;
		return rc;
	}
}

void rsec_chan_drop(struct rsec_chan *ch)
{
	rsec_chan_discard(ch);
	OPENSSL_cleanse(&ch->rx, sizeof(ch->rx));
	SSL_free(ch->ssl);
	ch->ssl = NULL;
	if (ch->sock >= 0)
		close(ch->sock);
	ch->sock = -1;
	ch->want_write = false;
}
