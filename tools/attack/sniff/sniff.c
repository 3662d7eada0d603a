/* SPDX-License-Identifier: MIT */
/*
 * sniff (threat T3, the in-network observer): reads RoCEv2 traffic and the
 * TCP streams beside it, from a pcap file or live, and reports what anyone on
 * the path learns without sending a packet: each RC connection's QPN and
 * PSNs, the rkeys and addresses in its RDMA WRITE/READ requests, and the
 * connection parameters endpoints swap over plaintext TCP.
 */
#include <errno.h>
#include <getopt.h>
#include <pcap/pcap.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/attack.h"
#include "common/capture.h"
#include "sniff_report.h"
#include "sniff_track.h"

enum { OPT_COUNT = OPT_FIRST_PRIVATE, OPT_SECONDS, OPT_FILTER };
enum { LIVE_SNAPLEN = 65535, LIVE_TIMEOUT_MS = 100, LIVE_POLL_MS = 200, PROGRESS_EVERY = 1024 };

struct sniff_opts {
	const char *file, *iface, *filter;
	uint64_t count;        /* 0: no limit */
	uint32_t seconds;      /* 0: no limit */
	bool json;             /* JSON instead of the table on stdout */
	const char *json_path; /* JSON into this file, the table on stdout */
	bool help;
};

static volatile sig_atomic_t stop_requested;
static pcap_t *active; /* for the signal handler */

static void on_stop_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
	if (active)
		pcap_breakloop(active); /* documented as safe in a signal handler */
}

static void help(FILE *f)
{
	fprintf(f, "Usage: %s sniff [options] FILE.pcap\n"
		"       %s sniff [options] -i IFACE [--count N] [--seconds S]\n"
		"The in-network observer (T3): from captured RoCEv2 and TCP traffic, report every RC\n"
		"connection (source, destination, destination QPN) with its opcodes, PSNs and the next\n"
		"PSN its receiver expects, every (rkey, VA range) its RDMA WRITE/READ requests carry,\n"
		"and the parameters endpoints told each other over plaintext TCP (ibv_rc_pingpong,\n"
		"perftest, rdmasec-naive-victim), checked against the RoCE traffic.\n\n"
		"  -i, --iface IF        capture live on IF instead of reading a file (needs root:\n"
		"                        CAP_NET_RAW); stops on --count, --seconds, SIGINT or SIGTERM\n"
		"  --count N             stop after N frames\n"
		"  --seconds S           live: stop after S seconds\n"
		"  --filter EXPR         pcap filter (tcpdump syntax) applied before decoding\n"
		"  --json                print one JSON object on stdout instead of the table\n"
		"  --json=FILE           write the JSON to FILE and the table on stdout\n"
		"  -h, --help\n\n"
		"Link types: Ethernet, Linux cooked (SLL, SLL2) and raw IP. IPv4 only.\n"
		"Exit status: 0 done, 1 failed (unreadable file, capture not permitted), 2 bad usage.\n",
		PROG, PROG);
}

static bool nonzero(uint64_t v, const char *what)
{
	if (v == 0)
		fprintf(stderr, "%s sniff: %s must be at least 1\n", PROG, what);
	return v != 0;
}

static bool parse_args(int argc, char *argv[], struct sniff_opts *o)
{
	static const struct option opts[] = {
		{ "iface", required_argument, NULL, 'i' },
		{ "count", required_argument, NULL, OPT_COUNT },
		{ "seconds", required_argument, NULL, OPT_SECONDS },
		{ "filter", required_argument, NULL, OPT_FILTER },
		{ "json", optional_argument, NULL, OPT_JSON },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	bool bad = false;
	int opt;

	while ((opt = getopt_long(argc, argv, "i:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'i': o->iface = optarg; break;
		case OPT_COUNT:
			bad |= !parse_u64(optarg, UINT64_MAX, &o->count, "--count") || !nonzero(o->count, "--count");
			break;
		case OPT_SECONDS:
			bad |= !parse_u32(optarg, 86400 * 365, &o->seconds, "--seconds") ||
			       !nonzero(o->seconds, "--seconds");
			break;
		case OPT_FILTER: o->filter = optarg; break;
		case OPT_JSON:
			if (optarg && strcmp(optarg, "-") != 0)
				o->json_path = optarg;
			else
				o->json = true;
			break;
		case 'h': o->help = true; return true;
		default: return false;
		}
	}
	if (bad)
		return false;
	if (optind < argc)
		o->file = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "%s sniff: unexpected argument `%s' (one capture file; JSON into a file is "
			"--json=FILE)\n", PROG, argv[optind]);
		return false;
	}
	if (!o->file == !o->iface) {
		fprintf(stderr, "%s sniff: give a capture file or -i IFACE (one of them; see --help)\n", PROG);
		return false;
	}
	if (o->file && o->seconds) {
		fprintf(stderr, "%s sniff: --seconds applies to live capture (-i) only\n", PROG);
		return false;
	}
	return true;
}

/* Feed every frame to the tracker until the file ends or a limit is hit. */
static int run_capture(pcap_t *p, enum sniff_link link, const struct sniff_opts *o, struct sniff_state *s)
{
	double deadline = o->seconds ? now_s() + o->seconds : 0;
	FILE *file = o->file ? pcap_file(p) : NULL;
	struct progress prog;
	struct stat sb;
	int rc = 0;

	progress_start(&prog, "reading", file && fstat(fileno(file), &sb) == 0 ? (uint64_t)sb.st_size : 0);
	while (!stop_requested && (!o->count || s->st.frames < o->count)) {
		struct pcap_pkthdr *h;
		const u_char *data;
		int r;

		if (deadline && now_s() >= deadline)
			break;
		r = pcap_next_ex(p, &h, &data);
		if (r == 0) { /* live and nothing pending: wait a little, then look at the limits */
			struct pollfd pfd = { .fd = pcap_get_selectable_fd(p), .events = POLLIN };
			if (poll(&pfd, 1, LIVE_POLL_MS) < 0 && errno != EINTR) {
				fprintf(stderr, "%s sniff: poll: %s\n", PROG, strerror(errno));
				rc = RSEC_E_IO;
				break;
			}
			continue;
		}
		if (r == PCAP_ERROR_BREAK)
			break;    /* end of the file, or a signal */
		if (r < 0) {
			fprintf(stderr, "%s sniff: reading %s: %s\n", PROG, o->file ? o->file : o->iface,
				pcap_geterr(p));
			rc = RSEC_E_IO;
			break;
		}
		if ((rc = sniff_state_frame(s, link, data, h->caplen)) != 0) {
			fprintf(stderr, "%s sniff: %s\n", PROG, rsec_strerror(rc));
			break;
		}
		if (file && s->st.frames % PROGRESS_EVERY == 0)
			progress_update(&prog, (uint64_t)ftell(file));
	}
	progress_end(&prog);
	return rc;
}

static int write_json(const struct sniff_opts *o, const struct sniff_source *src, const struct sniff_state *s)
{
	FILE *f;

	if (!o->json_path) {
		sniff_report_json(stdout, src, s);
		return fflush(stdout) == 0 ? 0 : RSEC_E_IO;
	}
	f = fopen(o->json_path, "w");
	if (!f) {
		fprintf(stderr, "%s sniff: cannot write %s: %s\n", PROG, o->json_path, strerror(errno));
		return RSEC_E_IO;
	}
	sniff_report_json(f, src, s);
	if (ferror(f) | fclose(f)) {
		fprintf(stderr, "%s sniff: writing %s failed\n", PROG, o->json_path);
		return RSEC_E_IO;
	}
	return 0;
}

int sniff_main(int argc, char *argv[])
{
	struct sigaction sa = { .sa_handler = on_stop_signal };
	struct sniff_opts o = { 0 };
	struct sniff_source src = { 0 };
	struct sniff_state s;
	enum sniff_link link;
	pcap_t *p;
	int rc;

	if (!parse_args(argc, argv, &o)) {
		fprintf(stderr, "Try `%s sniff --help'.\n", PROG);
		return 2;
	}
	if (o.help) {
		help(stdout);
		return 0;
	}
	p = capture_open("sniff", o.file, o.iface, LIVE_SNAPLEN, LIVE_TIMEOUT_MS);
	if (!p)
		return 1;
	src = (struct sniff_source){ .name = o.file ? o.file : o.iface, .live = !o.file,
				     .linktype = pcap_datalink_val_to_name(pcap_datalink(p)) };
	if (!src.linktype)
		src.linktype = "unknown";
	if (!capture_link("sniff", p, src.name, &link)) {
		pcap_close(p);
		return 1;
	}
	if (o.filter && !capture_set_filter("sniff", p, o.filter, "--filter")) {
		pcap_close(p);
		return 2;
	}
	if (sniff_state_init(&s) != 0) {
		fprintf(stderr, "%s sniff: out of memory\n", PROG);
		pcap_close(p);
		return 1;
	}
	active = p;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGINT, &sa, NULL) != 0 || sigaction(SIGTERM, &sa, NULL) != 0)
		fprintf(stderr, "%s sniff: warning: cannot catch SIGINT/SIGTERM\n", PROG);
	if (src.live)
		fprintf(stderr, "%s sniff: capturing on %s (%s) until %s\n", PROG, o.iface, src.linktype,
			o.count || o.seconds ? "a limit or a signal" : "SIGINT or SIGTERM");
	rc = run_capture(p, link, &o, &s);
	active = NULL;
	pcap_close(p);
	if (rc == 0) {
		sniff_state_finish(&s);
		if (!o.json)
			sniff_report_text(stdout, &src, &s);
		if (o.json || o.json_path)
			rc = write_json(&o, &src, &s);
	}
	sniff_state_free(&s);
	return rc == 0 ? 0 : 1;
}
