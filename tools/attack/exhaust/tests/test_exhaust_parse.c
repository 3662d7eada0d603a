/* SPDX-License-Identifier: MIT */
/*
 * exhaust's parsers on input shaped like the kernel's (rdma.max with its
 * trailing blank, /proc/self/cgroup, /proc/meminfo) and on malformed input,
 * which must be refused rather than half-read; the --objects list and the
 * remote verdict.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "exhaust/exhaust_parse.h"

static void test_rdma_line(void **state)
{
	struct exh_rdma_limit l;
	const char *why = NULL;
	const char *s = "rxe1 hca_handle=2 hca_object=100 \n";

	(void)state;
	assert_true(exh_rdma_line_parse(s, strlen(s), &l, &why));
	assert_string_equal(l.dev, "rxe1");
	assert_int_equal(l.hca_handle, 2);
	assert_int_equal(l.hca_object, 100);
	s = "mlx5_0 hca_handle=max hca_object=max ";
	assert_true(exh_rdma_line_parse(s, strlen(s), &l, &why));
	assert_string_equal(l.dev, "mlx5_0");
	assert_true(l.hca_handle == EXH_UNLIMITED && l.hca_object == EXH_UNLIMITED);
	/* rdma.current has no "max"; a key may be missing (treated as unlimited). */
	s = "rxe2 hca_object=7";
	assert_true(exh_rdma_line_parse(s, strlen(s), &l, &why));
	assert_true(l.hca_handle == EXH_UNLIMITED && l.hca_object == 7);
	/* Only n bytes count: the rest of the buffer is not read. */
	s = "rxe3 hca_handle=1XXXX";
	assert_true(exh_rdma_line_parse(s, 17, &l, &why));
	assert_int_equal(l.hca_handle, 1);
}

static void test_rdma_line_bad(void **state)
{
	static const char *const bad[] = {
		"", "   ", "rxe1 hca_handle", "rxe1 hca_handle=", "rxe1 hca_handle=-1", "rxe1 hca_handle=+1",
		"rxe1 hca_handle=2 hca_handle=3", "rxe1 hca_objects=2", "rxe1 hca_object=2147483648",
		"rxe1 hca_object=99999999999999999999", "rxe1 hca_object=0x10", "rx/e1 hca_object=1",
		"rxe1 hca_object=1\nrxe2", "rxe1 hca_object=MAX",
		"a234567890123456789012345678901234567890123456789012345678901234 hca_object=1",
	};
	struct exh_rdma_limit l;
	const char *why;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		assert_false(exh_rdma_line_parse(bad[i], strlen(bad[i]), &l, &why));
		assert_non_null(why);
	}
	/* An embedded NUL is refused, not taken as the end. */
	assert_false(exh_rdma_line_parse("rxe1\0 hca_object=1", 18, &l, &why));
}

static void test_rdma_find(void **state)
{
	const char *f = "rxe1 hca_handle=max hca_object=max \nrxe2 hca_handle=2 hca_object=100 \n"
			"rxe3 hca_handle=max hca_object=max \n";
	struct exh_rdma_limit l;
	const char *why = NULL;

	(void)state;
	assert_int_equal(exh_rdma_find(f, strlen(f), "rxe2", &l, &why), 1);
	assert_int_equal(l.hca_object, 100);
	assert_int_equal(exh_rdma_find(f, strlen(f), "rxe9", &l, &why), 0);
	assert_int_equal(exh_rdma_find("", 0, "rxe1", &l, &why), 0);
	/* A broken line anywhere makes the file suspect. */
	f = "rxe1 hca_handle=max hca_object=max \nrxe2 junk\n";
	assert_int_equal(exh_rdma_find(f, strlen(f), "rxe1", &l, &why), 1);
	assert_int_equal(exh_rdma_find(f, strlen(f), "rxe2", &l, &why), -1);
}

static void test_rdma_format(void **state)
{
	struct exh_rdma_limit l = { .dev = "rxe1", .hca_handle = 2, .hca_object = EXH_UNLIMITED };
	char buf[64];

	(void)state;
	assert_int_equal(exh_rdma_format(&l, buf, sizeof(buf)), strlen("hca_handle=2 hca_object=max"));
	assert_string_equal(buf, "hca_handle=2 hca_object=max");
	assert_int_equal(exh_rdma_format(&l, buf, 12), 0);
	assert_int_equal(exh_rdma_format(&l, buf, 27), 0); /* no room for the NUL */
	assert_int_equal(exh_rdma_format(&l, buf, 28), 27);
}

static void test_cgroup_path(void **state)
{
	char out[32];
	const char *v2 = "0::/atk\n", *mixed = "12:rdma:/x\n1:name=systemd:/\n0::/user.slice/a.scope\n";

	(void)state;
	assert_true(exh_cgroup_v2_path(v2, strlen(v2), out, sizeof(out)));
	assert_string_equal(out, "/atk");
	assert_true(exh_cgroup_v2_path("0::/", 4, out, sizeof(out)));
	assert_string_equal(out, "/");
	assert_true(exh_cgroup_v2_path(mixed, strlen(mixed), out, sizeof(out)));
	assert_string_equal(out, "/user.slice/a.scope");
	assert_false(exh_cgroup_v2_path(mixed, strlen(mixed), out, 8));
	assert_false(exh_cgroup_v2_path("12:rdma:/x\n", 11, out, sizeof(out)));
	assert_false(exh_cgroup_v2_path("0::atk\n", 7, out, sizeof(out)));
	assert_false(exh_cgroup_v2_path("0::\n", 4, out, sizeof(out)));
}

static void test_meminfo(void **state)
{
	const char *m = "MemTotal:        2012345 kB\nMemFree:         1900000 kB\nMemAvailable:    1888888 kB\n"
			"HugePages_Total:       0\n";
	uint64_t v = 0;

	(void)state;
	assert_true(exh_meminfo_kib(m, strlen(m), "MemAvailable", &v));
	assert_int_equal(v, 1888888);
	assert_true(exh_meminfo_kib(m, strlen(m), "MemTotal", &v));
	assert_int_equal(v, 2012345);
	assert_true(exh_meminfo_kib(m, strlen(m), "HugePages_Total", &v));
	assert_int_equal(v, 0);
	assert_false(exh_meminfo_kib(m, strlen(m), "Mem", &v));
	assert_false(exh_meminfo_kib(m, strlen(m), "SwapTotal", &v));
	assert_false(exh_meminfo_kib("MemAvailable: kB\n", 17, "MemAvailable", &v));
	assert_false(exh_meminfo_kib("MemAvailable: 12 MB\n", 20, "MemAvailable", &v));
	{
		const char *big = "MemAvailable: 123456789012345678901 kB";
		assert_false(exh_meminfo_kib(big, strlen(big), "MemAvailable", &v));
	}
	/* Bounded by n: the value is cut where the buffer ends. */
	assert_true(exh_meminfo_kib("MemAvailable: 1234 kB", 17, "MemAvailable", &v));
	assert_int_equal(v, 123);
}

static void test_kinds(void **state)
{
	unsigned m;

	(void)state;
	assert_true(exh_kinds_parse("qp", &m));
	assert_int_equal(m, 1u << EXH_QP);
	assert_true(exh_kinds_parse("cq,mr,pd", &m));
	assert_int_equal(m, (1u << EXH_CQ) | (1u << EXH_MR) | (1u << EXH_PD));
	assert_true(exh_kinds_parse("all", &m));
	assert_int_equal(m, 0xf);
	assert_false(exh_kinds_parse("", &m));
	assert_false(exh_kinds_parse("qp,", &m));
	assert_false(exh_kinds_parse("qps", &m));
	assert_false(exh_kinds_parse("q", &m));
	assert_false(exh_kinds_parse("qp,all", &m));
	assert_string_equal(exh_kind_name(EXH_MR), "mr");
	assert_string_equal(exh_kind_name(EXH_KINDS), "?");
}

static void test_errno_name(void **state)
{
	char buf[16];

	(void)state;
	assert_string_equal(exh_errno_name(0, buf), "");
	assert_string_equal(exh_errno_name(EAGAIN, buf), "EAGAIN");
	assert_string_equal(exh_errno_name(ENOMEM, buf), "ENOMEM");
	assert_string_equal(exh_errno_name(4095, buf), "E4095");
	assert_string_equal(exh_errno_name(-2147483647 - 1, buf), "E-2147483648");
}

/* The line `exhaust --one-qp' prints, as the flooding parent reads it back from the pipe. */
static void test_one_qp(void **state)
{
	struct exh_one_qp v;
	const char *s;

	(void)state;
	s = "one-qp: created\n";
	assert_true(exh_one_qp_parse(s, strlen(s), &v));
	assert_true(v.created);
	s = "one-qp: refused at pd: EAGAIN\n";
	assert_true(exh_one_qp_parse(s, strlen(s), &v));
	assert_false(v.created);
	assert_string_equal(v.step, "pd");
	assert_string_equal(v.err, "EAGAIN");
	s = "one-qp: refused at open: E123";
	assert_true(exh_one_qp_parse(s, strlen(s), &v));
	assert_string_equal(v.step, "open");
	assert_string_equal(v.err, "E123");
	/* Only n bytes count. */
	s = "one-qp: refused at qp: ENOMEMxyz";
	assert_true(exh_one_qp_parse(s, strlen(s) - 3, &v));
	assert_string_equal(v.err, "ENOMEM");
	/* Anything else is refused, not half-read. */
	static const char *const bad[] = {
		"", "\n", "one-qp: created\n\n", "one-qp: created ", "one-qp: refused at pd: ",
		"one-qp: refused at mr: ENOMEM", "one-qp: refused at pd:EAGAIN", "one-qp: refused at pd: eagain",
		"one-qp: refused at pd: EAGAIN extra", "one-qp: refused at pd: E1234567890123456",
		"one-qp: refused at pd", "one-qp: refused at ", "one-qp: refused at pd: EAG\nAIN",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_false(exh_one_qp_parse(bad[i], strlen(bad[i]), &v));
	assert_false(exh_one_qp_parse("one-qp: created\0", 16, &v));
}

static void test_verdict(void **state)
{
	struct exh_remote_tally t = { .attempted = 8, .connected = 8, .legit = 0 };

	(void)state;
	assert_string_equal(exh_remote_verdict(&t), "exhausted");
	t.resources_seen = 8;
	assert_string_equal(exh_remote_verdict(&t), "exhausted");
	t.legit = 1;
	assert_string_equal(exh_remote_verdict(&t), "resources-spent");
	t.resources_seen = 0;
	assert_string_equal(exh_remote_verdict(&t), "served");
	t.legit = -1;
	assert_string_equal(exh_remote_verdict(&t), "no-resources-seen");
	t.connected = 0;
	assert_string_equal(exh_remote_verdict(&t), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rdma_line),   cmocka_unit_test(test_rdma_line_bad),
		cmocka_unit_test(test_rdma_find),   cmocka_unit_test(test_rdma_format),
		cmocka_unit_test(test_cgroup_path), cmocka_unit_test(test_meminfo),
		cmocka_unit_test(test_kinds),       cmocka_unit_test(test_errno_name),
		cmocka_unit_test(test_verdict),     cmocka_unit_test(test_one_qp),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
