/* SPDX-License-Identifier: MIT */
/*
 * The RDMA device context: opened once per process and role, shared by every
 * connection through a reference count.
 */
#ifndef RSEC_DEV_H
#define RSEC_DEV_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#include "result.h"

struct rsec_dev {
	struct ibv_context *ctx;
	uint8_t port;
	int gid_index;
	union ibv_gid gid;
	uint16_t lid;
	enum ibv_mtu active_mtu;
	uint8_t link_layer;        /* IBV_LINK_LAYER_* */
	bool mw_type2;             /* type-2 memory windows advertised (2A or 2B) */
	uint32_t max_qp_wr, max_sge;
	uint8_t max_rd_atom;       /* min(device max_qp_rd_atom, max_qp_init_rd_atom, RSEC_MAX_RD_ATOM) */
	char name[64];
	_Atomic int refs;
};

/* Outstanding RDMA READs we allow per QP, either direction. */
#define RSEC_MAX_RD_ATOM 16

/*
 * From a device's GID entries (ibv_query_gid_table's, any order), port's RoCEv2 GID for want: the
 * entry equal to want, or with want NULL the IPv4-mapped one of lowest index, else the lowest
 * index. Its index, and the GID in *found; -1 if none.
 */
int rsec_gid_pick(const struct ibv_gid_entry *e, size_t n, uint32_t port, const union ibv_gid *want,
		  union ibv_gid *found);

/*
 * name: device name, or NULL for the device that owns local_ip (or the first
 * active port of any device if local_ip is NULL too). local_ip: an IPv4 or
 * IPv6 literal; selects the port and the RoCEv2 GID index whose GID is that
 * address. IB link layer: GID index 0 and the port's LID (only when local_ip
 * is NULL). Returns 0, RSEC_E_INVAL (bad literal), RSEC_E_NODEV (nothing
 * matches), RSEC_E_VERBS, RSEC_E_NOMEM.
 */
RSEC_MUST_CHECK int rsec_dev_open(const char *name, const char *local_ip, struct rsec_dev **out);
/* Same; on failure also writes a NUL-terminated reason into err[errlen] (err may be NULL). */
RSEC_MUST_CHECK int rsec_dev_open_err(const char *name, const char *local_ip, struct rsec_dev **out,
				      char *err, size_t errlen);
/* Takes one more reference; returns d. */
struct rsec_dev *rsec_dev_ref(struct rsec_dev *d);
/* Drops one reference; closes the device on the last. NULL is a no-op. */
void rsec_dev_put(struct rsec_dev *d);

/* Bytes of an MTU enum; 0 if it is not one of IBV_MTU_256..IBV_MTU_4096. */
unsigned rsec_mtu_bytes(enum ibv_mtu mtu);

#endif /* RSEC_DEV_H */
