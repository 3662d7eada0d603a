/* SPDX-License-Identifier: MIT */
/*
 * What fi_pingpong does not touch in the libfabric provider, through
 * libfabric's own API: the peer identity option on both sides, private data
 * of fi_connect and fi_accept, a receive too small (FI_ETRUNC error entry),
 * fi_senddata into an FI_CQ_FORMAT_DATA CQ waited for through
 * fi_control(FI_GETWAIT) and epoll, FI_SHUTDOWN, and fi_reject with its
 * private data reaching the client as FI_ECONNREFUSED.
 *
 *   fi_check serve PORT          (FI_RDMASEC_* configure the provider)
 *   fi_check connect HOST PORT
 *
 * Prints "RESULT name=value" lines for tests/fabric/fi_pingpong.sh; exits 0
 * when every step behaved.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include "../../fi/fi_rdmasec.h"

#define CQ_DATA 0xfeedfaceULL
#define TIMEOUT_MS 30000

struct side {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_eq *eq;
	struct fid_domain *domain;
	struct fid_cq *cq;
	struct fid_ep *ep;
	char buf[4096], small[8];
};

static int failed(const char *what, long rc)
{
	printf("FAIL %s: %ld (%s)\n", what, rc, fi_strerror((int)-rc));
	return 1;
}

static struct fi_info *hints_new(void)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		return NULL;
	h->ep_attr->type = FI_EP_MSG;
	h->caps = FI_MSG;
	h->addr_format = FI_SOCKADDR_IN;
	h->fabric_attr->prov_name = strdup("rdmasec");
	return h;
}

/* The next CM event, required to be `want`: 0, or 1 (printed). */
static int expect_event(struct fid_eq *eq, uint32_t want, struct fi_eq_cm_entry *entry, size_t len)
{
	uint32_t event = 0;
	ssize_t rc = fi_eq_sread(eq, &event, entry, len, TIMEOUT_MS, 0);

	if (rc < 0)
		return failed("fi_eq_sread", rc);
	if (event != want) {
		printf("FAIL event %u, not %u\n", event, want);
		return 1;
	}
	return 0;
}

/* Domain, CQ (FI_CQ_FORMAT_DATA, FI_WAIT_FD), endpoint bound and enabled. */
static int open_active(struct side *s, struct fi_info *info)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_DATA, .wait_obj = FI_WAIT_FD, .size = 64 };
	int rc = fi_domain(s->fabric, info, &s->domain, NULL);

	if (!rc)
		rc = fi_cq_open(s->domain, &cq_attr, &s->cq, NULL);
	if (!rc)
		rc = fi_endpoint(s->domain, info, &s->ep, NULL);
	if (!rc)
		rc = fi_ep_bind(s->ep, &s->eq->fid, 0);
	if (!rc)
		rc = fi_ep_bind(s->ep, &s->cq->fid, FI_TRANSMIT | FI_RECV);
	if (!rc)
		rc = fi_enable(s->ep);
	return rc ? failed("open endpoint", rc) : 0;
}

static int print_identity(struct fid_ep *ep, const char *who)
{
	char id[256];
	size_t len = sizeof(id);
	int rc = fi_getopt(&ep->fid, FI_OPT_ENDPOINT, FI_RDMASEC_OPT_PEER_IDENTITY, id, &len);

	if (rc)
		return failed("fi_getopt(FI_RDMASEC_OPT_PEER_IDENTITY)", rc);
	printf("RESULT %s-peer=%s\n", who, id);
	return 0;
}

/* One completion, waiting on the CQ's fd (fi_trywait, epoll) between reads: 1 entry, or < 0. */
static ssize_t wait_cq(struct fid_cq *cq, struct fid_fabric *fabric, struct fi_cq_data_entry *e,
		       struct fi_cq_err_entry *err)
{
	int fd, ep = epoll_create1(0);
	struct fid *fids[1] = { &cq->fid };
	ssize_t rc = fi_control(&cq->fid, FI_GETWAIT, &fd);

	if (rc || ep < 0)
		return rc ? rc : -FI_EIO;
	struct epoll_event ev = { .events = EPOLLIN };
	epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
	for (int slices = 0; slices < TIMEOUT_MS / 100; slices++) {
		rc = fi_cq_read(cq, e, 1);
		if (rc == -FI_EAVAIL)
			rc = fi_cq_readerr(cq, err, 0) == 1 ? -FI_EAVAIL : -FI_EIO;
		if (rc != -FI_EAGAIN)
			break;
		if (fi_trywait(fabric, fids, 1) == FI_SUCCESS)
			epoll_wait(ep, &ev, 1, 100);
	}
	return rc;
}

static int serve_accepted(struct side *s)
{
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err = { 0 };
	struct fi_eq_cm_entry entry;
	int bad = 0;

	bad |= (int)fi_recv(s->ep, s->small, sizeof(s->small), NULL, 0, s->small) != 0;
	bad |= (int)fi_recv(s->ep, s->buf, sizeof(s->buf), NULL, 0, s->buf) != 0;
	if (bad || fi_accept(s->ep, "welcome", 8) != 0 || expect_event(s->eq, FI_CONNECTED, &entry, sizeof(entry)))
		return 1;
	ssize_t rc = wait_cq(s->cq, s->fabric, &e, &err);
	printf("RESULT trunc=%s olen %zu\n", rc == -FI_EAVAIL ? fi_strerror(err.err) : "no error", err.olen);
	rc = wait_cq(s->cq, s->fabric, &e, &err);
	bool data_ok = rc == 1 && (e.flags & FI_REMOTE_CQ_DATA) && e.data == CQ_DATA && e.len == 100 &&
		       memcmp(s->buf, "ping", 5) == 0;
	printf("RESULT senddata=%s\n", data_ok ? "ok" : "wrong");
	rc = fi_inject(s->ep, "pong", 5, 0);
	if (rc)
		return failed("fi_inject", rc);
	rc = expect_event(s->eq, FI_SHUTDOWN, &entry, sizeof(entry));
	printf("RESULT shutdown=%s\n", rc ? "missing" : "ok");
	return rc || !data_ok;
}

static int serve(const char *port)
{
	struct side s = { 0 };
	struct fi_info *hints = hints_new();
	struct fid_pep *pep;
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_FD };
	uint8_t cm[sizeof(struct fi_eq_cm_entry) + 256];
	struct fi_eq_cm_entry *entry = (void *)cm;
	int rc = hints ? fi_getinfo(FI_VERSION(1, 17), NULL, port, FI_SOURCE, hints, &s.info) : -FI_ENOMEM;

	if (!rc)
		rc = fi_fabric(s.info->fabric_attr, &s.fabric, NULL);
	if (!rc)
		rc = fi_eq_open(s.fabric, &eq_attr, &s.eq, NULL);
	if (!rc)
		rc = fi_passive_ep(s.fabric, s.info, &pep, NULL);
	if (!rc)
		rc = fi_pep_bind(pep, &s.eq->fid, 0);
	if (!rc)
		rc = fi_listen(pep);
	if (rc)
		return failed("listen", rc);
	printf("RESULT listening\n");
	fflush(stdout);
	if (expect_event(s.eq, FI_CONNREQ, entry, sizeof(cm)))
		return 1;
	printf("RESULT connreq-data=%s\n", (char *)entry->data);
	if (open_active(&s, entry->info) || print_identity(s.ep, "server") || serve_accepted(&s))
		return 1;
	fi_freeinfo(entry->info);
	/* The second request is refused, with a reason of ours. */
	if (expect_event(s.eq, FI_CONNREQ, entry, sizeof(cm)))
		return 1;
	rc = fi_reject(pep, entry->info->handle, "go-away", 8);
	printf("RESULT rejected=%d\n", rc);
	fi_freeinfo(entry->info);
	fi_close(&s.ep->fid);
	fi_close(&s.cq->fid);
	fi_close(&s.domain->fid);
	fi_close(&pep->fid);
	fi_close(&s.eq->fid);
	fi_close(&s.fabric->fid);
	fi_freeinfo(s.info);
	fi_freeinfo(hints);
	return rc != 0;
}

static int client_session(struct side *s)
{
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	uint8_t cm[sizeof(struct fi_eq_cm_entry) + 256];
	char big[100] = "ping", junk[64] = "more than eight bytes";

	if (open_active(s, s->info) || fi_recv(s->ep, s->buf, sizeof(s->buf), NULL, 0, s->buf) != 0)
		return 1;
	int rc = fi_connect(s->ep, s->info->dest_addr, "hello-from-client", 18);
	if (rc)
		return failed("fi_connect", rc);
	if (expect_event(s->eq, FI_CONNECTED, (void *)cm, sizeof(cm)))
		return 1;
	printf("RESULT connected-data=%s\n", (char *)((struct fi_eq_cm_entry *)cm)->data);
	if (print_identity(s->ep, "client"))
		return 1;
	if (fi_send(s->ep, junk, sizeof(junk), NULL, 0, junk) != 0 || wait_cq(s->cq, s->fabric, &e, &err) != 1 ||
	    fi_senddata(s->ep, big, sizeof(big), NULL, CQ_DATA, 0, big) != 0 ||
	    wait_cq(s->cq, s->fabric, &e, &err) != 1)
		return failed("send", -FI_EIO);
	ssize_t n = wait_cq(s->cq, s->fabric, &e, &err);
	printf("RESULT echo=%s\n", n == 1 && e.len == 5 && strcmp(s->buf, "pong") == 0 ? "ok" : "wrong");
	return fi_shutdown(s->ep, 0) != 0 || n != 1;
}

static int client_refused(struct side *s)
{
	struct fid_ep *ep;
	struct fi_eq_cm_entry entry;
	struct fi_eq_err_entry err = { 0 };
	uint32_t event;
	char data[16] = "";
	int rc = fi_endpoint(s->domain, s->info, &ep, NULL);

	if (!rc)
		rc = fi_ep_bind(ep, &s->eq->fid, 0);
	if (!rc)
		rc = fi_ep_bind(ep, &s->cq->fid, FI_TRANSMIT | FI_RECV);
	if (!rc)
		rc = fi_enable(ep);
	if (!rc)
		rc = fi_connect(ep, s->info->dest_addr, NULL, 0);
	if (rc)
		return failed("second connect", rc);
	err.err_data = data;
	err.err_data_size = sizeof(data) - 1;
	ssize_t n = fi_eq_sread(s->eq, &event, &entry, sizeof(entry), TIMEOUT_MS, 0);
	if (n == -FI_EAVAIL)
		n = fi_eq_readerr(s->eq, &err, 0);
	printf("RESULT reject=%s %s\n", n == sizeof(err) ? fi_strerror(err.err) : "no error entry",
	       err.err_data_size ? (char *)err.err_data : "");
	fi_close(&ep->fid);
	return !(n == sizeof(err) && err.err == FI_ECONNREFUSED);
}

static int client(const char *host, const char *port)
{
	struct side s = { 0 };
	struct fi_info *hints = hints_new();
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_FD };
	int rc = hints ? fi_getinfo(FI_VERSION(1, 17), host, port, 0, hints, &s.info) : -FI_ENOMEM;

	if (!rc)
		rc = fi_fabric(s.info->fabric_attr, &s.fabric, NULL);
	if (!rc)
		rc = fi_eq_open(s.fabric, &eq_attr, &s.eq, NULL);
	if (rc)
		return failed("fabric", rc);
	rc = client_session(&s);
	if (!rc)
		rc = client_refused(&s);
	if (s.ep)
		fi_close(&s.ep->fid);
	if (s.cq)
		fi_close(&s.cq->fid);
	fi_close(&s.eq->fid);
	if (s.domain)
		fi_close(&s.domain->fid);
	fi_close(&s.fabric->fid);
	fi_freeinfo(s.info);
	fi_freeinfo(hints);
	return rc;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && strcmp(argv[1], "serve") == 0)
		return serve(argv[2]);
	if (argc == 4 && strcmp(argv[1], "connect") == 0)
		return client(argv[2], argv[3]);
	fprintf(stderr, "usage: fi_check serve PORT | fi_check connect HOST PORT\n");
	return 2;
}
