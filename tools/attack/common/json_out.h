/* SPDX-License-Identifier: MIT */
/*
 * The subcommands' JSON results, built with json-c and printed as one line:
 * keys in the order they were added, strings as UTF-8 (a byte that is not
 * part of a valid UTF-8 sequence becomes U+FFFD, so the line stays JSON).
 */
#ifndef RSEC_JSON_OUT_H
#define RSEC_JSON_OUT_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Members of object o; an object or array put under a key belongs to o. */
void json_add_str(struct json_object *o, const char *key, const char *val);
void json_add_u64(struct json_object *o, const char *key, uint64_t val);
void json_add_hex(struct json_object *o, const char *key, uint64_t val);  /* "0x1f" */
void json_add_num(struct json_object *o, const char *key, double val);    /* 3 decimals */
void json_add_bool(struct json_object *o, const char *key, bool val);
void json_add_null(struct json_object *o, const char *key);
void json_add_u64_array(struct json_object *o, const char *key, const uint64_t *v, size_t n, bool hex);
struct json_object *json_add_object(struct json_object *o, const char *key);
struct json_object *json_add_array(struct json_object *o, const char *key);
/* A new object at the end of array a. */
struct json_object *json_append_object(struct json_object *a);

/* A new empty object; the caller owns it (json_write frees it). */
struct json_object *json_new_object(void);
/* Print o on one line to f, then free it. */
void json_write(struct json_object *o, FILE *f);

/* A subcommand's result: one object on stdout that starts with "cmd". */
struct json {
	struct json_object *obj;
};
void json_begin(struct json *j, const char *cmd);
void json_str(struct json *j, const char *key, const char *val);
void json_u64(struct json *j, const char *key, uint64_t val);
void json_hex(struct json *j, const char *key, uint64_t val);
void json_num(struct json *j, const char *key, double val);
void json_boolean(struct json *j, const char *key, bool val);
void json_u64_array(struct json *j, const char *key, const uint64_t *v, size_t n, bool hex);
/* Print the object on stdout (and flush: other programs wait for the line). */
void json_end(struct json *j);

#endif /* RSEC_JSON_OUT_H */
