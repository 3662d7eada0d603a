/* SPDX-License-Identifier: MIT */
/*
 * What the daemons' strict INI configurations (tools/server/conf.c,
 * tools/blk/blkd/blkd_conf.c) share: reading the file whole and bounded,
 * feeding its text to inih line by line, and quoting untrusted input in
 * their error messages.
 */
#ifndef RSEC_TOOLS_CONF_UTIL_H
#define RSEC_TOOLS_CONF_UTIL_H

#include <stdbool.h>
#include <stddef.h>

#define CONF_QUOTE_LEN 80

/* s for an error message: printable ASCII only ('?' for the rest), cut after 64 bytes with "...". Returns dst. */
const char *conf_quote(char dst[static CONF_QUOTE_LEN], const char *s);

enum conf_read_error {
	CONF_READ_IO = -1,     /* cannot open or read the file */
	CONF_READ_NOMEM = -2,
	CONF_READ_BAD = -3,    /* larger than max, or a NUL byte in it */
};

/*
 * The whole file at path as a NUL-terminated string of at most max bytes,
 * into *out (the caller frees it). Returns 0 or an enum conf_read_error, err
 * saying why.
 */
int conf_read_text(const char *path, size_t max, char **out, char *err, size_t errlen);

/* A string value that fits cap bytes with its NUL and has no control character; else -1, err saying why. */
int conf_check_str(const char *what, const char *v, size_t cap, char *err, size_t errlen);

/*
 * inih's reader (ini_parse_stream's first two arguments: conf_text_reader and
 * a struct conf_text) over a string: counts lines, and notes the first line
 * longer than inih's line buffer, which inih would otherwise cut and take as
 * two lines.
 */
struct conf_text {
	const char *text;
	size_t pos;
	int line;           /* the line being read, from 1 */
	bool at_line_start;
	int long_line;      /* the first over-long line; 0: none */
	int long_max;       /* the characters a line may have */
};

void conf_text_init(struct conf_text *t, const char *text);
char *conf_text_reader(char *str, int num, void *stream);

#endif
