/* SPDX-License-Identifier: MIT */
/*
 * probe-rkey (ReDMArk V1-V3): register and deregister memory in several
 * patterns (held, churned, re-opened contexts, two PDs, two processes) and
 * infer how rkeys are generated. rxe: rkey = MR pool index << 8 | one random
 * byte, the index allocated cyclically device-wide; so the upper 24 bits are
 * predictable and only 8 bits need guessing.
 */
#include <errno.h>
#include <getopt.h>
#include <infiniband/verbs.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/attack.h"

enum { MAX_SAMPLES = 4096, BUF_SIZE = 4096 };
enum { OPT_PATTERN = OPT_FIRST_PRIVATE };
static const int ACCESS = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

enum pattern { PAT_HOLD, PAT_CHURN, PAT_REOPEN, PAT_PDS, PAT_PROCS, PAT_COUNT };
static const char *const pattern_names[PAT_COUNT] = { "hold", "churn", "reopen", "pds", "procs" };
static const char *const pattern_desc[PAT_COUNT] = {
	"N MRs registered and kept",
	"one buffer registered and deregistered N times",
	"each MR in a freshly opened context",
	"MRs alternating between two PDs",
	"two processes registering in turn (merged in time order)",
};

static void help(FILE *f)
{
	fprintf(f, "Usage: %s probe-rkey [options]\n"
		"Register memory in several patterns and infer the rkey generator.\n\n"
		"  -d, --device DEV   RDMA device (default: the first)\n"
		"  -n, --count N      MRs per pattern, 2..%d (default 32)\n"
		"  --pattern P        only this pattern: hold, churn, reopen, pds, procs\n"
		"                     (default: all of them, one after the other)\n"
		"  --json             print one JSON result line on stdout\n"
		"  -h, --help\n", PROG, MAX_SAMPLES);
}

struct analysis {
	bool index_sequential; /* index deltas all +1 */
	bool key_constant_step; /* key byte deltas all equal (counter-like) */
	unsigned distinct_keys;
	double key_entropy;    /* Shannon entropy of the observed key bytes */
	double unknown_bits;   /* what an attacker who saw earlier rkeys must guess */
	bool rkey_is_lkey;
};

static void analyse(const uint64_t *rk, const uint64_t *lk, size_t n, struct analysis *a)
{
	unsigned hist[256] = { 0 };
	int key_step = 0;

	memset(a, 0, sizeof(*a));
	a->index_sequential = n > 1;
	a->key_constant_step = n > 2;
	a->rkey_is_lkey = true;
	for (size_t i = 0; i < n; i++) {
		hist[rk[i] & 0xff]++;
		a->rkey_is_lkey &= rk[i] == lk[i];
		if (i == 0)
			continue;
		a->index_sequential &= (rk[i] >> 8) == (rk[i - 1] >> 8) + 1;
		int step = (int)((rk[i] - rk[i - 1]) & 0xff);
		if (i == 1)
			key_step = step;
		a->key_constant_step &= step == key_step;
	}
	for (int k = 0; k < 256; k++) {
		if (!hist[k])
			continue;
		double p = (double)hist[k] / (double)n;
		a->distinct_keys++;
		a->key_entropy -= p * log2(p);
	}
	/* A sequential index and a counter-like key are fully predictable; a
	 * random key byte leaves 8 bits; anything else we cannot bound. */
	a->unknown_bits = a->key_constant_step ? 0.0 : 8.0;
	if (!a->index_sequential)
		a->unknown_bits = 32.0;
}

struct mr_env {
	struct ibv_context *ctx;
	struct ibv_pd *pd[2];
	uint8_t *buf;
};

static void env_close(struct mr_env *e)
{
	for (int i = 0; i < 2; i++)
		if (e->pd[i])
			ibv_dealloc_pd(e->pd[i]);
	if (e->ctx)
		ibv_close_device(e->ctx);
	free(e->buf);
	memset(e, 0, sizeof(*e));
}

static int env_open(struct mr_env *e, const char *dev, size_t bufs)
{
	memset(e, 0, sizeof(*e));
	if (!(e->ctx = open_device(dev)))
		return RSEC_E_NODEV;
	e->pd[0] = ibv_alloc_pd(e->ctx);
	e->pd[1] = ibv_alloc_pd(e->ctx);
	e->buf = calloc(bufs, BUF_SIZE);
	if (!e->pd[0] || !e->pd[1] || !e->buf) {
		fprintf(stderr, "%s: cannot allocate PDs/buffers: %s\n", PROG, strerror(errno));
		env_close(e);
		return RSEC_E_VERBS;
	}
	return 0;
}

static struct ibv_mr *reg(struct ibv_pd *pd, void *buf)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, BUF_SIZE, ACCESS);

	if (!mr)
		fprintf(stderr, "%s: ibv_reg_mr: %s\n", PROG, strerror(errno));
	return mr;
}

static int run_local(enum pattern pat, const char *dev, uint32_t n, uint64_t *rk, uint64_t *lk)
{
	struct ibv_mr **mrs = calloc(n, sizeof(*mrs));
	struct mr_env e = { 0 };
	int rc = 0;

	if (!mrs)
		return RSEC_E_NOMEM;
	if (pat != PAT_REOPEN && (rc = env_open(&e, dev, n)) != 0)
		goto out;
	for (uint32_t i = 0; i < n && rc == 0; i++) {
		struct ibv_mr *mr;
		if (pat == PAT_REOPEN && (rc = env_open(&e, dev, 1)) != 0)
			break;
		mr = reg(e.pd[pat == PAT_PDS ? i & 1 : 0], e.buf + (pat == PAT_HOLD || pat == PAT_PDS ? i : 0) * BUF_SIZE);
		if (!mr) {
			rc = RSEC_E_VERBS;
			break;
		}
		rk[i] = mr->rkey;
		lk[i] = mr->lkey;
		if (pat == PAT_HOLD || pat == PAT_PDS) {
			mrs[i] = mr;
			continue;
		}
		if (ibv_dereg_mr(mr) != 0)
			rc = RSEC_E_VERBS;
		if (pat == PAT_REOPEN)
			env_close(&e);
	}
	for (uint32_t i = 0; i < n; i++)
		if (mrs[i] && ibv_dereg_mr(mrs[i]) != 0)
			rc = RSEC_E_VERBS;
out:
	env_close(&e);
	free(mrs);
	return rc;
}

/* Read or write exactly n bytes on a pipe. */
static bool pipe_io(int fd, void *p, size_t n, bool wr)
{
	uint8_t *b = p;
	while (n) {
		ssize_t r = wr ? write(fd, b, n) : read(fd, b, n);
		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			return false;
		}
		b += r;
		n -= (size_t)r;
	}
	return true;
}

/* The second process of run_procs: one MR per odd turn, its keys (0 if it failed) sent back. */
static _Noreturn void procs_child(const char *dev, uint32_t n, int from_parent, int to_parent)
{
	struct mr_env e;
	int crc = env_open(&e, dev, 1);

	for (uint32_t i = 1; i < n; i += 2) {
		uint64_t v[2] = { 0, 0 };
		uint8_t tok;
		if (!pipe_io(from_parent, &tok, 1, false))
			_exit(1);
		struct ibv_mr *mr = crc == 0 ? reg(e.pd[0], e.buf) : NULL;
		if (mr) {
			v[0] = mr->rkey;
			v[1] = mr->lkey;
		}
		/* Kept until exit, so each turn allocates a fresh index either way. */
		if (!pipe_io(to_parent, v, sizeof(v), true))
			_exit(1);
	}
	_exit(crc == 0 ? 0 : 1);
}

/*
 * Parent and child each open their own context and register one MR per
 * turn, strictly alternating (a token passes over two pipes), so the merged
 * sequence shows whether the index counter is shared across processes.
 */
static int run_procs(const char *dev, uint32_t n, uint64_t *rk, uint64_t *lk)
{
	int to_child[2], to_parent[2], status, rc = 0;
	pid_t pid;

	if (pipe(to_child) || pipe(to_parent))
		return RSEC_E_IO;
	fflush(NULL);
	if ((pid = fork()) < 0)
		return RSEC_E_IO;
	if (pid == 0) {
		close(to_child[1]);
		close(to_parent[0]);
		procs_child(dev, n, to_child[0], to_parent[1]);
	}
	close(to_child[0]);
	close(to_parent[1]);
	struct mr_env e;
	struct ibv_mr **mrs = calloc(n, sizeof(*mrs));
	rc = mrs ? env_open(&e, dev, 1) : RSEC_E_NOMEM;
	for (uint32_t i = 0; i < n && rc == 0; i++) {
		if (i & 1) {
			uint64_t v[2];
			uint8_t tok = 1;
			if (!pipe_io(to_child[1], &tok, 1, true) || !pipe_io(to_parent[0], v, sizeof(v), false) ||
			    v[0] == 0) {
				fprintf(stderr, "%s: the second process failed\n", PROG);
				rc = RSEC_E_IO;
				break;
			}
			rk[i] = v[0];
			lk[i] = v[1];
		} else {
			if (!(mrs[i] = reg(e.pd[0], e.buf))) {
				rc = RSEC_E_VERBS;
				break;
			}
			rk[i] = mrs[i]->rkey;
			lk[i] = mrs[i]->lkey;
		}
	}
	close(to_child[1]);
	close(to_parent[0]);
	waitpid(pid, &status, 0);
	if (rc == 0 && (!WIFEXITED(status) || WEXITSTATUS(status) != 0))
		rc = RSEC_E_IO;
	if (mrs) {
		for (uint32_t i = 0; i < n; i++)
			if (mrs[i] && ibv_dereg_mr(mrs[i]) != 0)
				rc = RSEC_E_VERBS;
		if (e.ctx)
			env_close(&e);
	}
	free(mrs);
	return rc;
}

static void print_pattern(enum pattern pat, const uint64_t *rk, uint32_t n, const struct analysis *a)
{
	printf("pattern %s: %s\n", pattern_names[pat], pattern_desc[pat]);
	for (uint32_t i = 0; i < n; i++)
		printf("%s0x%08llx%s", i % 8 ? " " : "  ", (unsigned long long)rk[i],
		       i % 8 == 7 || i == n - 1 ? "\n" : "");
	printf("  index (rkey>>8): %s; key byte: %s, %u distinct of %u, H=%.2f bits; rkey==lkey: %s\n",
	       a->index_sequential ? "sequential +1" : "not sequential",
	       a->key_constant_step ? "constant step (counter)" : "no pattern (random)", a->distinct_keys, n,
	       a->key_entropy, a->rkey_is_lkey ? "yes" : "no");
}

static const struct option rkey_long_opts[] = {
	{ "device", required_argument, NULL, 'd' }, { "count", required_argument, NULL, 'n' },
	{ "pattern", required_argument, NULL, OPT_PATTERN }, { "json", no_argument, NULL, OPT_JSON },
	{ "help", no_argument, NULL, 'h' }, { 0 },
};

struct rkey_opts {
	const char *dev;
	uint32_t n;
	int only; /* one pattern, or -1 for all */
	bool json;
};

/* What all the patterns run say together. */
struct rkey_verdict {
	bool all_seq, all_random;
	double worst; /* the most unknown bits of any pattern */
};

/* Returns -1 to go on, or the exit status (0 after --help, 2 bad usage). */
static int parse_args(int argc, char *argv[], struct rkey_opts *o)
{
	bool bad = false;
	int opt;

	while ((opt = getopt_long(argc, argv, "d:n:h", rkey_long_opts, NULL)) != -1) {
		switch (opt) {
		case 'd': o->dev = optarg; break;
		case 'n': bad |= !parse_u32(optarg, MAX_SAMPLES, &o->n, "--count") || o->n < 2; break;
		case OPT_PATTERN:
			for (int p = 0; p < PAT_COUNT; p++)
				if (!strcmp(optarg, pattern_names[p]))
					o->only = p;
			if (o->only < 0) {
				fprintf(stderr, "%s: unknown --pattern `%s'\n", PROG, optarg);
				bad = true;
			}
			break;
		case OPT_JSON: o->json = true; break;
		case 'h': help(stdout); return 0;
		default: help(stderr); return 2;
		}
	}
	if (bad || optind != argc) {
		if (optind != argc)
			fprintf(stderr, "%s probe-rkey: unexpected argument `%s'\n", PROG, argv[optind]);
		return 2;
	}
	return -1;
}

static void json_pattern(struct json *j, enum pattern p, const uint64_t *r, uint32_t n, const struct analysis *a)
{
	char key[64];

	snprintf(key, sizeof(key), "%s_rkeys", pattern_names[p]);
	json_u64_array(j, key, r, n, true);
	snprintf(key, sizeof(key), "%s_index_sequential", pattern_names[p]);
	json_boolean(j, key, a->index_sequential);
	snprintf(key, sizeof(key), "%s_key_entropy_bits", pattern_names[p]);
	json_num(j, key, a->key_entropy);
}

/* Runs the selected patterns into rk/lk and res (and j, if not NULL); false after saying which failed. */
static bool run_patterns(const struct rkey_opts *o, uint64_t *rk, uint64_t *lk, struct analysis res[PAT_COUNT],
			 struct json *j, struct rkey_verdict *v)
{
	struct progress prog;

	*v = (struct rkey_verdict){ .all_seq = true, .all_random = true, .worst = 0 };
	progress_start(&prog, "patterns", o->only < 0 ? PAT_COUNT : 1);
	for (int p = 0, done = 0; p < PAT_COUNT; p++) {
		uint64_t *r = rk + (size_t)p * o->n, *l = lk + (size_t)p * o->n;
		if (o->only >= 0 && p != o->only)
			continue;
		int rc = p == PAT_PROCS ? run_procs(o->dev, o->n, r, l) : run_local((enum pattern)p, o->dev, o->n, r, l);
		if (rc != 0) {
			progress_end(&prog);
			fprintf(stderr, "%s probe-rkey: pattern %s failed\n", PROG, pattern_names[p]);
			return false;
		}
		progress_update(&prog, (uint64_t)++done);
		analyse(r, l, o->n, &res[p]);
		v->all_seq &= res[p].index_sequential;
		v->all_random &= !res[p].key_constant_step;
		v->worst = res[p].unknown_bits > v->worst ? res[p].unknown_bits : v->worst;
		if (j)
			json_pattern(j, (enum pattern)p, r, o->n, &res[p]);
	}
	progress_end(&prog);
	return true;
}

static void report_text(const struct rkey_opts *o, const uint64_t *rk, const struct analysis res[PAT_COUNT],
			const struct rkey_verdict *v)
{
	for (int p = 0; p < PAT_COUNT; p++)
		if (o->only < 0 || p == o->only)
			print_pattern((enum pattern)p, rk + (size_t)p * o->n, o->n, &res[p]);
	printf("inferred generator: rkey = index << 8 | key8; index %s; key8 %s\n",
	       v->all_seq ? "sequential +1, shared by contexts, PDs and processes" : "NOT sequential",
	       v->all_random ? "random (kernel CSPRNG byte)" : "follows a counter");
	printf("entropy: %.0f unknown bits per rkey for an attacker who saw one earlier rkey "
	       "(1 guess in %.0f)\n", v->worst, pow(2.0, v->worst));
}

static void json_verdict(struct json *j, const struct rkey_verdict *v)
{
	json_str(j, "generator", v->all_seq && v->all_random ? "index<<8|random8" :
				 v->all_seq ? "index<<8|counter8" : "unknown");
	json_boolean(j, "index_sequential", v->all_seq);
	json_boolean(j, "key_random", v->all_random);
	json_num(j, "unknown_bits", v->worst);
	json_end(j);
}

int probe_rkey_main(int argc, char *argv[])
{
	struct rkey_opts o = { .n = 32, .only = -1 };
	struct analysis res[PAT_COUNT];
	struct rkey_verdict v;
	uint64_t *rk, *lk;
	struct json j;
	int ret;

	if ((ret = parse_args(argc, argv, &o)) >= 0)
		return ret;
	ret = 1;
	rk = calloc((size_t)o.n * PAT_COUNT, sizeof(*rk));
	lk = calloc((size_t)o.n * PAT_COUNT, sizeof(*lk));
	if (!rk || !lk)
		goto out;
	if (o.json)
		json_begin(&j, "probe-rkey");
	if (!run_patterns(&o, rk, lk, res, o.json ? &j : NULL, &v)) {
		if (o.json)
			json_end(&j);
		goto out;
	}
	if (o.json)
		json_verdict(&j, &v);
	else
		report_text(&o, rk, res, &v);
	ret = 0;
out:
	free(rk);
	free(lk);
	return ret;
}
