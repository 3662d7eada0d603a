/* SPDX-License-Identifier: MIT */
/*
 * fi_getinfo: one fi_info per local (RDMA device, IPv4 address) the request
 * can use, or -FI_ENODATA when it asks for what the provider does not have
 * (another endpoint type, RMA, tags, automatic progress...): never a silent
 * stub.
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include "rsfi.h"

#define RSFI_RMA_CAPS (FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)
#define RSFI_CAPS (FI_MSG | FI_SEND | FI_RECV | RSFI_RMA_CAPS)
#define RSFI_MR_MODE (FI_MR_VIRT_ADDR | FI_MR_PROV_KEY) /* what FI_RMA asks of the application */
#define RSFI_MAX_INFOS 16

struct want {
	struct sockaddr_in src, dst;
	bool have_src, have_dst;
};

/* Logs why hints are refused (FI_LOG_LEVEL=info): an application asking for what is not offered. */
static bool refuse(const char *what)
{
	RSFI_INFO(FI_LOG_CORE, "fi_getinfo: not offered: %s\n", what);
	return false;
}

static bool attrs_ok(const struct fi_info *h)
{
	if (h->ep_attr && h->ep_attr->type != FI_EP_UNSPEC && h->ep_attr->type != FI_EP_MSG)
		return refuse("endpoint type (FI_EP_MSG only)");
	if (h->ep_attr && h->ep_attr->max_msg_size > RSFI_MAX_MSG - RSFI_FRAME_HDR)
		return refuse("max_msg_size");
	if ((h->caps & ~(uint64_t)RSFI_CAPS) != 0) {
		uint64_t extra = h->caps & ~(uint64_t)RSFI_CAPS;
		RSFI_INFO(FI_LOG_CORE, "fi_getinfo: capabilities asked for and not offered: %s\n",
			  fi_tostr(&extra, FI_TYPE_CAPS));
		return refuse("capabilities (FI_MSG and FI_RMA only)");
	}
	if (h->addr_format != FI_FORMAT_UNSPEC && h->addr_format != FI_SOCKADDR && h->addr_format != FI_SOCKADDR_IN)
		return refuse("address format (FI_SOCKADDR_IN only)");
	if (h->fabric_attr && h->fabric_attr->name && strcmp(h->fabric_attr->name, RSFI_NAME) != 0)
		return refuse("fabric name");
	if (h->domain_attr && (h->domain_attr->data_progress == FI_PROGRESS_AUTO ||
			       h->domain_attr->control_progress == FI_PROGRESS_AUTO))
		return refuse("FI_PROGRESS_AUTO");
	if (h->domain_attr && h->domain_attr->cq_data_size > 8)
		return refuse("cq_data_size over 8");
	if ((h->tx_attr && h->tx_attr->iov_limit > RSFI_IOV_LIMIT) || (h->rx_attr && h->rx_attr->iov_limit > RSFI_IOV_LIMIT))
		return refuse("iov_limit over 4");
	if (h->tx_attr && h->tx_attr->inject_size > RSFI_INJECT_SIZE)
		return refuse("inject_size over 4096");
	return true;
}

/* A sockaddr_in given as addr/len: 0, or -FI_ENODATA for another family or size. */
static int take_sin(const void *addr, size_t len, struct sockaddr_in *out)
{
	if (!addr || len != sizeof(*out) || ((const struct sockaddr *)addr)->sa_family != AF_INET)
		return -FI_ENODATA;
	memcpy(out, addr, sizeof(*out));
	return 0;
}

/* node:service as IPv4; passive (FI_SOURCE) without a node is INADDR_ANY, not loopback. */
static int resolve(const char *node, const char *service, bool passive, struct sockaddr_in *out)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM, .ai_flags = passive ? AI_PASSIVE : 0 };
	struct addrinfo *ai = NULL;

	if (getaddrinfo(node, service ? service : "0", &hints, &ai) != 0 || !ai)
		return -FI_ENODATA;
	memcpy(out, ai->ai_addr, sizeof(*out));
	freeaddrinfo(ai);
	return 0;
}

static int wanted_addrs(const char *node, const char *service, uint64_t flags, const struct fi_info *hints,
			struct want *w)
{
	memset(w, 0, sizeof(*w));
	if (hints && hints->src_addr) {
		if (take_sin(hints->src_addr, hints->src_addrlen, &w->src))
			return -FI_ENODATA;
		w->have_src = true;
	}
	if (hints && hints->dest_addr) {
		if (take_sin(hints->dest_addr, hints->dest_addrlen, &w->dst))
			return -FI_ENODATA;
		w->have_dst = true;
	}
	if (!node && !service)
		return 0;
	if (flags & FI_SOURCE) {
		w->have_src = true;
		return resolve(node, service, true, &w->src);
	}
	w->have_dst = true;
	return resolve(node, service, false, &w->dst);
}

/*
 * Whether to offer FI_RMA: when asked for (or nothing is asked) and the
 * application takes our memory registration mode (peers name bytes by
 * virtual address, keys come from us); a request for RMA without it is
 * refused, one for messages alone gets them with mr_mode 0.
 */
static int rma_offer(uint32_t version, const struct fi_info *h, bool *rma)
{
	bool asked = !h || !h->caps || (h->caps & RSFI_RMA_CAPS);
	bool mode_ok = !h || !h->domain_attr;

	if (!mode_ok && FI_VERSION_LT(version, FI_VERSION(1, 5)))
		mode_ok = h->domain_attr->mr_mode == FI_MR_UNSPEC || h->domain_attr->mr_mode == FI_MR_BASIC;
	else if (!mode_ok)
		mode_ok = (h->domain_attr->mr_mode & RSFI_MR_MODE) == RSFI_MR_MODE;
	*rma = asked && mode_ok;
	if (h && (h->caps & RSFI_RMA_CAPS) && !mode_ok) {
		RSFI_INFO(FI_LOG_CORE, "fi_getinfo: FI_RMA needs mr_mode FI_MR_VIRT_ADDR | FI_MR_PROV_KEY\n");
		return -FI_ENODATA;
	}
	return 0;
}

static void fill_attrs(struct fi_info *fi, uint32_t version, bool rma)
{
	fi->caps = rma ? RSFI_CAPS : RSFI_CAPS & ~(uint64_t)RSFI_RMA_CAPS;
	fi->mode = 0;
	fi->addr_format = FI_SOCKADDR_IN;
	*fi->tx_attr = (struct fi_tx_attr){ .caps = FI_MSG | FI_SEND | FI_RMA | FI_READ | FI_WRITE,
					    .msg_order = FI_ORDER_SAS, .comp_order = FI_ORDER_NONE,
					    .inject_size = RSFI_INJECT_SIZE, .size = RSFI_QUEUE_DEPTH,
					    .iov_limit = RSFI_IOV_LIMIT, .rma_iov_limit = 1 };
	*fi->rx_attr = (struct fi_rx_attr){ .caps = FI_MSG | FI_RECV | FI_RMA | FI_REMOTE_READ | FI_REMOTE_WRITE,
					    .msg_order = FI_ORDER_SAS,
					    .comp_order = FI_ORDER_STRICT, .size = RSFI_QUEUE_DEPTH,
					    .iov_limit = RSFI_IOV_LIMIT };
	*fi->ep_attr = (struct fi_ep_attr){ .type = FI_EP_MSG, .protocol = FI_PROTO_UNSPEC,
					    .max_msg_size = RSFI_MAX_MSG - RSFI_FRAME_HDR, .tx_ctx_cnt = 1,
					    .rx_ctx_cnt = 1 };
	fi->domain_attr->threading = FI_THREAD_SAFE;
	fi->domain_attr->control_progress = FI_PROGRESS_MANUAL;
	fi->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	fi->domain_attr->resource_mgmt = FI_RM_ENABLED;
	fi->domain_attr->av_type = FI_AV_UNSPEC;
	/* Before API 1.5 mr_mode is the old enum (FI_MR_BASIC: virtual addresses, provider keys). */
	fi->domain_attr->mr_mode = !rma ? 0 : FI_VERSION_LT(version, FI_VERSION(1, 5)) ? FI_MR_BASIC : RSFI_MR_MODE;
	fi->domain_attr->mr_key_size = rma ? 8 : 0;
	if (!rma) {
		fi->tx_attr->caps &= ~(uint64_t)RSFI_RMA_CAPS;
		fi->rx_attr->caps &= ~(uint64_t)RSFI_RMA_CAPS;
		fi->tx_attr->rma_iov_limit = 0;
	}
	fi->domain_attr->cq_data_size = 8;
	fi->domain_attr->cq_cnt = 256;
	fi->domain_attr->ep_cnt = 4096;
	fi->domain_attr->tx_ctx_cnt = 4096;
	fi->domain_attr->rx_ctx_cnt = 4096;
	fi->domain_attr->max_ep_tx_ctx = 1;
	fi->domain_attr->max_ep_rx_ctx = 1;
	fi->domain_attr->mr_iov_limit = 1;
	fi->domain_attr->caps = FI_LOCAL_COMM | FI_REMOTE_COMM;
	fi->fabric_attr->prov_version = RSFI_VERSION;
	fi->fabric_attr->api_version = RSFI_API_VERSION;
}

static struct fi_info *make_info(uint32_t version, const struct sockaddr_in *src, const char *dev,
				 const struct want *w, bool rma)
{
	struct fi_info *fi = fi_allocinfo();

	if (!fi)
		return NULL;
	fill_attrs(fi, version, rma);
	fi->domain_attr->name = strdup(dev);
	fi->fabric_attr->name = strdup(RSFI_NAME);
	fi->src_addr = malloc(sizeof(*src));
	fi->dest_addr = w->have_dst ? malloc(sizeof(w->dst)) : NULL;
	if (!fi->domain_attr->name || !fi->fabric_attr->name || !fi->src_addr || (w->have_dst && !fi->dest_addr)) {
		fi_freeinfo(fi);
		return NULL;
	}
	memcpy(fi->src_addr, src, sizeof(*src));
	fi->src_addrlen = sizeof(*src);
	if (w->have_dst) {
		memcpy(fi->dest_addr, &w->dst, sizeof(w->dst));
		fi->dest_addrlen = sizeof(w->dst);
	}
	return fi;
}

/* The candidate (device, address) pairs for w: the one asked for, the configured one, or all. */
static size_t candidates(const struct rsfi_conf *conf, const struct want *w, struct sockaddr_in *addrs,
			 char (*devs)[64])
{
	if (w->have_src || conf->addr[0] || w->have_dst)
		return rsfi_addr_pick(conf, w->have_src ? &w->src : NULL, &addrs[0], devs[0]) == 0 ? 1 : 0;
	return rsfi_addr_list(addrs, devs, RSFI_MAX_INFOS);
}

int rsfi_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
		 const struct fi_info *hints, struct fi_info **info)
{
	struct rsfi_conf conf;
	struct want w;
	struct sockaddr_in addrs[RSFI_MAX_INFOS];
	char devs[RSFI_MAX_INFOS][64];
	struct fi_info *head = NULL, **tail = &head;

	bool rma;

	*info = NULL;
	if (rsfi_conf_read(&conf) != 0 || (hints && !attrs_ok(hints)) || rma_offer(version, hints, &rma) != 0 ||
	    wanted_addrs(node, service, flags, hints, &w) != 0)
		return -FI_ENODATA;
	size_t n = candidates(&conf, &w, addrs, devs);
	for (size_t i = 0; i < n; i++) {
		if (hints && hints->domain_attr && hints->domain_attr->name &&
		    strcmp(hints->domain_attr->name, devs[i]) != 0)
			continue;
		struct fi_info *fi = make_info(version, &addrs[i], devs[i], &w, rma);
		if (!fi) {
			fi_freeinfo(head);
			return -FI_ENOMEM;
		}
		*tail = fi;
		tail = &fi->next;
	}
	*info = head;
	return head ? 0 : -FI_ENODATA;
}
