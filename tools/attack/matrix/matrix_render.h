/* SPDX-License-Identifier: MIT */
/*
 * The attack matrix's pure half: parse the MATRIX lines the guest-side cells
 * print, collect them into an attack x victim table, and render it as a
 * terminal table, Markdown, JSON and SVG. No I/O beyond the FILE it is given.
 *
 * A line: MATRIX {"attack":A,"victim":V,"outcome":O,"mechanism":M,"evidence":E}
 * with exactly those five string members; names [a-z0-9_-]{1,31}; O one of
 * succeeded | blocked | detected | not-applicable | error; M required for
 * blocked and detected; M and E at most MX_TEXT_MAX - 1 bytes, no control
 * characters.
 */
#ifndef RSEC_MATRIX_RENDER_H
#define RSEC_MATRIX_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum {
	MX_MAX_ROWS = 16,  /* attacks, and victims */
	MX_NAME_MAX = 32,  /* with the NUL */
	MX_TEXT_MAX = 512, /* mechanism, evidence; with the NUL */
	MX_LINE_MAX = 4096,
};

enum mx_outcome {
	MX_NOT_RUN = 0, /* no result line for the cell */
	MX_SUCCEEDED,
	MX_BLOCKED,
	MX_DETECTED,
	MX_NOT_APPLICABLE,
	MX_ERROR,
	MX_OUTCOMES
};

struct mx_result {
	char attack[MX_NAME_MAX], victim[MX_NAME_MAX];
	enum mx_outcome outcome;
	char mechanism[MX_TEXT_MAX], evidence[MX_TEXT_MAX];
};

struct mx_cell {
	enum mx_outcome outcome;
	char mechanism[MX_TEXT_MAX], evidence[MX_TEXT_MAX];
};

struct mx_table {
	size_t n_attacks, n_victims;
	char attacks[MX_MAX_ROWS][MX_NAME_MAX], victims[MX_MAX_ROWS][MX_NAME_MAX];
	struct mx_cell cells[MX_MAX_ROWS][MX_MAX_ROWS]; /* [attack][victim] */
	double elapsed_s; /* < 0: unknown, left out of the JSON */
};

/* "succeeded", ..., "not run" for MX_NOT_RUN. */
const char *mx_outcome_name(enum mx_outcome o);
/* The five outcomes a cell may report (not "not run"). */
bool mx_outcome_parse(const char *s, enum mx_outcome *o);
/* [a-z0-9_-]{1,31} */
bool mx_name_valid(const char *s);

/*
 * One line (with or without its newline; len bytes, no NUL needed). Returns
 * 0, or -1 with the reason in err (always NUL-terminated if errcap > 0).
 */
int mx_parse_line(const char *line, size_t len, struct mx_result *out, char *err, size_t errcap);

/* Rows and columns; names must be valid and distinct. 0 or -1 with err. */
int mx_table_init(struct mx_table *t, const char *const *attacks, size_t n_attacks, const char *const *victims,
		  size_t n_victims, char *err, size_t errcap);
/* Record a result; -1 if its attack or victim is not in the table or the cell already has one. */
int mx_table_set(struct mx_table *t, const struct mx_result *r, char *err, size_t errcap);
/* counts[o] for every outcome, MX_NOT_RUN included. */
void mx_table_counts(const struct mx_table *t, size_t counts[MX_OUTCOMES]);

/* Each returns 0, or -1 if writing failed. color: ANSI colours and symbols. */
int mx_render_terminal(const struct mx_table *t, FILE *f, bool color);
int mx_render_markdown(const struct mx_table *t, FILE *f);
int mx_render_json(const struct mx_table *t, FILE *f);
int mx_render_svg(const struct mx_table *t, FILE *f);

#endif /* RSEC_MATRIX_RENDER_H */
