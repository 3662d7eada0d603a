/* SPDX-License-Identifier: MIT */
/*
 * What one queue pair's engine owns: its QP, message keys, send and receive
 * rings and credits, the message being sent and the one being reassembled,
 * its grants and the peer's, its one-sided operations, its counters and the
 * first fault it found; and what its session told it (cfg), the state the
 * session sets and it reads (phase, close code, rebuild state, key chain,
 * channel), and the hooks it reports through. A connection (session/conn.h)
 * holds one as `path`; path/ never sees the connection.
 *
 * Invariants: have_qp says qp holds a PD, CQs and QP; have_seal says seal
 * holds keys. credits <= peer_slots; credits_owed < recv_slots. txm is NULL
 * or holds txm_len bytes of which txm_off went out. rx_len <= rx_cap, or
 * <= rx_direct_cap while rx_in_direct. fault: see fault.h.
 */
#ifndef RSEC_PATH_H
#define RSEC_PATH_H

#include <stdbool.h>
#include <stdint.h>

#include "base/audit.h"
#include "base/clock.h"
#include "base/rekey.h"
#include "base/seal.h"
#include "base/sealed.h"
#include "chan.h"
#include "fault.h"
#include "grant_keys.h"
#include "grant_table.h"
#include "ops.h"
#include "rdmasec.h"
#include "sendq.h"
#include "verbs/completion.h"
#include "verbs/dev.h"
#include "verbs/qp.h"
#include "verbs/qpool.h"

/* rsec_write and rsec_read copy up to this much through a buffer registered
 * once per queue pair instead of registering the caller's (onesided.c). */
#define RSEC_STAGE_SIZE 65536u
/* Receive buffers, ours and (announced in QP_INFO) the peer's: a peer must
 * stay within the limits we hold ourselves to. */
#define RSEC_SLOT_SIZE_MIN 4096u
#define RSEC_SLOT_SIZE_MAX (1u << 20)
#define RSEC_RECV_SLOTS_MIN 4u
#define RSEC_RECV_SLOTS_MAX 4096u
/* Our frames fill at most this much of a peer's slot; the send ring a
 * peer's announcement makes us pin stays within 1 MiB (data.c). */
#define RSEC_FRAME_MAX 65536u
/* How long an accepted message may wait for the peer's credits. */
#define RSEC_SEND_STALL_MS 30000u

/*
 * What the session tells its queue pair's engine, fixed once set-up has
 * negotiated it (session/conn.c, rsec_conn_configure_path): who we are on the
 * wire, the context's limits, and what both sides offered.
 */
struct rsec_path_cfg {
	bool is_server;
	uint16_t lane;             /* 0: the session's first queue pair; else its index on the wire */
	enum rsec_aead_alg aead;
	uint32_t recv_slots, slot_size, max_msg; /* our receive buffers, the largest message we take */
	uint32_t max_inflight;     /* one-sided operations in flight */
	enum rsec_grant_mode grant_mode;
	enum rsec_poll_mode poll_mode;
	struct rsec_dev *dev;      /* the device of the queue pair */
	int epfd;                  /* the connection's epoll set: the completion channel joins it */
	bool rebuilds;             /* both sides offered RSEC_WIRE_FEATURE_REBUILD */
	bool rebinds;              /* and RSEC_WIRE_FEATURE_REBIND: grants outlive a rebuild */
	bool grant_keys_chained;   /* and RSEC_WIRE_FEATURE_GRANT_KEYS: grants keyed from the rekey chain */
	bool path_checks;          /* the peer offered RSEC_WIRE_FEATURE_PATH_CHECK: it takes our PATH_CHECKs */
};

/*
 * How the engine reports to its owner besides return codes and its fault
 * (the owner's, given with its first argument): audit, a record of one of
 * its events, which the owner completes with who and where (time, role,
 * connection, peer identity and address); explain, why a call failed while
 * the connection stays open, for rsec_conn_error.
 */
struct rsec_path_hooks {
	void (*audit)(void *owner, enum rsec_audit_event ev, const char *result, const char *reason,
		      const struct rsec_audit_region *region);
	void (*explain)(void *owner, const char *why);
};

struct rsec_region {
	struct rsec_path *path; /* the queue pair it was registered on */
	uint64_t serial;      /* per queue pair, never reused: names it where a pointer could be a later region's */
	struct ibv_mr *mr;    /* window mode: local registration the windows bind to */
	uint8_t *addr;
	size_t len;
	unsigned access;
	size_t map_len;       /* rsec_region_alloc: the mapping we own (0: caller's memory) */
	struct ibv_mr *local_mr; /* the local side of rsec_post's operations */
	bool local_ro;        /* local_mr without local write: READs may not land in it */
	unsigned users;       /* window binds and one-sided operations in flight over its registrations */
	bool dying;           /* freed by the application while users were in flight */
	struct rsec_region *next_dying;
	struct rsec_region *prev, *next; /* the path's live regions: deregistered before its PD goes */
};

/* Keys of the peer's sealed grants kept ready (sealed_post.c); more are derived again. */
#define RSEC_PEER_KEYS 8u

struct rsec_peer_key {
	uint64_t grant_id;
	struct rsec_sealed_key key; /* empty: slot unused */
};

/* A sealed write into one of the peer's grants, one per grant (sealed_post.c). */
enum rsec_sealed_write_state {
	SEALED_WRITE_FREE = 0,
	SEALED_WRITE_READY,   /* sealed, waiting for its rsec_post (posted form) */
	SEALED_WRITE_POSTED,  /* its WRITE is in flight: claimed when it succeeds */
	SEALED_WRITE_CLAIMED, /* told to the granter: the grant takes no other */
	SEALED_WRITE_ORPHAN,  /* the grant went while its WRITE was in flight: never claimed, freed when it ends */
};

struct rsec_sealed_write {
	enum rsec_sealed_write_state state;
	uint64_t grant_id;
	uint64_t region;            /* posted form: the serial of the region it was sealed in */
	size_t local_off;
	uint64_t remote_off, plain_len;
	uint8_t prefix[RSEC_SEALED_PREFIX_LEN];
};

/* Where a rebuild of the data path stands (rebuild.c). */
enum rsec_rebuild_state {
	REBUILD_NONE = 0,  /* the data path is up (or was never built) */
	REBUILD_SENT,      /* our REBUILD is out, our new QP in INIT: waiting for the peer's */
	REBUILD_CONNECTED, /* both halves in, new keys, new QP connected, REBUILD_READY out (or
			    * owed: ready_owed): waiting for the peer's */
	REBUILD_PARKED,    /* the control channel is lost: data path stopped, our REBUILD waits for a new channel */
};

struct rsec_rebuild {
	enum rsec_rebuild_state state;
	uint32_t epoch;           /* of the keys and QP in use; 0: set-up's */
	uint64_t deadline_ms;     /* a rebuild under way fails the connection after this */
	uint64_t opened;          /* REBUILD_SENT: the peer's frames of the old epoch we opened */
	uint64_t sent_opened;     /* the count our latest REBUILD carried (a peer that missed it needs it) */
	uint32_t target;          /* REBUILD_SENT: the epoch being built */
	bool again;               /* the new data path failed before the rebuild was over */
	uint8_t again_why;        /* RSEC_WIRE_REBUILD_* of that failure */
	bool ready_owed;          /* REBUILD_READY waits for our grants' binds on the new QP (their GRANTs go first) */
	bool peer_ready;          /* the peer's REBUILD_READY came while ours was owed */
	uint64_t started_ms[RSEC_MAX_REBUILDS]; /* when the latest rebuilds started, a ring */
	unsigned started_next;
	/* Data frames the peer did not open, recovered from the send ring: u8 flags | u32 len | bytes, in order. */
	uint8_t *resend;
	size_t resend_len, resend_off;
	char reason[200];         /* of the rebuild under way, or the latest one */
	char done_reason[200];    /* of the latest finished one: rsec_conn_rebuild_reason() */
};

/* Where the set-up stands; see session/conn.c for the message sequence. */
enum rsec_phase {
	PHASE_TLS,         /* TLS handshake */
	PHASE_HELLO,       /* waiting for the peer's HELLO */
	PHASE_QP_INFO,     /* waiting for the peer's QP_INFO */
	PHASE_READY,       /* server: waiting for the client's READY */
	PHASE_ESTABLISHED,
	PHASE_CLOSED,
};

struct rsec_path {
	/* Set by the session, read here. */
	struct rsec_path_cfg cfg;
	const struct rsec_path_hooks *hooks;
	void *owner;               /* the hooks' first argument: the connection */
	enum rsec_phase phase;
	int close_code;            /* PHASE_CLOSED: why (the session's rsec_conn_fail) */
	bool events_known;         /* the session has just asked epoll which fds are ready: chan_event is exact */
	struct rsec_chan *chan;    /* the session's control channel (its first connection's; NULL once lost or freed) */
	/* Driven by session/rebuild.c and rekey_exchange.c; the frames to resend and grant keys come from here. */
	struct rsec_rebuild rb;
	struct rsec_rekey rk;      /* the key chain of this epoch */

	struct rsec_qp qp;
	bool have_qp;
	struct rsec_qp_peer remote;
	struct rsec_seal seal;
	bool have_seal;
	uint32_t recv_slots;      /* receive buffers we post, cfg.slot_size each */
	uint32_t peer_slots;      /* the peer's: our initial credits */
	uint32_t peer_slot_size;  /* largest frame the peer accepts */
	uint32_t peer_max_msg;    /* largest message the peer accepts */
	uint32_t frame_size;      /* our largest frame: peer_slot_size, at most RSEC_FRAME_MAX */
	uint32_t send_slots;      /* send buffers, frame_size each */
	uint8_t *send_ring, *recv_ring;
	struct ibv_mr *send_mr, *recv_mr;
	struct rsec_sendq sendq;  /* frames in flight in the send ring's slots */
	/*
	 * PATH_CHECK (data.c): a forged packet our QP took in place of the peer's
	 * moves its expected PSN, and the peer's real frames are then acknowledged
	 * as duplicates and dropped, with no completion on either side. The peer
	 * says what its send queue completed; we compare it with what we opened.
	 */
	struct {
		bool claim;           /* the peer says our QP acknowledged its frames [0, claimed) of this epoch */
		uint64_t claimed;
		uint64_t told;        /* ours: [0, told) named by our latest PATH_CHECK, sent at told_ms */
		uint64_t told_ms;
		uint64_t tail_ms;     /* when the first of the unsignaled frames at the send queue's end went */
	} check;
	uint32_t binds_inflight;  /* window binds posted, not completed: sends wait for them */
	uint32_t credits;         /* frames we may still send */
	uint32_t credits_owed;    /* recv slots reposted but not yet announced */
	uint32_t credits_due;     /* credits_owed at which they go back in a CREDIT_ONLY frame */

	/* The part of an accepted message that waits for credits (rsec_send). */
	uint8_t *txm;
	size_t txm_len, txm_off;
	bool txm_started;         /* its FIRST fragment is out */
	uint64_t txm_progress_ms; /* last time a fragment of it went out */

	/* Reassembly of the message currently arriving: in rx_msg, or straight
	 * into the buffer of an rsec_recv waiting for it (rx_direct). */
	uint8_t *rx_msg;
	size_t rx_cap, rx_len;
	bool rx_started, rx_complete;
	uint8_t *rx_direct;       /* the waiting caller's buffer, while it waits */
	size_t rx_direct_cap;
	bool rx_in_direct;        /* the message so far is in rx_direct, not rx_msg */

	/* Grants we issued and grants the peer issued to us. */
	struct rsec_grant_table gt;
	struct rsec_region *dying; /* regions freed with binds in flight, destroyed when they complete */
	struct rsec_region *regions; /* regions not yet freed by the application */

	/* The peer's grants: their secrets (kept until rsec_conn_free), sealed ones' keys kept ready,
	 * sealed writes (sealed_post.c). */
	struct rsec_peer_grant_keys grantee_keys;
	struct rsec_peer_key peer_keys[RSEC_PEER_KEYS];
	unsigned peer_key_next;
	struct rsec_sealed_write sealed_writes[RSEC_MAX_GRANTS];
	uint64_t regions_made;    /* serials of this queue pair's regions */

	/* One-sided operations in flight (onesided.c). */
	struct rsec_ops ops;
	uint8_t *stage;           /* rsec_write/rsec_read's bytes up to RSEC_STAGE_SIZE, wiped after each */
	struct ibv_mr *stage_mr;
	uint64_t completions;     /* completions handled: a busy wait stops at the next one */
	bool chan_event;          /* busy polling, or events_known: the completion channel has an event to take */

	/* Counters rsec_conn_stats reports (the session adds its rebuilds and resumes). */
	struct rsec_conn_stats stats;
	uint64_t data_mac_failures; /* verified transfers whose bytes did not match */
	uint64_t onesided_bytes;  /* moved by our RDMA WRITEs and READs that succeeded: rekey_bytes counts them */
	struct rsec_seal_stats seal_before; /* counters of the keys earlier rebuilds replaced */

	struct rsec_fault fault; /* found here, not settled yet (session/settle.c) */
};

/* Is the data path being rebuilt (nothing may be posted)? */
static inline bool rsec_rebuilding(const struct rsec_path *p)
{
	return p->rb.state != REBUILD_NONE;
}

/* Frames recovered for sending again wait. */
static inline bool rsec_rebuild_resending(const struct rsec_path *p)
{
	return p->rb.resend != NULL;
}

/*
 * May an API call use the queue pair now? The one rule of include/rdmasec.h:
 * 0; once closed, the error that closed it; RSEC_E_AGAIN while it is being set up
 * and, for a call that posts on the queue pair (posts), while its data path
 * is rebuilt or its session waits to be resumed (rebuild PARKED).
 */
static inline int rsec_path_usable(const struct rsec_path *p, bool posts)
{
	if (p->phase == PHASE_CLOSED)
		return p->close_code;
	if (p->phase != PHASE_ESTABLISHED)
		return RSEC_E_AGAIN;
	return posts && (!p->ops.ring || rsec_rebuilding(p)) ? RSEC_E_AGAIN : 0;
}

#endif /* RSEC_PATH_H */
