/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

bool cli_scan_u64(const char *s, uint64_t *out, const char **end)
{
	/* strtoull would take leading blanks and a sign; we take neither. */
	if (!s || !isdigit((unsigned char)*s))
		return false;
	char *e;
	errno = 0;
	unsigned long long v = strtoull(s, &e, 0);
	if (errno || e == s)
		return false;
	*out = v;
	*end = e;
	return true;
}

uint8_t cli_hex_digit(uint8_t c, unsigned *bad)
{
	int d = (int)c - '0';            /* 0..9 for digits */
	int l = (int)(c | 0x20u) - 'a';  /* 0..5 for a-f / A-F */
	/* Bit 8 of ~x & (x - n) is set iff 0 <= x < n, for |x| < 256. */
	unsigned is_d = ((unsigned)(~d & (d - 10)) >> 8) & 1u;
	unsigned is_l = ((unsigned)(~l & (l - 6)) >> 8) & 1u;
	*bad |= (is_d | is_l) ^ 1u;
	return (uint8_t)(((0u - is_d) & (unsigned)d) | ((0u - is_l) & (unsigned)(l + 10)));
}

/* A K, M or G suffix (binary) applied to *v; false if it is none or overflows. */
static bool apply_suffix(const char **end, uint64_t *v)
{
	unsigned shift;
	switch (**end) {
	case 'K': case 'k': shift = 10; break;
	case 'M': case 'm': shift = 20; break;
	case 'G': case 'g': shift = 30; break;
	default: return false;
	}
	if (*v > (UINT64_MAX >> shift))
		return false;
	*v <<= shift;
	(*end)++;
	return true;
}

bool cli_parse_u64(const char *what, const char *s, uint64_t min, uint64_t max, bool sizes, uint64_t *out)
{
	uint64_t v;
	const char *end;
	bool ok = cli_scan_u64(s, &v, &end) && (!sizes || !*end || apply_suffix(&end, &v)) && !*end && v >= min &&
		  v <= max;
	if (!ok) {
		fprintf(stderr, "%s: '%s' is not a number in %llu..%llu\n", what, s ? s : "",
			(unsigned long long)min, (unsigned long long)max);
		return false;
	}
	*out = v;
	return true;
}

bool cli_parse_listen(const char *s, char *addr, size_t cap, uint16_t *port)
{
	const char *colon;
	size_t alen;
	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		if (!close || (close[1] && close[1] != ':'))
			goto bad;
		alen = (size_t)(close - s - 1);
		s++;
		colon = close[1] ? close + 1 : NULL;
	} else {
		colon = strrchr(s, ':');
		if (colon && strchr(s, ':') != colon)
			goto bad; /* bare IPv6 needs brackets */
		alen = colon ? (size_t)(colon - s) : strlen(s);
	}
	if (alen == 0 || alen >= cap)
		goto bad;
	if (colon) {
		uint64_t p;
		if (!cli_parse_u64("port", colon + 1, 1, 65535, false, &p))
			return false;
		*port = (uint16_t)p;
	}
	memcpy(addr, s, alen);
	addr[alen] = '\0';
	return true;
bad:
	fprintf(stderr, "address: '%s' is not ADDR[:PORT] or [IPV6][:PORT]\n", s);
	return false;
}

bool cli_parse_aead(const char *s, enum rsec_aead_choice *out)
{
	if (strcmp(s, "aes-256-gcm") == 0)
		*out = RSEC_AEAD_AES_256_GCM;
	else if (strcmp(s, "chacha20-poly1305") == 0)
		*out = RSEC_AEAD_CHACHA20_POLY1305;
	else {
		fprintf(stderr, "--aead: '%s' is not aes-256-gcm or chacha20-poly1305\n", s);
		return false;
	}
	return true;
}

bool cli_join(char *out, size_t cap, const char *dir, const char *name)
{
	int n = snprintf(out, cap, "%s/%s", dir, name);
	return n > 0 && (size_t)n < cap;
}

bool cli_certs_paths(struct cli_certs *out, const char *dir, const char *role)
{
	int cert = snprintf(out->cert, sizeof(out->cert), "%s/%s.pem", dir, role);
	int key = snprintf(out->key, sizeof(out->key), "%s/%s.key", dir, role);
	return cli_join(out->ca, sizeof(out->ca), dir, "ca.pem") && cert > 0 && (size_t)cert < sizeof(out->cert) &&
	       key > 0 && (size_t)key < sizeof(out->key);
}

const char *cli_prescan(int argc, char **argv, const char *shortopts, const struct option *opts, int opt)
{
	const char *arg = NULL;
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, shortopts, opts, NULL)) != -1)
		if (c == opt)
			arg = optarg;
	opterr = 1;
	optind = 0; /* glibc: start the next scan afresh */
	return arg;
}

const struct cli_conf_flag *cli_conf_flag_find(const struct cli_conf_flag *table, int opt)
{
	for (; table->opt; table++)
		if (table->opt == opt)
			return table;
	return NULL;
}
