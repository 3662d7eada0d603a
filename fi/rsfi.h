/* SPDX-License-Identifier: MIT */
/*
 * librdmasec-fi: a libfabric provider over librdmasec's public API
 * (fi_rdmasec(7)). Every FI_EP_MSG endpoint is one rdmasec connection: TLS
 * 1.3 mutual authentication, random PSNs and pooled QPNs, sealed messages.
 *
 * Locking, outermost first: a passive endpoint's progress lock, then its
 * domain's lock (endpoints, CQs and everything under them), then an EQ's
 * queue lock (a leaf: held only to queue or take an event). The fabric's
 * lock guards only the creation of its rdmasec contexts.
 */
#ifndef RSFI_H
#define RSFI_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#include "rdmasec.h"
#include "frame.h"
#include "fi_rdmasec.h"

#define RSFI_NAME "rdmasec"
#define RSFI_VERSION FI_VERSION(0, 1)
#define RSFI_API_VERSION FI_VERSION(1, 17)
#define RSFI_MAX_MSG ((size_t)16 << 20)  /* rdmasec's max_msg default, less nothing: we set it */
#define RSFI_QUEUE_DEPTH 256u            /* posted receives per endpoint; tx/rx_attr.size */
#define RSFI_CQ_DEFAULT 1024u
#define RSFI_IOV_LIMIT 4u
#define RSFI_INJECT_SIZE 4096u
#define RSFI_PATH_MAX 4096u
#define RSFI_ALLOW_MAX 16u
#define RSFI_LINGER_MS 3000

extern struct fi_provider rsfi_prov;

/* ---- configuration: FI_RDMASEC_* (config.c) ---- */
struct rsfi_conf {
	char creds[RSFI_PATH_MAX];  /* rdmasec-keygen directory, or "" */
	char ca[RSFI_PATH_MAX], cert[RSFI_PATH_MAX], key[RSFI_PATH_MAX], crl[RSFI_PATH_MAX];
	char server_name[256];      /* "" : the address connected to */
	char addr[INET_ADDRSTRLEN]; /* "" : the first address of an RDMA netdev */
	char audit[RSFI_PATH_MAX];
	char allow_text[4096];      /* comma-separated rules, split into allow[] */
	const char *allow[RSFI_ALLOW_MAX];
	uint32_t n_allow;
	int timeout_ms;
};
void rsfi_conf_define(void);
/** rsfi_conf_read - the FI_RDMASEC_* parameters, each checked: 0 or -FI_EINVAL (logged, naming the variable). */
int rsfi_conf_read(struct rsfi_conf *conf);
/** rsfi_conf_ctx - a new rdmasec context for the role: 0 or a negative FI errno (the reason logged). */
int rsfi_conf_ctx(const struct rsfi_conf *conf, int is_server, const char *local_addr, struct rsec_ctx **out);
/** rsfi_errno - the FI errno (positive) that best names an RSEC_E_* code. */
int rsfi_errno(int rsec_code);

/* ---- local addresses and devices (addr.c) ---- */
/**
 * rsfi_addr_pick - the RDMA device owning IPv4 address want (INADDR_ANY:
 * conf->addr, else the first address of a netdev under an RDMA device):
 * 0 with *out (port kept from want) and dev filled, or -FI_ENODATA.
 */
int rsfi_addr_pick(const struct rsfi_conf *conf, const struct sockaddr_in *want, struct sockaddr_in *out,
		   char dev[static 64]);
/** rsfi_addr_list - every (device, IPv4) pair, up to max: the count. */
size_t rsfi_addr_list(struct sockaddr_in *addrs, char (*devs)[64], size_t max);
/** rsfi_addr_parse - "IP:PORT" (rsec_conn_peer_addr) to a sockaddr_in: 0 or -FI_EINVAL. */
int rsfi_addr_parse(const char *text, struct sockaddr_in *out);
/** rsfi_addr_copy_out - copy sin to addr (size in *addrlen) the fi_getname way: 0 or -FI_ETOOSMALL (*addrlen: needed). */
int rsfi_addr_copy_out(const struct sockaddr_in *sin, void *addr, size_t *addrlen);

/* ---- fabric (prov.c) ---- */
struct rsfi_fabric {
	struct fid_fabric fid;
	pthread_mutex_t lock; /* the contexts below */
	struct rsfi_conf conf;
	struct rsec_ctx *client, *server;
	char client_addr[INET_ADDRSTRLEN];
};
int rsfi_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
		 const struct fi_info *hints, struct fi_info **info);
/** rsfi_fabric_ctx - the fabric's context for the role, made on first use. */
int rsfi_fabric_ctx(struct rsfi_fabric *fab, int is_server, const struct sockaddr_in *local, struct rsec_ctx **out);

/* ---- what CQs and EQs share (wait.c) ---- */
struct rsfi_ep;
struct rsfi_epset {
	struct rsfi_ep **v;
	unsigned n, cap;
};
int64_t rsfi_now_ms(void);
/** rsfi_coarse_ms - the coarse monotonic clock (the kernel's tick), read in the vDSO: the guest's HPET
 * makes CLOCK_MONOTONIC a system call, too dear for every progress call. */
int64_t rsfi_coarse_ms(void);
int rsfi_epoll_watch(int epfd, int fd, bool on);
/** rsfi_wait_slice - wait on epfd until deadline_ms (-1: no deadline) for one slice: 0, -FI_EAGAIN (past), -FI_EIO. */
int rsfi_wait_slice(int epfd, int64_t deadline_ms);
/** rsfi_getwait - fi_control(FI_GETWAIT) of a CQ or EQ. */
int rsfi_getwait(enum fi_wait_obj wait_obj, int epfd, int command, void *arg);
int rsfi_epset_add(struct rsfi_epset *s, struct rsfi_ep *ep);
void rsfi_epset_del(struct rsfi_epset *s, struct rsfi_ep *ep);
void rsfi_epset_free(struct rsfi_epset *s);

/* ---- domain and memory registration (domain.c) ---- */
struct rsfi_rma_grant;
struct rsfi_mr {
	struct fid_mr mr;
	struct rsfi_domain *dom;
	struct rsfi_mr *next;
	uint8_t *base;   /* FI_MR_VIRT_ADDR: the peer names bytes by their address */
	size_t len;
	uint64_t access; /* FI_REMOTE_READ, FI_REMOTE_WRITE */
};
struct rsfi_domain {
	struct fid_domain fid;
	struct rsfi_fabric *fab;
	pthread_mutex_t lock;
	unsigned refs;                  /* CQs, endpoints and MRs open on it */
	struct rsfi_mr *mrs;            /* registrations a peer may name by key */
	struct rsfi_rma_grant *grants;  /* rdmasec grants live for peers' fi_read/fi_write */
	struct rsfi_epset eps;          /* every endpoint open on it */
};
int rsfi_domain_open(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **dom, void *context);

/* ---- event queue (eq.c) ---- */
struct rsfi_pep;
struct rsfi_ep;
struct rsfi_event;
struct rsfi_eq {
	struct fid_eq fid;
	struct rsfi_fabric *fab;
	pthread_mutex_t lock; /* the queue: a leaf lock */
	struct rsfi_event *head, *tail;
	struct rsfi_event *last_err; /* kept while the application may read its err_data */
	int efd;  /* eventfd: readable while an event waits */
	int epfd; /* FI_WAIT_FD: efd, listeners, connections in set-up, connected endpoints */
	enum fi_wait_obj wait_obj;
	pthread_mutex_t progress_lock;
	struct rsfi_pep *peps[8];
	unsigned n_peps;
	struct rsfi_epset eps; /* connected endpoints, to notice their close */
};
int rsfi_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr, struct fid_eq **eq, void *context);
/** rsfi_eq_push - queue a CM event for fid (data: private data, up to RSFI_CM_DATA_MAX). */
int rsfi_eq_push(struct rsfi_eq *eq, uint32_t event, fid_t fid, struct fi_info *info, const void *data,
		 size_t len);
/** rsfi_eq_push_err - queue an error entry for fid: err a positive FI errno, why a short reason (copied). */
int rsfi_eq_push_err(struct rsfi_eq *eq, fid_t fid, int err, int rsec_code, const char *why, const void *data,
		     size_t len);
int rsfi_eq_watch(struct rsfi_eq *eq, int fd, bool on);
int rsfi_eq_add_ep(struct rsfi_eq *eq, struct rsfi_ep *ep);
void rsfi_eq_del_ep(struct rsfi_eq *eq, struct rsfi_ep *ep);
int rsfi_eq_add_pep(struct rsfi_eq *eq, struct rsfi_pep *pep);
void rsfi_eq_del_pep(struct rsfi_eq *eq, struct rsfi_pep *pep);
bool rsfi_eq_ready(struct rsfi_eq *eq);
void rsfi_eq_progress(struct rsfi_eq *eq);

/* ---- completion queue (cq.c) ---- */
struct rsfi_cqe {
	void *context;
	uint64_t flags;
	size_t len;
	void *buf;
	uint64_t data;
	int err;      /* 0, or a positive FI errno: an error entry */
	int prov_errno;
	size_t olen;
};
struct rsfi_cq {
	struct fid_cq fid;
	struct rsfi_domain *dom; /* dom->lock guards everything here */
	enum fi_cq_format format;
	enum fi_wait_obj wait_obj;
	struct rsfi_cqe *ring;
	size_t cap, head, count;
	int efd, epfd;
	bool fd_live;          /* efd tracks "not empty": someone may wait on epfd (sread, FI_GETWAIT, trywait) */
	bool look;             /* the next read's progress looks at the connections' fds (after a wait) */
	struct rsfi_epset eps; /* bound endpoints, driven by reads */
};
int rsfi_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **cq, void *context);
/** rsfi_cq_space - whether one more entry fits (callers check before doing the work). */
bool rsfi_cq_space(const struct rsfi_cq *cq);
void rsfi_cq_push(struct rsfi_cq *cq, const struct rsfi_cqe *e);
int rsfi_cq_add_ep(struct rsfi_cq *cq, struct rsfi_ep *ep);
void rsfi_cq_del_ep(struct rsfi_cq *cq, struct rsfi_ep *ep);
int rsfi_cq_watch(struct rsfi_cq *cq, int fd, bool on);
bool rsfi_cq_ready(struct rsfi_cq *cq);

/* ---- endpoints (ep.c, msg.c, cm.c) ---- */
enum rsfi_ep_state {
	RSFI_EP_IDLE = 0,
	RSFI_EP_CONNECTING, /* fi_connect's thread is setting up */
	RSFI_EP_ACCEPTING,  /* holds a connection request's connection; fi_accept next */
	RSFI_EP_CONNECTED,
	RSFI_EP_SHUTDOWN,   /* closed by either side: FI_SHUTDOWN reported */
};

struct rsfi_rx {
	void *context;
	struct iovec iov[RSFI_IOV_LIMIT];
	size_t count;
	uint64_t flags;
};

struct rsfi_connreq;
struct rsfi_rma_op;
struct rsfi_ep {
	struct fid_ep fid;
	struct rsfi_domain *dom;
	struct fi_info *info;
	struct rsfi_eq *eq;
	struct rsfi_cq *tx_cq, *rx_cq;
	bool tx_selective, rx_selective, enabled;
	enum rsfi_ep_state state;
	struct rsec_conn *conn;
	struct rsfi_connreq *creq;
	struct rsfi_rx rxq[RSFI_QUEUE_DEPTH];
	size_t rx_head, rx_count;
	uint8_t *rxbuf, *txbuf;
	size_t rxcap, txcap;
	pthread_t thread;
	bool thread_live;
	uint8_t cm_data[RSFI_CM_DATA_MAX];
	size_t cm_len;
	struct sockaddr_in local, peer;
	char identity[256];
	struct rsfi_frame stash;  /* the message in rxbuf, if stashed */
	bool stashed;             /* a data message waits in rxbuf for a receive to be posted */
	bool closing, bye_acked, ack_owed;
	struct rsfi_cqe tx_held;  /* the completion of a send rdmasec still holds in part */
	bool tx_holding;
	struct rsfi_rma_op *rma_ops; /* fi_read/fi_write waiting for the peer's grant, in order */
	uint64_t rma_tag;
	int64_t looked_ms;        /* when progress last looked at the connection's fds (rsec_conn_turn) */
	unsigned unlooked;        /* progress calls since */
};
int rsfi_ep_open(struct fid_domain *domain, struct fi_info *info, struct fid_ep **ep, void *context);
/** rsfi_ep_attach - make c the endpoint's connection (connected, or accepting): watched by its CQs and EQ. */
void rsfi_ep_attach(struct rsfi_ep *ep, struct rsec_conn *c, enum rsfi_ep_state state);
/**
 * rsfi_ep_closed - the connection ended (code): posted receives flushed and,
 * if report (the peer's doing), FI_SHUTDOWN once. Under dom->lock.
 */
void rsfi_ep_closed(struct rsfi_ep *ep, int code, bool report);
/**
 * rsfi_ep_progress - deliver what arrived into posted receives, notice
 * closing. Its completion queues are polled on every call; the connection's
 * fds (the TLS socket, the completion channel: system calls) are looked at
 * when look is set (the caller slept or is about to), while one-sided
 * transfers are under way (grants and claims come over TLS), every
 * RSFI_LOOK_CALLS calls, and once the coarse clock (the kernel's tick) moved
 * on. Under dom->lock.
 */
void rsfi_ep_progress(struct rsfi_ep *ep, bool look);
#define RSFI_LOOK_CALLS 64u
/**
 * rsfi_ep_linger - orderly close: send BYE and drive the endpoint until the
 * peer's BYE_ACK says everything sent before arrived, for up to
 * RSFI_LINGER_MS (a peer that never reads its CQ or EQ is not waited for
 * longer). Under dom->lock; the caller closes the connection after.
 */
void rsfi_ep_linger(struct rsfi_ep *ep);
extern struct fi_ops_msg rsfi_msg_ops;
extern struct fi_ops_cm rsfi_ep_cm_ops;
/** rsfi_send_frame - one rdmasec message: header f then the bytes of iov (copied). Under dom->lock. */
int rsfi_send_frame(struct rsfi_ep *ep, struct rsec_conn *c, const struct rsfi_frame *f, const struct iovec *iov,
		    size_t count, int timeout_ms);

/** rsfi_cm_send - one CM frame (type, private data) on c, waiting up to timeout_ms: 0 or a negative FI errno. */
int rsfi_cm_send(struct rsec_conn *c, enum rsfi_frame_type type, const void *data, size_t len, int timeout_ms);

/* ---- one-sided transfers through rdmasec grants (rma.c) ---- */
extern struct fi_ops_rma rsfi_rma_ops;
/** rsfi_rma_consume - act on an RMA frame from the peer: 1 done, 0 retry later (keep it). Under dom->lock. */
int rsfi_rma_consume(struct rsfi_ep *ep, const struct rsfi_frame *f, const uint8_t *body);
/** rsfi_rma_progress - run the transfers whose grants arrived. Under dom->lock. */
void rsfi_rma_progress(struct rsfi_ep *ep);
/** rsfi_rma_end - the endpoint goes: its transfers fail, grants it served are revoked. Under dom->lock. */
void rsfi_rma_end(struct rsfi_ep *ep, int code);
/** rsfi_rma_forget_mr - the MR goes: grants of it are revoked. Under dom->lock. */
void rsfi_rma_forget_mr(struct rsfi_domain *dom, struct rsfi_mr *mr);

/**
 * rsfi_conn_drain - drive c until the peer closes it, for up to ms: what we
 * sent last (a REJECT) is then read, not lost to our teardown.
 */
void rsfi_conn_drain(struct rsec_conn *c, int ms);

/* ---- passive endpoints and connection requests (pep.c) ---- */
struct rsfi_pending;
struct rsfi_pep {
	struct fid_pep fid;
	struct rsfi_fabric *fab;
	struct fi_info *info;
	struct rsfi_eq *eq;
	struct sockaddr_in bound;
	struct rsec_listener *listener;
	struct rsfi_pending *pending; /* accepted sockets still authenticating */
	unsigned n_pending;
	struct rsfi_connreq *creqs;   /* reported, not yet accepted or rejected */
};
struct rsfi_connreq {
	struct fid fid;               /* FI_CLASS_CONNREQ: the CONNREQ's info->handle */
	struct rsfi_pep *pep;
	struct rsec_conn *conn;       /* until an endpoint takes it */
	struct rsfi_ep *ep;           /* the endpoint that took it */
	struct rsfi_connreq *next;
	char identity[256];
};
int rsfi_pep_open(struct fid_fabric *fabric, struct fi_info *info, struct fid_pep **pep, void *context);
void rsfi_pep_progress(struct rsfi_pep *pep);
/** rsfi_connreq_take - ep takes the connection of a CONNREQ handle: 0 or -FI_EINVAL. */
int rsfi_connreq_take(fid_t handle, struct rsfi_ep *ep);
/** rsfi_connreq_done - forget a connection request (accepted, or its endpoint closed). */
void rsfi_connreq_done(struct rsfi_connreq *creq);

/* ---- shared stubs for operations the provider does not have (stubs.c) ---- */
int rsfi_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int rsfi_no_control(struct fid *fid, int command, void *arg);
int rsfi_no_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *context);
int rsfi_no_tostr(const struct fid *fid, char *buf, size_t len);
int rsfi_no_ops_set(struct fid *fid, const char *name, uint64_t flags, void *ops, void *context);

#define RSFI_WARN(subsys, ...) FI_WARN(&rsfi_prov, subsys, __VA_ARGS__)
#define RSFI_INFO(subsys, ...) FI_INFO(&rsfi_prov, subsys, __VA_ARGS__)

#endif /* RSFI_H */
