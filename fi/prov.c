/* SPDX-License-Identifier: MIT */
/*
 * The provider's entry point (fi_prov_ini) and the fabric object, which owns
 * the rdmasec contexts: one per role, made on first use from FI_RDMASEC_*.
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "rsfi.h"

static int fabric_trywait(struct fid_fabric *fabric, struct fid **fids, int count);

static void prov_cleanup(void)
{
}

static int fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);

struct fi_provider rsfi_prov = {
	.version = RSFI_VERSION,
	.fi_version = RSFI_API_VERSION,
	.name = RSFI_NAME,
	.getinfo = rsfi_getinfo,
	.fabric = fabric_open,
	.cleanup = prov_cleanup,
};

/* libfabric looks this up by name in a provider it loads (fi_prov.h declares it only as it defines it). */
struct fi_provider *fi_prov_ini(void);

FI_EXT_INI
{
	rsfi_conf_define();
	return &rsfi_prov;
}

int rsfi_fabric_ctx(struct rsfi_fabric *fab, int is_server, const struct sockaddr_in *local, struct rsec_ctx **out)
{
	char addr[INET_ADDRSTRLEN] = "";
	int rc = 0;

	if (!is_server && local && local->sin_addr.s_addr != htonl(INADDR_ANY) &&
	    !inet_ntop(AF_INET, &local->sin_addr, addr, sizeof(addr)))
		return -FI_EINVAL;
	pthread_mutex_lock(&fab->lock);
	struct rsec_ctx **slot = is_server ? &fab->server : &fab->client;
	/* A client context is bound to its local address: one address per fabric object. */
	if (!is_server && *slot && strcmp(fab->client_addr, addr) != 0) {
		RSFI_WARN(FI_LOG_FABRIC, "one local address per fabric: %s in use, %s asked for\n", fab->client_addr,
			  addr);
		rc = -FI_EINVAL;
	} else if (!*slot) {
		rc = rsfi_conf_ctx(&fab->conf, is_server, addr, slot);
		if (!rc && !is_server)
			memcpy(fab->client_addr, addr, sizeof(addr));
	}
	*out = *slot;
	pthread_mutex_unlock(&fab->lock);
	return rc;
}

static int fabric_close(struct fid *fid)
{
	struct rsfi_fabric *fab = (struct rsfi_fabric *)fid;

	rsec_ctx_free(fab->client);
	rsec_ctx_free(fab->server);
	pthread_mutex_destroy(&fab->lock);
	free(fab);
	return 0;
}

static struct fi_ops fabric_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = fabric_close,
	.bind = rsfi_no_bind,
	.control = rsfi_no_control,
	.ops_open = rsfi_no_ops_open,
	.tostr = rsfi_no_tostr,
	.ops_set = rsfi_no_ops_set,
};

static int no_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr, struct fid_wait **waitset)
{
	(void)fabric, (void)attr, (void)waitset;
	return -FI_ENOSYS;
}

static int domain2(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **dom, uint64_t flags,
		   void *context)
{
	return flags ? -FI_EINVAL : rsfi_domain_open(fabric, info, dom, context);
}

static struct fi_ops_fabric fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = rsfi_domain_open,
	.passive_ep = rsfi_pep_open,
	.eq_open = rsfi_eq_open,
	.wait_open = no_wait_open,
	.trywait = fabric_trywait,
	.domain2 = domain2,
};

static int fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context)
{
	if (attr && attr->name && strcmp(attr->name, RSFI_NAME) != 0)
		return -FI_EINVAL;
	struct rsfi_fabric *fab = calloc(1, sizeof(*fab));
	if (!fab)
		return -FI_ENOMEM;
	int rc = rsfi_conf_read(&fab->conf);
	if (rc) {
		free(fab);
		return rc;
	}
	pthread_mutex_init(&fab->lock, NULL);
	fab->fid.fid.fclass = FI_CLASS_FABRIC;
	fab->fid.fid.context = context;
	fab->fid.fid.ops = &fabric_fi_ops;
	fab->fid.ops = &fabric_ops;
	fab->fid.api_version = attr ? attr->api_version : RSFI_API_VERSION;
	*fabric = &fab->fid;
	return 0;
}

/* fi_trywait: -FI_EAGAIN if any of the CQs or EQs has something to read now, else 0 (safe to wait). */
static int fabric_trywait(struct fid_fabric *fabric, struct fid **fids, int count)
{
	(void)fabric;
	for (int i = 0; i < count; i++) {
		bool ready;

		switch (fids[i]->fclass) {
		case FI_CLASS_CQ:
			ready = rsfi_cq_ready((struct rsfi_cq *)fids[i]);
			break;
		case FI_CLASS_EQ:
			ready = rsfi_eq_ready((struct rsfi_eq *)fids[i]);
			break;
		default:
			return -FI_EINVAL;
		}
		if (ready)
			return -FI_EAGAIN;
	}
	return 0;
}
