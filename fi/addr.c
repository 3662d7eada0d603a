/* SPDX-License-Identifier: MIT */
/*
 * Which local IPv4 addresses can carry an rdmasec connection: those of a
 * netdev under an RDMA device (sysfs: the netdev of each device's GID 0),
 * and the sockaddr_in conversions the CM calls need.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rsfi.h"

#define SYS_IB "/sys/class/infiniband"

/* The netdev under RDMA device dev (port 1, GID 0): 0, or -1 if none. */
static int device_netdev(const char *dev, char netdev[static IF_NAMESIZE])
{
	char path[512];
	int n = snprintf(path, sizeof(path), SYS_IB "/%s/ports/1/gid_attrs/ndevs/0", dev);
	if (n < 0 || n >= (int)sizeof(path))
		return -1;
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	char line[64];
	int rc = fgets(line, sizeof(line), f) ? 0 : -1;
	fclose(f);
	if (rc)
		return -1;
	line[strcspn(line, "\n")] = '\0';
	if (!line[0] || strlen(line) >= IF_NAMESIZE)
		return -1;
	memcpy(netdev, line, strlen(line) + 1);
	return 0;
}

/* Appends the IPv4 addresses of netdev (under dev) to addrs/devs from *n up to max. */
static void add_netdev_addrs(const struct ifaddrs *ifs, const char *netdev, const char *dev,
			     struct sockaddr_in *addrs, char (*devs)[64], size_t *n, size_t max)
{
	for (const struct ifaddrs *i = ifs; i && *n < max; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || strcmp(i->ifa_name, netdev) != 0)
			continue;
		memcpy(&addrs[*n], i->ifa_addr, sizeof(addrs[*n]));
		addrs[*n].sin_port = 0;
		snprintf(devs[*n], 64, "%s", dev);
		(*n)++;
	}
}

size_t rsfi_addr_list(struct sockaddr_in *addrs, char (*devs)[64], size_t max)
{
	struct ifaddrs *ifs = NULL;
	size_t n = 0;
	DIR *d = opendir(SYS_IB);

	if (!d)
		return 0;
	if (getifaddrs(&ifs) != 0) {
		closedir(d);
		return 0;
	}
	for (struct dirent *e = readdir(d); e && n < max; e = readdir(d)) {
		char netdev[IF_NAMESIZE];
		if (e->d_name[0] == '.' || strlen(e->d_name) >= 64 || device_netdev(e->d_name, netdev) != 0)
			continue;
		add_netdev_addrs(ifs, netdev, e->d_name, addrs, devs, &n, max);
	}
	freeifaddrs(ifs);
	closedir(d);
	return n;
}

int rsfi_addr_pick(const struct rsfi_conf *conf, const struct sockaddr_in *want, struct sockaddr_in *out,
		   char dev[static 64])
{
	struct sockaddr_in addrs[64];
	char devs[64][64];
	struct in_addr target = { .s_addr = htonl(INADDR_ANY) };
	size_t n = rsfi_addr_list(addrs, devs, 64);

	if (want && want->sin_addr.s_addr != htonl(INADDR_ANY))
		target = want->sin_addr;
	else if (conf->addr[0] && inet_pton(AF_INET, conf->addr, &target) != 1)
		return -FI_EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (target.s_addr != htonl(INADDR_ANY) && addrs[i].sin_addr.s_addr != target.s_addr)
			continue;
		*out = addrs[i];
		out->sin_port = want ? want->sin_port : 0;
		memcpy(dev, devs[i], 64);
		return 0;
	}
	return -FI_ENODATA;
}

int rsfi_addr_parse(const char *text, struct sockaddr_in *out)
{
	char ip[INET_ADDRSTRLEN];
	const char *colon = text ? strrchr(text, ':') : NULL;

	if (!colon || (size_t)(colon - text) >= sizeof(ip))
		return -FI_EINVAL;
	memcpy(ip, text, (size_t)(colon - text));
	ip[colon - text] = '\0';
	char *end = NULL;
	unsigned long port = strtoul(colon + 1, &end, 10);
	memset(out, 0, sizeof(*out));
	out->sin_family = AF_INET;
	if (!end || *end || port > 65535 || inet_pton(AF_INET, ip, &out->sin_addr) != 1)
		return -FI_EINVAL;
	out->sin_port = htons((uint16_t)port);
	return 0;
}

int rsfi_addr_copy_out(const struct sockaddr_in *sin, void *addr, size_t *addrlen)
{
	size_t have = *addrlen;

	*addrlen = sizeof(*sin);
	if (have < sizeof(*sin) || !addr)
		return -FI_ETOOSMALL;
	memcpy(addr, sin, sizeof(*sin));
	return 0;
}
