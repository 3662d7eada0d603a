/* SPDX-License-Identifier: MIT */
/* rdmasec-blkd's event loop: every session and its queue pairs, from one thread. */
#ifndef RSEC_BLKD_TARGET_H
#define RSEC_BLKD_TARGET_H

#include "blkd_conf.h"
#include "log.h"
#include "trust_conf.h"

/* The configuration as it is now (SIGHUP): a new one the caller frees, or NULL with err. */
typedef struct blkd_conf *(*blkd_conf_reader)(void *arg, char *err, size_t errlen);

/*
 * Serve until SIGINT or SIGTERM. The exit status: 0, or 1 if the target could
 * not start. SIGHUP: conf is replaced by reread's (blkd_conf_live.h) and the
 * credentials are reloaded. trust (NULL: none): --trust-etcd's watcher; each
 * new copy it writes is reloaded as SIGHUP would, each copy it refuses is
 * logged, audited and counted as a failed reload.
 */
int target_run(struct blkd_conf *conf, blkd_conf_reader reread, void *arg, struct trust_watch *trust);

/* The target logs one logfmt line per event on stderr through the tools' log (tools/common/log.h). */
#define blkd_log log_event

#endif
