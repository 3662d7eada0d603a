/* SPDX-License-Identifier: MIT */
/* Command-line helpers shared by the rdmasec programs: strict parsers that
 * print one message quoting the bad input. */
#ifndef RSEC_CLI_H
#define RSEC_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whole-string unsigned number in [min, max]; accepts K/M/G (binary) suffixes if sizes is true. */
bool cli_parse_u64(const char *what, const char *s, uint64_t min, uint64_t max, bool sizes, uint64_t *out);
/* "ADDR:PORT", "[V6]:PORT" or "ADDR" (port unchanged). */
bool cli_parse_listen(const char *s, char *addr, size_t cap, uint16_t *port);
/* "DIR/name" into out; false if it does not fit. */
bool cli_join(char *out, size_t cap, const char *dir, const char *name);

#endif
