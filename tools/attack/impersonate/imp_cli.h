/* SPDX-License-Identifier: MIT */
/* impersonate's command line (imp_cli.c): its options, checked. */
#ifndef RSEC_ATTACK_IMP_CLI_H
#define RSEC_ATTACK_IMP_CLI_H

#include <stdbool.h>
#include <stdint.h>

#define IMP_MAX_QPS 4096u
#define IMP_MAX_WINDOW 128u       /* rxe sends at most 129 PSNs past the last ACK */

struct imp_opts {
	const char *device;
	uint32_t gid_index;
	bool have_gid;
	uint32_t dst_ip;
	bool have_dst;
	uint32_t qpn_first, qpn_count;
	bool have_qpn;
	uint32_t psn_start, psn_count;
	uint32_t qps, window;
	bool send;
	uint32_t rkey;
	uint64_t va;
	uint32_t passes;
	double max_time;
	bool watch, progress, allow_any, json;
};

/* -1: o is filled and its target allowed; 0: --help was printed; 2: bad usage (said). */
int imp_parse_args(int argc, char *argv[], struct imp_opts *o);

#endif
