/* SPDX-License-Identifier: MIT */
/*
 * The audit log (docs/audit.md): records are built with json-c, so any byte
 * an attacker puts into a certificate subject comes out escaped, and each
 * record reaches the file in one write(2) so concurrent writers never
 * interleave lines.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "audit.h"
#include "conn.h"

#define AUDIT_LINE_MAX 4096

struct rsec_audit {
	int fd;
	pthread_mutex_t lock;
};

static const char *const event_names[] = {
	[RSEC_AUDIT_ACCEPT] = "accept",
	[RSEC_AUDIT_REFUSE] = "refuse",
	[RSEC_AUDIT_AUTH_FAILURE] = "auth_failure",
	[RSEC_AUDIT_CLOSE] = "close",
	[RSEC_AUDIT_GRANT] = "grant",
	[RSEC_AUDIT_REVOKE] = "revoke",
	[RSEC_AUDIT_EXPIRE] = "expire",
	[RSEC_AUDIT_VERIFIED_WRITE] = "verified_write",
	[RSEC_AUDIT_VERIFIED_READ] = "verified_read",
	[RSEC_AUDIT_MAC_FAILURE] = "mac_failure",
	[RSEC_AUDIT_SEQ_VIOLATION] = "seq_violation",
	[RSEC_AUDIT_QP_ERROR] = "qp_error",
};

const char *rsec_audit_event_name(enum rsec_audit_event ev)
{
	if ((unsigned)ev >= sizeof(event_names) / sizeof(event_names[0]))
		return NULL;
	return event_names[ev];
}

static uint64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* "2026-11-22T18:01:02.123Z" */
static void iso_time(uint64_t ms, char out[32])
{
	time_t secs = (time_t)(ms / 1000u);
	struct tm tm;
	if (!gmtime_r(&secs, &tm) || strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm) == 0) {
		snprintf(out, 32, "invalid");
		return;
	}
	size_t n = strlen(out);
	snprintf(out + n, 32 - n, ".%03uZ", (unsigned)(ms % 1000u));
}

static const char *rights(unsigned access)
{
	switch (access & (RSEC_ACCESS_READ | RSEC_ACCESS_WRITE)) {
	case RSEC_ACCESS_READ: return "read";
	case RSEC_ACCESS_WRITE: return "write";
	case RSEC_ACCESS_READ | RSEC_ACCESS_WRITE: return "read,write";
	default: return "none";
	}
}

/* json-c reports allocation failures as a non-zero return or NULL; one flag catches all. */
static void add(json_object *o, const char *key, json_object *v, bool *ok)
{
	if (!v || json_object_object_add(o, key, v) != 0) {
		json_object_put(v);
		*ok = false;
	}
}

static json_object *hex(uint64_t v)
{
	char buf[24];
	snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
	return json_object_new_string(buf);
}

/* Length of the valid UTF-8 sequence at p (1..4), or 0 if it is not one. */
static size_t utf8_seq(const unsigned char *p)
{
	size_t n = p[0] < 0x80 ? 1 : (p[0] & 0xe0) == 0xc0 ? 2 : (p[0] & 0xf0) == 0xe0 ? 3 : (p[0] & 0xf8) == 0xf0 ? 4 : 0;
	if (n == 2 && p[0] < 0xc2)
		return 0; /* overlong */
	for (size_t i = 1; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

/*
 * A JSON string of s with every invalid UTF-8 byte replaced by U+FFFD, so the
 * log stays valid UTF-8 whatever a peer put in its certificate; json-c
 * escapes quotes and control characters itself.
 */
static json_object *text(const char *s)
{
	char buf[1024];
	size_t o = 0;
	for (const unsigned char *p = (const unsigned char *)s; *p && o + 4 < sizeof(buf);) {
		size_t n = utf8_seq(p);
		if (n == 0) {
			memcpy(buf + o, "\xef\xbf\xbd", 3);
			o += 3;
			p++;
			continue;
		}
		memcpy(buf + o, p, n);
		o += n;
		p += n;
	}
	buf[o] = '\0';
	return json_object_new_string(buf);
}

static json_object *optional_string(const char *s)
{
	return s ? text(s) : NULL;
}

static json_object *region_object(const struct rsec_audit_region *r, bool *ok)
{
	json_object *o = json_object_new_object();
	if (!o) {
		*ok = false;
		return NULL;
	}
	add(o, "grant_id", hex(r->grant_id), ok);
	add(o, "addr", hex(r->addr), ok);
	add(o, "len", json_object_new_uint64(r->len), ok);
	if (r->span) {
		add(o, "offset", json_object_new_uint64(r->offset), ok);
		add(o, "span", json_object_new_uint64(r->span), ok);
	}
	add(o, "rights", json_object_new_string(rights(r->access)), ok);
	add(o, "rkey", hex(r->rkey), ok);
	add(o, "ttl_ms", json_object_new_uint64(r->ttl_ms), ok);
	if (r->mechanism)
		add(o, "mechanism", text(r->mechanism), ok);
	return o;
}

int rsec_audit_encode(const struct rsec_audit_record *r, char *out, size_t cap)
{
	if (!r || !out || cap == 0)
		return RSEC_E_INVAL;
	out[0] = '\0';
	const char *name = rsec_audit_event_name(r->event);
	if (!name)
		return RSEC_E_INVAL;
	json_object *o = json_object_new_object();
	if (!o)
		return RSEC_E_NOMEM;
	bool ok = true;
	char when[32];
	iso_time(r->time_ms ? r->time_ms : wall_ms(), when);
	add(o, "time", json_object_new_string(when), &ok);
	add(o, "event", json_object_new_string(name), &ok);
	add(o, "role", json_object_new_string(r->is_server ? "server" : "client"), &ok);
	if (r->conn_id)
		add(o, "conn", json_object_new_uint64(r->conn_id), &ok);
	/* null, not absent: "nobody authenticated" is information. */
	if (r->peer)
		add(o, "peer", text(r->peer), &ok);
	else if (json_object_object_add(o, "peer", NULL) != 0)
		ok = false;
	if (r->peer_addr)
		add(o, "peer_addr", text(r->peer_addr), &ok);
	if (r->result)
		add(o, "result", optional_string(r->result), &ok);
	if (r->reason)
		add(o, "reason", optional_string(r->reason), &ok);
	if (r->local_qpn)
		add(o, "local_qpn", json_object_new_uint64(r->local_qpn), &ok);
	if (r->remote_qpn)
		add(o, "remote_qpn", json_object_new_uint64(r->remote_qpn), &ok);
	if (r->region)
		add(o, "region", region_object(r->region, &ok), &ok);
	int rc = ok ? 0 : RSEC_E_NOMEM;
	if (rc == 0) {
		size_t len;
		const char *s = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN, &len);
		if (!s)
			rc = RSEC_E_NOMEM;
		else if (len >= cap)
			rc = RSEC_E_RANGE;
		else {
			memcpy(out, s, len + 1);
			rc = (int)len;
		}
	}
	json_object_put(o);
	return rc;
}

int rsec_audit_open(const char *path, struct rsec_audit **out)
{
	if (!path || !*path || !out)
		return RSEC_E_INVAL;
	*out = NULL;
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return RSEC_E_IO;
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return RSEC_E_IO;
	}
	struct rsec_audit *a = calloc(1, sizeof(*a));
	if (!a) {
		close(fd);
		return RSEC_E_NOMEM;
	}
	a->fd = fd;
	pthread_mutex_init(&a->lock, NULL);
	*out = a;
	return 0;
}

int rsec_audit_write(struct rsec_audit *a, const struct rsec_audit_record *r)
{
	if (!a)
		return 0;
	char line[AUDIT_LINE_MAX];
	int n = rsec_audit_encode(r, line, sizeof(line) - 1);
	if (n < 0)
		return n;
	line[n++] = '\n';
	pthread_mutex_lock(&a->lock);
	size_t done = 0;
	int rc = 0;
	while (done < (size_t)n) {
		ssize_t w = write(a->fd, line + done, (size_t)n - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			rc = RSEC_E_IO;
			break;
		}
		done += (size_t)w;
	}
	pthread_mutex_unlock(&a->lock);
	return rc;
}

void rsec_audit_close(struct rsec_audit *a)
{
	if (!a)
		return;
	close(a->fd);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

void rsec_conn_audit(struct rsec_conn *c, enum rsec_audit_event ev, const char *result, const char *reason,
		     const struct rsec_audit_region *region)
{
	if (!c || !c->ctx->audit)
		return;
	struct rsec_audit_record r = {
		.event = ev,
		.is_server = c->is_server,
		.conn_id = c->id,
		.peer = c->peer[0] ? c->peer : NULL,
		.peer_addr = c->peer_addr[0] ? c->peer_addr : NULL,
		.result = result,
		.reason = reason,
		.region = region,
		.local_qpn = c->stats.local_qpn,
		.remote_qpn = c->stats.remote_qpn,
	};
	if (rsec_audit_write(c->ctx->audit, &r) < 0)
		__atomic_add_fetch(&c->ctx->audit_errors, 1, __ATOMIC_RELAXED);
}
