/* SPDX-License-Identifier: MIT */
/*
 * What a SIGHUP may change in rdmasec-blkd's configuration. The whole file
 * is read again through the one reader (blkd_conf.c) and checked as at
 * start-up; the keys that size or place what already exists (listen
 * address, device, queue and memory limits, threads, logs, credential
 * paths, and each export's name, backing path, size, block size and
 * O_DIRECT) keep their running values. The rest, each export's access
 * lists included, and keys added later, take effect for new OPENs; the
 * access lists also for open sessions (target.c closes those they drop).
 */
#ifndef RSEC_BLKD_CONF_LIVE_H
#define RSEC_BLKD_CONF_LIVE_H

#include <stddef.h>

#include "blkd_conf.h"

/*
 * Gives fresh the running values (old's) of the keys that need a restart;
 * names gets those that differed, comma-separated. When the exports differ
 * in number or name, fresh keeps old's exports whole ("exports").
 * Returns how many differed.
 */
size_t blkd_conf_pin_fixed(struct blkd_conf *fresh, const struct blkd_conf *old, char *names, size_t cap);

#endif
