/* SPDX-License-Identifier: MIT */
/* PATH_CHECK: a data path that forged packets silenced, found (check.h). */
#include "check.h"
#include "data.h"

/*
 * The peer's PATH_CHECK, once nothing waits in our receive CQ (no whole
 * message holds rsec_data_poll's loop back): every frame its send queue completed
 * was acknowledged by our QP and must have been reaped and opened by now.
 */
int rsec_data_check_judge(struct rsec_path *path)
{
	if (!path->check.claim || path->rx_complete)
		return 0;
	path->check.claim = false;
	uint64_t opened = rsec_data_opened(path);
	if (opened >= path->check.claimed)
		return 0;
	return rsec_fault_data(&path->fault, RSEC_WIRE_REBUILD_SILENT, RSEC_E_QP,
			       "data path silent: our queue pair acknowledged %llu frames of the peer and delivered "
			       "%llu (forged packets took their PSNs)",
			       (unsigned long long)path->check.claimed, (unsigned long long)opened);
}

void rsec_data_check_claim(struct rsec_path *path, const struct rsec_msg_path_check *m)
{
	if (m->epoch != path->rb.epoch || path->rb.state != REBUILD_NONE || !path->have_seal)
		return; /* about a data path that is gone or going */
	if (!path->check.claim || m->delivered > path->check.claimed)
		path->check.claimed = m->delivered;
	path->check.claim = true;
}

/* Whether our PATH_CHECKs are off, or nothing can be said now (no keys, or a rebuild runs). */
static bool check_idle(const struct rsec_path *path)
{
	return !path->cfg.path_checks || !path->have_seal || path->rb.state != REBUILD_NONE;
}

/*
 * Unsignaled frames at the send queue's end complete unseen until a signaled
 * one follows: a silent data path drops exactly those when traffic stops (a
 * client waiting for their answers). Once the first of them is
 * RSEC_PATH_CHECK_MS old, a signaled CREDIT_ONLY frame follows them; its
 * completion ends them too, and the next PATH_CHECK names them.
 */
static RSEC_MUST_CHECK int close_tail(struct rsec_path *path, uint64_t now)
{
	if (now - path->check.tail_ms < RSEC_PATH_CHECK_MS)
		return 0;
	return rsec_data_signal_tail(path);
}

int rsec_data_check_step(struct rsec_path *path, uint64_t now, struct rsec_msg_path_check *m)
{
	if (rsec_fault_pending(&path->fault))
		return path->fault.code;
	if (check_idle(path))
		return 0;
	RSEC_GUARD(close_tail(path, now));
	if (path->sendq.done <= path->check.told || now - path->check.told_ms < RSEC_PATH_CHECK_MS)
		return 0;
	path->check.told = path->sendq.done;
	path->check.told_ms = now;
	*m = (struct rsec_msg_path_check){ .epoch = path->rb.epoch, .delivered = path->sendq.done };
	return 1;
}

uint64_t rsec_data_check_next_ms(const struct rsec_path *path)
{
	if (check_idle(path))
		return UINT64_MAX;
	uint64_t t = UINT64_MAX;
	if (path->sendq.done > path->check.told)
		t = path->check.told_ms + RSEC_PATH_CHECK_MS;
	/* Without a credit the tail waits for one, and the receive that brings it wakes us: no timer to spin on. */
	if (rsec_data_tail_unseen(path) && path->check.tail_ms + RSEC_PATH_CHECK_MS < t)
		t = path->check.tail_ms + RSEC_PATH_CHECK_MS;
	return t;
}
