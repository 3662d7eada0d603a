/* SPDX-License-Identifier: MIT */
/*
 * rdmasec-attack: reproduces the ReDMArk / NeVerMore attacks on soft-RoCE so
 * that rdmasec's defences can be shown to hold. Only loopback and the test
 * fabric are targeted unless --allow-any-target is given.
 */
#include <stdio.h>
#include <string.h>

#include "common/attack.h"

static const struct {
	const char *name;
	int (*fn)(int argc, char *argv[]);
	const char *description;
} subcommands[] = {
	{ "probe-qpn", probe_qpn_main, "V5: QP number sequence and how predictable it is" },
	{ "probe-rkey", probe_rkey_main, "V1-V3: rkey generator across MRs, contexts, PDs and processes" },
	{ "probe-alloc", probe_alloc_main, "V4: addresses of consecutively allocated buffers" },
	{ "inject", inject_main, "A1: forge RoCEv2 SEND / RDMA WRITE packets into a victim QP" },
	{ "qp-error", qp_error_main, "A2: one malformed packet moves the victim QP to error" },
	{ "sniff", sniff_main, "T3: what an on-path observer learns (QPN, PSN, rkey, VA), from a pcap or live" },
	{ "impersonate", impersonate_main, "NeVerMore 4.1: unprivileged injection via verbs, PSN sweep over many QPs" },
	{ "mem-access", mem_access_main, "A3: guess another client's rkey and address from the model, read/write it" },
	{ "cm-disconnect", cm_disconnect_main, "NeVerMore 4.3: forged CM Disconnect Request ends an rdma_cm connection" },
	{ "exhaust", exhaust_main, "A4 / NeVerMore 4.4: exhaust QPs locally or through a service; rdma cgroup limits" },
	{ "spoof-request", spoof_request_main, "NeVerMore 5.2.1: forged NVMe-oF Write capsule rewrites a chosen block" },
	{ "spoof-response", spoof_response_main, "NeVerMore 5.2.2: forged NVMe-oF completion to the host" },
	{ "cnp", cnp_main, "NeVerMore 5.2.4: forged RoCEv2 congestion notification packets (CNP) to a QP" },
	{ "matrix", matrix_main, "every attack against every victim on the fabric: outcome table, JSON, SVG" },
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: %s <command> [options]\n\nCommands:\n", PROG);
	for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
		fprintf(f, "  %-14s %s\n", subcommands[i].name, subcommands[i].description);
	fprintf(f, "\n'%s <command> --help' describes each one. Every command takes --json.\n", PROG);
}

int main(int argc, char *argv[])
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++) {
		if (!strcmp(argv[1], subcommands[i].name))
			return subcommands[i].fn(argc - 1, argv + 1);
	}
	fprintf(stderr, "%s: unknown command `%s'\n\n", PROG, argv[1]);
	usage(stderr);
	return 2;
}
