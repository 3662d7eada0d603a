/* SPDX-License-Identifier: MIT */
/*
 * tools/common/psk.c, the one PSK file loader of the server and the client:
 * hex with whitespace, 32..64 bytes; only a private regular file, never
 * through a symlink, and a FIFO is refused without blocking.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "psk.h"
#include "rdmasec.h"

struct fixture {
	char dir[32], path[256], err[512];
	uint8_t psk[PSK_MAX_LEN];
	size_t len;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/rsec-psk-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/psk", f->dir);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char p[300];
	static const char *const names[] = { "psk", "link", "fifo" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", f->dir, names[i]);
		(void)unlink(p);
	}
	assert_int_equal(rmdir(f->dir), 0);
	free(f);
	return 0;
}

static void write_file(const char *path, const char *text, mode_t mode)
{
	(void)chmod(path, 0600); /* a previous 0400 copy */
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, mode), 0);
}

static int load(struct fixture *f, const char *path)
{
	return psk_load(path, f->psk, &f->len, f->err, sizeof(f->err));
}

static const char hex32[] = "00112233445566778899aabbccddeeff\n00112233445566778899AABBCCDDEEFF\n";

static void valid_keys(void **state)
{
	struct fixture *f = *state;
	write_file(f->path, hex32, 0600);
	assert_int_equal(load(f, f->path), 0);
	assert_int_equal(f->len, 32);
	assert_int_equal(f->psk[0], 0x00);
	assert_int_equal(f->psk[5], 0x55);
	assert_int_equal(f->psk[15], 0xff);
	assert_int_equal(f->psk[31], 0xff);
	write_file(f->path, hex32, 0400);
	assert_int_equal(load(f, f->path), 0);
	/* What rdmasec-keygen --psk writes: 64 digits and a newline. */
	write_file(f->path, "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n", 0600);
	assert_int_equal(load(f, f->path), 0);
	assert_int_equal(f->len, 32);
	assert_int_equal(f->psk[31], 0x1f);
	/* 64 bytes is the maximum. */
	write_file(f->path, "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
			    "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", 0600);
	assert_int_equal(load(f, f->path), 0);
	assert_int_equal(f->len, 64);
}

static void access_by_others_is_refused(void **state)
{
	struct fixture *f = *state;
	write_file(f->path, hex32, 0640);
	assert_int_equal(load(f, f->path), RSEC_E_CONFIG);
	assert_non_null(strstr(f->err, "has mode 0640"));
	write_file(f->path, hex32, 0604);
	assert_int_equal(load(f, f->path), RSEC_E_CONFIG);
	write_file(f->path, hex32, 0644);
	assert_int_equal(load(f, f->path), RSEC_E_CONFIG);
}

static void bad_contents_are_refused_and_wiped(void **state)
{
	struct fixture *f = *state;
	static const char *const bad[] = {
		"00112233445566778899aabbccddeeff\n",                                  /* 16 bytes */
		"00112233445566778899aabbccddeeff00112233445566778899aabbccddeefg",    /* non-hex */
		"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff0",   /* odd */
		"",
		("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
		 "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff00"), /* 65 bytes */
	};
	static const uint8_t zero[PSK_MAX_LEN];
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		write_file(f->path, bad[i], 0600);
		memset(f->psk, 0xa5, sizeof(f->psk));
		assert_int_equal(load(f, f->path), RSEC_E_CONFIG);
		assert_non_null(strstr(f->err, "must hold 32..64 bytes as hex"));
		assert_null(strstr(f->err, "0011")); /* the error never shows the key */
		assert_memory_equal(f->psk, zero, sizeof(zero));
	}
	/* Every byte that is neither hex nor whitespace is refused, wherever it sits. */
	char text[70];
	for (int ch = 1; ch < 256; ch++) {
		if (strchr("0123456789abcdefABCDEF \t\r\n", ch))
			continue;
		memset(text, 'a', 64);
		text[64] = '\0';
		text[ch % 64] = (char)ch;
		write_file(f->path, text, 0600);
		assert_int_equal(load(f, f->path), RSEC_E_CONFIG);
	}
}

static void symlinks_are_not_followed(void **state)
{
	struct fixture *f = *state;
	write_file(f->path, hex32, 0600);
	char link[300];
	snprintf(link, sizeof(link), "%s/link", f->dir);
	assert_int_equal(symlink(f->path, link), 0);
	assert_int_equal(load(f, link), RSEC_E_IO);
	assert_non_null(strstr(f->err, "symbolic link"));
}

static void on_alarm(int sig)
{
	(void)sig;
	static const char msg[] = "psk_load blocked on a FIFO\n";
	(void)!write(2, msg, sizeof(msg) - 1);
	_exit(1);
}

static void fifos_and_directories_are_refused_without_blocking(void **state)
{
	struct fixture *f = *state;
	char fifo[300];
	snprintf(fifo, sizeof(fifo), "%s/fifo", f->dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	/* Without a writer, a blocking open would never return: fail the test instead of hanging it. */
	signal(SIGALRM, on_alarm);
	alarm(10);
	assert_int_equal(load(f, fifo), RSEC_E_CONFIG);
	alarm(0);
	signal(SIGALRM, SIG_DFL);
	assert_non_null(strstr(f->err, "not a regular file"));
	assert_int_equal(load(f, f->dir), RSEC_E_CONFIG);
	assert_non_null(strstr(f->err, "not a regular file"));
	assert_int_equal(load(f, "/dev/null"), RSEC_E_CONFIG);
}

static void missing_file(void **state)
{
	struct fixture *f = *state;
	assert_int_equal(load(f, f->path), RSEC_E_IO);
	assert_non_null(strstr(f->err, "No such file"));
	assert_int_equal(psk_load(NULL, f->psk, &f->len, f->err, sizeof(f->err)), RSEC_E_INVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(valid_keys, setup, teardown),
		cmocka_unit_test_setup_teardown(access_by_others_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(bad_contents_are_refused_and_wiped, setup, teardown),
		cmocka_unit_test_setup_teardown(symlinks_are_not_followed, setup, teardown),
		cmocka_unit_test_setup_teardown(fifos_and_directories_are_refused_without_blocking, setup, teardown),
		cmocka_unit_test_setup_teardown(missing_file, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
