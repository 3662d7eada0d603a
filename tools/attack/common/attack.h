/* SPDX-License-Identifier: MIT */
/* Shared pieces of rdmasec-attack: argument parsing, output (JSON: json_out.h), progress, raw sending. */
#ifndef RSEC_ATTACK_H
#define RSEC_ATTACK_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "json_out.h"
#include "proto/roce_packet.h"

struct ibv_context;
struct option;

#define PROG "rdmasec-attack"

int probe_qpn_main(int argc, char *argv[]);
int probe_rkey_main(int argc, char *argv[]);
int probe_alloc_main(int argc, char *argv[]);
int inject_main(int argc, char *argv[]);
int qp_error_main(int argc, char *argv[]);
int sniff_main(int argc, char *argv[]);
int impersonate_main(int argc, char *argv[]);
int mem_access_main(int argc, char *argv[]);
int cm_disconnect_main(int argc, char *argv[]);
int exhaust_main(int argc, char *argv[]);
int spoof_request_main(int argc, char *argv[]);
int spoof_response_main(int argc, char *argv[]);
int cnp_main(int argc, char *argv[]);
int matrix_main(int argc, char *argv[]);

/* Strict numbers: decimal or 0x-hex, whole string, 0..max. Print why on failure. */
bool parse_u64(const char *s, uint64_t max, uint64_t *out, const char *what);
bool parse_u32(const char *s, uint32_t max, uint32_t *out, const char *what);
bool parse_ipv4(const char *s, uint32_t *out, const char *what);
/* START:COUNT with START <= 0xFFFFFF and 1 <= COUNT <= 0x1000000. */
bool parse_sweep(const char *s, uint32_t *start, uint32_t *count);
/* Hex string (even length, no separators) into buf; *len gets the size. */
bool parse_hex(const char *s, uint8_t *buf, size_t cap, size_t *len, const char *what);
const char *ipv4_str(uint32_t ip, char buf[static 16]);

/* Seconds on the monotonic clock: for rates, deadlines and elapsed times. */
double now_s(void);

/*
 * Only loopback and the fabric network may be attacked unless the user says
 * --allow-any-target. Prints the refusal. 
 */
bool target_allowed(uint32_t ip, bool allow_any);

/* A progress bar on stderr, drawn only when stderr is a terminal. */
struct progress {
	const char *label;
	uint64_t total;
	int last;
	bool on;
};
void progress_start(struct progress *p, const char *label, uint64_t total);
void progress_update(struct progress *p, uint64_t done);
void progress_end(struct progress *p);

/* Open an RDMA device by name (NULL: the first one). Prints why on failure. */
struct ibv_context *open_device(const char *name);

/* Forged-packet sending shared by inject and qp-error. */
struct forge_opts {
	uint32_t dst_ip, src_ip;
	uint32_t qpn;
	uint32_t psn, count;     /* count 1 unless --psn-sweep */
	bool psn_fixed;          /* every packet carries psn (CNP: the field is reserved) */
	bool have_dst, have_src, have_qpn, have_psn;
	const char *iface;       /* SO_BINDTODEVICE, and source address for routing */
	uint32_t bind_ip;
	bool have_bind;
	uint16_t sport;
	uint32_t interval_us;
	const char *pcap;        /* also write the forged packets here */
	bool no_send;
	bool allow_any;
	bool json;
};

/* Handle one of the shared options (getopt_long value opt); true if it was one. */
bool forge_parse_opt(struct forge_opts *o, int opt, const char *arg, bool *bad);
/*
 * The getopt loop of a forging subcommand: the shared options into o, the
 * command's own (values >= OPT_FIRST_PRIVATE) to own(opt, arg, ctx), which
 * says whether the value was good. Returns -1 to go on, *bad telling
 * whether an option was bad, or the exit status: 0 after --help (help to
 * stdout), 2 for an unknown option (help to stderr) or an operand.
 */
int forge_getopt(int argc, char *argv[], const struct option *long_opts, const char *cmd, struct forge_opts *o,
		 bool (*own)(int opt, const char *arg, void *ctx), void *ctx, void (*help)(FILE *f), bool *bad);
/* Check the shared options after parsing; prints what is missing. */
bool forge_check(const struct forge_opts *o, const char *cmd);
/*
 * Send tmpl once per PSN of the sweep (tmpl's PSN, IP and QPN fields are
 * filled from o). *sent gets the packets sent. Returns 0 or an RSEC_E_* code.
 */
RSEC_MUST_CHECK int forge_run(const struct forge_opts *o, struct roce_pkt *tmpl, uint64_t *sent);

/* The long options every forging subcommand takes (values >= 0x100). */
enum {
	OPT_DST = 0x100, OPT_SRC, OPT_QPN, OPT_PSN, OPT_SWEEP, OPT_IFACE, OPT_BIND,
	OPT_SPORT, OPT_INTERVAL, OPT_PCAP, OPT_NO_SEND, OPT_ALLOW_ANY, OPT_JSON,
	OPT_FIRST_PRIVATE = 0x200,
};
#define FORGE_LONG_OPTIONS                                               \
	{ "dst", required_argument, NULL, OPT_DST },                     \
	{ "src", required_argument, NULL, OPT_SRC },                     \
	{ "qpn", required_argument, NULL, OPT_QPN },                     \
	{ "psn", required_argument, NULL, OPT_PSN },                     \
	{ "psn-sweep", required_argument, NULL, OPT_SWEEP },             \
	{ "iface", required_argument, NULL, OPT_IFACE },                 \
	{ "bind", required_argument, NULL, OPT_BIND },                   \
	{ "sport", required_argument, NULL, OPT_SPORT },                 \
	{ "interval-us", required_argument, NULL, OPT_INTERVAL },        \
	{ "pcap", required_argument, NULL, OPT_PCAP },                   \
	{ "no-send", no_argument, NULL, OPT_NO_SEND },                   \
	{ "allow-any-target", no_argument, NULL, OPT_ALLOW_ANY },        \
	{ "json", no_argument, NULL, OPT_JSON }

#define FORGE_HELP                                                                           \
	"  --dst IP              victim's address (its RoCE GID); loopback or 10.77.0.0/24\n" \
	"  --src IP              spoofed source: the victim QP's connected peer\n"            \
	"  --qpn N               victim's QP number (0..0xFFFFFF)\n"                          \
	"  --psn N               the PSN the victim expects next (0..0xFFFFFF)\n"            \
	"  --psn-sweep S:C       instead, send C packets with PSNs S, S+1, ... (wraps)\n"     \
	"  --iface IF            send out of IF (SO_BINDTODEVICE) from IF's own address\n"   \
	"  --bind IP             routing source address (default: IF's first IPv4)\n"       \
	"  --sport N             UDP source port (default 49152; rxe does not check it)\n"   \
	"  --interval-us N       pause between packets of a sweep\n"                         \
	"  --pcap FILE           also write the forged packets to FILE (raw IPv4 pcap)\n"    \
	"  --no-send             build (and --pcap) only; needs no privilege\n"             \
	"  --allow-any-target    allow a --dst outside loopback and 10.77.0.0/24\n"          \
	"  --json                print one JSON result line on stdout\n"

#endif /* RSEC_ATTACK_H */
