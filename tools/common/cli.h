/* SPDX-License-Identifier: MIT */
/* Command-line helpers shared by the rdmasec programs: strict parsers that
 * print one message quoting the bad input. */
#ifndef RSEC_CLI_H
#define RSEC_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdmasec.h"

/*
 * The one number parser of the programs: an unsigned number at the start of
 * s, decimal or 0x-hex (strtoull's base 0), starting with a digit (no blank,
 * no sign), below 2^64. *end: the first byte after it. Prints nothing.
 */
bool cli_scan_u64(const char *s, uint64_t *out, const char **end);
/*
 * One hex digit's value (0..15) without a branch or table lookup on the digit,
 * for secrets; *bad gets 1 if c is not a hex digit (and the value is 0).
 */
uint8_t cli_hex_digit(uint8_t c, unsigned *bad);
/* Whole-string unsigned number in [min, max]; accepts K/M/G (binary) suffixes if sizes is true. */
bool cli_parse_u64(const char *what, const char *s, uint64_t min, uint64_t max, bool sizes, uint64_t *out);
/* "ADDR:PORT", "[V6]:PORT" or "ADDR" (port unchanged). */
bool cli_parse_listen(const char *s, char *addr, size_t cap, uint16_t *port);
/* --aead NAME: "aes-256-gcm" or "chacha20-poly1305". */
bool cli_parse_aead(const char *s, enum rsec_aead_choice *out);
/* "DIR/name" into out; false if it does not fit. */
bool cli_join(char *out, size_t cap, const char *dir, const char *name);

/* --certs DIR: the files rdmasec-keygen writes there for one role. */
#define CLI_PATH_MAX 4096
struct cli_certs {
	char ca[CLI_PATH_MAX], cert[CLI_PATH_MAX], key[CLI_PATH_MAX];
};
/* DIR/ca.pem, DIR/ROLE.pem and DIR/ROLE.key (ROLE: "server", "client" or a client's name); false if one does not fit. */
bool cli_certs_paths(struct cli_certs *out, const char *dir, const char *role);

/* A flag that sets one key of a daemon's configuration file: getopt's code, the key's section and name. */
struct cli_conf_flag {
	int opt;
	const char *section, *key;
};
/* The entry of table (ended by an opt of 0) for getopt's code opt, or NULL. */
const struct cli_conf_flag *cli_conf_flag_find(const struct cli_conf_flag *table, int opt);

/*
 * The argument of the last option whose getopt code is opt (say the 'f' of
 * -f/--config FILE, however spelled), or NULL: a first pass over argv, so
 * that a file is read before the flags that override it. Errors are left to
 * the real pass, which starts afresh.
 */
const char *cli_prescan(int argc, char **argv, const char *shortopts, const struct option *opts, int opt);

#endif
