/* SPDX-License-Identifier: MIT */
/*
 * rdmasec-naive-victim: a deliberately weak RC service, built the way the
 * systems broken by ReDMArk and NeVerMore were: a static PSN (0), QPN, PSN,
 * GID, rkey and address swapped in plaintext over TCP, one PD, one long-lived
 * MR open to remote READ and WRITE. The server prints every message it
 * receives and, whenever it changes, its exposed buffer, so bytes an attacker
 * injects become visible. With --clients N it serves several clients, each
 * with its own buffer and MR in the same PD, so one client can reach
 * another's memory by guessing its rkey and address (ReDMArk A3, `mem-access`).
 * Never deploy this.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

#define PROG "rdmasec-naive-victim"
enum { SLOTS = 16, SLOT_SIZE = 1024, STATIC_PSN = 0, LINE_MAX_LEN = 256, MAX_CLIENTS = 64 };

struct peer {
	uint32_t qpn, psn, rkey, len;
	uint64_t addr;
	union ibv_gid gid;
};

/*
 * One client's share of the service. With --clients N > 1 each client gets
 * its own QP and its own buffer and MR, all in the service's one PD: the
 * layout ReDMArk A3 attacks (another client's MR is reachable from any QP of
 * the PD once its rkey and address are guessed).
 */
struct client {
	unsigned id;
	int fd;             /* the exchange's TCP connection (kept in multi-client mode) */
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *mem;       /* exposed buffer, then the receive slots */
	uint8_t *shadow;    /* last printed copy of the exposed buffer */
	char tag[24];       /* "" in single-client mode, else "client N " */
};

struct victim {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	size_t size;
	int gidx;
	union ibv_gid gid;
	unsigned max_clients; /* 1: the original single-client service */
	unsigned next_id;
	struct client *clients[MAX_CLIENTS];
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
		"  -c, --clients N      server: serve up to N clients at once (1..%d, default 1);\n"
		"                       each gets its own QP, buffer and MR in the one PD; a\n"
		"                       client whose QP fails or whose TCP closes is dropped\n"
		"                       (with 1, any failure ends the server with status 1)\n"
		"  -m, --message TEXT   client: send TEXT once connected (repeatable)\n"
		"  -w, --write TEXT     client: RDMA WRITE TEXT into its buffer at the server\n"
		"  -l, --local-ip IP    client: TCP source address (on the fabric, so the\n"
		"                       exchange crosses the wire instead of lo)\n"
		"  -h, --help\n", PROG, PROG, MAX_CLIENTS);
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
static void print_bytes(const char *tag, const char *what, const uint8_t *p, size_t n)
{
	while (n && p[n - 1] == 0)
		n--;
	printf("%s%s (%zu bytes): ", tag, what, n);
	for (size_t i = 0; i < n; i++)
		putchar(p[i] >= 0x20 && p[i] < 0x7f ? p[i] : '.');
	putchar('\n');
}

static void client_free(struct client *c)
{
	if (!c)
		return;
	if (c->qp)
		ibv_destroy_qp(c->qp);
	if (c->mr)
		ibv_dereg_mr(c->mr);
	if (c->cq)
		ibv_destroy_cq(c->cq);
	if (c->fd >= 0)
		close(c->fd);
	free(c->mem);
	free(c->shadow);
	free(c);
}

static void victim_free(struct victim *v)
{
	for (unsigned i = 0; i < MAX_CLIENTS; i++)
		client_free(v->clients[i]);
	if (v->pd)
		ibv_dealloc_pd(v->pd);
	if (v->ctx)
		ibv_close_device(v->ctx);
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
	if (ibv_query_gid(v->ctx, 1, v->gidx, &v->gid) || !(v->pd = ibv_alloc_pd(v->ctx))) {
		fprintf(stderr, "%s: verbs set-up failed: %s\n", PROG, strerror(errno));
		return -1;
	}
	return 0;
}

/* A client's resources; fd is adopted (closed by client_free). */
static struct client *client_new(struct victim *v, int fd)
{
	struct client *c = calloc(1, sizeof(*c));
	size_t total = v->size + SLOTS * SLOT_SIZE;

	if (!c) {
		close(fd);
		return NULL;
	}
	c->fd = fd;
	c->id = ++v->next_id;
	if (v->max_clients > 1)
		snprintf(c->tag, sizeof(c->tag), "client %u ", c->id);
	/* Page-aligned, as RDMA buffers usually are; consecutive clients' buffers sit at a fixed stride (V4). */
	void *mem;
	if (posix_memalign(&mem, 4096, total))
		goto err;
	c->mem = memset(mem, 0, total);
	c->shadow = calloc(1, v->size);
	if (!c->shadow || !(c->cq = ibv_create_cq(v->ctx, 2 * SLOTS, NULL, NULL, 0)))
		goto err;
	/* The weakness on purpose: a long-lived MR open to remote read and write, in the shared PD. */
	c->mr = ibv_reg_mr(v->pd, c->mem, total,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	struct ibv_qp_init_attr qa = {
		.send_cq = c->cq, .recv_cq = c->cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = SLOTS, .max_recv_wr = SLOTS, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	if (!c->mr || !(c->qp = ibv_create_qp(v->pd, &qa)))
		goto err;
	return c;
err:
	fprintf(stderr, "%s: verbs set-up failed: %s\n", PROG, strerror(errno));
	client_free(c);
	return NULL;
}

static int post_recv(struct victim *v, struct client *c, unsigned slot)
{
	struct ibv_sge sge = { .addr = (uintptr_t)(c->mem + v->size + slot * SLOT_SIZE),
			       .length = SLOT_SIZE, .lkey = c->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 }, *bad;
	return ibv_post_recv(c->qp, &wr, &bad);
}

static int connect_qp(struct victim *v, struct client *c, const struct peer *p)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
						    IBV_ACCESS_REMOTE_READ };
	if (ibv_modify_qp(c->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
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
	if (ibv_modify_qp(c->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				     IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = STATIC_PSN;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(c->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

static void gid_hex(const union ibv_gid *g, char out[33])
{
	for (int i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", g->raw[i]);
}

/* The plaintext exchange the papers' targets use: everything an attacker needs. */
static int exchange(struct victim *v, struct client *c, struct peer *p, bool send_first)
{
	char line[LINE_MAX_LEN], gid[33], pgid[33];
	unsigned long long addr;
	size_t got = 0;
	int n;

	gid_hex(&v->gid, gid);
	n = snprintf(line, sizeof(line), "NAIVE qpn=%06x psn=%06x gid=%s rkey=%08x addr=%016llx len=%zu\n",
		     c->qp->qp_num, STATIC_PSN, gid, c->mr->rkey, (unsigned long long)(uintptr_t)c->mem, v->size);
	if (send_first && write(c->fd, line, (size_t)n) != n)
		return -1;
	while (got < sizeof(line) - 1) {
		ssize_t r = read(c->fd, line + got, 1);
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
			     c->qp->qp_num, STATIC_PSN, gid, c->mr->rkey, (unsigned long long)(uintptr_t)c->mem,
			     v->size);
		if (write(c->fd, line, (size_t)n) != n)
			return -1;
	}
	printf("%slocal: qpn 0x%06x psn 0x%06x rkey 0x%08x addr 0x%llx len %zu\n", c->tag, c->qp->qp_num,
	       STATIC_PSN, c->mr->rkey, (unsigned long long)(uintptr_t)c->mem, v->size);
	printf("%sremote: qpn 0x%06x psn 0x%06x rkey 0x%08x addr 0x%llx len %u\n", c->tag, p->qpn, p->psn, p->rkey,
	       (unsigned long long)p->addr, p->len);
	return 0;
}

static double now(void)
{
	return (double)clock_mono_ns() / 1e9;
}

/* Exchange, connect and post the receives of a new client. */
static int client_start(struct victim *v, struct client *c)
{
	struct peer p;

	if (exchange(v, c, &p, false) || connect_qp(v, c, &p)) {
		fprintf(stderr, "%s: %sconnection set-up failed\n", PROG, c->tag);
		return -1;
	}
	for (unsigned i = 0; i < SLOTS; i++)
		if (post_recv(v, c, i))
			return -1;
	return 0;
}

/* Completions of one client: print what it sent. -1 if its QP failed. */
static int client_poll(struct victim *v, struct client *c)
{
	struct ibv_wc wc[SLOTS];
	int n = ibv_poll_cq(c->cq, SLOTS, wc);

	if (n < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS) {
			printf("%scompletion error: %s (status %d)\n", c->tag, ibv_wc_status_str(wc[i].status),
			       wc[i].status);
			return -1;
		}
		if (wc[i].opcode & IBV_WC_RECV) {
			print_bytes(c->tag, "recv", c->mem + v->size + wc[i].wr_id * SLOT_SIZE, wc[i].byte_len);
			memset(c->mem + v->size + wc[i].wr_id * SLOT_SIZE, 0, SLOT_SIZE);
			if (post_recv(v, c, (unsigned)wc[i].wr_id))
				return -1;
		}
	}
	return n;
}

/* Print the exposed buffer if it changed; -1 if the QP is in the error state. */
static int client_watch(struct victim *v, struct client *c)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (memcmp(c->mem, c->shadow, v->size) != 0) {
		print_bytes(c->tag, "buffer changed", c->mem, v->size);
		memcpy(c->shadow, c->mem, v->size);
	}
	if (ibv_query_qp(c->qp, &a, IBV_QP_STATE, &ia) == 0 && a.qp_state == IBV_QPS_ERR) {
		printf("%sqp state: ERROR\n", c->tag);
		return -1;
	}
	return 0;
}

/* The original service: one client; any failure ends it. */
static int serve_one(struct victim *v, struct client *c, double seconds)
{
	double end = now() + seconds, next_show = 0;

	printf("ready\n");
	while (now() < end) {
		int n = client_poll(v, c);
		if (n < 0)
			return -1;
		if (now() >= next_show) {
			next_show = now() + 0.1;
			if (client_watch(v, c))
				return -1;
		}
		if (n == 0)
			usleep(1000);
	}
	print_bytes(c->tag, "final buffer", c->mem, v->size);
	return 0;
}

static void drop(struct victim *v, unsigned i, const char *why)
{
	printf("%sdropped: %s\n", v->clients[i]->tag, why);
	client_free(v->clients[i]);
	v->clients[i] = NULL;
}

static void accept_client(struct victim *v, int lfd)
{
	struct timeval tv = { .tv_sec = 2 }; /* a silent client cannot stall the service for long */
	unsigned slot = MAX_CLIENTS;
	int fd = accept(lfd, NULL, NULL);

	if (fd < 0)
		return;
	for (unsigned i = 0; i < v->max_clients && slot == MAX_CLIENTS; i++)
		if (!v->clients[i])
			slot = i;
	if (slot == MAX_CLIENTS) {
		printf("refused a client: %u clients connected\n", v->max_clients);
		close(fd);
		return;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv))) {
		close(fd);
		return;
	}
	struct client *c = client_new(v, fd);
	if (!c)
		return;
	v->clients[slot] = c;
	if (client_start(v, c))
		drop(v, slot, "set-up failed");
}

/* Drop a client whose TCP connection closed; anything it sends is ignored. */
static bool tcp_closed(struct client *c)
{
	char buf[64];
	struct pollfd pf = { .fd = c->fd, .events = POLLIN };

	if (poll(&pf, 1, 0) <= 0)
		return false;
	ssize_t r = read(c->fd, buf, sizeof(buf));
	return r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/* Several clients at once, each in the same PD; a failing client is dropped. */
static int serve_many(struct victim *v, int lfd, double seconds)
{
	double end = now() + seconds, next_show = 0;
	struct pollfd pf = { .fd = lfd, .events = POLLIN };

	printf("ready\n");
	while (now() < end) {
		int busy = 0;
		if (poll(&pf, 1, 0) > 0)
			accept_client(v, lfd);
		bool show = now() >= next_show;
		if (show)
			next_show = now() + 0.1;
		for (unsigned i = 0; i < v->max_clients; i++) {
			struct client *c = v->clients[i];
			if (!c)
				continue;
			int n = client_poll(v, c);
			busy += n > 0;
			if (n < 0)
				drop(v, i, "queue pair failed");
			else if (show && client_watch(v, c))
				drop(v, i, "queue pair failed");
			else if (tcp_closed(c))
				drop(v, i, "disconnected");
		}
		if (!busy)
			usleep(1000);
	}
	for (unsigned i = 0; i < v->max_clients; i++)
		if (v->clients[i])
			print_bytes(v->clients[i]->tag, "final buffer", v->clients[i]->mem, v->size);
	return 0;
}

static int wait_one(struct client *c)
{
	struct ibv_wc wc;
	double end = now() + 10;
	int r;

	while ((r = ibv_poll_cq(c->cq, 1, &wc)) == 0 && now() < end)
		usleep(1000);
	return r == 1 && wc.status == IBV_WC_SUCCESS ? 0 : -1;
}

static int client_send(struct victim *v, struct client *c, const char *msg)
{
	size_t n = strlen(msg) < SLOT_SIZE ? strlen(msg) : SLOT_SIZE;
	uint8_t *slot = c->mem + v->size; /* slot 0 doubles as the send buffer */
	struct ibv_sge sge = { .addr = (uintptr_t)slot, .length = (uint32_t)n, .lkey = c->mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	memcpy(slot, msg, n);
	if (ibv_post_send(c->qp, &wr, &bad) || wait_one(c)) {
		fprintf(stderr, "%s: send failed\n", PROG);
		return -1;
	}
	printf("sent (%zu bytes): %s\n", n, msg);
	return 0;
}

/* The service's intended use of its remote-write MR: a client stores bytes in its buffer there. */
static int client_write(struct victim *v, struct client *c, const struct peer *p, const char *text)
{
	size_t n = strlen(text);
	uint8_t *slot = c->mem + v->size;

	if (n == 0 || n > SLOT_SIZE || n > p->len) {
		fprintf(stderr, "%s: --write text must be 1..%u bytes and fit the server's buffer\n", PROG,
			SLOT_SIZE);
		return -1;
	}
	struct ibv_sge sge = { .addr = (uintptr_t)slot, .length = (uint32_t)n, .lkey = c->mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
				  .send_flags = IBV_SEND_SIGNALED,
				  .wr.rdma = { .remote_addr = p->addr, .rkey = p->rkey } }, *bad;

	memcpy(slot, text, n);
	if (ibv_post_send(c->qp, &wr, &bad) || wait_one(c)) {
		fprintf(stderr, "%s: RDMA write failed\n", PROG);
		return -1;
	}
	printf("wrote (%zu bytes): %s\n", n, text);
	return 0;
}

static int listen_on(unsigned long port, int backlog)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int one = 1, lfd = socket(AF_INET, SOCK_STREAM, 0);

	if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, backlog)) {
		fprintf(stderr, "%s: listen on port %lu: %s\n", PROG, port, strerror(errno));
		if (lfd >= 0)
			close(lfd);
		return -1;
	}
	return lfd;
}

static int dial(const char *host, unsigned long port, const char *local_ip)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai;
	struct sockaddr_in la = { .sin_family = AF_INET };
	char ps[8];
	int fd;

	snprintf(ps, sizeof(ps), "%lu", port);
	if (getaddrinfo(host, ps, &hints, &ai) != 0) {
		fprintf(stderr, "%s: cannot resolve %s\n", PROG, host);
		return -1;
	}
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd >= 0 && local_ip &&
	    (inet_pton(AF_INET, local_ip, &la.sin_addr) != 1 || bind(fd, (struct sockaddr *)&la, sizeof(la)))) {
		fprintf(stderr, "%s: cannot bind to %s\n", PROG, local_ip);
		close(fd);
		freeaddrinfo(ai);
		return -1;
	}
	if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen)) {
		fprintf(stderr, "%s: connect %s: %s\n", PROG, host, strerror(errno));
		if (fd >= 0)
			close(fd);
		freeaddrinfo(ai);
		return -1;
	}
	freeaddrinfo(ai);
	return fd;
}

static int run_client(struct victim *v, const char *host, unsigned long port, const char *local_ip,
		      const char *const *msgs, int nmsg, const char *wtext, unsigned long secs)
{
	struct peer p;
	int fd = dial(host, port, local_ip);
	struct client *c = fd < 0 ? NULL : client_new(v, fd);
	int rc = 0;

	if (!c)
		return 1;
	v->clients[0] = c;
	if (exchange(v, c, &p, true) || connect_qp(v, c, &p)) {
		fprintf(stderr, "%s: connection set-up failed\n", PROG);
		return 1;
	}
	for (int i = 0; i < nmsg && rc == 0; i++)
		rc = client_send(v, c, msgs[i]) ? 1 : 0;
	if (rc == 0 && wtext)
		rc = client_write(v, c, &p, wtext) ? 1 : 0;
	sleep((unsigned)secs);
	printf("client done\n");
	return rc;
}

static int run_server(struct victim *v, unsigned long port, unsigned long secs)
{
	int lfd = listen_on(port, v->max_clients > 1 ? 64 : 1), rc = 1;

	if (lfd < 0)
		return 1;
	if (v->max_clients > 1) {
		rc = serve_many(v, lfd, (double)secs) ? 1 : 0;
	} else {
		int fd = accept(lfd, NULL, NULL);
		struct client *c = fd < 0 ? NULL : client_new(v, fd);
		if (fd < 0)
			fprintf(stderr, "%s: accept: %s\n", PROG, strerror(errno));
		if (c) {
			v->clients[0] = c;
			rc = client_start(v, c) || serve_one(v, c, (double)secs) ? 1 : 0;
		}
	}
	close(lfd);
	return rc;
}

int main(int argc, char *argv[])
{
	static const struct option opts[] = {
		{ "device", required_argument, NULL, 'd' }, { "gid-index", required_argument, NULL, 'g' },
		{ "port", required_argument, NULL, 'p' }, { "size", required_argument, NULL, 's' },
		{ "time", required_argument, NULL, 't' }, { "message", required_argument, NULL, 'm' },
		{ "local-ip", required_argument, NULL, 'l' }, { "clients", required_argument, NULL, 'c' },
		{ "write", required_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' }, { 0 },
	};
	struct victim v = { .size = 4096, .gidx = 1, .max_clients = 1 };
	const char *dev = NULL, *msgs[8], *local_ip = NULL, *wtext = NULL;
	unsigned long port = 18516, secs = 30, val;
	int nmsg = 0, opt, rc = 1;
	bool server;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2 || (strcmp(argv[1], "server") && strcmp(argv[1], "client"))) {
		bool h = argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"));
		usage(h ? stdout : stderr);
		return h ? 0 : 2;
	}
	server = !strcmp(argv[1], "server");
	argc--, argv++;
	while ((opt = getopt_long(argc, argv, "d:g:p:s:t:m:l:c:w:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'd': dev = optarg; break;
		case 'g': if (!num(optarg, 255, &val)) goto bad; v.gidx = (int)val; break;
		case 'p': if (!num(optarg, 65535, &port) || !port) goto bad; break;
		case 's': if (!num(optarg, 65536, &val) || val < 16) goto bad; v.size = val; break;
		case 't': if (!num(optarg, 86400, &secs)) goto bad; break;
		case 'm': if (nmsg == 8) goto bad; msgs[nmsg++] = optarg; break;
		case 'l': local_ip = optarg; break;
		case 'c': if (!num(optarg, MAX_CLIENTS, &val) || !val) goto bad; v.max_clients = (unsigned)val; break;
		case 'w': wtext = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (server != (optind == argc)) {
		usage(stderr);
		return 2;
	}
	/* A broken client must not kill the service through SIGPIPE. */
	signal(SIGPIPE, SIG_IGN);
	if (victim_open(&v, dev) == 0)
		rc = server ? run_server(&v, port, secs)
			    : run_client(&v, argv[optind], port, local_ip, msgs, nmsg, wtext, secs);
	victim_free(&v);
	return rc;
bad:
	fprintf(stderr, "%s: invalid value for -%c: `%s'\n", PROG, opt, optarg);
	return 2;
}
