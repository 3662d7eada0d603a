/* SPDX-License-Identifier: MIT */
/* Shared by the fabric's test clients (check_util.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_util.h"

const char *check_prog = "check";

void check_die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", check_prog);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

void check_result(const char *name, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("RESULT %s=", name);
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	va_end(ap);
}

void check_must(int rc, const char *what, struct rsec_conn *c)
{
	if (rc < 0)
		check_die("%s: %s (%s)", what, rsec_strerror(rc), c ? rsec_conn_error(c) : "");
}

uint8_t check_pattern_byte(uint32_t seed, size_t i)
{
	return (uint8_t)(seed * 131u + i * 7u + (i >> 12));
}

void check_pattern_fill(uint8_t *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = check_pattern_byte(seed, i);
}

struct rsec_ctx *check_ctx(const char *dir, const char *identity, struct rsec_ctx_attr *attr)
{
	char ca[512], cert[512], key[512], err[256] = "";
	snprintf(ca, sizeof(ca), "%s/ca.pem", dir);
	snprintf(cert, sizeof(cert), "%s/%s.pem", dir, identity);
	snprintf(key, sizeof(key), "%s/%s.key", dir, identity);
	attr->ca_file = ca;
	attr->cert_file = cert;
	attr->key_file = key;
	struct rsec_ctx *ctx;
	int rc = rsec_ctx_new(attr, &ctx, err, sizeof(err));
	attr->ca_file = attr->cert_file = attr->key_file = NULL;
	if (rc < 0)
		check_die("context for %s: %s (%s)", identity, err, rsec_strerror(rc));
	return ctx;
}

struct rsec_ctx *check_client_ctx(const char *dir, const char *identity, const char *source, int timeout_ms,
				  uint32_t slot_size, uint32_t recv_slots)
{
	struct rsec_ctx_attr attr = {
		.local_addr = source, .handshake_timeout_ms = timeout_ms, .slot_size = slot_size,
		.recv_slots = recv_slots,
	};
	return check_ctx(dir, identity, &attr);
}

int check_serve_or_run(int argc, char **argv, const char *prog, const char *modes, int (*serve)(char **argv),
		       int (*run)(char **argv))
{
	check_prog = prog;
	if (argc == 6 && strcmp(argv[1], "serve") == 0)
		return serve(argv);
	if (argc == 7 && strcmp(argv[1], "run") == 0)
		return run(argv);
	fprintf(stderr, "usage: %s serve PKI ADDR PORT N | run PKI SERVER SOURCE PORT %s\n", prog, modes);
	return 2;
}
