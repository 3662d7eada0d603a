/* SPDX-License-Identifier: MIT */
/* Structured log of the daemons (rdmasec-server, rdmasec-blkd): one logfmt line per event on stderr. */
#ifndef RSEC_TOOLS_LOG_H
#define RSEC_TOOLS_LOG_H

void log_set_verbose(int verbose);
/* fmt adds key=value pairs after ts, level and event; use log_q() for free text. */
void log_event(const char *level, const char *event, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Quotes and escapes s for a logfmt value (static buffer, one per call site line). */
const char *log_q(const char *s);
int log_verbose(void);

#endif
