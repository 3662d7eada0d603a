/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

bool cli_parse_u64(const char *what, const char *s, uint64_t min, uint64_t max, bool sizes, uint64_t *out)
{
	char *end;
	errno = 0;
	if (!s || !*s || *s == '-' || isspace((unsigned char)*s))
		goto bad;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || end == s)
		goto bad;
	if (sizes && *end) {
		unsigned shift = 0;
		switch (*end) {
		case 'K': case 'k': shift = 10; break;
		case 'M': case 'm': shift = 20; break;
		case 'G': case 'g': shift = 30; break;
		default: goto bad;
		}
		end++;
		if (v > (UINT64_MAX >> shift))
			goto bad;
		v <<= shift;
	}
	if (*end || v < min || v > max)
		goto bad;
	*out = v;
	return true;
bad:
	fprintf(stderr, "%s: '%s' is not a number in %llu..%llu\n", what, s ? s : "",
		(unsigned long long)min, (unsigned long long)max);
	return false;
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

bool cli_join(char *out, size_t cap, const char *dir, const char *name)
{
	int n = snprintf(out, cap, "%s/%s", dir, name);
	return n > 0 && (size_t)n < cap;
}
