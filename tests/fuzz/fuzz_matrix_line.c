/* SPDX-License-Identifier: MIT */
/*
 * Target Functions: mx_parse_line, mx_table_set and the four renderers
 * (tools/attack/matrix_render.c).
 * Input: one MATRIX line as the guest-side cells print it. A parsed result
 * must satisfy the documented bounds (valid names, known outcome, texts
 * shorter than MX_TEXT_MAX without control characters, a mechanism for
 * blocked and detected), and every rendering of a table holding it must
 * succeed without leaking its markup characters unescaped.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../tools/attack/matrix_render.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_text(const char *s)
{
	size_t n = strnlen(s, MX_TEXT_MAX);
	if (n >= MX_TEXT_MAX)
		abort();
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			abort();
}

/* Render to a buffer; the SVG must carry no raw '<' from the cell texts. */
static void render_all(const struct mx_table *t, const struct mx_result *r)
{
	int (*fns[])(const struct mx_table *, FILE *) = { mx_render_markdown, mx_render_json, mx_render_svg };
	for (size_t i = 0; i < 4; i++) {
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		if (!f)
			abort();
		int rc = i < 3 ? fns[i](t, f) : mx_render_terminal(t, f, i & 1);
		if (fclose(f) != 0 || rc != 0)
			abort();
		if (i == 0 && strchr(r->evidence, '<') && strstr(buf, r->evidence))
			abort(); /* Markdown must have escaped it */
		if (i == 2 && strchr(r->evidence, '<') && strstr(buf, r->evidence))
			abort(); /* so must the SVG */
		free(buf);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct mx_table t;
	struct mx_result r;
	char err[160];

	if (mx_parse_line((const char *)data, size, &r, err, sizeof(err)) != 0) {
		if (!memchr(err, '\0', sizeof(err)) || !err[0])
			abort();
		return 0;
	}
	if (!mx_name_valid(r.attack) || !mx_name_valid(r.victim) || r.outcome <= MX_NOT_RUN ||
	    r.outcome >= MX_OUTCOMES)
		abort();
	check_text(r.mechanism);
	check_text(r.evidence);
	if ((r.outcome == MX_BLOCKED || r.outcome == MX_DETECTED) && !r.mechanism[0])
		abort();
	const char *a[] = { r.attack }, *v[] = { r.victim, "other" };
	size_t nv = strcmp(r.victim, "other") ? 2 : 1;
	if (mx_table_init(&t, a, 1, v, nv, err, sizeof(err)) != 0 || mx_table_set(&t, &r, err, sizeof(err)) != 0)
		abort();
	if (mx_table_set(&t, &r, err, sizeof(err)) == 0) /* a second report of the same cell */
		abort();
	render_all(&t, &r);
	return 0;
}
