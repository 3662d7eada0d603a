/* SPDX-License-Identifier: MIT */
#include <stdio.h>

#include "attack.h"
#include "capture.h"

static pcap_t *open_live(const char *cmd, const char *iface, int snaplen, int timeout_ms)
{
	char err[PCAP_ERRBUF_SIZE] = "";
	pcap_t *p = pcap_create(iface, err);
	int rc;

	if (!p) {
		fprintf(stderr, "%s %s: cannot capture on %s: %s\n", PROG, cmd, iface, err);
		return NULL;
	}
	if (pcap_set_snaplen(p, snaplen) || pcap_set_promisc(p, 1) || pcap_set_timeout(p, timeout_ms) ||
	    pcap_set_immediate_mode(p, 1)) {
		fprintf(stderr, "%s %s: cannot configure capture on %s\n", PROG, cmd, iface);
		pcap_close(p);
		return NULL;
	}
	rc = pcap_activate(p);
	if (rc == PCAP_ERROR_PERM_DENIED || rc == PCAP_ERROR_PROMISC_PERM_DENIED) {
		fprintf(stderr, "%s %s: live capture on %s is not permitted: it needs root (CAP_NET_RAW); "
			"or capture with tcpdump elsewhere and read the file (%s)\n", PROG, cmd, iface, pcap_geterr(p));
		pcap_close(p);
		return NULL;
	}
	if (rc < 0) {
		fprintf(stderr, "%s %s: cannot capture on %s: %s\n", PROG, cmd, iface,
			rc == PCAP_ERROR_NO_SUCH_DEVICE ? "no such interface" : pcap_geterr(p));
		pcap_close(p);
		return NULL;
	}
	if (rc > 0)
		fprintf(stderr, "%s %s: warning: %s\n", PROG, cmd, pcap_geterr(p));
	/* Non-blocking, so that deadlines and signals are noticed while the wire is idle. */
	if (pcap_setnonblock(p, 1, err) != 0 || pcap_get_selectable_fd(p) < 0) {
		fprintf(stderr, "%s %s: cannot poll the capture on %s: %s\n", PROG, cmd, iface, err);
		pcap_close(p);
		return NULL;
	}
	return p;
}

pcap_t *capture_open(const char *cmd, const char *file, const char *iface, int snaplen, int timeout_ms)
{
	char err[PCAP_ERRBUF_SIZE] = "";
	pcap_t *p;

	if (!file)
		return open_live(cmd, iface, snaplen, timeout_ms);
	p = pcap_open_offline(file, err);
	if (!p)
		fprintf(stderr, "%s %s: cannot read %s: %s\n", PROG, cmd, file, err);
	return p;
}

bool capture_link(const char *cmd, pcap_t *p, const char *name, enum sniff_link *link)
{
	int dlt = pcap_datalink(p);
	const char *dlt_name = pcap_datalink_val_to_name(dlt);

	switch (dlt) {
	case DLT_EN10MB: *link = SNIFF_LINK_ETHERNET; return true;
	case DLT_LINUX_SLL: *link = SNIFF_LINK_SLL; return true;
	case DLT_LINUX_SLL2: *link = SNIFF_LINK_SLL2; return true;
	case DLT_RAW:
	case DLT_IPV4: *link = SNIFF_LINK_RAW; return true;
	default:
		fprintf(stderr, "%s %s: %s has link type %s (%d); Ethernet (EN10MB), Linux cooked (LINUX_SLL, "
			"LINUX_SLL2) and raw IP captures are read\n", PROG, cmd, name, dlt_name ? dlt_name : "unknown",
			dlt);
		return false;
	}
}

bool capture_set_filter(const char *cmd, pcap_t *p, const char *expr, const char *what)
{
	struct bpf_program prog;
	bool ok;

	if (pcap_compile(p, &prog, expr, 1, PCAP_NETMASK_UNKNOWN) != 0) {
		fprintf(stderr, "%s %s: bad %s `%s': %s\n", PROG, cmd, what, expr, pcap_geterr(p));
		return false;
	}
	ok = pcap_setfilter(p, &prog) == 0;
	if (!ok)
		fprintf(stderr, "%s %s: cannot apply %s: %s\n", PROG, cmd, what, pcap_geterr(p));
	pcap_freecode(&prog);
	return ok;
}
