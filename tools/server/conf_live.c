/* SPDX-License-Identifier: MIT */
/* The keys a reload leaves alone (conf_live.h). */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "conf_live.h"

#define FIXED(field, name) { offsetof(struct rsec_conf, field), sizeof(((struct rsec_conf *)0)->field), name, false }
#define FIXED_STR(field, name) { offsetof(struct rsec_conf, field), sizeof(((struct rsec_conf *)0)->field), name, true }

/* A key and the struct member it sets; the restart-only ones, as the man page lists them. */
static const struct fixed_key {
	size_t off, size;
	const char *name;
	bool text; /* a NUL-terminated string: what follows its NUL does not count */
} fixed_keys[] = {
	FIXED_STR(listen_addr, "listen"),
	FIXED(listen_port, "listen"),
	FIXED_STR(device, "device"),
	FIXED(max_clients, "max_clients"),
	FIXED(handshake_timeout_ms, "handshake_timeout_ms"),
	FIXED(max_handshakes_per_source, "max_handshakes_per_source"),
	FIXED(handshake_rate_per_source, "handshake_rate_per_source"),
	FIXED(max_handshakes, "max_handshakes"),
	FIXED(handshake_rate, "handshake_rate"),
	FIXED(worker_threads, "worker_threads"),
	FIXED_STR(audit_log, "audit_log"),
	FIXED_STR(metrics_file, "metrics_file"),
	FIXED(qp_pool, "qp_pool"),
	FIXED(resume_grace_ms, "resume_grace_ms"),
	FIXED_STR(grant_mode, "grant_mode"),
	FIXED_STR(ca, "ca"),
	FIXED_STR(cert, "cert"),
	FIXED_STR(key, "key"),
	FIXED_STR(crl, "crl"),
	FIXED_STR(psk_file, "psk_file"),
	FIXED_STR(psk_identity, "psk_identity"),
	FIXED(resume_s, "resume_s"),
	FIXED(rekey_s, "rekey_s"),
	FIXED(rekey_bytes, "rekey_bytes"),
	FIXED(max_msg, "max_msg"),
	FIXED(recv_slots, "recv_slots"),
	FIXED(slot_size, "slot_size"),
	FIXED(rebuilds_per_min, "rebuilds_per_min"),
	FIXED_STR(etcd, "etcd"),
	FIXED_STR(state_dir, "state_dir"),
};

static bool same(const struct fixed_key *k, const unsigned char *a, const unsigned char *b)
{
	return k->text ? strncmp((const char *)a, (const char *)b, k->size) == 0 : memcmp(a, b, k->size) == 0;
}

static void add_name(char *names, size_t cap, const char *name)
{
	size_t used = strlen(names), n = strlen(name);
	if (used >= n && strcmp(names + used - n, name) == 0) /* listen: two members, one key */
		return;
	snprintf(names + used, cap - used, "%s%s", used ? "," : "", name);
}

size_t conf_pin_fixed(struct rsec_conf *fresh, const struct rsec_conf *old, char *names, size_t cap)
{
	size_t differed = 0;
	if (cap)
		names[0] = '\0';
	for (size_t i = 0; i < sizeof(fixed_keys) / sizeof(fixed_keys[0]); i++) {
		const struct fixed_key *k = &fixed_keys[i];
		unsigned char *dst = (unsigned char *)fresh + k->off;
		const unsigned char *src = (const unsigned char *)old + k->off;
		if (same(k, dst, src))
			continue;
		differed++;
		if (cap)
			add_name(names, cap, k->name);
		memcpy(dst, src, k->size);
	}
	return differed;
}
