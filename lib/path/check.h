/* SPDX-License-Identifier: MIT */
/*
 * PATH_CHECK (check.c; docs/protocol.md, "Silent data paths"): a forged
 * packet a queue pair took in place of the peer's moves its expected PSN,
 * and the peer's real frames are then acknowledged as duplicates and
 * dropped, with no completion on either side. Each side says over TLS what
 * its send queue completed; the other compares it with what it opened.
 */
#ifndef RSEC_PATH_CHECK_H
#define RSEC_PATH_CHECK_H

#include <stdint.h>

#include "base/wire.h"
#include "path.h"
#include "result.h"

/* How often at most a queue pair sends PATH_CHECK while its frames complete. */
#define RSEC_PATH_CHECK_MS 250u

/* The peer's PATH_CHECK: kept for rsec_data_poll to judge, unless it is of another epoch or a rebuild runs. */
void rsec_data_check_claim(struct rsec_path *path, const struct rsec_msg_path_check *m);
/*
 * The peer's claim, judged once every receive completion is reaped (no whole
 * message waits for the application): fewer frames opened than it says our
 * QP acknowledged is a data-path fault (RSEC_WIRE_REBUILD_SILENT, recorded).
 * Returns 0 or the fault's code.
 */
RSEC_MUST_CHECK int rsec_data_check_judge(struct rsec_path *path);
/*
 * Our side at now, for a peer that takes PATH_CHECK: unsignaled frames at
 * the send queue's end older than RSEC_PATH_CHECK_MS get a signaled
 * CREDIT_ONLY frame behind them (their completions are otherwise unseen),
 * and a PATH_CHECK is due when frames completed since the last one, which
 * went RSEC_PATH_CHECK_MS ago or more. Returns 1 with *m filled (the check
 * counted as sent), 0, or the fault (recorded).
 */
RSEC_MUST_CHECK int rsec_data_check_step(struct rsec_path *path, uint64_t now, struct rsec_msg_path_check *m);
/* When our next check step has work (a check, or a tail to close); UINT64_MAX when none. */
uint64_t rsec_data_check_next_ms(const struct rsec_path *path);

#endif /* RSEC_PATH_CHECK_H */
