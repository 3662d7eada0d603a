/* SPDX-License-Identifier: MIT */
/*
 * resume_rebuild_check: healing composes (issue 22, findings 2 and 3). A
 * client of rdmasec-server (--resume-grace, --max-per-identity 1) streams
 * numbered echoes on one session and loses its control connection at exact
 * moments of a rebuild; tests/fabric/resume_rebuild.sh runs
 *   resume_rebuild_check PKI SERVER SOURCE PORT          on host 2
 *
 * The cut closes the client's TCP socket under the library (dup2 of an
 * unconnected socket over it: the peer gets a FIN, or a RST when our side
 * had unread data, as a forged one would do) right after the step that put
 * the rebuild in the phase under test, so nothing more is read or written
 * on it. Rounds, each with three echoes in flight:
 *   plain      no rebuild: the cut alone
 *   sent       our queue pair failed (as a forged bad-rkey WRITE leaves it):
 *              cut once our REBUILD is out, before the server's answer
 *   behind     the same, cut once the server's answer arrived, unread: the
 *              server connected its rebuilt QP, we did not (one epoch apart)
 *   connected  a frame replayed onto the server (as a forged SEND: it fails
 *              sequencing there, the server starts the rebuild): cut once we
 *              connected ours and sent REBUILD_READY, before the server's
 * Each line "CUT round=R state=S epoch=E" says where the cut landed; after
 * the stream, "RESULT stream=..." says whether every echo came back once and
 * in order, with the session's rebuilds and resumes and each round's epoch
 * after healing; "RESULT second=..." how a second connection of the same
 * identity was refused while the session lives.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "check_util.h"
#include "conn.h"
#include "rdmasec.h"

#define TIMEOUT_MS 30000
#define GRACE_MS 8000
#define ROUNDS 24u
#define IN_FLIGHT 3u

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void echo_send(struct rsec_conn *c, unsigned k)
{
	char m[32];
	int n = snprintf(m, sizeof(m), "Emsg-%u", k); /* APP_ECHO */
	check_must(rsec_send(c, m, (size_t)n, TIMEOUT_MS), "send", c);
}

/* The next echo must be msg-k's: once, in order. */
static bool echo_recv(struct rsec_conn *c, unsigned k)
{
	char m[64], want[32];
	size_t len;
	check_must(rsec_recv(c, m, sizeof(m) - 1, &len, TIMEOUT_MS), "recv", c);
	m[len] = '\0';
	snprintf(want, sizeof(want), "emsg-%u", k); /* APP_ECHO_REPLY */
	if (strcmp(m, want) != 0) {
		printf("BAD echo: got \"%s\", want \"%s\"\n", m, want);
		return false;
	}
	return true;
}

/* Step the connection until its rebuild is in state want; false if it ended first (or 5 s passed). */
static bool step_until(struct rsec_conn *c, enum rsec_rebuild_state want)
{
	uint32_t epoch = c->path.rb.epoch;
	double end = now_ms() + 5000;
	while (c->path.rb.state != want && now_ms() < end) {
		if (c->path.rb.state == REBUILD_NONE && c->path.rb.epoch != epoch)
			return false; /* over within one step: the peer's answers were all there at once */
		int rc = rsec_conn_wait(c, 2);
		if (rc < 0)
			check_must(rc, "step", c);
	}
	return c->path.rb.state == want;
}

/*
 * The control connection gone under the library, at once: the TCP socket
 * closes with a RST (linger 0), and its descriptor becomes a socket at end
 * of file (watched as the old one was), so nothing more is read or written.
 */
static void cut(struct rsec_conn *c, unsigned round)
{
	static const char *names[] = { "none", "sent", "connected", "parked" };
	printf("CUT round=%u state=%s epoch=%u\n", round, names[c->path.rb.state], c->path.rb.epoch);
	fflush(stdout);
	struct linger now = { .l_onoff = 1, .l_linger = 0 };
	int sv[2];
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = 0 };
	if (setsockopt(c->path.chan->sock, SOL_SOCKET, SO_LINGER, &now, sizeof(now)) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) < 0 || close(sv[1]) < 0 ||
	    dup2(sv[0], c->path.chan->sock) < 0 || close(sv[0]) < 0 || epoll_ctl(c->epfd, EPOLL_CTL_ADD, c->path.chan->sock, &ev) < 0)
		check_die("cannot cut the control connection");
}

/* A frame the server already opened, sent again on our QP: it fails sequencing there. */
static void replay(struct rsec_conn *c)
{
	uint64_t f = c->path.sendq.next - 1;
	struct ibv_sge sge = {
		.addr = (uintptr_t)(c->path.send_ring + (size_t)(f % c->path.send_slots) * c->path.frame_size),
		.length = c->path.frame_size,
		.lkey = c->path.send_mr->lkey,
	};
	struct ibv_send_wr wr = { .wr_id = UINT64_MAX, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND };
	struct ibv_send_wr *bad;
	if (c->path.sendq.next == 0 || ibv_post_send(c->path.qp.qp, &wr, &bad) != 0)
		check_die("cannot replay a frame");
}

/* Round r's fault and cut, with echoes in flight; "" if none. */
static const char *fault_of(unsigned r)
{
	switch (r) {
	case 3: return "plain";
	case 6: return "sent";
	case 14: return "behind";
	case 10: case 18: return "connected";
	default: return "";
	}
}

/*
 * Round r's fault, then the cut in the phase asked for. One more echo goes
 * out with each try: after our QP failed, its post is what fails at once (a
 * completion); before a replay, it is the frame replayed. A rebuild that
 * went by too fast to be seen in that phase (a loaded host) is tried again.
 */
static void fault(struct rsec_conn *c, unsigned r, const char *what, unsigned *sent)
{
	if (strcmp(what, "plain") == 0) {
		cut(c, r);
		return;
	}
	bool ours = strcmp(what, "connected") != 0;
	enum rsec_rebuild_state want = ours ? REBUILD_SENT : REBUILD_CONNECTED;
	for (unsigned tries = 0; tries < 5 && c->path.rb.state != want; tries++) {
		if (tries)
			printf("RETRY round=%u: the rebuild was over before it was %s\n", r, what);
		if (ours)
			check_must(rsec_qp_to_error(&c->path.qp), "move the queue pair to error", c);
		echo_send(c, ++*sent);
		if (!ours)
			replay(c);
		(void)step_until(c, want);
	}
	if (c->path.rb.state != want)
		printf("MISSED round=%u: the rebuild never was %s\n", r, what);
	if (strcmp(what, "behind") == 0) {
		/* The server's answer (REBUILD, REBUILD_READY) arrives and is never read: it connected, we did not. */
		struct pollfd p = { .fd = c->path.chan->sock, .events = POLLIN };
		if (poll(&p, 1, 5000) != 1)
			printf("MISSED round=%u: no answer from the server\n", r);
		usleep(50000);
	}
	cut(c, r);
}

/* While the session lives, the same identity again: --max-per-identity 1 refuses it. */
static void second(char **argv)
{
	struct rsec_ctx *ctx = check_client_ctx(argv[1], "client", argv[3], TIMEOUT_MS, 0, 0);
	struct rsec_conn *c = NULL;
	int rc = rsec_connect(ctx, argv[2], (uint16_t)atoi(argv[4]), NULL, TIMEOUT_MS, &c);
	check_result("second", "%s: %s", rc == 0 ? "admitted" : rsec_strerror(rc), c ? rsec_conn_error(c) : "");
	rsec_conn_free(c);
	rsec_ctx_free(ctx);
}

int main(int argc, char **argv)
{
	check_prog = "resume_rebuild_check";
	signal(SIGPIPE, SIG_IGN); /* a write to the cut connection fails, it must not kill us */
	if (argc != 5) {
		fprintf(stderr, "usage: resume_rebuild_check PKI SERVER SOURCE PORT\n");
		return 2;
	}
	struct rsec_ctx_attr attr = {
		.local_addr = argv[3], .handshake_timeout_ms = TIMEOUT_MS,
		.comp_mask = RSEC_CTX_ATTR_REBUILDS | RSEC_CTX_ATTR_GRACE, .rebuilds_per_min = 60,
		.resume_grace_ms = GRACE_MS,
	};
	struct rsec_ctx *ctx = check_ctx(argv[1], "client", &attr);
	struct rsec_conn *c;
	check_must(rsec_connect(ctx, argv[2], (uint16_t)atoi(argv[4]), NULL, TIMEOUT_MS, &c), "connect", NULL);
	unsigned sent = 0, echoed = 0;
	bool ok = true;
	char epochs[256] = "";
	for (unsigned r = 1; r <= ROUNDS && ok; r++) {
		const char *what = fault_of(r);
		unsigned n = what[0] ? IN_FLIGHT : 1;
		for (unsigned i = 0; i < n; i++)
			echo_send(c, ++sent);
		if (what[0])
			fault(c, r, what, &sent);
		while (echoed < sent && ok)
			ok = echo_recv(c, ++echoed);
		if (what[0] && strcmp(what, "plain") != 0) {
			size_t l = strlen(epochs);
			snprintf(epochs + l, sizeof(epochs) - l, "%sround %u: %u", l ? ", " : "", r, c->path.rb.epoch);
		}
		if (r == 12)
			second(argv);
	}
	struct rsec_conn_stats st;
	check_must(rsec_conn_stats(c, &st), "stats", c);
	check_result("stream", "%u of %u echoed %s; rebuilds=%" PRIu64 " resumes=%" PRIu64 "; epoch after %s", echoed,
		     sent, ok ? "once and in order" : "WRONG", st.rebuilds, st.resumes, epochs);
	(void)rsec_conn_close(c, "done");
	rsec_conn_free(c);
	rsec_ctx_free(ctx);
	return ok ? 0 : 1;
}
