/* SPDX-License-Identifier: MIT */
/*
 * Packet sources for the commands that listen (sniff, cm-disconnect): a
 * capture file, or live capture through libpcap, non-blocking so that a
 * command can poll it against its own deadline. Errors are printed with the
 * command's name, including why live capture was refused.
 */
#ifndef RSEC_CAPTURE_H
#define RSEC_CAPTURE_H

#include <pcap/pcap.h>
#include <stdbool.h>

#include "proto/sniff_parse.h"

/* Open FILE, or (file NULL) capture live on iface; NULL after saying why. */
pcap_t *capture_open(const char *cmd, const char *file, const char *iface, int snaplen, int timeout_ms);

/* The decoder for p's link type; false after saying which link types are read. */
bool capture_link(const char *cmd, pcap_t *p, const char *name, enum sniff_link *link);

/* Apply a BPF filter expression; false after saying why (what names it: "--filter"). */
bool capture_set_filter(const char *cmd, pcap_t *p, const char *expr, const char *what);

#endif /* RSEC_CAPTURE_H */
