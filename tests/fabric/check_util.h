/* SPDX-License-Identifier: MIT */
/*
 * What the fabric's test clients (grant_check, hostile_client, async_check, sealed_check) share: how
 * they fail, how they report a result to their shell script, and a client
 * context for one identity of an rdmasec-keygen PKI directory.
 */
#ifndef RSEC_CHECK_UTIL_H
#define RSEC_CHECK_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "rdmasec.h"

/* The program's name in messages; set once at start. */
extern const char *check_prog;

/* "PROG: message" on stderr, exit 1. */
void check_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* "RESULT name=value" on stdout, flushed: the script reads these. */
void check_result(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Unless rc >= 0: die naming what failed, rsec_strerror(rc) and c's reason (c may be NULL). */
void check_must(int rc, const char *what, struct rsec_conn *c);
/* The test pattern: byte i of seed's, and n of them written to p. */
uint8_t check_pattern_byte(uint32_t seed, size_t i);
void check_pattern_fill(uint8_t *p, size_t n, uint32_t seed);
/* A context with attr and identity's certificates (DIR/ca.pem, DIR/IDENTITY.pem, .key). Dies on failure. */
struct rsec_ctx *check_ctx(const char *dir, const char *identity, struct rsec_ctx_attr *attr);
/*
 * A client context for identity (DIR/ca.pem, DIR/IDENTITY.pem, .key), its
 * control socket bound to source; slot_size and recv_slots 0: the defaults.
 * Dies on failure.
 */
struct rsec_ctx *check_client_ctx(const char *dir, const char *identity, const char *source, int timeout_ms,
				  uint32_t slot_size, uint32_t recv_slots);
/*
 * The main of a check with two sides, named prog: "serve PKI ADDR PORT N"
 * returns serve(argv), "run PKI SERVER SOURCE PORT MODE" returns run(argv),
 * where MODE is one of modes ("a|b"); anything else: usage, and 2.
 */
int check_serve_or_run(int argc, char **argv, const char *prog, const char *modes, int (*serve)(char **argv),
		       int (*run)(char **argv));

#endif
