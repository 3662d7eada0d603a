/* SPDX-License-Identifier: MIT */
/*
 * exhaust's pure helpers: the kernel files it reads (cgroup v2 rdma.max and
 * rdma.current, /proc/self/cgroup, /proc/meminfo) parsed with bounds, the
 * --objects list, and the verdict on a remote run. No I/O.
 */
#ifndef RSEC_EXHAUST_PARSE_H
#define RSEC_EXHAUST_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EXH_DEV_MAX 64          /* an IB device name, with its NUL (IB_DEVICE_NAME_MAX) */
#define EXH_UNLIMITED UINT64_MAX /* "max" in rdma.max */

/* One device's line of rdma.max or rdma.current: "rxe1 hca_handle=2 hca_object=100". */
struct exh_rdma_limit {
	char dev[EXH_DEV_MAX];
	uint64_t hca_handle, hca_object; /* EXH_UNLIMITED for "max"; a missing key is EXH_UNLIMITED too */
};

/* One line (no newline needed; n bytes, need not be NUL-terminated). False with *why if malformed. */
bool exh_rdma_line_parse(const char *s, size_t n, struct exh_rdma_limit *out, const char **why);
/*
 * Find dev's line in a whole rdma.max / rdma.current file. 1 found, 0 not
 * there (a cgroup without limits for dev lists none), -1 a malformed line.
 */
int exh_rdma_find(const char *text, size_t n, const char *dev, struct exh_rdma_limit *out, const char **why);
/* "hca_handle=2 hca_object=max" into buf; the length, or 0 if cap is too small. */
size_t exh_rdma_format(const struct exh_rdma_limit *l, char *buf, size_t cap);

/* The cgroup v2 path ("0::/PATH") from /proc/self/cgroup into out; false if there is none or it does not fit. */
bool exh_cgroup_v2_path(const char *text, size_t n, char *out, size_t cap);

/* A "Key:   123 kB" field of /proc/meminfo, in KiB; false if absent or malformed. */
bool exh_meminfo_kib(const char *text, size_t n, const char *key, uint64_t *kib);

/* Object kinds of the local flood, in the order "all" creates them. */
enum exh_kind { EXH_QP, EXH_CQ, EXH_MR, EXH_PD, EXH_KINDS };
const char *exh_kind_name(enum exh_kind k);
/* "qp", "cq,mr", "all" into a bit set (1 << kind); false with a message on stderr. */
bool exh_kinds_parse(const char *s, unsigned *mask);

/* "EAGAIN", "ENOMEM", ... for the errnos a flood meets; "" for 0, "E<n>" for others (buf holds 16). */
const char *exh_errno_name(int e, char buf[static 16]);

/* What `exhaust --one-qp' printed: "one-qp: created" or "one-qp: refused at STEP: ERRNO". */
struct exh_one_qp {
	bool created;
	char step[8]; /* open, pd, cq or qp */
	char err[16]; /* an exh_errno_name(): [A-Z0-9]{1,15} */
};
/* One such line in s[0..n) (a trailing newline allowed, nothing else); false if malformed. */
bool exh_one_qp_parse(const char *s, size_t n, struct exh_one_qp *out);

/* What the remote run shows about the service. */
struct exh_remote_tally {
	uint32_t attempted;      /* connections the attacker tried */
	uint32_t connected;      /* the service accepted the TCP / rdma_cm connection */
	uint32_t resources_seen; /* the service showed it spent a QP on us (exchange line, CM reply) */
	uint32_t closed_by_peer; /* the service closed it during the run */
	uint32_t rejected;       /* the service refused it outright (CM reject, TCP reset) */
	int legit;               /* legitimate client probe: 1 served, 0 refused, -1 not tried */
};
/*
 * "exhausted": the legitimate client was refused while we held connections;
 * "resources-spent": it was served (or not tried), but the service showed it
 * spent a QP on each unauthenticated connection; "served": it was served and
 * we saw no QP spent on us; "no-resources-seen": no probe, no QP seen;
 * "unknown": not one connection got through and no probe was made.
 */
const char *exh_remote_verdict(const struct exh_remote_tally *t);

#endif /* RSEC_EXHAUST_PARSE_H */
