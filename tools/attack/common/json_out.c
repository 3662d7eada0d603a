/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "json_out.h"

/* json-c returns NULL only when memory runs out; a CLI cannot go on then. */
static struct json_object *must(struct json_object *o)
{
	if (!o) {
		fputs("rdmasec-attack: out of memory building the JSON result\n", stderr);
		exit(1);
	}
	return o;
}

/* Length of the well-formed UTF-8 sequence at p (RFC 3629: no overlong
 * forms, no surrogates, nothing above U+10FFFF), or 0 if it is not one. */
static size_t utf8_seq_len(const unsigned char *p)
{
	unsigned char c = p[0];
	uint32_t cp;
	size_t n;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, cp = c & 0x1fu;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, cp = c & 0x0fu;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, cp = c & 0x07u;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80) /* also stops at the terminating NUL */
			return 0;
		cp = cp << 6 | (p[i] & 0x3fu);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* val as a JSON string; json-c writes bytes as given, so bad UTF-8 is replaced first. */
static struct json_object *utf8_string(const char *val)
{
	static const char replacement[] = "\xef\xbf\xbd"; /* U+FFFD */
	const unsigned char *p = (const unsigned char *)val;
	struct json_object *s;
	size_t len = strlen(val), k, out = 0;
	char *buf;

	for (k = 0; p[k]; k += utf8_seq_len(p + k))
		if (utf8_seq_len(p + k) == 0)
			break;
	if (!p[k])
		return must(json_object_new_string(val));
	buf = malloc(3 * len + 1); /* each bad byte grows to 3 */
	if (!buf)
		must(NULL);
	for (k = 0; p[k];) {
		size_t n = utf8_seq_len(p + k);
		if (n == 0) {
			memcpy(buf + out, replacement, 3);
			out += 3, k++;
		} else {
			memcpy(buf + out, p + k, n);
			out += n, k += n;
		}
	}
	s = json_object_new_string_len(buf, (int)out);
	free(buf);
	return must(s);
}

static void add(struct json_object *o, const char *key, struct json_object *val)
{
	if (json_object_object_add(o, key, val) != 0) {
		json_object_put(val);
		must(NULL);
	}
}

void json_add_str(struct json_object *o, const char *key, const char *val)
{
	add(o, key, utf8_string(val));
}

void json_add_u64(struct json_object *o, const char *key, uint64_t val)
{
	add(o, key, must(json_object_new_uint64(val)));
}

static struct json_object *hex_string(uint64_t val)
{
	char s[24];

	snprintf(s, sizeof(s), "0x%llx", (unsigned long long)val);
	return must(json_object_new_string(s));
}

void json_add_hex(struct json_object *o, const char *key, uint64_t val)
{
	add(o, key, hex_string(val));
}

void json_add_num(struct json_object *o, const char *key, double val)
{
	char s[64];

	/* The text is written as given: three decimals, as the tools always printed. */
	snprintf(s, sizeof(s), "%.3f", val);
	add(o, key, must(json_object_new_double_s(val, s)));
}

void json_add_bool(struct json_object *o, const char *key, bool val)
{
	add(o, key, must(json_object_new_boolean(val)));
}

void json_add_null(struct json_object *o, const char *key)
{
	add(o, key, NULL);
}

void json_add_u64_array(struct json_object *o, const char *key, const uint64_t *v, size_t n, bool hex)
{
	struct json_object *a = json_add_array(o, key);

	for (size_t i = 0; i < n; i++) {
		struct json_object *e = hex ? hex_string(v[i]) : must(json_object_new_uint64(v[i]));
		if (json_object_array_add(a, e) != 0) {
			json_object_put(e);
			must(NULL);
		}
	}
}

struct json_object *json_add_object(struct json_object *o, const char *key)
{
	struct json_object *child = must(json_object_new_object());

	add(o, key, child);
	return child;
}

struct json_object *json_add_array(struct json_object *o, const char *key)
{
	struct json_object *child = must(json_object_new_array());

	add(o, key, child);
	return child;
}

struct json_object *json_append_object(struct json_object *a)
{
	struct json_object *child = must(json_object_new_object());

	if (json_object_array_add(a, child) != 0) {
		json_object_put(child);
		must(NULL);
	}
	return child;
}

struct json_object *json_new_object(void)
{
	return must(json_object_new_object());
}

void json_write(struct json_object *o, FILE *f)
{
	const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);

	if (!text)
		must(NULL);
	fprintf(f, "%s\n", text);
	json_object_put(o);
}

void json_begin(struct json *j, const char *cmd)
{
	j->obj = json_new_object();
	json_add_str(j->obj, "cmd", cmd);
}

void json_str(struct json *j, const char *key, const char *val)
{
	json_add_str(j->obj, key, val);
}

void json_u64(struct json *j, const char *key, uint64_t val)
{
	json_add_u64(j->obj, key, val);
}

void json_hex(struct json *j, const char *key, uint64_t val)
{
	json_add_hex(j->obj, key, val);
}

void json_num(struct json *j, const char *key, double val)
{
	json_add_num(j->obj, key, val);
}

void json_boolean(struct json *j, const char *key, bool val)
{
	json_add_bool(j->obj, key, val);
}

void json_u64_array(struct json *j, const char *key, const uint64_t *v, size_t n, bool hex)
{
	json_add_u64_array(j->obj, key, v, n, hex);
}

void json_end(struct json *j)
{
	json_write(j->obj, stdout);
	j->obj = NULL;
	fflush(stdout);
}
