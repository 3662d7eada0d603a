/* SPDX-License-Identifier: MIT */
/* The keys a reload of rdmasec-blkd leaves alone (blkd_conf_live.h). */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "blkd_conf_live.h"

struct fixed_key {
	size_t off, size;
	const char *name;
	bool text; /* a NUL-terminated string: what follows its NUL does not count */
};

#define FIXED(type, field, name, text) { offsetof(type, field), sizeof(((type *)0)->field), name, text }

static const struct fixed_key target_keys[] = {
	FIXED(struct blkd_conf, listen_addr, "listen", true),
	FIXED(struct blkd_conf, listen_port, "listen", false),
	FIXED(struct blkd_conf, device, "device", true),
	FIXED(struct blkd_conf, audit_log, "audit_log", true),
	FIXED(struct blkd_conf, metrics_file, "metrics_file", true),
	FIXED(struct blkd_conf, queue_depth, "queue_depth", false),
	FIXED(struct blkd_conf, queues, "queues", false),
	FIXED(struct blkd_conf, max_transfer, "max_transfer", false),
	FIXED(struct blkd_conf, max_inline, "max_inline", false),
	FIXED(struct blkd_conf, max_handshakes, "max_handshakes", false),
	FIXED(struct blkd_conf, max_handshakes_per_source, "max_handshakes_per_source", false),
	FIXED(struct blkd_conf, handshake_rate_per_source, "handshake_rate_per_source", false),
	FIXED(struct blkd_conf, memory_limit, "memory_limit", false),
	FIXED(struct blkd_conf, rebuilds_per_min, "rebuilds_per_min", false),
	FIXED(struct blkd_conf, rekey_s, "rekey_s", false),
	FIXED(struct blkd_conf, rekey_bytes, "rekey_bytes", false),
	FIXED(struct blkd_conf, store_threads, "store_threads", false),
	FIXED(struct blkd_conf, ca, "ca", true),
	FIXED(struct blkd_conf, cert, "cert", true),
	FIXED(struct blkd_conf, key, "key", true),
	FIXED(struct blkd_conf, crl, "crl", true),
	FIXED(struct blkd_conf, etcd, "etcd", true),
	FIXED(struct blkd_conf, state_dir, "state_dir", true),
};

/* An export's store: opened at start-up. */
static const struct fixed_key export_keys[] = {
	FIXED(struct blkd_export_conf, path, "path", true),
	FIXED(struct blkd_export_conf, size, "size", false),
	FIXED(struct blkd_export_conf, block_size, "block_size", false),
	FIXED(struct blkd_export_conf, direct, "direct", false),
};

static void add_name(char *names, size_t cap, const char *name)
{
	size_t used = strlen(names), n = strlen(name);
	if (used >= n && strcmp(names + used - n, name) == 0) /* listen: two members, one key */
		return;
	snprintf(names + used, cap - used, "%s%s", used ? "," : "", name);
}

static size_t pin(void *fresh, const void *old, const struct fixed_key *keys, size_t n, char *names, size_t cap)
{
	size_t differed = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char *dst = (unsigned char *)fresh + keys[i].off;
		const unsigned char *src = (const unsigned char *)old + keys[i].off;
		bool same = keys[i].text ? strncmp((const char *)dst, (const char *)src, keys[i].size) == 0
					 : memcmp(dst, src, keys[i].size) == 0;
		if (same)
			continue;
		differed++;
		add_name(names, cap, keys[i].name);
		memcpy(dst, src, keys[i].size);
	}
	return differed;
}

static bool same_exports(const struct blkd_conf *a, const struct blkd_conf *b)
{
	if (a->n_exports != b->n_exports)
		return false;
	for (unsigned i = 0; i < a->n_exports; i++)
		if (strcmp(a->exports[i].name, b->exports[i].name) != 0)
			return false;
	return true;
}

size_t blkd_conf_pin_fixed(struct blkd_conf *fresh, const struct blkd_conf *old, char *names, size_t cap)
{
	if (!cap)
		return 0;
	names[0] = '\0';
	size_t differed = pin(fresh, old, target_keys, sizeof(target_keys) / sizeof(target_keys[0]), names, cap);
	if (!same_exports(fresh, old)) {
		memcpy(fresh->exports, old->exports, sizeof(old->exports));
		fresh->n_exports = old->n_exports;
		add_name(names, cap, "exports");
		return differed + 1;
	}
	for (unsigned i = 0; i < fresh->n_exports; i++)
		differed += pin(&fresh->exports[i], &old->exports[i], export_keys,
				sizeof(export_keys) / sizeof(export_keys[0]), names, cap);
	return differed;
}
