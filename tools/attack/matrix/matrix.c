/* SPDX-License-Identifier: MIT */
/*
 * rdmasec-attack matrix: boots a 3-host fabric once, runs every selected
 * attack against every selected victim inside it (tools/attack/matrix/run.sh
 * and its cells), and renders the outcomes (matrix_render.c).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/attack.h"
#include "matrix_render.h"

#ifndef RSEC_SOURCE_DIR
#define RSEC_SOURCE_DIR "."
#endif
#ifndef RSEC_BINARY_DIR
#define RSEC_BINARY_DIR "build"
#endif

/* Display order; attacks whose cell script is missing are left out by default. */
static const char *const known_attacks[] = { "inject", "impersonate", "qp-error", "mem-access",
					     "exhaust", "cm-disconnect", "sniff" };
static const char *const known_victims[] = { "pingpong", "send_bw", "write_bw", "rping",
					     "ucmatose", "naive",   "rdmasec" };
#define N_KNOWN(a) (sizeof(a) / sizeof((a)[0]))

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s matrix [options]\n"
		"Boot the fabric (host 1: victim server, host 2: its client, host 3: attacker), run\n"
		"every attack against every victim and print the outcomes: succeeded, blocked,\n"
		"detected, not-applicable or error, each with a mechanism and one line of evidence.\n\n"
		"  --attacks A,B       attacks to run (default: every one with a cell script):\n"
		"                      inject impersonate qp-error mem-access exhaust cm-disconnect sniff\n"
		"  --victims X,Y       victims (default all): pingpong send_bw write_bw rping ucmatose\n"
		"                      naive rdmasec\n"
		"  --json              print the JSON document on stdout instead of the table\n"
		"  --json FILE         write the JSON document to FILE (also --json=FILE)\n"
		"  --markdown FILE     write a Markdown table to FILE\n"
		"  --svg FILE          write an SVG picture to FILE\n"
		"  --cell-timeout S    kill a cell after S seconds (default 40)\n"
		"  --timeout S         the whole fabric run (default: 60 + cells x cell timeout)\n"
		"  --mem MiB           guest memory (default 2048)\n"
		"  --fabric PATH       rxe-fabric (default: the source tree's fabric/rxe-fabric)\n"
		"  --repo DIR          source tree (default: %s)\n"
		"  --build DIR         build tree with the tools (default: %s)\n"
		"  --keep              keep the cells' logs (printed path) instead of deleting them\n"
		"  --list              print the known attacks and victims and exit\n"
		"  -h, --help\n\n"
		"Targets are fixed: the fabric's hosts 10.77.0.1-3 inside the guest, nothing else.\n"
		"Exit status: 0 every cell reported and none is error, 1 otherwise or the fabric\n"
		"failed, 2 bad usage.\n",
		PROG, RSEC_SOURCE_DIR, RSEC_BINARY_DIR);
}

enum { OPT_ATTACKS = OPT_FIRST_PRIVATE, OPT_VICTIMS, OPT_MJSON, OPT_MARKDOWN, OPT_SVG, OPT_CELL_TIMEOUT,
       OPT_TIMEOUT, OPT_MEM, OPT_FABRIC, OPT_REPO, OPT_BUILD, OPT_KEEP, OPT_LIST };

struct names {
	size_t n;
	char v[MX_MAX_ROWS][MX_NAME_MAX];
};

/* Comma-separated list of distinct valid names into out. */
static bool parse_list(const char *s, struct names *out, const char *what)
{
	const char *p = s;

	out->n = 0;
	for (;;) {
		size_t len = strcspn(p, ",");
		if (out->n == MX_MAX_ROWS || len == 0 || len >= MX_NAME_MAX) {
			fprintf(stderr, "%s matrix: bad --%s list `%s'\n", PROG, what, s);
			return false;
		}
		memcpy(out->v[out->n], p, len);
		out->v[out->n][len] = '\0';
		if (!mx_name_valid(out->v[out->n])) {
			fprintf(stderr, "%s matrix: bad name `%s' in --%s\n", PROG, out->v[out->n], what);
			return false;
		}
		for (size_t i = 0; i < out->n; i++) {
			if (!strcmp(out->v[i], out->v[out->n])) {
				fprintf(stderr, "%s matrix: `%s' twice in --%s\n", PROG, out->v[i], what);
				return false;
			}
		}
		out->n++;
		if (!p[len])
			return true;
		p += len + 1;
	}
}

static bool is_known(const char *const *list, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(list[i], s))
			return true;
	return false;
}

static bool have_cell(const char *repo, const char *attack)
{
	char path[PATH_MAX];
	struct stat st;
	int n = snprintf(path, sizeof(path), "%s/tools/attack/matrix/cells/%s.sh", repo, attack);

	return n > 0 && (size_t)n < sizeof(path) && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static bool parse_secs(const char *s, uint32_t max, uint32_t *out, const char *what)
{
	if (!parse_u32(s, max, out, what))
		return false;
	if (*out == 0) {
		fprintf(stderr, "%s matrix: %s must be at least 1\n", PROG, what);
		return false;
	}
	return true;
}

/* Writes one rendering to path; false (said why) on failure. */
static bool write_file(const char *path, int (*render)(const struct mx_table *, FILE *), const struct mx_table *t)
{
	FILE *f = fopen(path, "w");
	bool ok;

	if (!f) {
		fprintf(stderr, "%s matrix: cannot write %s: %s\n", PROG, path, strerror(errno));
		return false;
	}
	ok = render(t, f) == 0;
	ok &= fclose(f) == 0;
	if (!ok)
		fprintf(stderr, "%s matrix: writing %s failed\n", PROG, path);
	return ok;
}

struct run {
	const char *fabric, *repo, *build;
	char work[PATH_MAX], bin[PATH_MAX], script[PATH_MAX];
	char attacks[MX_MAX_ROWS * MX_NAME_MAX], victims[MX_MAX_ROWS * MX_NAME_MAX];
	char timeout[16], cell_timeout[16], mem[16];
	bool share_build;
};

static void join_names(char *out, size_t cap, const struct names *n)
{
	size_t used = 0;

	out[0] = '\0';
	for (size_t i = 0; i < n->n && used < cap; i++)
		used += (size_t)snprintf(out + used, cap - used, "%s%s", i ? "," : "", n->v[i]);
}

/*
 * Runs the fabric with run.sh and feeds its stdout's MATRIX lines into t.
 * Returns the fabric's exit status, or -1 if it could not be started.
 */
static int run_fabric(const struct run *r, struct mx_table *t, unsigned *bad_lines)
{
	const char *argv[32];
	int fd[2], status, n = 0;
	pid_t pid;
	FILE *in;
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;

	argv[n++] = r->fabric;
	argv[n++] = "run";
	argv[n++] = "--hosts";
	argv[n++] = "3";
	argv[n++] = "--mem";
	argv[n++] = r->mem;
	argv[n++] = "--timeout";
	argv[n++] = r->timeout;
	if (r->share_build) {
		argv[n++] = "--share";
		argv[n++] = r->build;
	}
	argv[n++] = "--";
	argv[n++] = "bash";
	argv[n++] = r->script;
	argv[n++] = "--bin";
	argv[n++] = r->bin;
	argv[n++] = "--work";
	argv[n++] = r->work;
	argv[n++] = "--attacks";
	argv[n++] = r->attacks;
	argv[n++] = "--victims";
	argv[n++] = r->victims;
	argv[n++] = "--cell-timeout";
	argv[n++] = r->cell_timeout;
	argv[n] = NULL;

	if (pipe(fd) != 0) {
		fprintf(stderr, "%s matrix: pipe: %s\n", PROG, strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "%s matrix: fork: %s\n", PROG, strerror(errno));
		close(fd[0]);
		close(fd[1]);
		return -1;
	}
	if (pid == 0) {
		if (dup2(fd[1], STDOUT_FILENO) < 0)
			_exit(125);
		close(fd[0]);
		close(fd[1]);
		if (chdir(r->repo) != 0)
			_exit(125);
		execv(r->fabric, (char *const *)argv);
		fprintf(stderr, "%s matrix: cannot run %s: %s\n", PROG, r->fabric, strerror(errno));
		_exit(125);
	}
	close(fd[1]);
	in = fdopen(fd[0], "r");
	if (!in) {
		close(fd[0]);
		waitpid(pid, &status, 0);
		return -1;
	}
	while ((len = getline(&line, &cap, in)) >= 0) {
		struct mx_result res;
		char err[160];
		if (len >= 7 && !strncmp(line, "MATRIX ", 7)) {
			if (mx_parse_line(line, (size_t)len, &res, err, sizeof(err)) != 0 ||
			    mx_table_set(t, &res, err, sizeof(err)) != 0) {
				fprintf(stderr, "%s matrix: ignoring a result line: %s\n", PROG, err);
				(*bad_lines)++;
			}
		} else {
			/* Progress and guest messages: they belong on stderr. */
			fputs(line, stderr);
			if (line[len - 1] != '\n')
				fputc('\n', stderr);
		}
	}
	free(line);
	fclose(in);
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			return -1;
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void remove_tree(const char *dir)
{
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		execlp("rm", "rm", "-rf", "--", dir, (char *)NULL);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, &status, 0);
}

int matrix_main(int argc, char *argv[])
{
	static const struct option opts[] = {
		{ "attacks", required_argument, NULL, OPT_ATTACKS },
		{ "victims", required_argument, NULL, OPT_VICTIMS },
		{ "json", optional_argument, NULL, OPT_MJSON },
		{ "markdown", required_argument, NULL, OPT_MARKDOWN },
		{ "svg", required_argument, NULL, OPT_SVG },
		{ "cell-timeout", required_argument, NULL, OPT_CELL_TIMEOUT },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "mem", required_argument, NULL, OPT_MEM },
		{ "fabric", required_argument, NULL, OPT_FABRIC },
		{ "repo", required_argument, NULL, OPT_REPO },
		{ "build", required_argument, NULL, OPT_BUILD },
		{ "keep", no_argument, NULL, OPT_KEEP },
		{ "list", no_argument, NULL, OPT_LIST },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct names attacks = { 0 }, victims = { 0 };
	const char *json_file = NULL, *md_file = NULL, *svg_file = NULL;
	bool json_stdout = false, keep = false, have_attacks = false, have_victims = false, bad = false;
	uint32_t cell_timeout = 40, timeout = 0, mem = 2048;
	char fabric_buf[PATH_MAX], err[160];
	struct run r = { .repo = RSEC_SOURCE_DIR, .build = RSEC_BINARY_DIR };
	static struct mx_table t;
	unsigned bad_lines = 0;
	int opt, rc;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case OPT_ATTACKS: bad |= !(have_attacks = parse_list(optarg, &attacks, "attacks")); break;
		case OPT_VICTIMS: bad |= !(have_victims = parse_list(optarg, &victims, "victims")); break;
		case OPT_MJSON:
			/* --json, --json=FILE and --json FILE (matrix takes no operands). */
			if (optarg)
				json_file = optarg;
			else if (optind < argc && argv[optind][0] != '-')
				json_file = argv[optind++];
			else
				json_stdout = true;
			break;
		case OPT_MARKDOWN: md_file = optarg; break;
		case OPT_SVG: svg_file = optarg; break;
		case OPT_CELL_TIMEOUT: bad |= !parse_secs(optarg, 3600, &cell_timeout, "--cell-timeout"); break;
		case OPT_TIMEOUT: bad |= !parse_secs(optarg, 86400, &timeout, "--timeout"); break;
		case OPT_MEM: bad |= !parse_secs(optarg, 65536, &mem, "--mem"); break;
		case OPT_FABRIC: r.fabric = optarg; break;
		case OPT_REPO: r.repo = optarg; break;
		case OPT_BUILD: r.build = optarg; break;
		case OPT_KEEP: keep = true; break;
		case OPT_LIST:
			for (size_t i = 0; i < N_KNOWN(known_attacks); i++)
				printf("attack %s\n", known_attacks[i]);
			for (size_t i = 0; i < N_KNOWN(known_victims); i++)
				printf("victim %s\n", known_victims[i]);
			return 0;
		case 'h': usage(stdout); return 0;
		default: bad = true;
		}
	}
	if (!bad && optind < argc) {
		fprintf(stderr, "%s matrix: unexpected argument `%s'\n", PROG, argv[optind]);
		bad = true;
	}
	for (size_t i = 0; !bad && i < victims.n; i++) {
		if (!is_known(known_victims, N_KNOWN(known_victims), victims.v[i])) {
			fprintf(stderr, "%s matrix: unknown victim `%s' (--list names them)\n", PROG, victims.v[i]);
			bad = true;
		}
	}
	for (size_t i = 0; !bad && i < attacks.n; i++) {
		if (!have_cell(r.repo, attacks.v[i])) {
			fprintf(stderr, "%s matrix: no cell for attack `%s' (%s/tools/attack/matrix/cells/%s.sh)\n", PROG,
				attacks.v[i], r.repo, attacks.v[i]);
			bad = true;
		}
	}
	if (bad) {
		usage(stderr);
		return 2;
	}
	if (!have_victims) {
		for (size_t i = 0; i < N_KNOWN(known_victims); i++)
			strcpy(victims.v[victims.n++], known_victims[i]);
	}
	if (!have_attacks) {
		for (size_t i = 0; i < N_KNOWN(known_attacks); i++)
			if (have_cell(r.repo, known_attacks[i]))
				strcpy(attacks.v[attacks.n++], known_attacks[i]);
		if (!attacks.n) {
			fprintf(stderr, "%s matrix: no cell scripts under %s/tools/attack/matrix/cells\n", PROG, r.repo);
			return 2;
		}
	}
	{
		const char *an[MX_MAX_ROWS], *vn[MX_MAX_ROWS];
		for (size_t i = 0; i < attacks.n; i++)
			an[i] = attacks.v[i];
		for (size_t i = 0; i < victims.n; i++)
			vn[i] = victims.v[i];
		if (mx_table_init(&t, an, attacks.n, vn, victims.n, err, sizeof(err)) != 0) {
			fprintf(stderr, "%s matrix: %s\n", PROG, err);
			return 2;
		}
	}
	if (!r.fabric) {
		if (snprintf(fabric_buf, sizeof(fabric_buf), "%s/fabric/rxe-fabric", r.repo) >= (int)sizeof(fabric_buf))
			return 2;
		r.fabric = fabric_buf;
	}
	if (access(r.fabric, X_OK) != 0) {
		fprintf(stderr, "%s matrix: cannot run the fabric %s: %s (--fabric PATH)\n", PROG, r.fabric,
			strerror(errno));
		return 2;
	}
	if (snprintf(r.bin, sizeof(r.bin), "%s/tools", r.build) >= (int)sizeof(r.bin) ||
	    snprintf(r.script, sizeof(r.script), "%s/tools/attack/matrix/run.sh", r.repo) >= (int)sizeof(r.script) ||
	    snprintf(r.work, sizeof(r.work), "%s/matrix-run.XXXXXX", r.build) >= (int)sizeof(r.work)) {
		fprintf(stderr, "%s matrix: paths too long\n", PROG);
		return 2;
	}
	{
		char probe[PATH_MAX];
		if (snprintf(probe, sizeof(probe), "%s/attack/rdmasec-attack", r.bin) >= (int)sizeof(probe) ||
		    access(probe, X_OK) != 0) {
			fprintf(stderr, "%s matrix: no tools in %s (build first, or --build DIR)\n", PROG, r.build);
			return 2;
		}
	}
	if (!mkdtemp(r.work)) {
		fprintf(stderr, "%s matrix: cannot create a work directory in %s: %s\n", PROG, r.build, strerror(errno));
		return 1;
	}
	/* The guest sees the repository and --share directories only. */
	{
		char rr[PATH_MAX], br[PATH_MAX];
		size_t n;
		if (!realpath(r.repo, rr) || !realpath(r.build, br)) {
			fprintf(stderr, "%s matrix: cannot resolve %s or %s\n", PROG, r.repo, r.build);
			return 2;
		}
		n = strlen(rr);
		r.share_build = !(strncmp(br, rr, n) == 0 && (br[n] == '/' || br[n] == '\0'));
	}
	join_names(r.attacks, sizeof(r.attacks), &attacks);
	join_names(r.victims, sizeof(r.victims), &victims);
	if (!timeout)
		timeout = 60 + cell_timeout * (uint32_t)(attacks.n * victims.n);
	snprintf(r.timeout, sizeof(r.timeout), "%u", timeout);
	snprintf(r.cell_timeout, sizeof(r.cell_timeout), "%u", cell_timeout);
	snprintf(r.mem, sizeof(r.mem), "%u", mem);

	fprintf(stderr, "%s matrix: %zu attacks x %zu victims in one fabric run (at most %u s)\n", PROG, attacks.n,
		victims.n, timeout);
	double start = now_s();
	rc = run_fabric(&r, &t, &bad_lines);
	t.elapsed_s = now_s() - start;
	if (rc != 0)
		fprintf(stderr, "%s matrix: the fabric run ended with status %d\n", PROG, rc);
	if (keep)
		fprintf(stderr, "%s matrix: cell logs kept in %s\n", PROG, r.work);
	else
		remove_tree(r.work);

	bool ok = true;
	if (json_file)
		ok &= write_file(json_file, mx_render_json, &t);
	if (md_file)
		ok &= write_file(md_file, mx_render_markdown, &t);
	if (svg_file)
		ok &= write_file(svg_file, mx_render_svg, &t);
	if (json_stdout)
		ok &= mx_render_json(&t, stdout) == 0;
	else
		ok &= mx_render_terminal(&t, stdout, isatty(STDOUT_FILENO)) == 0;
	if (fflush(stdout) != 0)
		ok = false;

	size_t counts[MX_OUTCOMES];
	mx_table_counts(&t, counts);
	return ok && rc == 0 && !bad_lines && !counts[MX_NOT_RUN] && !counts[MX_ERROR] ? 0 : 1;
}
