/* SPDX-License-Identifier: MIT */
/* The attack matrix: MATRIX line parser, table, and its four renderings. */
#include "matrix_render.h"

#include <json-c/json.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>

static const char *const outcome_names[MX_OUTCOMES] = {
	[MX_NOT_RUN] = "not run",         [MX_SUCCEEDED] = "succeeded", [MX_BLOCKED] = "blocked",
	[MX_DETECTED] = "detected",       [MX_NOT_APPLICABLE] = "not-applicable",
	[MX_ERROR] = "error",
};

/* SVG fill and ANSI colour per outcome. */
static const char *const outcome_fill[MX_OUTCOMES] = {
	[MX_NOT_RUN] = "#e0e0e0",   [MX_SUCCEEDED] = "#e05545", [MX_BLOCKED] = "#3fa34d",
	[MX_DETECTED] = "#7cc47f",  [MX_NOT_APPLICABLE] = "#b8c4d6", [MX_ERROR] = "#f0b429",
};
static const char *const outcome_ansi[MX_OUTCOMES] = {
	[MX_NOT_RUN] = "\033[2m",    [MX_SUCCEEDED] = "\033[1;31m", [MX_BLOCKED] = "\033[1;32m",
	[MX_DETECTED] = "\033[32m",  [MX_NOT_APPLICABLE] = "\033[34m", [MX_ERROR] = "\033[33m",
};
static const char *const outcome_symbol[MX_OUTCOMES] = {
	[MX_NOT_RUN] = "·", [MX_SUCCEEDED] = "✗", [MX_BLOCKED] = "✓",
	[MX_DETECTED] = "✓", [MX_NOT_APPLICABLE] = "–", [MX_ERROR] = "!",
};

static const char *const members[] = { "attack", "victim", "outcome", "mechanism", "evidence" };
enum { N_MEMBERS = sizeof(members) / sizeof(members[0]) };

const char *mx_outcome_name(enum mx_outcome o)
{
	return (unsigned)o < MX_OUTCOMES ? outcome_names[o] : "?";
}

bool mx_outcome_parse(const char *s, enum mx_outcome *o)
{
	for (int i = MX_SUCCEEDED; i < MX_OUTCOMES; i++) {
		if (!strcmp(s, outcome_names[i])) {
			*o = (enum mx_outcome)i;
			return true;
		}
	}
	return false;
}

bool mx_name_valid(const char *s)
{
	size_t n = 0;

	for (; s[n]; n++) {
		char c = s[n];
		if (n >= MX_NAME_MAX - 1 || !((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
			return false;
	}
	return n > 0;
}

__attribute__((format(printf, 3, 4))) static int fail(char *err, size_t cap, const char *fmt, ...)
{
	va_list ap;

	if (cap) {
		va_start(ap, fmt);
		vsnprintf(err, cap, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* Copies a JSON string member, checked: length and no control characters. */
static int take_text(json_object *obj, const char *key, char *dst, size_t cap, char *err, size_t errcap)
{
	json_object *v;
	const char *s;
	size_t n;

	if (!json_object_object_get_ex(obj, key, &v))
		return fail(err, errcap, "missing \"%s\"", key);
	if (!json_object_is_type(v, json_type_string))
		return fail(err, errcap, "\"%s\" is not a string", key);
	s = json_object_get_string(v);
	n = (size_t)json_object_get_string_len(v);
	if (n >= cap)
		return fail(err, errcap, "\"%s\" is longer than %zu bytes", key, cap - 1);
	for (size_t i = 0; i < n; i++) {
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return fail(err, errcap, "\"%s\" contains a control character", key);
	}
	memcpy(dst, s, n);
	dst[n] = '\0';
	return 0;
}

/* Every member of obj is one of members[]; -1 after saying which is not. */
static int check_members(json_object *obj, char *err, size_t errcap)
{
	json_object_object_foreach(obj, key, val)
	{
		bool known = false;
		(void)val;
		for (size_t i = 0; i < N_MEMBERS; i++)
			known |= !strcmp(key, members[i]);
		if (!known)
			return fail(err, errcap, "unknown member \"%.40s\"", key);
	}
	return 0;
}

/* The five texts of a result object into out, checked; 0 or -1 after saying why. */
static int take_result(json_object *obj, struct mx_result *out, char *err, size_t errcap)
{
	char outcome[MX_NAME_MAX];

	if (check_members(obj, err, errcap) ||
	    take_text(obj, "attack", out->attack, sizeof(out->attack), err, errcap) ||
	    take_text(obj, "victim", out->victim, sizeof(out->victim), err, errcap) ||
	    take_text(obj, "outcome", outcome, sizeof(outcome), err, errcap) ||
	    take_text(obj, "mechanism", out->mechanism, sizeof(out->mechanism), err, errcap) ||
	    take_text(obj, "evidence", out->evidence, sizeof(out->evidence), err, errcap))
		return -1;
	if (!mx_name_valid(out->attack) || !mx_name_valid(out->victim))
		return fail(err, errcap, "attack and victim must be [a-z0-9_-]{1,31}");
	if (!mx_outcome_parse(outcome, &out->outcome))
		return fail(err, errcap, "unknown outcome \"%s\"", outcome);
	if ((out->outcome == MX_BLOCKED || out->outcome == MX_DETECTED) && !out->mechanism[0])
		return fail(err, errcap, "a %s cell must name its mechanism", outcome);
	return 0;
}

int mx_parse_line(const char *line, size_t len, struct mx_result *out, char *err, size_t errcap)
{
	static const char prefix[] = "MATRIX ";
	json_tokener *tok;
	json_object *obj;
	size_t plen = sizeof(prefix) - 1;
	int rc = -1;

	if (errcap)
		err[0] = '\0';
	while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
		len--;
	if (len > MX_LINE_MAX)
		return fail(err, errcap, "line longer than %d bytes", MX_LINE_MAX);
	if (len < plen || memcmp(line, prefix, plen) != 0)
		return fail(err, errcap, "not a MATRIX line");
	if (memchr(line, '\0', len))
		return fail(err, errcap, "NUL byte in line");
	line += plen;
	len -= plen;
	tok = json_tokener_new_ex(4);
	if (!tok)
		return fail(err, errcap, "out of memory");
	obj = json_tokener_parse_ex(tok, line, (int)len);
	if (!obj || json_tokener_get_error(tok) != json_tokener_success) {
		rc = fail(err, errcap, "bad JSON: %s", json_tokener_error_desc(json_tokener_get_error(tok)));
		goto out;
	}
	if ((size_t)json_tokener_get_parse_end(tok) != len) {
		rc = fail(err, errcap, "bytes after the JSON object");
		goto out;
	}
	if (!json_object_is_type(obj, json_type_object)) {
		rc = fail(err, errcap, "not a JSON object");
		goto out;
	}
	rc = take_result(obj, out, err, errcap);
out:
	json_object_put(obj);
	json_tokener_free(tok);
	return rc;
}

static int find(const char names[][MX_NAME_MAX], size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(names[i], s))
			return (int)i;
	}
	return -1;
}

int mx_table_init(struct mx_table *t, const char *const *attacks, size_t n_attacks, const char *const *victims,
		  size_t n_victims, char *err, size_t errcap)
{
	memset(t, 0, sizeof(*t));
	t->elapsed_s = -1;
	if (!n_attacks || !n_victims || n_attacks > MX_MAX_ROWS || n_victims > MX_MAX_ROWS)
		return fail(err, errcap, "between 1 and %d attacks and victims", MX_MAX_ROWS);
	for (size_t i = 0; i < n_attacks; i++) {
		if (!mx_name_valid(attacks[i]) || find(t->attacks, i, attacks[i]) >= 0)
			return fail(err, errcap, "bad or repeated attack name \"%.40s\"", attacks[i]);
		strcpy(t->attacks[i], attacks[i]);
	}
	for (size_t i = 0; i < n_victims; i++) {
		if (!mx_name_valid(victims[i]) || find(t->victims, i, victims[i]) >= 0)
			return fail(err, errcap, "bad or repeated victim name \"%.40s\"", victims[i]);
		strcpy(t->victims[i], victims[i]);
	}
	t->n_attacks = n_attacks;
	t->n_victims = n_victims;
	return 0;
}

int mx_table_set(struct mx_table *t, const struct mx_result *r, char *err, size_t errcap)
{
	int a = find(t->attacks, t->n_attacks, r->attack), v = find(t->victims, t->n_victims, r->victim);
	struct mx_cell *c;

	if (a < 0 || v < 0)
		return fail(err, errcap, "cell %s x %s was not asked for", r->attack, r->victim);
	c = &t->cells[a][v];
	if (c->outcome != MX_NOT_RUN)
		return fail(err, errcap, "cell %s x %s reported twice", r->attack, r->victim);
	c->outcome = r->outcome;
	memcpy(c->mechanism, r->mechanism, sizeof(c->mechanism));
	memcpy(c->evidence, r->evidence, sizeof(c->evidence));
	return 0;
}

void mx_table_counts(const struct mx_table *t, size_t counts[MX_OUTCOMES])
{
	memset(counts, 0, sizeof(size_t) * MX_OUTCOMES);
	for (size_t a = 0; a < t->n_attacks; a++)
		for (size_t v = 0; v < t->n_victims; v++)
			counts[t->cells[a][v].outcome]++;
}

/* ---- terminal ---- */

static size_t col_width(const struct mx_table *t, size_t v)
{
	size_t w = strlen(t->victims[v]);
	for (size_t a = 0; a < t->n_attacks; a++) {
		size_t n = strlen(outcome_names[t->cells[a][v].outcome]) + 2; /* symbol and space */
		if (n > w)
			w = n;
	}
	return w;
}

int mx_render_terminal(const struct mx_table *t, FILE *f, bool color)
{
	size_t aw = strlen("attack \\ victim"), counts[MX_OUTCOMES];

	for (size_t a = 0; a < t->n_attacks; a++)
		if (strlen(t->attacks[a]) > aw)
			aw = strlen(t->attacks[a]);
	fprintf(f, "%-*s", (int)aw, "attack \\ victim");
	for (size_t v = 0; v < t->n_victims; v++)
		fprintf(f, "  %-*s", (int)col_width(t, v), t->victims[v]);
	fputc('\n', f);
	for (size_t a = 0; a < t->n_attacks; a++) {
		fprintf(f, "%-*s", (int)aw, t->attacks[a]);
		for (size_t v = 0; v < t->n_victims; v++) {
			enum mx_outcome o = t->cells[a][v].outcome;
			int pad = (int)col_width(t, v) - (int)strlen(outcome_names[o]) - 2;
			if (color)
				fprintf(f, "  %s%s %s\033[0m%*s", outcome_ansi[o], outcome_symbol[o], outcome_names[o],
					pad, "");
			else
				fprintf(f, "  %s%*s", outcome_names[o], pad + 2, "");
		}
		fputc('\n', f);
	}
	mx_table_counts(t, counts);
	fputs("\n", f);
	for (int o = MX_SUCCEEDED; o < MX_OUTCOMES; o++)
		fprintf(f, "%s%zu %s", o == MX_SUCCEEDED ? "" : ", ", counts[o], outcome_names[o]);
	fprintf(f, ", %zu not run", counts[MX_NOT_RUN]);
	if (t->elapsed_s >= 0)
		fprintf(f, " (%.0f s)", t->elapsed_s);
	fputs("\n\n", f);
	for (size_t a = 0; a < t->n_attacks; a++) {
		for (size_t v = 0; v < t->n_victims; v++) {
			const struct mx_cell *c = &t->cells[a][v];
			if (c->outcome == MX_NOT_RUN)
				continue;
			fprintf(f, "%s x %s: %s%s%s\n", t->attacks[a], t->victims[v],
				color ? outcome_ansi[c->outcome] : "", outcome_names[c->outcome], color ? "\033[0m" : "");
			if (c->mechanism[0])
				fprintf(f, "    mechanism: %s\n", c->mechanism);
			if (c->evidence[0])
				fprintf(f, "    evidence:  %s\n", c->evidence);
		}
	}
	return ferror(f) ? -1 : 0;
}

/* ---- Markdown ---- */

/* Table-cell text: no '|' to split the cell, no HTML, no emphasis or links. */
static void md_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '|': case '\\': case '`': case '*': case '_': case '[': case ']': case '#':
			fputc('\\', f);
			fputc(*s, f);
			break;
		default: fputc(*s, f);
		}
	}
}

int mx_render_markdown(const struct mx_table *t, FILE *f)
{
	size_t counts[MX_OUTCOMES];

	fputs("| attack \\\\ victim |", f);
	for (size_t v = 0; v < t->n_victims; v++) {
		fputc(' ', f);
		md_text(f, t->victims[v]);
		fputs(" |", f);
	}
	fputs("\n| --- |", f);
	for (size_t v = 0; v < t->n_victims; v++)
		fputs(" --- |", f);
	fputc('\n', f);
	for (size_t a = 0; a < t->n_attacks; a++) {
		fputs("| ", f);
		md_text(f, t->attacks[a]);
		fputs(" |", f);
		for (size_t v = 0; v < t->n_victims; v++) {
			enum mx_outcome o = t->cells[a][v].outcome;
			fprintf(f, " %s%s%s |", o == MX_SUCCEEDED ? "**" : "", outcome_names[o],
				o == MX_SUCCEEDED ? "**" : "");
		}
		fputc('\n', f);
	}
	mx_table_counts(t, counts);
	fputc('\n', f);
	for (int o = MX_SUCCEEDED; o < MX_OUTCOMES; o++)
		fprintf(f, "%s%zu %s", o == MX_SUCCEEDED ? "" : ", ", counts[o], outcome_names[o]);
	fprintf(f, ", %zu not run.\n\n| attack | victim | outcome | mechanism | evidence |\n| --- | --- | --- | --- | --- |\n",
		counts[MX_NOT_RUN]);
	for (size_t a = 0; a < t->n_attacks; a++) {
		for (size_t v = 0; v < t->n_victims; v++) {
			const struct mx_cell *c = &t->cells[a][v];
			fputs("| ", f);
			md_text(f, t->attacks[a]);
			fputs(" | ", f);
			md_text(f, t->victims[v]);
			fprintf(f, " | %s | ", outcome_names[c->outcome]);
			md_text(f, c->mechanism);
			fputs(" | ", f);
			md_text(f, c->evidence);
			fputs(" |\n", f);
		}
	}
	return ferror(f) ? -1 : 0;
}

/* ---- JSON ---- */

static int add(json_object *o, const char *key, json_object *v)
{
	if (!v)
		return -1;
	if (json_object_object_add(o, key, v) != 0) {
		json_object_put(v);
		return -1;
	}
	return 0;
}

/* root[key]: the names, as a JSON array. Nonzero on failure. */
static int add_names(json_object *root, const char *key, const char (*names)[MX_NAME_MAX], size_t n)
{
	json_object *arr;
	if (add(root, key, arr = json_object_new_array()))
		return -1;
	for (size_t i = 0; i < n; i++)
		if (json_object_array_add(arr, json_object_new_string(names[i])))
			return -1;
	return 0;
}

/* One object per cell; *have_rdmasec and *stopped: was an rdmasec cell run, and did each stop its attack. */
static int add_cells(json_object *root, const struct mx_table *t, bool *have_rdmasec, bool *stopped)
{
	json_object *cells;
	if (add(root, "cells", cells = json_object_new_array()))
		return -1;
	for (size_t a = 0; a < t->n_attacks; a++) {
		for (size_t v = 0; v < t->n_victims; v++) {
			const struct mx_cell *c = &t->cells[a][v];
			json_object *o = json_object_new_object();
			if (!o || json_object_array_add(cells, o)) {
				json_object_put(o);
				return -1;
			}
			if (add(o, "attack", json_object_new_string(t->attacks[a])) ||
			    add(o, "victim", json_object_new_string(t->victims[v])) ||
			    add(o, "outcome", json_object_new_string(outcome_names[c->outcome])) ||
			    add(o, "mechanism", json_object_new_string(c->mechanism)) ||
			    add(o, "evidence", json_object_new_string(c->evidence)))
				return -1;
			if (!strcmp(t->victims[v], "rdmasec")) {
				*have_rdmasec = true;
				*stopped &= c->outcome == MX_BLOCKED || c->outcome == MX_DETECTED ||
					    c->outcome == MX_NOT_APPLICABLE;
			}
		}
	}
	return 0;
}

static json_object *json_doc(const struct mx_table *t)
{
	json_object *root = json_object_new_object(), *sum;
	size_t counts[MX_OUTCOMES];
	bool rdmasec_stopped = true, have_rdmasec = false;

	if (!root)
		return NULL;
	if (add(root, "cmd", json_object_new_string("matrix")) ||
	    add(root, "schema", json_object_new_string("rdmasec-attack-matrix/1")) ||
	    add_names(root, "attacks", t->attacks, t->n_attacks) || add_names(root, "victims", t->victims, t->n_victims) ||
	    add_cells(root, t, &have_rdmasec, &rdmasec_stopped))
		goto fail;
	mx_table_counts(t, counts);
	if (add(root, "summary", sum = json_object_new_object()))
		goto fail;
	for (int o = 0; o < MX_OUTCOMES; o++)
		if (add(sum, outcome_names[o], json_object_new_int64((int64_t)counts[o])))
			goto fail;
	if (add(sum, "cells", json_object_new_int64((int64_t)(t->n_attacks * t->n_victims))))
		goto fail;
	/* null when no rdmasec cell ran: nothing was shown either way. */
	if (have_rdmasec ? add(root, "rdmasec_all_stopped", json_object_new_boolean(rdmasec_stopped))
			 : json_object_object_add(root, "rdmasec_all_stopped", NULL))
		goto fail;
	if (t->elapsed_s >= 0 && add(root, "elapsed_s", json_object_new_double(t->elapsed_s)))
		goto fail;
	return root;
fail:
	json_object_put(root);
	return NULL;
}

int mx_render_json(const struct mx_table *t, FILE *f)
{
	json_object *doc = json_doc(t);
	const char *s;
	int rc = -1;

	if (!doc)
		return -1;
	s = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	if (s && fputs(s, f) >= 0 && fputc('\n', f) != EOF)
		rc = 0;
	json_object_put(doc);
	return rc || ferror(f) ? -1 : 0;
}

/* ---- SVG ---- */

static void xml_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&apos;", f); break;
		default: fputc(*s, f);
		}
	}
}

int mx_render_svg(const struct mx_table *t, FILE *f)
{
	enum { CW = 118, CH = 34, LW = 120, TH = 40, PAD = 10, LEGEND = 30 };
	enum { LEGEND_ITEM = 110 };
	int w = LW + (int)t->n_victims * CW + 2 * PAD;
	/* Wide enough for the legend's six entries, however few victims. */
	if (w < 2 * PAD + MX_OUTCOMES * LEGEND_ITEM)
		w = 2 * PAD + MX_OUTCOMES * LEGEND_ITEM;
	int h = TH + (int)t->n_attacks * CH + LEGEND + 3 * PAD;
	int ly = TH + (int)t->n_attacks * CH + 2 * PAD;

	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		   "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n", w, h, w, h);
	fprintf(f, "<title>rdmasec attack matrix</title>\n<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", w, h);
	for (size_t v = 0; v < t->n_victims; v++) {
		fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" font-weight=\"bold\">",
			PAD + LW + (int)v * CW + CW / 2, PAD + TH - 16);
		xml_text(f, t->victims[v]);
		fputs("</text>\n", f);
	}
	for (size_t a = 0; a < t->n_attacks; a++) {
		int y = PAD + TH + (int)a * CH;
		fprintf(f, "<text x=\"%d\" y=\"%d\" font-weight=\"bold\">", PAD, y + CH / 2 + 4);
		xml_text(f, t->attacks[a]);
		fputs("</text>\n", f);
		for (size_t v = 0; v < t->n_victims; v++) {
			const struct mx_cell *c = &t->cells[a][v];
			int x = PAD + LW + (int)v * CW;
			fputs("<g><title>", f);
			xml_text(f, t->attacks[a]);
			fputs(" x ", f);
			xml_text(f, t->victims[v]);
			fprintf(f, ": %s", outcome_names[c->outcome]);
			if (c->mechanism[0]) {
				fputs(" | mechanism: ", f);
				xml_text(f, c->mechanism);
			}
			if (c->evidence[0]) {
				fputs(" | evidence: ", f);
				xml_text(f, c->evidence);
			}
			fprintf(f, "</title><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\" stroke=\"#ffffff\" "
				   "stroke-width=\"2\"/><text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text></g>\n",
				x, y, CW, CH, outcome_fill[c->outcome], x + CW / 2, y + CH / 2 + 4,
				outcome_names[c->outcome]);
		}
	}
	for (int o = MX_SUCCEEDED, i = 0; o <= MX_OUTCOMES; o++, i++) {
		int oo = o == MX_OUTCOMES ? MX_NOT_RUN : o, x = PAD + i * LEGEND_ITEM;
		fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"14\" fill=\"%s\"/>"
			   "<text x=\"%d\" y=\"%d\">%s</text>\n",
			x, ly, outcome_fill[oo], x + 18, ly + 11, outcome_names[oo]);
	}
	fputs("</svg>\n", f);
	return ferror(f) ? -1 : 0;
}
