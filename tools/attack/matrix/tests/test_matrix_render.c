/* SPDX-License-Identifier: MIT */
/* matrix_render: MATRIX line parsing, the table, and escaping in every rendering. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <json-c/json.h>

#include "matrix/matrix_render.h"

static int parse(const char *line, struct mx_result *r, char *err)
{
	return mx_parse_line(line, strlen(line), r, err, 160);
}

static void test_parse_good(void **state)
{
	struct mx_result r;
	char err[160];
	(void)state;

	assert_int_equal(parse("MATRIX {\"attack\":\"inject\",\"victim\":\"naive\",\"outcome\":\"succeeded\","
			       "\"mechanism\":\"\",\"evidence\":\"[h1] recv (20 bytes): \\\"A\\\\B\\\"\"}\n", &r, err), 0);
	assert_string_equal(r.attack, "inject");
	assert_string_equal(r.victim, "naive");
	assert_int_equal(r.outcome, MX_SUCCEEDED);
	assert_string_equal(r.mechanism, "");
	assert_string_equal(r.evidence, "[h1] recv (20 bytes): \"A\\B\"");

	/* Member order does not matter; every outcome name parses. */
	assert_int_equal(parse("MATRIX {\"outcome\":\"detected\",\"evidence\":\"e\",\"mechanism\":\"AEAD\","
			       "\"victim\":\"rdmasec\",\"attack\":\"qp-error\"}", &r, err), 0);
	assert_int_equal(r.outcome, MX_DETECTED);
	assert_string_equal(r.mechanism, "AEAD");
	const char *names[] = { "succeeded", "blocked", "detected", "not-applicable", "error" };
	for (size_t i = 0; i < 5; i++) {
		enum mx_outcome o;
		assert_true(mx_outcome_parse(names[i], &o));
		assert_string_equal(mx_outcome_name(o), names[i]);
	}
}

static void test_parse_malformed(void **state)
{
	static const char *const bad[] = {
		"",
		"MATRIX",
		"MATRIX ",
		"matrix {\"attack\":\"a\",\"victim\":\"v\",\"outcome\":\"error\",\"mechanism\":\"\",\"evidence\":\"\"}",
		"MATRIX [1,2]",
		"MATRIX {\"attack\":\"a\",\"victim\":\"v\",\"outcome\":\"error\",\"mechanism\":\"\"",
		"MATRIX {\"attack\":\"a\",\"victim\":\"v\",\"outcome\":\"error\",\"mechanism\":\"\",\"evidence\":\"\"} x",
		"MATRIX {\"attack\":\"a\",\"victim\":\"v\",\"outcome\":\"pwned\",\"mechanism\":\"\",\"evidence\":\"\"}",
		"MATRIX {\"attack\":\"a\",\"victim\":\"v\",\"outcome\":\"not run\",\"mechanism\":\"\",\"evidence\":\"\"}",
		"MATRIX {\"attack\":\"a\",\"victim\":\"v\",\"outcome\":\"blocked\",\"mechanism\":\"\",\"evidence\":\"\"}",
		"MATRIX {\"attack\":\"a\",\"victim\":\"v\",\"outcome\":\"error\",\"evidence\":\"\"}",
		"MATRIX {\"attack\":\"a\",\"victim\":\"v\",\"outcome\":\"error\",\"mechanism\":1,\"evidence\":\"\"}",
		"MATRIX {\"attack\":\"A B\",\"victim\":\"v\",\"outcome\":\"error\",\"mechanism\":\"\",\"evidence\":\"\"}",
		"MATRIX {\"attack\":\"a\",\"victim\":\"\",\"outcome\":\"error\",\"mechanism\":\"\",\"evidence\":\"\"}",
		"MATRIX {\"attack\":\"a\",\"victim\":\"v\",\"outcome\":\"error\",\"mechanism\":\"\",\"evidence\":\"x\\ny\"}",
		"MATRIX {\"attack\":\"a\",\"victim\":\"v\",\"outcome\":\"error\",\"mechanism\":\"\",\"evidence\":\"\",\"x\":\"\"}",
	};
	struct mx_result r;
	char err[160];
	(void)state;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		if (parse(bad[i], &r, err) == 0)
			fail_msg("accepted: %s", bad[i]);
		assert_true(err[0] != '\0');
	}
	/* Too long: evidence past MX_TEXT_MAX - 1 bytes, and a name of 32 characters. */
	char line[MX_LINE_MAX + 64];
	int n = snprintf(line, sizeof(line), "MATRIX {\"attack\":\"a\",\"victim\":\"v\",\"outcome\":\"error\","
					     "\"mechanism\":\"\",\"evidence\":\"%0*d\"}", MX_TEXT_MAX, 0);
	assert_true(n > 0 && (size_t)n < sizeof(line));
	assert_int_equal(parse(line, &r, err), -1);
	assert_non_null(strstr(err, "longer"));
	assert_int_equal(parse("MATRIX {\"attack\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\",\"victim\":\"v\","
			       "\"outcome\":\"error\",\"mechanism\":\"\",\"evidence\":\"\"}", &r, err), -1);
	/* An embedded NUL within len. */
	static const char nul[] = "MATRIX {\"attack\":\"a\"\0,\"victim\":\"v\"}";
	assert_int_equal(mx_parse_line(nul, sizeof(nul) - 1, &r, err, sizeof(err)), -1);
}

static const char *const attacks[] = { "inject", "qp-error" };
static const char *const victims[] = { "naive", "rdmasec", "pingpong" };

static void fill(struct mx_table *t)
{
	struct mx_result r;
	char err[160];

	assert_int_equal(mx_table_init(t, attacks, 2, victims, 3, err, sizeof(err)), 0);
	assert_int_equal(parse("MATRIX {\"attack\":\"inject\",\"victim\":\"naive\",\"outcome\":\"succeeded\","
			       "\"mechanism\":\"\",\"evidence\":\"a|b <script>&x_*\"}", &r, err), 0);
	assert_int_equal(mx_table_set(t, &r, err, sizeof(err)), 0);
	assert_int_equal(parse("MATRIX {\"attack\":\"inject\",\"victim\":\"rdmasec\",\"outcome\":\"detected\","
			       "\"mechanism\":\"AEAD <GCM>\",\"evidence\":\"code=\\\"mac\\\" 'q'\"}", &r, err), 0);
	assert_int_equal(mx_table_set(t, &r, err, sizeof(err)), 0);
	assert_int_equal(parse("MATRIX {\"attack\":\"qp-error\",\"victim\":\"pingpong\",\"outcome\":\"succeeded\","
			       "\"mechanism\":\"\",\"evidence\":\"[h1] Failed status\"}", &r, err), 0);
	assert_int_equal(mx_table_set(t, &r, err, sizeof(err)), 0);
}

static void test_table(void **state)
{
	static struct mx_table t;
	struct mx_result r;
	size_t counts[MX_OUTCOMES];
	char err[160];
	(void)state;

	fill(&t);
	mx_table_counts(&t, counts);
	assert_int_equal(counts[MX_SUCCEEDED], 2);
	assert_int_equal(counts[MX_DETECTED], 1);
	assert_int_equal(counts[MX_NOT_RUN], 3);
	/* A cell twice, or one that was not asked for, is refused. */
	assert_int_equal(parse("MATRIX {\"attack\":\"inject\",\"victim\":\"naive\",\"outcome\":\"error\","
			       "\"mechanism\":\"\",\"evidence\":\"\"}", &r, err), 0);
	assert_int_equal(mx_table_set(&t, &r, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "twice"));
	assert_int_equal(parse("MATRIX {\"attack\":\"sniff\",\"victim\":\"naive\",\"outcome\":\"error\","
			       "\"mechanism\":\"\",\"evidence\":\"\"}", &r, err), 0);
	assert_int_equal(mx_table_set(&t, &r, err, sizeof(err)), -1);
	/* Bad and repeated names. */
	const char *dup[] = { "a", "a" }, *badname[] = { "A" };
	assert_int_equal(mx_table_init(&t, dup, 2, victims, 1, err, sizeof(err)), -1);
	assert_int_equal(mx_table_init(&t, badname, 1, victims, 1, err, sizeof(err)), -1);
	assert_int_equal(mx_table_init(&t, attacks, 0, victims, 1, err, sizeof(err)), -1);
}

/* Renders into a string (caller frees). */
static char *render(int (*fn)(const struct mx_table *, FILE *), const struct mx_table *t)
{
	/* static: open_memstream updates them at fclose, after this frame's analysis ends. */
	static char *buf;
	static size_t len;
	FILE *f;

	buf = NULL;
	f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal(fn(t, f), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static int render_plain(const struct mx_table *t, FILE *f)
{
	return mx_render_terminal(t, f, false);
}

static int render_color(const struct mx_table *t, FILE *f)
{
	return mx_render_terminal(t, f, true);
}

static void test_terminal(void **state)
{
	static struct mx_table t;
	(void)state;

	fill(&t);
	char *s = render(render_plain, &t);
	assert_null(strchr(s, '\033'));
	assert_non_null(strstr(s, "not run"));
	assert_non_null(strstr(s, "inject x rdmasec: detected\n    mechanism: AEAD <GCM>\n"));
	assert_non_null(strstr(s, "2 succeeded, 0 blocked, 1 detected, 0 not-applicable, 0 error, 3 not run"));
	/* Columns line up: every row of the grid is as long as the header. */
	char *l1 = s, *l2 = strchr(l1, '\n') + 1, *l3 = strchr(l2, '\n') + 1;
	assert_int_equal(strchr(l1, '\n') - l1, strchr(l2, '\n') - l2);
	assert_int_equal(strchr(l2, '\n') - l2, strchr(l3, '\n') - l3);
	free(s);
	s = render(render_color, &t);
	assert_non_null(strstr(s, "\033[1;31m"));
	free(s);
}

static void test_markdown(void **state)
{
	static struct mx_table t;
	(void)state;

	fill(&t);
	char *s = render(mx_render_markdown, &t);
	assert_non_null(strstr(s, "a\\|b &lt;script&gt;&amp;x\\_\\*"));
	assert_null(strstr(s, "<script>"));
	assert_non_null(strstr(s, "| inject | **succeeded** | detected | not run |"));
	assert_non_null(strstr(s, "| qp-error | not run | not run | **succeeded** |"));
	/* Every details row has exactly 6 unescaped '|'. */
	for (char *l = strstr(s, "| inject | naive |"); l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		int bars = 0;
		for (char *p = l; *p && *p != '\n'; p++)
			bars += *p == '|' && (p == l || p[-1] != '\\');
		assert_int_equal(bars, 6);
	}
	free(s);
}

static void test_svg(void **state)
{
	static struct mx_table t;
	(void)state;

	fill(&t);
	char *s = render(mx_render_svg, &t);
	assert_true(strncmp(s, "<svg ", 5) == 0);
	assert_non_null(strstr(s, "</svg>\n"));
	assert_non_null(strstr(s, "a|b &lt;script&gt;&amp;x_*"));
	assert_non_null(strstr(s, "code=&quot;mac&quot; &apos;q&apos;"));
	assert_null(strstr(s, "<script>"));
	assert_non_null(strstr(s, ">not run</text>"));
	assert_non_null(strstr(s, "#e05545")); /* succeeded's colour, in cells and legend */
	free(s);
}

static void test_json(void **state)
{
	static struct mx_table t;
	json_object *doc, *cells, *c, *v;
	(void)state;

	fill(&t);
	t.elapsed_s = 12.5;
	char *s = render(mx_render_json, &t);
	doc = json_tokener_parse(s);
	assert_non_null(doc);
	assert_true(json_object_object_get_ex(doc, "schema", &v));
	assert_string_equal(json_object_get_string(v), "rdmasec-attack-matrix/1");
	assert_true(json_object_object_get_ex(doc, "cells", &cells));
	assert_int_equal(json_object_array_length(cells), 6);
	c = json_object_array_get_idx(cells, 1); /* inject x rdmasec */
	assert_true(json_object_object_get_ex(c, "evidence", &v));
	assert_string_equal(json_object_get_string(v), "code=\"mac\" 'q'");
	assert_true(json_object_object_get_ex(c, "mechanism", &v));
	assert_string_equal(json_object_get_string(v), "AEAD <GCM>");
	c = json_object_array_get_idx(cells, 5); /* qp-error x pingpong */
	assert_true(json_object_object_get_ex(c, "outcome", &v));
	assert_string_equal(json_object_get_string(v), "succeeded");
	c = json_object_array_get_idx(cells, 3);
	assert_true(json_object_object_get_ex(c, "outcome", &v));
	assert_string_equal(json_object_get_string(v), "not run");
	assert_true(json_object_object_get_ex(doc, "summary", &c));
	assert_true(json_object_object_get_ex(c, "not run", &v));
	assert_int_equal(json_object_get_int(v), 3);
	assert_true(json_object_object_get_ex(c, "cells", &v));
	assert_int_equal(json_object_get_int(v), 6);
	/* rdmasec: detected, plus one not-run cell: not all stopped. */
	assert_true(json_object_object_get_ex(doc, "rdmasec_all_stopped", &v));
	assert_false(json_object_get_boolean(v));
	assert_true(json_object_object_get_ex(doc, "elapsed_s", &v));
	assert_true(json_object_get_double(v) == 12.5);
	json_object_put(doc);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_good), cmocka_unit_test(test_parse_malformed),
		cmocka_unit_test(test_table),      cmocka_unit_test(test_terminal),
		cmocka_unit_test(test_markdown),   cmocka_unit_test(test_svg),
		cmocka_unit_test(test_json),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
