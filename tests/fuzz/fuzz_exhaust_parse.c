/* SPDX-License-Identifier: MIT */
/*
 * Target Functions: exh_rdma_line_parse, exh_rdma_find, exh_rdma_format,
 * exh_cgroup_v2_path, exh_meminfo_kib, exh_one_qp_parse
 * (tools/attack/exhaust/exhaust_parse.c).
 * Input: the contents of a kernel file exhaust reads (rdma.max, rdma.current,
 * /proc/self/cgroup, /proc/meminfo) or the line a child `exhaust --one-qp`
 * printed. Every parser sees the same bytes. A parsed rdma line must format
 * and parse back to the same limits; a found cgroup path must be absolute and
 * NUL-terminated within its buffer; a parsed one-qp line must be consistent.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../tools/attack/exhaust/exhaust_parse.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void rdma_round_trip(const struct exh_rdma_limit *l)
{
	char line[EXH_DEV_MAX + 64], vals[64];
	struct exh_rdma_limit back;
	const char *why;
	size_t n = exh_rdma_format(l, vals, sizeof(vals));
	int len;

	if (!n || strnlen(l->dev, EXH_DEV_MAX) >= EXH_DEV_MAX)
		abort();
	len = snprintf(line, sizeof(line), "%s %s", l->dev, vals);
	if (len < 0 || (size_t)len >= sizeof(line))
		abort();
	if (!exh_rdma_line_parse(line, (size_t)len, &back, &why) || strcmp(back.dev, l->dev) ||
	    back.hca_handle != l->hca_handle || back.hca_object != l->hca_object)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data, *why = NULL;
	struct exh_rdma_limit l;
	struct exh_one_qp q;
	char path[256];
	uint64_t kib;

	if (exh_rdma_line_parse(s, size, &l, &why))
		rdma_round_trip(&l);
	else if (!why || !why[0])
		abort();
	if (exh_rdma_find(s, size, "rxe0", &l, &why) == 1) {
		if (strcmp(l.dev, "rxe0"))
			abort();
		rdma_round_trip(&l);
	}
	if (exh_cgroup_v2_path(s, size, path, sizeof(path)) &&
	    (path[0] != '/' || strnlen(path, sizeof(path)) >= sizeof(path)))
		abort();
	(void)exh_meminfo_kib(s, size, "MemAvailable", &kib);
	if (exh_one_qp_parse(s, size, &q)) {
		if (q.created ? (q.step[0] || q.err[0]) : (!q.step[0] || !q.err[0]))
			abort();
		if (strnlen(q.step, sizeof(q.step)) >= sizeof(q.step) || strnlen(q.err, sizeof(q.err)) >= sizeof(q.err))
			abort();
	}
	return 0;
}
