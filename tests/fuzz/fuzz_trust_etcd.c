/* SPDX-License-Identifier: MIT */
/*
 * Target functions: trust_parse_range, trust_snapshot_check,
 * trust_allow_split (tools/common/trust_etcd.c). The input is an etcd
 * /v3/kv/range reply for the prefix "/t". Must never crash; a refused reply
 * explains itself and leaves nothing behind; an accepted one holds only
 * values without NUL bytes within the size cap; the check refuses with a
 * reason or passes with at most RSEC_AUTHZ_RULES_MAX rules.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rdmasec.h"
#include "trust_etcd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_value(const char *v)
{
	if (v && strlen(v) > TRUST_MAX_ENTRY)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct trust_snapshot s;
	char err[256] = "";
	if (trust_parse_range((const char *)data, size, "/t", &s, err, sizeof(err)) < 0) {
		if (err[0] == '\0' || s.ca || s.crl || s.allow)
			abort();
		return 0;
	}
	check_value(s.ca);
	check_value(s.crl);
	check_value(s.allow);
	err[0] = '\0';
	if (trust_snapshot_check(&s, err, sizeof(err)) < 0) {
		if (err[0] == '\0')
			abort();
	} else {
		int n = trust_allow_split(s.allow, NULL, RSEC_AUTHZ_RULES_MAX, err, sizeof(err));
		if (n < 0 || n > (int)RSEC_AUTHZ_RULES_MAX)
			abort();
	}
	trust_snapshot_clear(&s);
	return 0;
}
