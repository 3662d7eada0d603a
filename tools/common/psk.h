/* SPDX-License-Identifier: MIT */
/* The external pre-shared key of PSK mode, read from a file: one loader for the server and the client. */
#ifndef RSEC_PSK_H
#define RSEC_PSK_H

#include <stddef.h>
#include <stdint.h>

#define PSK_MIN_LEN 32
#define PSK_MAX_LEN 64

/*
 * Read the hex PSK at path: a regular file (a symlink, FIFO or device is
 * refused, and opening never blocks) owned by us or root with no group or
 * other access (0600 or 0400), holding PSK_MIN_LEN..PSK_MAX_LEN bytes as hex,
 * whitespace ignored. On error psk is wiped and err says why without showing
 * the file's bytes. Wipe psk after use. Returns 0, RSEC_E_CONFIG (not a key
 * file we accept) or RSEC_E_IO (cannot open or read it).
 */
__attribute__((warn_unused_result)) int psk_load(const char *path, uint8_t psk[static PSK_MAX_LEN], size_t *len,
						 char *err, size_t errlen);
/*
 * The key of --psk-file for program prog, which then needs an identity (not
 * NULL): 0 with the key in psk, or after one message on stderr the exit
 * status to return (2: no identity, 1: the file is refused). Wipe psk after use.
 */
__attribute__((warn_unused_result)) int psk_load_option(const char *prog, const char *path, const char *identity,
							uint8_t psk[static PSK_MAX_LEN], size_t *len);

#endif
