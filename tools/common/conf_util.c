/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf_util.h"

const char *conf_quote(char dst[static CONF_QUOTE_LEN], const char *s)
{
	size_t n = 0;
	for (; *s && n < 64; s++)
		dst[n++] = (*s >= 0x20 && *s < 0x7f) ? *s : '?';
	if (*s) {
		memcpy(dst + n, "...", 3);
		n += 3;
	}
	dst[n] = '\0';
	return dst;
}

/* The size and content checks of a file read whole: 0 or CONF_READ_BAD. */
static int check_text(const char *path, const char *buf, size_t n, size_t max, char *err, size_t errlen)
{
	char q[CONF_QUOTE_LEN];
	if (n > max)
		snprintf(err, errlen, "'%s' is larger than %zu bytes", conf_quote(q, path), max);
	else if (memchr(buf, '\0', n))
		snprintf(err, errlen, "'%s' contains a NUL byte", conf_quote(q, path));
	else
		return 0;
	return CONF_READ_BAD;
}

int conf_read_text(const char *path, size_t max, char **out, char *err, size_t errlen)
{
	char q[CONF_QUOTE_LEN];
	FILE *f = fopen(path, "re");
	if (!f) {
		snprintf(err, errlen, "cannot open '%s': %s", conf_quote(q, path), strerror(errno));
		return CONF_READ_IO;
	}
	char *buf = malloc(max + 1);
	if (!buf) {
		fclose(f);
		snprintf(err, errlen, "out of memory");
		return CONF_READ_NOMEM;
	}
	size_t n = fread(buf, 1, max + 1, f); /* one byte more than max: a larger file shows */
	int rc = 0;
	if (ferror(f)) {
		snprintf(err, errlen, "cannot read '%s': %s", conf_quote(q, path), strerror(errno));
		rc = CONF_READ_IO;
	} else {
		rc = check_text(path, buf, n, max, err, errlen);
	}
	fclose(f);
	if (rc < 0) {
		free(buf);
		return rc;
	}
	buf[n] = '\0';
	*out = buf;
	return 0;
}

int conf_check_str(const char *what, const char *v, size_t cap, char *err, size_t errlen)
{
	char q[CONF_QUOTE_LEN];
	size_t len = strlen(v);
	if (len >= cap) {
		snprintf(err, errlen, "%s: '%s' is too long (%zu bytes, max %zu)", what, conf_quote(q, v), len, cap - 1);
		return -1;
	}
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f) {
			snprintf(err, errlen, "%s: '%s' contains a control character", what, conf_quote(q, v));
			return -1;
		}
	return 0;
}

void conf_text_init(struct conf_text *t, const char *text)
{
	*t = (struct conf_text){ .text = text, .at_line_start = true };
}

/* fgets over the text, for inih. */
char *conf_text_reader(char *str, int num, void *stream)
{
	struct conf_text *t = stream;
	if (t->text[t->pos] == '\0' || num < 2)
		return NULL;
	int n = 0;
	while (n < num - 1 && t->text[t->pos] != '\0') {
		char ch = t->text[t->pos++];
		str[n++] = ch;
		if (ch == '\n')
			break;
	}
	str[n] = '\0';
	if (t->at_line_start)
		t->line++;
	t->at_line_start = str[n - 1] == '\n';
	if (!t->at_line_start && t->text[t->pos] != '\0' && t->long_line == 0) {
		t->long_line = t->line;
		t->long_max = num - 2;
	}
	return str;
}
