/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dev.h"

static void dev_reason(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void dev_reason(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	(void)vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

unsigned rsec_mtu_bytes(enum ibv_mtu mtu)
{
	switch (mtu) {
	case IBV_MTU_256: return 256;
	case IBV_MTU_512: return 512;
	case IBV_MTU_1024: return 1024;
	case IBV_MTU_2048: return 2048;
	case IBV_MTU_4096: return 4096;
	default: return 0;
	}
}

/* An IPv4 literal becomes its IPv4-mapped GID (::ffff:a.b.c.d), as RoCEv2 stores it. */
RSEC_MUST_CHECK static int ip_to_gid(const char *ip, union ibv_gid *gid)
{
	struct in_addr v4;

	memset(gid, 0, sizeof(*gid));
	if (inet_pton(AF_INET, ip, &v4) == 1) {
		gid->raw[10] = 0xff;
		gid->raw[11] = 0xff;
		memcpy(&gid->raw[12], &v4, 4);
		return 0;
	}
	RSEC_ENSURE(inet_pton(AF_INET6, ip, gid->raw) == 1, RSEC_E_INVAL);
	return 0;
}

static bool gid_is_v4_mapped(const union ibv_gid *gid)
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return memcmp(gid->raw, prefix, sizeof(prefix)) == 0;
}

/* Fallback for kernels without the GID-table ioctl: sysfs says "RoCE v2". */
static bool sysfs_gid_is_rocev2(const char *dev, uint8_t port, unsigned idx)
{
	char path[256], line[32] = "";
	FILE *f;
	int n = snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%u/gid_attrs/types/%u", dev,
			 (unsigned)port, idx);

	if (n < 0 || (size_t)n >= sizeof(path))
		return false;
	f = fopen(path, "r");
	if (f == NULL)
		return false;
	if (fgets(line, sizeof(line), f) == NULL)
		line[0] = '\0';
	fclose(f);
	return strncmp(line, "RoCE v2", 7) == 0;
}

int rsec_gid_pick(const struct ibv_gid_entry *e, size_t n, uint32_t port, const union ibv_gid *want,
		  union ibv_gid *found)
{
	enum { WANTED, V4_MAPPED, ANY_V2, NONE } best_rank = NONE;
	int best = -1;

	for (size_t i = 0; i < n; i++) {
		if (e[i].port_num != port || e[i].gid_type != IBV_GID_TYPE_ROCE_V2)
			continue;
		int rank = want != NULL ? (memcmp(e[i].gid.raw, want->raw, sizeof(want->raw)) == 0 ? WANTED : NONE)
			   : gid_is_v4_mapped(&e[i].gid) ? V4_MAPPED
							  : ANY_V2;
		if (rank == NONE || rank > (int)best_rank ||
		    (rank == (int)best_rank && (uint32_t)best < e[i].gid_index))
			continue;
		best_rank = rank;
		best = (int)e[i].gid_index;
		*found = e[i].gid;
	}
	return best;
}

/*
 * Without the GID-table call (an old kernel): the port's entries one query per index, the type from
 * sysfs where the query cannot say it. How many it filled in e (at most tbl_len).
 */
static size_t read_gids_by_index(struct ibv_context *ctx, uint8_t port, int tbl_len, struct ibv_gid_entry *e)
{
	size_t n = 0;

	for (int i = 0; i < tbl_len; i++) {
		struct ibv_gid_entry g = { .gid_index = (uint32_t)i, .port_num = port };
		int rc = ibv_query_gid_ex(ctx, port, (uint32_t)i, &g, 0);

		if (rc == EOPNOTSUPP || rc == ENOSYS) {
			if (ibv_query_gid(ctx, port, i, &g.gid) != 0)
				continue;
			g.gid_type = sysfs_gid_is_rocev2(ibv_get_device_name(ctx->device), port, (unsigned)i)
					     ? IBV_GID_TYPE_ROCE_V2
					     : IBV_GID_TYPE_ROCE_V1;
		} else if (rc != 0) {
			continue; /* empty slot (ENODATA) or unreadable */
		}
		e[n++] = g;
	}
	return n;
}

/*
 * The RoCEv2 GID index of port for want (rsec_gid_pick's rule), or -1. The device's whole GID table
 * in one call: asking index by index costs a system call per slot, and rxe has 1024, mostly empty,
 * on every device that is not the one a local address names.
 */
static int find_rocev2_gid(struct ibv_context *ctx, uint8_t port, unsigned nports, int tbl_len,
			   const union ibv_gid *want, union ibv_gid *found)
{
	size_t max = tbl_len > 0 ? (size_t)tbl_len * (nports ? nports : 1) : 0;
	struct ibv_gid_entry *e = max ? calloc(max, sizeof(*e)) : NULL;
	ssize_t n = e != NULL ? ibv_query_gid_table(ctx, e, max, 0) : -ENOMEM;
	if (n < 0 && e != NULL)
		n = (ssize_t)read_gids_by_index(ctx, port, tbl_len, e);
	int idx = n > 0 ? rsec_gid_pick(e, (size_t)n, port, want, found) : -1;

	free(e);
	return idx;
}

/* Try one port of an open device; 0 and d filled on a match, RSEC_E_NODEV with a reason otherwise. */
RSEC_MUST_CHECK static int try_port(struct rsec_dev *d, uint8_t port, unsigned nports, const union ibv_gid *want,
				    char *err, size_t errlen)
{
	struct ibv_port_attr pa;
	int idx;

	if (ibv_query_port(d->ctx, port, &pa) != 0) {
		dev_reason(err, errlen, "%s port %u: query failed", d->name, (unsigned)port);
		return RSEC_E_NODEV;
	}
	if (pa.state != IBV_PORT_ACTIVE) {
		dev_reason(err, errlen, "%s port %u is not active (%s)", d->name, (unsigned)port,
			   ibv_port_state_str(pa.state));
		return RSEC_E_NODEV;
	}
	d->port = port;
	d->active_mtu = pa.active_mtu;
	d->lid = pa.lid;
	d->link_layer = pa.link_layer == IBV_LINK_LAYER_ETHERNET ? IBV_LINK_LAYER_ETHERNET
								 : IBV_LINK_LAYER_INFINIBAND;
	if (d->link_layer == IBV_LINK_LAYER_INFINIBAND) {
		if (want != NULL) {
			dev_reason(err, errlen, "%s port %u is InfiniBand: an IP address selects RoCE ports only",
				   d->name, (unsigned)port);
			return RSEC_E_NODEV;
		}
		d->gid_index = 0;
		if (ibv_query_gid(d->ctx, port, 0, &d->gid) != 0) {
			dev_reason(err, errlen, "%s port %u: cannot read GID 0", d->name, (unsigned)port);
			return RSEC_E_NODEV;
		}
		return 0;
	}
	idx = find_rocev2_gid(d->ctx, port, nports, pa.gid_tbl_len, want, &d->gid);
	if (idx < 0) {
		dev_reason(err, errlen, "%s port %u has no RoCEv2 GID%s", d->name, (unsigned)port,
			   want != NULL ? " for that address" : "");
		return RSEC_E_NODEV;
	}
	d->gid_index = idx;
	return 0;
}

/* Open one device and look for a matching port. Closes it again on no match. */
RSEC_MUST_CHECK static int try_device(struct ibv_device *dev, const union ibv_gid *want, struct rsec_dev *d,
				      char *err, size_t errlen)
{
	struct ibv_device_attr da;
	int rc = RSEC_E_NODEV;

	(void)snprintf(d->name, sizeof(d->name), "%s", ibv_get_device_name(dev));
	d->ctx = ibv_open_device(dev);
	if (d->ctx == NULL) {
		dev_reason(err, errlen, "%s: cannot open (%s)", d->name, strerror(errno));
		return RSEC_E_NODEV;
	}
	if (ibv_query_device(d->ctx, &da) != 0) {
		dev_reason(err, errlen, "%s: query failed", d->name);
		goto err_close;
	}
	for (unsigned p = 1; p <= da.phys_port_cnt && rc != 0; p++)
		rc = try_port(d, (uint8_t)p, da.phys_port_cnt, want, err, errlen);
	if (rc != 0)
		goto err_close;
	d->max_qp_wr = da.max_qp_wr > 0 ? (uint32_t)da.max_qp_wr : 0;
	d->max_sge = da.max_sge > 0 ? (uint32_t)da.max_sge : 0;
	d->mw_type2 = (da.device_cap_flags & (IBV_DEVICE_MEM_WINDOW_TYPE_2A | IBV_DEVICE_MEM_WINDOW_TYPE_2B)) != 0;
	{
		int atom = da.max_qp_rd_atom < da.max_qp_init_rd_atom ? da.max_qp_rd_atom : da.max_qp_init_rd_atom;

		if (atom > RSEC_MAX_RD_ATOM)
			atom = RSEC_MAX_RD_ATOM;
		d->max_rd_atom = (uint8_t)(atom > 0 ? atom : 1);
	}
	return 0;

err_close:
	ibv_close_device(d->ctx);
	d->ctx = NULL;
	return rc;
}

int rsec_dev_open_err(const char *name, const char *local_ip, struct rsec_dev **out, char *err, size_t errlen)
{
	union ibv_gid want;
	struct ibv_device **list;
	struct rsec_dev *d;
	int n = 0, rc = RSEC_E_NODEV;
	bool named_seen = false;

	RSEC_ENSURE_REF(out);
	*out = NULL;
	dev_reason(err, errlen, "no RDMA device");
	if (local_ip != NULL && ip_to_gid(local_ip, &want) != 0) {
		dev_reason(err, errlen, "not an IP address literal");
		return RSEC_E_INVAL;
	}
	d = calloc(1, sizeof(*d));
	RSEC_ENSURE(d != NULL, RSEC_E_NOMEM);
	list = ibv_get_device_list(&n);
	if (list == NULL || n == 0) {
		dev_reason(err, errlen, "no RDMA device (is a driver such as rdma_rxe loaded?)");
		goto out;
	}
	for (int i = 0; i < n && rc != 0; i++) {
		if (name != NULL && strcmp(name, ibv_get_device_name(list[i])) != 0)
			continue;
		named_seen = true;
		rc = try_device(list[i], local_ip != NULL ? &want : NULL, d, err, errlen);
	}
	if (name != NULL && !named_seen)
		dev_reason(err, errlen, "no RDMA device named %s", name);
	else if (rc != 0 && local_ip != NULL && name == NULL && n > 1)
		dev_reason(err, errlen, "no active RoCEv2 port of any of the %d devices has the GID of %s", n,
			   local_ip);
out:
	if (list != NULL)
		ibv_free_device_list(list);
	if (rc != 0) {
		free(d);
		return rc;
	}
	atomic_init(&d->refs, 1);
	*out = d;
	return 0;
}

int rsec_dev_open(const char *name, const char *local_ip, struct rsec_dev **out)
{
	return rsec_dev_open_err(name, local_ip, out, NULL, 0);
}

struct rsec_dev *rsec_dev_ref(struct rsec_dev *d)
{
	if (d != NULL)
		atomic_fetch_add_explicit(&d->refs, 1, memory_order_relaxed);
	return d;
}

void rsec_dev_put(struct rsec_dev *d)
{
	if (d == NULL)
		return;
	/* acq_rel: every user's last access happens before the close. */
	if (atomic_fetch_sub_explicit(&d->refs, 1, memory_order_acq_rel) != 1)
		return;
	if (d->ctx != NULL)
		ibv_close_device(d->ctx);
	free(d);
}
