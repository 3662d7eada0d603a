/* SPDX-License-Identifier: MIT */
/*
 * The audit log (docs/audit.md): records are built with json-c, so any byte
 * an attacker puts into a certificate subject comes out escaped, and each
 * record reaches the file in one write(2) so concurrent writers never
 * interleave lines. Records of unauthenticated peers pass a token bucket
 * first (audit.h); what it holds back is counted and summarised.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "audit.h"
#include "clock.h"
#include "utf8.h"

#define MILLI 1000u /* the bucket counts thousandths of a record, so it refills every ms */

/* The events the limit applies to (with peer NULL), each with its own summary. */
enum { LIMITED_AUTH_FAILURE, LIMITED_REFUSE, LIMITED_CLOSE, LIMITED_N };

struct audit_pending {
	uint64_t count, first_ms, last_ms;
	bool is_server;
};

/* Everything but fd is under lock. tokens <= RSEC_AUDIT_UNAUTH_BURST * MILLI. */
struct rsec_audit {
	int fd;
	pthread_mutex_t lock;
	uint64_t (*now_ms)(void);    /* monotonic: wall-clock steps must not refill or drain */
	uint64_t tokens, refilled_ms;
	struct audit_pending pending[LIMITED_N];
	uint64_t suppressed;
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
	[RSEC_AUDIT_SUPPRESSED] = "suppressed",
	[RSEC_AUDIT_PROTOCOL_VIOLATION] = "protocol_violation",
	[RSEC_AUDIT_SEALED_OPEN] = "sealed_open",
	[RSEC_AUDIT_SEALED_READ] = "sealed_read",
	[RSEC_AUDIT_REBUILD] = "rebuild",
	[RSEC_AUDIT_RESUME] = "resume",
	[RSEC_AUDIT_RELOAD] = "reload",
	[RSEC_AUDIT_PEER_REVOKED] = "peer_revoked",
	[RSEC_AUDIT_REKEY] = "rekey",
};

static const enum rsec_audit_event limited_events[LIMITED_N] = {
	[LIMITED_AUTH_FAILURE] = RSEC_AUDIT_AUTH_FAILURE,
	[LIMITED_REFUSE] = RSEC_AUDIT_REFUSE,
	[LIMITED_CLOSE] = RSEC_AUDIT_CLOSE,
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
		size_t n = utf8_seq_len(p);
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

static json_object *summary_object(const struct rsec_audit_summary *sum, bool *ok)
{
	json_object *o = json_object_new_object();
	if (!o) {
		*ok = false;
		return NULL;
	}
	char when[32];
	add(o, "event", json_object_new_string(rsec_audit_event_name(sum->event)), ok);
	add(o, "count", json_object_new_uint64(sum->count), ok);
	iso_time(sum->first_ms, when);
	add(o, "first", json_object_new_string(when), ok);
	iso_time(sum->last_ms, when);
	add(o, "last", json_object_new_string(when), ok);
	return o;
}

/* The record as a json-c object; the caller puts it. */
static int record_object(const struct rsec_audit_record *r, json_object **out)
{
	*out = NULL;
	const char *name = r ? rsec_audit_event_name(r->event) : NULL;
	if (!name || (r->summary && !rsec_audit_event_name(r->summary->event)))
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
		add(o, "result", text(r->result), &ok);
	if (r->reason)
		add(o, "reason", text(r->reason), &ok);
	if (r->local_qpn)
		add(o, "local_qpn", json_object_new_uint64(r->local_qpn), &ok);
	if (r->remote_qpn)
		add(o, "remote_qpn", json_object_new_uint64(r->remote_qpn), &ok);
	if (r->region)
		add(o, "region", region_object(r->region, &ok), &ok);
	if (r->summary)
		add(o, "suppressed", summary_object(r->summary, &ok), &ok);
	if (!ok) {
		json_object_put(o);
		return RSEC_E_NOMEM;
	}
	*out = o;
	return 0;
}

int rsec_audit_encode(const struct rsec_audit_record *r, char *out, size_t cap)
{
	if (!r || !out || cap == 0)
		return RSEC_E_INVAL;
	out[0] = '\0';
	json_object *o;
	int rc = record_object(r, &o);
	if (rc < 0)
		return rc;
	size_t len;
	const char *s = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN, &len);
	if (!s)
		rc = RSEC_E_NOMEM;
	else if (len >= cap || len > INT_MAX)
		rc = RSEC_E_RANGE;
	else {
		memcpy(out, s, len + 1);
		rc = (int)len;
	}
	json_object_put(o);
	return rc;
}

int rsec_audit_open(const char *path, struct rsec_audit **out)
{
	if (!path || !*path || !out)
		return RSEC_E_INVAL;
	*out = NULL;
	/* O_NONBLOCK: a FIFO without a reader must fail here, not hang the caller. */
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
	if (fd < 0)
		return RSEC_E_IO;
	struct stat st;
	int err = 0;
	if (fstat(fd, &st) != 0)
		err = errno;
	else if (!S_ISREG(st.st_mode))
		err = EINVAL; /* a directory, FIFO, device or socket */
	else if (fcntl(fd, F_SETFL, O_APPEND) != 0)
		err = errno;
	if (err) {
		close(fd);
		errno = err; /* for the caller's message */
		return RSEC_E_IO;
	}
	struct rsec_audit *a = calloc(1, sizeof(*a));
	if (!a) {
		close(fd);
		return RSEC_E_NOMEM;
	}
	if (pthread_mutex_init(&a->lock, NULL) != 0) {
		free(a);
		close(fd);
		return RSEC_E_NOMEM;
	}
	a->fd = fd;
	a->now_ms = rsec_now_ms;
	a->tokens = (uint64_t)RSEC_AUDIT_UNAUTH_BURST * MILLI;
	a->refilled_ms = rsec_now_ms();
	*out = a;
	return 0;
}

void rsec_audit_set_clock(struct rsec_audit *a, uint64_t (*now_ms)(void))
{
	if (!a || !now_ms)
		return;
	pthread_mutex_lock(&a->lock);
	a->now_ms = now_ms;
	a->tokens = (uint64_t)RSEC_AUDIT_UNAUTH_BURST * MILLI;
	a->refilled_ms = now_ms();
	pthread_mutex_unlock(&a->lock);
}

/* All of buf, retrying short writes; the caller holds the lock. */
static int write_all(int fd, const char *buf, size_t len)
{
	size_t done = 0;
	while (done < len) {
		ssize_t w = write(fd, buf + done, len - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return RSEC_E_IO;
		done += (size_t)w;
	}
	return 0;
}

/* r as one line with its newline, in *line (malloc'd), length in *len. */
static int record_line(const struct rsec_audit_record *r, char **line, size_t *len)
{
	json_object *o;
	int rc = record_object(r, &o);
	if (rc < 0)
		return rc;
	/* No fixed cap: a long (escaped) peer name must not make its record vanish. */
	const char *s = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN, len);
	*line = s ? malloc(*len + 1) : NULL;
	if (!*line) {
		json_object_put(o);
		return RSEC_E_NOMEM;
	}
	memcpy(*line, s, *len);
	(*line)[(*len)++] = '\n';
	json_object_put(o);
	return 0;
}

/* Which summary an unauthenticated record counts under; -1: never limited. */
static int limited_slot(const struct rsec_audit_record *r)
{
	if (r->peer)
		return -1;
	for (int i = 0; i < LIMITED_N; i++)
		if (r->event == limited_events[i])
			return i;
	return -1;
}

/* Takes a token if there is one, refilling first; under lock. */
static bool take_token(struct rsec_audit *a)
{
	const uint64_t cap = (uint64_t)RSEC_AUDIT_UNAUTH_BURST * MILLI, rate = RSEC_AUDIT_UNAUTH_RATE;
	uint64_t now = a->now_ms();
	if (now > a->refilled_ms) {
		/* Compared by division, so a long quiet spell cannot overflow. */
		uint64_t elapsed = now - a->refilled_ms, room = cap - a->tokens;
		a->tokens = elapsed > room / rate ? cap : a->tokens + elapsed * rate;
		a->refilled_ms = now;
	}
	if (a->tokens < MILLI)
		return false;
	a->tokens -= MILLI;
	return true;
}

/* Writes one "suppressed" record per event held back; under lock. What fails stays pending. */
static int write_pending(struct rsec_audit *a)
{
	int rc = 0;
	for (int i = 0; i < LIMITED_N; i++) {
		struct audit_pending *p = &a->pending[i];
		if (p->count == 0)
			continue;
		struct rsec_audit_summary sum = { limited_events[i], p->count, p->first_ms, p->last_ms };
		struct rsec_audit_record r = {
			.event = RSEC_AUDIT_SUPPRESSED,
			.is_server = p->is_server,
			.result = "rate limited",
			.reason = "records of unauthenticated peers over the audit log's rate limit",
			.summary = &sum,
		};
		char *line;
		size_t len;
		int err = record_line(&r, &line, &len);
		if (err == 0) {
			err = write_all(a->fd, line, len);
			free(line);
		}
		if (err == 0)
			*p = (struct audit_pending){ 0 };
		else if (rc == 0)
			rc = err;
	}
	return rc;
}

int rsec_audit_write(struct rsec_audit *a, const struct rsec_audit_record *r)
{
	if (!a)
		return 0;
	if (!r || !rsec_audit_event_name(r->event))
		return RSEC_E_INVAL;
	int slot = limited_slot(r);
	if (slot >= 0) {
		pthread_mutex_lock(&a->lock);
		bool pass = take_token(a);
		if (!pass) {
			struct audit_pending *p = &a->pending[slot];
			uint64_t when = r->time_ms ? r->time_ms : wall_ms();
			if (p->count++ == 0)
				p->first_ms = when;
			p->last_ms = when;
			p->is_server = r->is_server;
			a->suppressed++;
		}
		pthread_mutex_unlock(&a->lock);
		if (!pass)
			return 0;
	}
	char *line;
	size_t len;
	int rc = record_line(r, &line, &len);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&a->lock);
	/* The summaries first: they say what happened before this record. */
	int sum_rc = write_pending(a);
	rc = write_all(a->fd, line, len);
	pthread_mutex_unlock(&a->lock);
	free(line);
	return rc < 0 ? rc : sum_rc;
}

uint64_t rsec_audit_suppressed(struct rsec_audit *a)
{
	if (!a)
		return 0;
	pthread_mutex_lock(&a->lock);
	uint64_t n = a->suppressed;
	pthread_mutex_unlock(&a->lock);
	return n;
}

void rsec_audit_close(struct rsec_audit *a)
{
	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	(void)write_pending(a); /* nobody is left to count a failure */
	pthread_mutex_unlock(&a->lock);
	close(a->fd);
	pthread_mutex_destroy(&a->lock);
	free(a);
}
