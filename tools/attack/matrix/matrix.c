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
static const char *const known_attacks[] = { "inject",         "impersonate",   "qp-error", "mem-access",
					     "exhaust",        "cm-disconnect", "sniff",    "spoof-request",
					     "spoof-response", "pool-write",    "cnp",      "cm-disconnect-exhaust" };
static const char *const known_victims[] = { "pingpong", "send_bw", "write_bw", "rping",
					     "ucmatose", "naive",   "rdmasec",  "nvmf",
					     "rdmasec-blk" };
/* Named with --victims only: their cells are inject, qp-error, cm-disconnect and sniff so far. */
static const char *const mpi_victims[] = { "mpi-verbs", "mpi-rdmasec" };
#define N_KNOWN(a) (sizeof(a) / sizeof((a)[0]))
/* The kernel's NVMe-oF victim needs minutes per cell on the emulated fabric
 * (module set-up, nvme connect, the host's error recovery): its cells get at
 * least this long whatever --cell-timeout says (run.sh applies the same floor). */
#define NVMF_CELL_TIMEOUT_MIN 300u
/* rdmasec-blk's cells start a target and a client loop and run up to four
 * rounds of an attack: at least this long (run.sh applies the same floor). */
#define BLK_CELL_TIMEOUT_MIN 240u
/* The MPI victims start Open MPI and (mpi-rdmasec) authenticate before the
 * first message, and the attacked job then runs to its end: at least this long. */
#define MPI_CELL_TIMEOUT_MIN 120u

static uint32_t victim_cell_timeout(const char *victim, uint32_t cell_timeout)
{
	if (strcmp(victim, "nvmf") == 0 && cell_timeout < NVMF_CELL_TIMEOUT_MIN)
		return NVMF_CELL_TIMEOUT_MIN;
	if (strcmp(victim, "rdmasec-blk") == 0 && cell_timeout < BLK_CELL_TIMEOUT_MIN)
		return BLK_CELL_TIMEOUT_MIN;
	if (strncmp(victim, "mpi-", 4) == 0 && cell_timeout < MPI_CELL_TIMEOUT_MIN)
		return MPI_CELL_TIMEOUT_MIN;
	return cell_timeout;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s matrix [options]\n"
		"Boot the fabric (host 1: victim server, host 2: its client, host 3: attacker), run\n"
		"every attack against every victim and print the outcomes: succeeded, blocked,\n"
		"detected, not-applicable or error, each with a mechanism and one line of evidence.\n\n"
		"  --attacks A,B       attacks to run (default: every one with a cell script):\n"
		"                      inject impersonate qp-error mem-access exhaust cm-disconnect sniff\n"
		"                      spoof-request spoof-response pool-write cnp cm-disconnect-exhaust\n"
		"  --victims X,Y       victims (default all): pingpong send_bw write_bw rping ucmatose\n"
		"                      naive rdmasec nvmf (the kernel's NVMe over Fabrics)\n"
		"                      rdmasec-blk (rdmasec-blkd and its client)\n"
		"                      only when named: mpi-verbs, mpi-rdmasec (an MPI program under\n"
		"                      Open MPI over verbs;ofi_rxm or rdmasec;ofi_rxm; cells: inject,\n"
		"                      qp-error, cm-disconnect, sniff)\n"
		"  --json              print the JSON document on stdout instead of the table\n"
		"  --json FILE         write the JSON document to FILE (also --json=FILE)\n"
		"  --markdown FILE     write a Markdown table to FILE\n"
		"  --svg FILE          write an SVG picture to FILE\n"
		"  --cell-timeout S    kill a cell after S seconds (default 40; nvmf's cells: at least 300,\n"
		"                      rdmasec-blk's: 240, the MPI victims': 120)\n"
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

/* rxe-fabric's command line for r: boot 3 hosts, run run.sh in the guest. */
static void fabric_argv(const struct run *r, const char *argv[static 32])
{
	int n = 0;

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
}

/* MATRIX lines go into t; everything else is progress, copied to stderr. */
static void read_results(FILE *in, struct mx_table *t, unsigned *bad_lines)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;

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
			fputs(line, stderr);
			if (line[len - 1] != '\n')
				fputc('\n', stderr);
		}
	}
	free(line);
}

/*
 * Runs the fabric with run.sh and feeds its stdout's MATRIX lines into t.
 * Returns the fabric's exit status, or -1 if it could not be started.
 */
static int run_fabric(const struct run *r, struct mx_table *t, unsigned *bad_lines)
{
	const char *argv[32];
	int fd[2], status;
	pid_t pid;
	FILE *in;

	fabric_argv(r, argv);
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
	read_results(in, t, bad_lines);
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

static const struct option matrix_long_opts[] = {
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

struct matrix_opts {
	struct names attacks, victims;
	const char *json_file, *md_file, *svg_file;
	bool json_stdout, keep, have_attacks, have_victims;
	uint32_t cell_timeout, timeout, mem;
};

static void list_known(void)
{
	for (size_t i = 0; i < N_KNOWN(known_attacks); i++)
		printf("attack %s\n", known_attacks[i]);
	for (size_t i = 0; i < N_KNOWN(known_victims); i++)
		printf("victim %s\n", known_victims[i]);
	for (size_t i = 0; i < N_KNOWN(mpi_victims); i++)
		printf("victim %s\n", mpi_victims[i]);
}

/* One option into o or r; false if it was bad. Sets *done after --list and --help. */
static bool parse_opt(int opt, int argc, char *argv[], struct matrix_opts *o, struct run *r, bool *done)
{
	switch (opt) {
	case OPT_ATTACKS: return (o->have_attacks = parse_list(optarg, &o->attacks, "attacks"));
	case OPT_VICTIMS: return (o->have_victims = parse_list(optarg, &o->victims, "victims"));
	case OPT_MJSON:
		/* --json, --json=FILE and --json FILE (matrix takes no operands). */
		if (optarg)
			o->json_file = optarg;
		else if (optind < argc && argv[optind][0] != '-')
			o->json_file = argv[optind++];
		else
			o->json_stdout = true;
		return true;
	case OPT_MARKDOWN: o->md_file = optarg; return true;
	case OPT_SVG: o->svg_file = optarg; return true;
	case OPT_CELL_TIMEOUT: return parse_secs(optarg, 3600, &o->cell_timeout, "--cell-timeout");
	case OPT_TIMEOUT: return parse_secs(optarg, 86400, &o->timeout, "--timeout");
	case OPT_MEM: return parse_secs(optarg, 65536, &o->mem, "--mem");
	case OPT_FABRIC: r->fabric = optarg; return true;
	case OPT_REPO: r->repo = optarg; return true;
	case OPT_BUILD: r->build = optarg; return true;
	case OPT_KEEP: o->keep = true; return true;
	case OPT_LIST: list_known(); *done = true; return true;
	case 'h': usage(stdout); *done = true; return true;
	default: return false;
	}
}

/* Every named victim is known and every named attack has a cell script. */
static bool check_names(const struct matrix_opts *o, const char *repo)
{
	for (size_t i = 0; i < o->victims.n; i++) {
		if (!is_known(known_victims, N_KNOWN(known_victims), o->victims.v[i]) &&
		    !is_known(mpi_victims, N_KNOWN(mpi_victims), o->victims.v[i])) {
			fprintf(stderr, "%s matrix: unknown victim `%s' (--list names them)\n", PROG, o->victims.v[i]);
			return false;
		}
	}
	for (size_t i = 0; i < o->attacks.n; i++) {
		if (!have_cell(repo, o->attacks.v[i])) {
			fprintf(stderr, "%s matrix: no cell for attack `%s' (%s/tools/attack/matrix/cells/%s.sh)\n", PROG,
				o->attacks.v[i], repo, o->attacks.v[i]);
			return false;
		}
	}
	return true;
}

/* Returns -1 to go on, or the exit status (0 after --help or --list, 2 bad usage). */
static int parse_args(int argc, char *argv[], struct matrix_opts *o, struct run *r)
{
	bool bad = false, done = false;
	int opt;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", matrix_long_opts, NULL)) != -1) {
		bad |= !parse_opt(opt, argc, argv, o, r, &done);
		if (done)
			return 0;
	}
	if (!bad && optind < argc) {
		fprintf(stderr, "%s matrix: unexpected argument `%s'\n", PROG, argv[optind]);
		bad = true;
	}
	if (bad || !check_names(o, r->repo)) {
		usage(stderr);
		return 2;
	}
	return -1;
}

/* Without --victims every victim, without --attacks every attack with a cell; the table's rows. */
static int build_table(struct matrix_opts *o, const char *repo, struct mx_table *t)
{
	const char *an[MX_MAX_ROWS], *vn[MX_MAX_ROWS];
	char err[160];

	if (!o->have_victims) {
		for (size_t i = 0; i < N_KNOWN(known_victims); i++)
			strcpy(o->victims.v[o->victims.n++], known_victims[i]);
	}
	if (!o->have_attacks) {
		for (size_t i = 0; i < N_KNOWN(known_attacks); i++)
			if (have_cell(repo, known_attacks[i]))
				strcpy(o->attacks.v[o->attacks.n++], known_attacks[i]);
		if (!o->attacks.n) {
			fprintf(stderr, "%s matrix: no cell scripts under %s/tools/attack/matrix/cells\n", PROG, repo);
			return 2;
		}
	}
	for (size_t i = 0; i < o->attacks.n; i++)
		an[i] = o->attacks.v[i];
	for (size_t i = 0; i < o->victims.n; i++)
		vn[i] = o->victims.v[i];
	if (mx_table_init(t, an, o->attacks.n, vn, o->victims.n, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s matrix: %s\n", PROG, err);
		return 2;
	}
	return 0;
}

/* The fabric, run.sh, the tools and the work directory's template; 0 or the exit status. */
static int build_paths(struct run *r, char fabric_buf[static PATH_MAX])
{
	char probe[PATH_MAX];

	if (!r->fabric) {
		if (snprintf(fabric_buf, PATH_MAX, "%s/fabric/rxe-fabric", r->repo) >= PATH_MAX)
			return 2;
		r->fabric = fabric_buf;
	}
	if (access(r->fabric, X_OK) != 0) {
		fprintf(stderr, "%s matrix: cannot run the fabric %s: %s (--fabric PATH)\n", PROG, r->fabric,
			strerror(errno));
		return 2;
	}
	if (snprintf(r->bin, sizeof(r->bin), "%s/tools", r->build) >= (int)sizeof(r->bin) ||
	    snprintf(r->script, sizeof(r->script), "%s/tools/attack/matrix/run.sh", r->repo) >= (int)sizeof(r->script) ||
	    snprintf(r->work, sizeof(r->work), "%s/matrix-run.XXXXXX", r->build) >= (int)sizeof(r->work)) {
		fprintf(stderr, "%s matrix: paths too long\n", PROG);
		return 2;
	}
	if (snprintf(probe, sizeof(probe), "%s/attack/rdmasec-attack", r->bin) >= (int)sizeof(probe) ||
	    access(probe, X_OK) != 0) {
		fprintf(stderr, "%s matrix: no tools in %s (build first, or --build DIR)\n", PROG, r->build);
		return 2;
	}
	return 0;
}

/* The guest sees the repository and --share directories only. */
static bool decide_share(struct run *r)
{
	char rr[PATH_MAX], br[PATH_MAX];
	size_t n;

	if (!realpath(r->repo, rr) || !realpath(r->build, br)) {
		fprintf(stderr, "%s matrix: cannot resolve %s or %s\n", PROG, r->repo, r->build);
		return false;
	}
	n = strlen(rr);
	r->share_build = !(strncmp(br, rr, n) == 0 && (br[n] == '/' || br[n] == '\0'));
	return true;
}

/* run.sh's arguments: the selection and the time limits as text. */
static void fill_run(struct run *r, struct matrix_opts *o)
{
	join_names(r->attacks, sizeof(r->attacks), &o->attacks);
	join_names(r->victims, sizeof(r->victims), &o->victims);
	if (!o->timeout) {
		o->timeout = 60;
		for (size_t v = 0; v < o->victims.n; v++)
			o->timeout += victim_cell_timeout(o->victims.v[v], o->cell_timeout) * (uint32_t)o->attacks.n;
	}
	snprintf(r->timeout, sizeof(r->timeout), "%u", o->timeout);
	snprintf(r->cell_timeout, sizeof(r->cell_timeout), "%u", o->cell_timeout);
	snprintf(r->mem, sizeof(r->mem), "%u", o->mem);
}

/* Every requested rendering; false if one could not be written. */
static bool render_all(const struct matrix_opts *o, const struct mx_table *t)
{
	bool ok = true;

	if (o->json_file)
		ok &= write_file(o->json_file, mx_render_json, t);
	if (o->md_file)
		ok &= write_file(o->md_file, mx_render_markdown, t);
	if (o->svg_file)
		ok &= write_file(o->svg_file, mx_render_svg, t);
	if (o->json_stdout)
		ok &= mx_render_json(t, stdout) == 0;
	else
		ok &= mx_render_terminal(t, stdout, isatty(STDOUT_FILENO)) == 0;
	if (fflush(stdout) != 0)
		ok = false;
	return ok;
}

int matrix_main(int argc, char *argv[])
{
	struct matrix_opts o = { .cell_timeout = 40, .mem = 2048 };
	struct run r = { .repo = RSEC_SOURCE_DIR, .build = RSEC_BINARY_DIR };
	char fabric_buf[PATH_MAX];
	static struct mx_table t;
	size_t counts[MX_OUTCOMES];
	unsigned bad_lines = 0;
	int rc;

	if ((rc = parse_args(argc, argv, &o, &r)) >= 0)
		return rc;
	if ((rc = build_table(&o, r.repo, &t)) != 0 || (rc = build_paths(&r, fabric_buf)) != 0)
		return rc;
	if (!mkdtemp(r.work)) {
		fprintf(stderr, "%s matrix: cannot create a work directory in %s: %s\n", PROG, r.build, strerror(errno));
		return 1;
	}
	if (!decide_share(&r))
		return 2;
	fill_run(&r, &o);

	fprintf(stderr, "%s matrix: %zu attacks x %zu victims in one fabric run (at most %u s)\n", PROG,
		o.attacks.n, o.victims.n, o.timeout);
	double start = now_s();
	rc = run_fabric(&r, &t, &bad_lines);
	t.elapsed_s = now_s() - start;
	if (rc != 0)
		fprintf(stderr, "%s matrix: the fabric run ended with status %d\n", PROG, rc);
	if (o.keep)
		fprintf(stderr, "%s matrix: cell logs kept in %s\n", PROG, r.work);
	else
		remove_tree(r.work);

	bool ok = render_all(&o, &t);
	mx_table_counts(&t, counts);
	return ok && rc == 0 && !bad_lines && !counts[MX_NOT_RUN] && !counts[MX_ERROR] ? 0 : 1;
}
