/* SPDX-License-Identifier: MIT */
/*
 * What a SIGHUP may change in rdmasec-server's configuration. The whole file
 * is read again through the one reader (conf.c), so every key it knows is
 * checked as at start-up; the keys that size or place what already exists
 * (listen address, device, limits the acceptor and workers were built with,
 * credential paths, logs) keep their running values. Every other key,
 * including keys added later, takes effect.
 */
#ifndef RSEC_CONF_LIVE_H
#define RSEC_CONF_LIVE_H

#include <stddef.h>

#include "conf.h"

/*
 * Gives fresh the running values (old's) of the keys that need a restart;
 * names gets those that differed, comma-separated ("" if none). Returns
 * how many differed.
 */
size_t conf_pin_fixed(struct rsec_conf *fresh, const struct rsec_conf *old, char *names, size_t cap);

#endif
