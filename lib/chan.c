/* SPDX-License-Identifier: MIT */
/*
 * The control channel: wire.c frames carried in TLS records. Reads are
 * non-blocking and reassemble one frame at a time in a fixed buffer, so a
 * peer can never make us allocate; writes are small and bounded in time.
 */
#include <string.h>

#include <openssl/crypto.h>

#include "conn.h"

#define CHAN_WRITE_TIMEOUT_MS 5000

int rsec_chan_send(struct rsec_conn *c, const struct rsec_msg *m)
{
	uint8_t frame[RSEC_WIRE_HDR_LEN + RSEC_WIRE_MAX_BODY];
	size_t len;
	RSEC_GUARD(rsec_wire_encode(m, frame, sizeof(frame), &len));
	int rc = rsec_tls_write_all(c->ssl, frame, len, CHAN_WRITE_TIMEOUT_MS);
	/* Frames carry QPNs, PSNs and window keys: leave none on the stack. */
	OPENSSL_cleanse(frame, len);
	return rc;
}

int rsec_chan_recv(struct rsec_conn *c, struct rsec_msg *m)
{
	struct rsec_chan_rx *rx = &c->crx;
	if (rx->need == 0)
		rx->need = RSEC_WIRE_HDR_LEN;
	for (;;) {
		while (rx->have < rx->need) {
			size_t got = 0;
			RSEC_GUARD(rsec_tls_read_some(c->ssl, rx->buf + rx->have, rx->need - rx->have, &got));
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
