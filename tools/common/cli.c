/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

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

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

bool cli_load_psk(const char *path, uint8_t psk[CLI_PSK_MAX], size_t *len)
{
	char text[2 * CLI_PSK_MAX + 4];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	bool ok = false;
	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "psk: cannot open '%s': %s\n", path, strerror(errno));
		goto out;
	}
	if (st.st_mode & 077) {
		fprintf(stderr, "psk: '%s' is readable by others (mode %03o); chmod 600 it\n", path,
			(unsigned)(st.st_mode & 0777));
		goto out;
	}
	ssize_t n = read(fd, text, sizeof(text) - 1);
	if (n < 0) {
		fprintf(stderr, "psk: cannot read '%s': %s\n", path, strerror(errno));
		goto out;
	}
	while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r'))
		n--;
	if (n < 64 || n > 2 * CLI_PSK_MAX || n % 2) {
		fprintf(stderr, "psk: '%s' must hold 64..128 hex digits\n", path);
		goto out;
	}
	for (ssize_t i = 0; i < n; i += 2) {
		int hi = hexval(text[i]), lo = hexval(text[i + 1]);
		if (hi < 0 || lo < 0) {
			fprintf(stderr, "psk: '%s' holds a non-hex character\n", path);
			goto out;
		}
		psk[i / 2] = (uint8_t)(hi << 4 | lo);
	}
	*len = (size_t)n / 2;
	ok = true;
out:
	OPENSSL_cleanse(text, sizeof(text));
	if (fd >= 0)
		close(fd);
	return ok;
}

bool cli_join(char *out, size_t cap, const char *dir, const char *name)
{
	int n = snprintf(out, cap, "%s/%s", dir, name);
	return n > 0 && (size_t)n < cap;
}
