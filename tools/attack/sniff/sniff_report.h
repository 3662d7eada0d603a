/* SPDX-License-Identifier: MIT */
/* What sniff found, as a table for people and as one JSON object for programs. */
#ifndef RSEC_SNIFF_REPORT_H
#define RSEC_SNIFF_REPORT_H

#include <stdio.h>

#include "sniff_track.h"

struct sniff_source {
	const char *name;     /* the pcap file or the interface */
	bool live;
	const char *linktype; /* pcap's name for it */
};

void sniff_report_text(FILE *f, const struct sniff_source *src, const struct sniff_state *s);
void sniff_report_json(FILE *f, const struct sniff_source *src, const struct sniff_state *s);

#endif /* RSEC_SNIFF_REPORT_H */
