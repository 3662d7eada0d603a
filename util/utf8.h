/* SPDX-License-Identifier: MIT */
/*
 * UTF-8 validation, shared by the library's audit log and the server's
 * metrics export: both write peer-chosen names into formats that must stay
 * valid UTF-8. Header-only, so the library and a program linking it each
 * get their own copy without two definitions of one symbol.
 */
#ifndef RSEC_UTIL_UTF8_H
#define RSEC_UTIL_UTF8_H

#include <stddef.h>

/*
 * Length of the well-formed UTF-8 sequence at p (1..4), or 0 if it is not
 * one (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF).
 * p is NUL-terminated: a NUL ends a sequence as invalid before any byte
 * after it is read.
 */
static inline size_t utf8_seq_len(const unsigned char *p)
{
	unsigned char c = p[0], lo = 0x80, hi = 0xbf; /* the second byte's range */
	size_t n;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 0;
	if (c == 0xe0)
		lo = 0xa0; /* overlong */
	else if (c == 0xed)
		hi = 0x9f; /* surrogates */
	else if (c == 0xf0)
		lo = 0x90; /* overlong */
	else if (c == 0xf4)
		hi = 0x8f; /* beyond U+10FFFF */
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

#endif /* RSEC_UTIL_UTF8_H */
