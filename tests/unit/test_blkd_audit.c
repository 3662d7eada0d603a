/* SPDX-License-Identifier: MIT */
/*
 * rdmasec-blkd's audit records (tools/blk/blkd/blkd_audit.c): the fields of an
 * I/O record, a peer's identity escaped into valid JSON, I/O records held
 * until audit_flush and then appended together, other records appended at
 * once after them, nothing lost.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "blkd_audit.h"

static char path[64];

static int setup(void **state)
{
	(void)state;
	snprintf(path, sizeof(path), "/tmp/test_blkd_audit.XXXXXX");
	int fd = mkstemp(path);
	if (fd < 0)
		return -1;
	close(fd);
	unlink(path); /* audit_open creates it */
	return audit_open(path);
}

static int teardown(void **state)
{
	(void)state;
	audit_close();
	unlink(path);
	return 0;
}

static size_t file_size(void)
{
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	return (size_t)st.st_size;
}

/* The file's text after each record's time stamp ("time":"...") is cut out: it is the clock's. */
static char *file_text(void)
{
	static char text[4096];
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	char *out = text, *in = text;
	while (*in) {
		if (!strncmp(in, "{\"time\":\"", 9)) {
			char *end = strchr(in + 9, '"');
			assert_non_null(end);
			assert_int_equal(end - (in + 9), 24); /* 2026-01-31T23:59:59.123Z */
			assert_true(end[-1] == 'Z' && in[9 + 10] == 'T');
			memcpy(out, "{", 1);
			out++;
			in = end + 2; /* past '",' */
			continue;
		}
		*out++ = *in++;
	}
	*out = '\0';
	return text;
}

static void io_records_batched(void **state)
{
	(void)state;
	struct audit_who w = { .session = 18446744073709551615u, .peer = "CN=a\"b\\c\nd\x7f\xc3\xa9,O=x",
			       .peer_addr = "10.0.0.2", .export_name = "disk" };
	audit_io(&w, "read", 3, 255, 1099511627776u, 131072, false, "ok");
	audit_io(&w, "write", 0, 0, 0, 4096, true, "transfer failed");
	assert_int_equal(file_size(), 0); /* held */
	audit_flush();
	size_t held = file_size();
	assert_true(held > 0);
	audit_flush(); /* nothing more */
	assert_int_equal(file_size(), held);
	audit_io(&w, "flush", 1, 7, 0, 0, false, "ok");
	audit_violation(&w, 2, "cid 7 already in flight"); /* at once, after the held record */
	assert_int_equal(audit_errors(), 0);
	const char *want =
		"{\"event\":\"blk_io\",\"role\":\"target\",\"session\":18446744073709551615,"
		"\"peer\":\"CN=a\\\"b\\\\c\\u000ad\\u007f\\u00c3\\u00a9,O=x\",\"peer_addr\":\"10.0.0.2\",\"export\":\"disk\","
		"\"op\":\"read\",\"queue\":3,\"cid\":255,\"offset\":1099511627776,\"length\":131072,\"result\":\"ok\"}\n"
		"{\"event\":\"blk_io\",\"role\":\"target\",\"session\":18446744073709551615,"
		"\"peer\":\"CN=a\\\"b\\\\c\\u000ad\\u007f\\u00c3\\u00a9,O=x\",\"peer_addr\":\"10.0.0.2\",\"export\":\"disk\","
		"\"op\":\"write\",\"queue\":0,\"cid\":0,\"offset\":0,\"length\":4096,\"fua\":true,"
		"\"result\":\"transfer failed\"}\n"
		"{\"event\":\"blk_io\",\"role\":\"target\",\"session\":18446744073709551615,"
		"\"peer\":\"CN=a\\\"b\\\\c\\u000ad\\u007f\\u00c3\\u00a9,O=x\",\"peer_addr\":\"10.0.0.2\",\"export\":\"disk\","
		"\"op\":\"flush\",\"queue\":1,\"cid\":7,\"offset\":0,\"length\":0,\"result\":\"ok\"}\n"
		"{\"event\":\"blk_violation\",\"role\":\"target\",\"session\":18446744073709551615,"
		"\"peer\":\"CN=a\\\"b\\\\c\\u000ad\\u007f\\u00c3\\u00a9,O=x\",\"peer_addr\":\"10.0.0.2\",\"export\":\"disk\","
		"\"queue\":2,\"result\":\"closed\",\"reason\":\"cid 7 already in flight\"}\n";
	assert_string_equal(file_text(), want);
}

/* Before authentication there is no peer (null) and no export; a refused OPEN says so. */
static void open_before_identity(void **state)
{
	(void)state;
	struct audit_who w = { .session = 1, .peer = NULL, .peer_addr = "", .export_name = NULL };
	audit_open_result(&w, true, "access denied", "no rule");
	assert_string_equal(file_text(), "{\"event\":\"blk_open\",\"role\":\"target\",\"session\":1,\"peer\":null,"
					 "\"mode\":\"rw\",\"result\":\"access denied\",\"reason\":\"no rule\"}\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(io_records_batched, setup, teardown),
		cmocka_unit_test_setup_teardown(open_before_identity, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
