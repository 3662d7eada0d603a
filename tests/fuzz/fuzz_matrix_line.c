/* SPDX-License-Identifier: MIT */
/*
 * Target Functions: mx_parse_line, mx_table_set and the four renderers
 * (tools/attack/matrix/matrix_render.c).
 * Input: one MATRIX line as the guest-side cells print it. A parsed result
 * must satisfy the documented bounds (valid names, known outcome, texts
 * shorter than MX_TEXT_MAX without control characters, a mechanism for
 * blocked and detected), and every rendering of a table holding it must
 * succeed without leaking its markup characters unescaped: Markdown and SVG
 * carry as much markup as for plain texts, each '&' starts an entity, and the
 * JSON gives the texts back unchanged.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../tools/attack/matrix/matrix_render.c"

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

/* The renderings, one per call: Markdown, JSON, SVG, terminal. */
static char *render(const struct mx_table *t, int which)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int rc;

	if (!f)
		abort();
	switch (which) {
	case 0: rc = mx_render_markdown(t, f); break;
	case 1: rc = mx_render_json(t, f); break;
	case 2: rc = mx_render_svg(t, f); break;
	default: rc = mx_render_terminal(t, f, which & 1); break;
	}
	if (fclose(f) != 0 || rc != 0)
		abort();
	return buf;
}

/*
 * Counts the markup characters in s (Markdown: outside backslash escapes),
 * and aborts on an '&' that starts none of the entities the escapers write.
 */
enum { MARKUP_CHARS = 16 };

static void count_markup(const char *s, const char *special, bool markdown, size_t n[static MARKUP_CHARS])
{
	static const char *const entities[] = { "&lt;", "&gt;", "&amp;", "&quot;", "&apos;" };

	memset(n, 0, MARKUP_CHARS * sizeof(n[0]));
	for (; *s; s++) {
		if (markdown && *s == '\\' && s[1]) {
			s++;
			continue;
		}
		if (*s == '&') {
			size_t e = 0;
			while (e < 5 && strncmp(s, entities[e], strlen(entities[e])))
				e++;
			if (e == 5)
				abort();
		}
		const char *c = strchr(special, *s);
		if (c)
			n[c - special]++;
	}
}

/*
 * The cell texts may hold any markup character; escaped, none of them may
 * reach the output as markup. So Markdown and SVG must carry exactly as
 * much markup as a table whose texts are plain letters, and the JSON must
 * give the texts back unchanged.
 */
static void check_renderings(const struct mx_table *t, const struct mx_table *plain, const struct mx_result *r)
{
	static const char *const special[] = { "<>|`*_[]#", "", "<>\"'" };
	size_t got[MARKUP_CHARS], want[MARKUP_CHARS];

	for (int i = 0; i < 4; i++) {
		char *buf = render(t, i);
		if (i == 0 || i == 2) {
			char *ref = render(plain, i);
			count_markup(buf, special[i], i == 0, got);
			count_markup(ref, special[i], i == 0, want);
			if (memcmp(got, want, sizeof(got)) != 0)
				abort();
			free(ref);
		}
		if (i == 1) {
			json_object *doc = json_tokener_parse(buf), *cells, *c, *v;
			size_t found = 0;
			if (!doc || !json_object_object_get_ex(doc, "cells", &cells))
				abort();
			for (size_t k = 0; k < json_object_array_length(cells); k++) {
				c = json_object_array_get_idx(cells, k);
				if (!json_object_object_get_ex(c, "victim", &v) ||
				    strcmp(json_object_get_string(v), r->victim))
					continue;
				found++;
				if (!json_object_object_get_ex(c, "mechanism", &v) ||
				    strcmp(json_object_get_string(v), r->mechanism) ||
				    !json_object_object_get_ex(c, "evidence", &v) ||
				    strcmp(json_object_get_string(v), r->evidence))
					abort();
			}
			if (found != 1)
				abort();
			json_object_put(doc);
		}
		free(buf);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct mx_table t, plain;
	struct mx_result r, p;
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
	p = r;
	snprintf(p.mechanism, sizeof(p.mechanism), "%s", r.mechanism[0] ? "m" : "");
	snprintf(p.evidence, sizeof(p.evidence), "%s", r.evidence[0] ? "e" : "");
	if (mx_table_init(&plain, a, 1, v, nv, err, sizeof(err)) != 0 || mx_table_set(&plain, &p, err, sizeof(err)) != 0)
		abort();
	check_renderings(&t, &plain, &r);
	return 0;
}
