/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "admission.h"

#define NONE UINT32_MAX
#define MILLI 1000u              /* tokens are kept in thousandths, so any rate refills every ms */
#define RATE_MAX 1000000u
/* "[" + the longest IPv6 text (45) + "]:" + 5 port digits, NUL: anything longer is not an address. */
#define ADDR_TEXT_MAX 56

/*
 * Invariants: an entry is either free (on the free list, through next) or
 * used (in exactly one hash chain). A used entry with in_progress == 0 is on
 * the idle list, in the order it went idle; one with in_progress > 0 is not.
 * tokens <= cap.
 */
struct source {
	uint8_t key[16];         /* IPv4 as ::ffff:a.b.c.d, IPv6 with the low 64 bits zero */
	uint32_t chain;          /* the next entry in the hash bucket */
	uint32_t prev, next;     /* the idle list (used) or the free list (next only) */
	uint32_t in_progress;    /* admitted handshakes not yet released */
	uint64_t tokens;         /* in thousandths of a token */
	uint64_t refilled_ms;    /* when tokens was last brought up to date */
};

struct admission {
	struct admission_limits l;
	uint64_t cap;            /* burst * MILLI */
	uint64_t hash_key[2];    /* random: sources are chosen by whoever connects */
	struct source *e;        /* l.max_sources entries */
	uint32_t *buckets;       /* chain heads; mask + 1 of them */
	size_t mask, nused;
	uint32_t free_head;
	uint32_t idle_head, idle_tail; /* oldest and newest idle entry */
};

/* ---- the source key ---- */

/* 1..5 decimal digits, at most 65535, then the end. */
static bool port_ok(const char *p)
{
	uint32_t v = 0;
	size_t n = 0;
	for (; p[n] >= '0' && p[n] <= '9' && n < 5; n++)
		v = v * 10 + (uint32_t)(p[n] - '0');
	return n > 0 && p[n] == '\0' && v <= 65535;
}

/* "IPv4:PORT" or "[IPv6]:PORT" (as rsec_conn_peer_addr gives them) to the source's key. */
static bool parse_source(const char *peer_addr, uint8_t key[static 16])
{
	if (!peer_addr)
		return false;
	size_t len = strnlen(peer_addr, ADDR_TEXT_MAX);
	if (len == 0 || len >= ADDR_TEXT_MAX)
		return false;
	const char *host = peer_addr, *end;
	int family = AF_INET;
	if (peer_addr[0] == '[') {
		family = AF_INET6;
		host++;
		end = memchr(host, ']', len - 1);
		if (!end || end[1] != ':')
			return false;
		end++; /* the colon */
	} else {
		end = memchr(host, ':', len);
		if (!end)
			return false;
	}
	if (!port_ok(end + 1))
		return false;
	char text[ADDR_TEXT_MAX];
	size_t hlen = (size_t)(end - host) - (family == AF_INET6);
	memcpy(text, host, hlen);
	text[hlen] = '\0';
	memset(key, 0, 16);
	if (family == AF_INET) {
		key[10] = key[11] = 0xff; /* ::ffff:a.b.c.d, as a dual-stack socket sees it */
		return inet_pton(AF_INET, text, key + 12) == 1;
	}
	if (inet_pton(AF_INET6, text, key) != 1)
		return false;
	/* A mapped IPv4 address is that IPv4 address; any other is its /64. */
	if (!IN6_IS_ADDR_V4MAPPED((const struct in6_addr *)key))
		memset(key + 8, 0, 8);
	return true;
}

bool admission_source(const char *peer_addr, char out[static ADMISSION_SOURCE_MAX])
{
	uint8_t key[16];
	out[0] = '\0';
	if (!parse_source(peer_addr, key))
		return false;
	if (IN6_IS_ADDR_V4MAPPED((const struct in6_addr *)key))
		return inet_ntop(AF_INET, key + 12, out, ADMISSION_SOURCE_MAX) != NULL;
	if (!inet_ntop(AF_INET6, key, out, ADMISSION_SOURCE_MAX - 3))
		return false;
	size_t n = strlen(out);
	snprintf(out + n, ADMISSION_SOURCE_MAX - n, "/64");
	return true;
}

/* SipHash-2-4 (Aumasson, Bernstein) of the 16-byte key: chains stay short whatever sources connect. */
#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND(v0, v1, v2, v3)                                                       \
	do {                                                                           \
		v0 += v1, v1 = ROTL(v1, 13), v1 ^= v0, v0 = ROTL(v0, 32);              \
		v2 += v3, v3 = ROTL(v3, 16), v3 ^= v2;                                 \
		v0 += v3, v3 = ROTL(v3, 21), v3 ^= v0;                                 \
		v2 += v1, v1 = ROTL(v1, 17), v1 ^= v2, v2 = ROTL(v2, 32);              \
	} while (0)

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint64_t siphash16(const uint64_t k[2], const uint8_t in[static 16])
{
	uint64_t v0 = k[0] ^ 0x736f6d6570736575ull, v1 = k[1] ^ 0x646f72616e646f6dull;
	uint64_t v2 = k[0] ^ 0x6c7967656e657261ull, v3 = k[1] ^ 0x7465646279746573ull;
	const uint64_t m[3] = { le64(in), le64(in + 8), (uint64_t)16 << 56 }; /* the last block: the length */
	for (int i = 0; i < 3; i++) {
		v3 ^= m[i];
		SIPROUND(v0, v1, v2, v3);
		SIPROUND(v0, v1, v2, v3);
		v0 ^= m[i];
	}
	v2 ^= 0xff;
	for (int i = 0; i < 4; i++)
		SIPROUND(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}

/* ---- the table ---- */

void admission_limits_for(struct admission_limits *l, uint32_t max_clients, uint32_t per_source,
			  uint32_t rate_per_source)
{
	size_t sources = 2 * (size_t)max_clients;
	*l = (struct admission_limits){
		.max_per_source = per_source,
		.rate_per_sec = rate_per_source,
		.burst = rate_per_source,
		.max_sources = sources > ADMISSION_SOURCES_MIN ? sources : ADMISSION_SOURCES_MIN,
	};
}

struct admission *admission_new(const struct admission_limits *l)
{
	if (!l || l->max_per_source == 0 || l->rate_per_sec == 0 || l->rate_per_sec > RATE_MAX || l->burst == 0 ||
	    l->burst > RATE_MAX || l->max_sources == 0 || l->max_sources > ADMISSION_SOURCES_LIMIT)
		return NULL;
	struct admission *a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	size_t nb = 2;
	while (nb < l->max_sources)
		nb *= 2;
	a->e = calloc(l->max_sources, sizeof(*a->e));
	a->buckets = malloc(nb * sizeof(*a->buckets));
	if (!a->e || !a->buckets || getrandom(a->hash_key, sizeof(a->hash_key), 0) != sizeof(a->hash_key)) {
		admission_free(a);
		return NULL;
	}
	a->l = *l;
	a->cap = (uint64_t)l->burst * MILLI;
	a->mask = nb - 1;
	for (size_t i = 0; i < nb; i++)
		a->buckets[i] = NONE;
	for (size_t i = 0; i < l->max_sources; i++)
		a->e[i].next = i + 1 < l->max_sources ? (uint32_t)(i + 1) : NONE;
	a->free_head = 0;
	a->idle_head = a->idle_tail = NONE;
	return a;
}

void admission_free(struct admission *a)
{
	if (!a)
		return;
	free(a->e);
	free(a->buckets);
	free(a);
}

static size_t bucket_of(const struct admission *a, const uint8_t key[static 16])
{
	return (size_t)siphash16(a->hash_key, key) & a->mask;
}

static uint32_t find(const struct admission *a, const uint8_t key[static 16])
{
	uint32_t i = a->buckets[bucket_of(a, key)];
	while (i != NONE && memcmp(a->e[i].key, key, 16) != 0)
		i = a->e[i].chain;
	return i;
}

static void idle_append(struct admission *a, uint32_t i)
{
	a->e[i].prev = a->idle_tail;
	a->e[i].next = NONE;
	if (a->idle_tail != NONE)
		a->e[a->idle_tail].next = i;
	else
		a->idle_head = i;
	a->idle_tail = i;
}

static void idle_unlink(struct admission *a, uint32_t i)
{
	struct source *s = &a->e[i];
	if (s->prev != NONE)
		a->e[s->prev].next = s->next;
	else
		a->idle_head = s->next;
	if (s->next != NONE)
		a->e[s->next].prev = s->prev;
	else
		a->idle_tail = s->prev;
	s->prev = s->next = NONE;
}

/* Brings s's bucket up to now_ms: rate_per_sec tokens a second is rate_per_sec thousandths a ms. */
static void refill(const struct admission *a, struct source *s, uint64_t now_ms)
{
	if (now_ms <= s->refilled_ms)
		return; /* a clock that went back refills nothing */
	uint64_t elapsed = now_ms - s->refilled_ms, room = a->cap - s->tokens;
	/* Checked by division, so a long-idle entry cannot overflow elapsed * rate. */
	if (elapsed > room / a->l.rate_per_sec)
		s->tokens = a->cap;
	else
		s->tokens += elapsed * a->l.rate_per_sec;
	s->refilled_ms = now_ms;
}

/* Frees an idle entry with a full bucket among the oldest idle ones; its index, or NONE. */
static uint32_t evict_idle(struct admission *a, uint64_t now_ms)
{
	uint32_t i = a->idle_head;
	for (int n = 0; n < ADMISSION_EVICT_SCAN && i != NONE; n++, i = a->e[i].next) {
		refill(a, &a->e[i], now_ms);
		if (a->e[i].tokens == a->cap)
			break;
	}
	if (i == NONE || a->e[i].tokens != a->cap)
		return NONE;
	idle_unlink(a, i);
	uint32_t *p = &a->buckets[bucket_of(a, a->e[i].key)];
	while (*p != i)
		p = &a->e[*p].chain;
	*p = a->e[i].chain;
	a->nused--;
	return i;
}

/* A new entry for key, full bucket, idle; NONE if the table is full of entries that must stay. */
static uint32_t insert(struct admission *a, const uint8_t key[static 16], uint64_t now_ms)
{
	uint32_t i = a->free_head;
	if (i != NONE)
		a->free_head = a->e[i].next;
	else if ((i = evict_idle(a, now_ms)) == NONE)
		return NONE;
	struct source *s = &a->e[i];
	memcpy(s->key, key, 16);
	s->in_progress = 0;
	s->tokens = a->cap;
	s->refilled_ms = now_ms;
	size_t b = bucket_of(a, key);
	s->chain = a->buckets[b];
	a->buckets[b] = i;
	idle_append(a, i);
	a->nused++;
	return i;
}

static const char *const verdict_why[] = {
	[ADMISSION_ADMIT] = "admitted",
	[ADMISSION_REFUSE_CONCURRENT] = "max_handshakes_per_source reached",
	[ADMISSION_REFUSE_RATE] = "handshake_rate_per_source exceeded",
	[ADMISSION_REFUSE_TABLE_FULL] = "source table full",
	[ADMISSION_REFUSE_BAD_ADDR] = "malformed peer address",
};

static enum admission_verdict verdict(enum admission_verdict v, const char **why)
{
	if (why)
		*why = verdict_why[v];
	return v;
}

enum admission_verdict admission_try(struct admission *a, const char *peer_addr, uint64_t now_ms, const char **why)
{
	uint8_t key[16];
	if (!a || !parse_source(peer_addr, key))
		return verdict(ADMISSION_REFUSE_BAD_ADDR, why);
	uint32_t i = find(a, key);
	if (i == NONE && (i = insert(a, key, now_ms)) == NONE)
		return verdict(ADMISSION_REFUSE_TABLE_FULL, why);
	struct source *s = &a->e[i];
	if (s->in_progress >= a->l.max_per_source)
		return verdict(ADMISSION_REFUSE_CONCURRENT, why);
	refill(a, s, now_ms);
	if (s->tokens < MILLI)
		return verdict(ADMISSION_REFUSE_RATE, why);
	s->tokens -= MILLI;
	if (s->in_progress++ == 0)
		idle_unlink(a, i);
	return verdict(ADMISSION_ADMIT, why);
}

bool admission_release(struct admission *a, const char *peer_addr)
{
	uint8_t key[16];
	if (!a || !parse_source(peer_addr, key))
		return false;
	uint32_t i = find(a, key);
	if (i == NONE || a->e[i].in_progress == 0)
		return false;
	if (--a->e[i].in_progress == 0)
		idle_append(a, i);
	return true;
}

uint32_t admission_in_progress(const struct admission *a, const char *peer_addr)
{
	uint8_t key[16];
	if (!a || !parse_source(peer_addr, key))
		return 0;
	uint32_t i = find(a, key);
	return i == NONE ? 0 : a->e[i].in_progress;
}

size_t admission_sources(const struct admission *a)
{
	return a ? a->nused : 0;
}

const char *admission_verdict_name(enum admission_verdict v)
{
	switch (v) {
	case ADMISSION_ADMIT: return "admit";
	case ADMISSION_REFUSE_CONCURRENT: return "per_source_concurrent";
	case ADMISSION_REFUSE_RATE: return "per_source_rate";
	case ADMISSION_REFUSE_TABLE_FULL: return "source_table_full";
	case ADMISSION_REFUSE_BAD_ADDR: return "bad_address";
	default: return "unknown";
	}
}
