/* SPDX-License-Identifier: MIT */
/*
 * A session's control channel (chan.c): TLS over one TCP connection, the
 * frame being read, the frames the socket has not taken yet, and when it
 * last carried something. The session's first connection owns it; its lanes
 * point to the same one; a resumed session takes a new connection's whole.
 *
 * Invariants: rx.have <= rx.need <= sizeof(rx.buf); tx.len <= sizeof(tx.buf);
 * sock >= 0 whenever ssl is set, except in tests. The owner keeps the socket's
 * epoll interest: watch(owner) runs whenever what the channel waits for
 * (rsec_chan_wants_write) may have changed.
 */
#ifndef RSEC_CHAN_H
#define RSEC_CHAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include "base/wire.h"
#include "result.h"

/* Control frames waiting for the peer's TCP window, and how long they may wait. */
#define RSEC_CHAN_TXQ_MAX 32768u
#define RSEC_CHAN_STALL_MS 10000u

/* Incoming control frame being reassembled from TLS records. */
struct rsec_chan_rx {
	uint8_t buf[RSEC_WIRE_HDR_LEN + RSEC_WIRE_MAX_BODY];
	size_t have;
	size_t need; /* header, then header + body */
};

/* Outgoing control frames the TLS socket has not taken yet (plaintext: wiped as they leave). */
struct rsec_chan_tx {
	uint8_t buf[RSEC_CHAN_TXQ_MAX];
	size_t len;
	uint64_t since_ms; /* when the oldest queued byte was queued or the last progress */
	bool overflow;     /* a frame found no room: the peer is not reading */
};

struct rsec_chan {
	int sock;        /* -1: none (lost, or moved to another session) */
	SSL *ssl;
	bool closed;     /* its session failed: nothing more goes out */
	bool want_write; /* the TLS handshake waits for the socket to become writable */
	struct rsec_chan_rx rx;
	struct rsec_chan_tx tx;
	uint64_t last_rx_ms, last_tx_ms; /* for keepalive */
	int (*watch)(void *owner);
	void *owner;
};

/* A channel on sock (-1: none yet) whose owner keeps its epoll interest through watch. */
void rsec_chan_init(struct rsec_chan *ch, int sock, int (*watch)(void *owner), void *owner);
/* ch's TLS session, or NULL (no channel, or none any more). */
static inline SSL *rsec_chan_ssl(const struct rsec_chan *ch)
{
	return ch ? ch->ssl : NULL;
}
/* Does the channel wait for the socket to become writable (the handshake, or queued frames)? */
static inline bool rsec_chan_wants_write(const struct rsec_chan *ch)
{
	return ch->want_write || ch->tx.len > 0;
}
/*
 * Queue one frame (lane != 0: marked as that lane's; 0: m->lane as given)
 * and write what the socket takes now; never blocks. A peer that leaves
 * RSEC_CHAN_TXQ_MAX bytes unread gets RSEC_E_LIMIT (tx.overflow says so);
 * no channel, or a closed one, RSEC_E_CLOSED.
 */
RSEC_MUST_CHECK int rsec_chan_send(struct rsec_chan *ch, uint16_t lane, const struct rsec_msg *m);
/* rsec_chan_send's codes that mean the channel itself is gone (a session may park: resume.c). */
static inline bool rsec_chan_gone(int rc)
{
	return rc == RSEC_E_IO || rc == RSEC_E_TLS || rc == RSEC_E_CLOSED;
}
/* Write queued frames the socket takes now: 0 (maybe some left), or the channel's error. */
RSEC_MUST_CHECK int rsec_chan_flush(struct rsec_chan *ch);
/* Queued bytes have waited for the peer longer than RSEC_CHAN_STALL_MS. */
bool rsec_chan_stalled(const struct rsec_chan *ch, uint64_t now_ms);
/* Wipe whatever is still queued. */
void rsec_chan_discard(struct rsec_chan *ch);
/* 0 with *m filled, RSEC_E_AGAIN when no whole frame is available yet. */
RSEC_MUST_CHECK int rsec_chan_recv(struct rsec_chan *ch, struct rsec_msg *m);
/* Everything goes: queued and half-read frames wiped, TLS freed, the socket closed; ch has no channel. */
void rsec_chan_drop(struct rsec_chan *ch);

#endif /* RSEC_CHAN_H */
