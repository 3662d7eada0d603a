/* SPDX-License-Identifier: MIT */
/*
 * rdmasec-naive-victim: a deliberately weak RC service, built the way the
 * systems broken by ReDMArk and NeVerMore were: a static PSN (0), QPN, PSN,
 * GID, rkey and address swapped in plaintext over TCP, one PD, one long-lived
 * MR open to remote READ and WRITE. The server prints every message it
 * receives and, whenever it changes, its exposed buffer, so bytes an attacker
 * injects become visible. Never deploy this.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PROG "rdmasec-naive-victim"
enum { SLOTS = 16, SLOT_SIZE = 1024, STATIC_PSN = 0, LINE_MAX_LEN = 256 };

struct peer {
	uint32_t qpn, psn, rkey, len;
	uint64_t addr;
	union ibv_gid gid;
};

struct victim {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *mem;       /* exposed buffer, then the receive slots */
	uint8_t *shadow;    /* last printed copy of the exposed buffer */
	size_t size;
	int gidx;
	union ibv_gid gid;
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: %s server [options]\n"
		"       %s client [options] HOST\n"
		"A deliberately naive RDMA RC service (static PSN 0, plaintext exchange).\n\n"
		"  -d, --device DEV     RDMA device (default: the first)\n"
		"  -g, --gid-index N    GID index (default 1)\n"
		"  -p, --port N         TCP port for the exchange (default 18516)\n"
		"  -s, --size N         exposed buffer bytes, 16..65536 (default 4096)\n"
		"  -t, --time S         server: run S seconds (default 30), client: stay S seconds\n"
		"  -m, --message TEXT   client: send TEXT once connected (repeatable)\n"
		"  -l, --local-ip IP    client: TCP source address (on the fabric, so the\n"
		"                       exchange crosses the wire instead of lo)\n"
		"  -h, --help\n", PROG, PROG);
}

static bool num(const char *s, unsigned long max, unsigned long *out)
{
	char *end;
	errno = 0;
	if (!s || s[0] < '0' || s[0] > '9')
		return false;
	*out = strtoul(s, &end, 0);
	return !errno && !*end && *out <= max;
}

/* Printable rendering: bytes outside 0x20..0x7e become '.', trailing NULs dropped. */
static void print_bytes(const char *what, const uint8_t *p, size_t n)
{
	while (n && p[n - 1] == 0)
		n--;
	printf("%s (%zu bytes): ", what, n);
	for (size_t i = 0; i < n; i++)
		putchar(p[i] >= 0x20 && p[i] < 0x7f ? p[i] : '.');
	putchar('\n');
}

static void victim_free(struct victim *v)
{
	if (v->qp)
		ibv_destroy_qp(v->qp);
	if (v->mr)
		ibv_dereg_mr(v->mr);
	if (v->cq)
		ibv_destroy_cq(v->cq);
	if (v->pd)
		ibv_dealloc_pd(v->pd);
	if (v->ctx)
		ibv_close_device(v->ctx);
	free(v->mem);
	free(v->shadow);
}

static int victim_open(struct victim *v, const char *dev)
{
	struct ibv_device **list;
	int n;

	list = ibv_get_device_list(&n);
	for (int i = 0; list && i < n && !v->ctx; i++)
		if (!dev || !strcmp(dev, ibv_get_device_name(list[i])))
			v->ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	if (!v->ctx) {
		fprintf(stderr, "%s: cannot open device %s\n", PROG, dev ? dev : "(first)");
		return -1;
	}
	v->mem = calloc(1, v->size + SLOTS * SLOT_SIZE);
	v->shadow = calloc(1, v->size);
	if (!v->mem || !v->shadow || ibv_query_gid(v->ctx, 1, v->gidx, &v->gid) ||
	    !(v->pd = ibv_alloc_pd(v->ctx)) || !(v->cq = ibv_create_cq(v->ctx, 2 * SLOTS, NULL, NULL, 0)))
		goto err;
	/* The weakness on purpose: one long-lived MR open to remote read and write. */
	v->mr = ibv_reg_mr(v->pd, v->mem, v->size + SLOTS * SLOT_SIZE,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	struct ibv_qp_init_attr qa = {
		.send_cq = v->cq, .recv_cq = v->cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = SLOTS, .max_recv_wr = SLOTS, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	if (!v->mr || !(v->qp = ibv_create_qp(v->pd, &qa)))
		goto err;
	return 0;
err:
	fprintf(stderr, "%s: verbs set-up failed: %s\n", PROG, strerror(errno));
	return -1;
}

static int post_recv(struct victim *v, unsigned slot)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(v->mem + v->size + slot * SLOT_SIZE),
			       .length = SLOT_SIZE, .lkey = v->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 }, *bad;
	return ibv_post_recv(v->qp, &wr, &bad);
}

static int connect_qp(struct victim *v, const struct peer *p)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
						    IBV_ACCESS_REMOTE_READ };
	if (ibv_modify_qp(v->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = p->qpn;
	a.rq_psn = p->psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = p->gid;
	a.ah_attr.grh.sgid_index = (uint8_t)v->gidx;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(v->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = STATIC_PSN;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(v->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

static void gid_hex(const union ibv_gid *g, char out[33])
{
	for (int i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", g->raw[i]);
}

/* The plaintext exchange the papers' targets use: everything an attacker needs. */
static int exchange(int fd, struct victim *v, struct peer *p, bool send_first)
{
	char line[LINE_MAX_LEN], gid[33], pgid[33];
	unsigned long long addr;
	size_t got = 0;
	int n;

	gid_hex(&v->gid, gid);
	n = snprintf(line, sizeof(line), "NAIVE qpn=%06x psn=%06x gid=%s rkey=%08x addr=%016llx len=%zu\n",
		     v->qp->qp_num, STATIC_PSN, gid, v->mr->rkey, (unsigned long long)(uintptr_t)v->mem, v->size);
	if (send_first && write(fd, line, (size_t)n) != n)
		return -1;
	while (got < sizeof(line) - 1) {
		ssize_t r = read(fd, line + got, 1);
		if (r <= 0)
			return -1;
		if (line[got++] == '\n')
			break;
	}
	line[got] = '\0';
	if (sscanf(line, "NAIVE qpn=%6x psn=%6x gid=%32[0-9a-f] rkey=%8x addr=%16llx len=%u", &p->qpn, &p->psn, pgid,
		   &p->rkey, &addr, &p->len) != 6 || strlen(pgid) != 32) {
		fprintf(stderr, "%s: bad exchange line\n", PROG);
		return -1;
	}
	p->addr = addr;
	for (int i = 0; i < 16; i++) {
		unsigned b;
		if (sscanf(pgid + 2 * i, "%2x", &b) != 1)
			return -1;
		p->gid.raw[i] = (uint8_t)b;
	}
	if (!send_first) {
		n = snprintf(line, sizeof(line), "NAIVE qpn=%06x psn=%06x gid=%s rkey=%08x addr=%016llx len=%zu\n",
			     v->qp->qp_num, STATIC_PSN, gid, v->mr->rkey, (unsigned long long)(uintptr_t)v->mem,
			     v->size);
		if (write(fd, line, (size_t)n) != n)
			return -1;
	}
	printf("local: qpn 0x%06x psn 0x%06x rkey 0x%08x addr 0x%llx len %zu\n", v->qp->qp_num, STATIC_PSN,
	       v->mr->rkey, (unsigned long long)(uintptr_t)v->mem, v->size);
	printf("remote: qpn 0x%06x psn 0x%06x rkey 0x%08x addr 0x%llx len %u\n", p->qpn, p->psn, p->rkey,
	       (unsigned long long)p->addr, p->len);
	return 0;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int serve(struct victim *v, double seconds)
{
	double end = now() + seconds, next_show = 0;
	struct ibv_wc wc[SLOTS];

	for (unsigned i = 0; i < SLOTS; i++)
		if (post_recv(v, i))
			return -1;
	printf("ready\n");
	while (now() < end) {
		int n = ibv_poll_cq(v->cq, SLOTS, wc);
		if (n < 0)
			return -1;
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				printf("completion error: %s (status %d)\n", ibv_wc_status_str(wc[i].status),
				       wc[i].status);
				return -1;
			}
			if (wc[i].opcode & IBV_WC_RECV) {
				char what[32];
				snprintf(what, sizeof(what), "recv");
				print_bytes(what, v->mem + v->size + wc[i].wr_id * SLOT_SIZE, wc[i].byte_len);
				memset(v->mem + v->size + wc[i].wr_id * SLOT_SIZE, 0, SLOT_SIZE);
				if (post_recv(v, (unsigned)wc[i].wr_id))
					return -1;
			}
		}
		if (now() >= next_show) {
			struct ibv_qp_attr a;
			struct ibv_qp_init_attr ia;
			next_show = now() + 0.1;
			if (memcmp(v->mem, v->shadow, v->size) != 0) {
				print_bytes("buffer changed", v->mem, v->size);
				memcpy(v->shadow, v->mem, v->size);
			}
			if (ibv_query_qp(v->qp, &a, IBV_QP_STATE, &ia) == 0 && a.qp_state == IBV_QPS_ERR) {
				printf("qp state: ERROR\n");
				return -1;
			}
		}
		if (n == 0)
			usleep(1000);
	}
	print_bytes("final buffer", v->mem, v->size);
	return 0;
}

static int client_send(struct victim *v, const char *msg)
{
	size_t n = strlen(msg) < SLOT_SIZE ? strlen(msg) : SLOT_SIZE;
	uint8_t *slot = v->mem + v->size; /* slot 0 doubles as the send buffer */
	struct ibv_sge sge = { .addr = (uintptr_t)slot, .length = (uint32_t)n, .lkey = v->mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;
	double end = now() + 10;
	int r;

	memcpy(slot, msg, n);
	if (ibv_post_send(v->qp, &wr, &bad))
		return -1;
	while ((r = ibv_poll_cq(v->cq, 1, &wc)) == 0 && now() < end)
		usleep(1000);
	if (r != 1 || wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "%s: send failed\n", PROG);
		return -1;
	}
	printf("sent (%zu bytes): %s\n", n, msg);
	return 0;
}

int main(int argc, char *argv[])
{
	static const struct option opts[] = {
		{ "device", required_argument, NULL, 'd' }, { "gid-index", required_argument, NULL, 'g' },
		{ "port", required_argument, NULL, 'p' }, { "size", required_argument, NULL, 's' },
		{ "time", required_argument, NULL, 't' }, { "message", required_argument, NULL, 'm' },
		{ "local-ip", required_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' }, { 0 },
	};
	struct victim v = { .size = 4096, .gidx = 1 };
	const char *dev = NULL, *msgs[8], *local_ip = NULL;
	unsigned long port = 18516, secs = 30, val;
	int nmsg = 0, opt, fd = -1, lfd = -1, rc = 1;
	bool server;
	struct peer p;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2 || (strcmp(argv[1], "server") && strcmp(argv[1], "client"))) {
		bool h = argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"));
		usage(h ? stdout : stderr);
		return h ? 0 : 2;
	}
	server = !strcmp(argv[1], "server");
	argc--, argv++;
	while ((opt = getopt_long(argc, argv, "d:g:p:s:t:m:l:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'd': dev = optarg; break;
		case 'g': if (!num(optarg, 255, &val)) goto bad; v.gidx = (int)val; break;
		case 'p': if (!num(optarg, 65535, &port) || !port) goto bad; break;
		case 's': if (!num(optarg, 65536, &val) || val < 16) goto bad; v.size = val; break;
		case 't': if (!num(optarg, 86400, &secs)) goto bad; break;
		case 'm': if (nmsg == 8) goto bad; msgs[nmsg++] = optarg; break;
		case 'l': local_ip = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (server != (optind == argc)) {
		usage(stderr);
		return 2;
	}
	if (victim_open(&v, dev))
		goto out;
	if (server) {
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
		int one = 1;
		lfd = socket(AF_INET, SOCK_STREAM, 0);
		if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
		    bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 1) ||
		    (fd = accept(lfd, NULL, NULL)) < 0) {
			fprintf(stderr, "%s: listen on port %lu: %s\n", PROG, port, strerror(errno));
			goto out;
		}
	} else {
		struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai;
		char ps[8];
		snprintf(ps, sizeof(ps), "%lu", port);
		if (getaddrinfo(argv[optind], ps, &hints, &ai) != 0) {
			fprintf(stderr, "%s: cannot resolve %s\n", PROG, argv[optind]);
			goto out;
		}
		struct sockaddr_in la = { .sin_family = AF_INET };
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd >= 0 && local_ip &&
		    (inet_pton(AF_INET, local_ip, &la.sin_addr) != 1 || bind(fd, (struct sockaddr *)&la, sizeof(la)))) {
			fprintf(stderr, "%s: cannot bind to %s\n", PROG, local_ip);
			freeaddrinfo(ai);
			goto out;
		}
		if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen)) {
			fprintf(stderr, "%s: connect %s: %s\n", PROG, argv[optind], strerror(errno));
			freeaddrinfo(ai);
			goto out;
		}
		freeaddrinfo(ai);
	}
	if (exchange(fd, &v, &p, !server) || connect_qp(&v, &p)) {
		fprintf(stderr, "%s: connection set-up failed\n", PROG);
		goto out;
	}
	if (server) {
		rc = serve(&v, (double)secs) ? 1 : 0;
	} else {
		rc = 0;
		for (int i = 0; i < nmsg && rc == 0; i++)
			rc = client_send(&v, msgs[i]) ? 1 : 0;
		sleep((unsigned)secs);
		printf("client done\n");
	}
out:
	if (fd >= 0)
		close(fd);
	if (lfd >= 0)
		close(lfd);
	victim_free(&v);
	return rc;
bad:
	fprintf(stderr, "%s: invalid value for -%c: `%s'\n", PROG, opt, optarg);
	return 2;
}
