/* SPDX-License-Identifier: MIT */
/*
 * TLS 1.3 session resumption (see tls_resume.h for the model).
 *
 * What a ticket may stand for is bounded by the authentication it replaces,
 * not by the ticket: OpenSSL gives every reissued ticket a fresh time, so a
 * client reconnecting within the lifetime could otherwise ride one
 * certificate check forever. The server writes the time of the last full
 * handshake into each ticket (ticket app data, sealed with the ticket) and
 * refuses tickets whose authentication is older than the lifetime, or whose
 * certificate has expired since. The client applies the same rule to the
 * server's certificate before it offers a ticket: each cached ticket keeps
 * the time of the full handshake it descends from (a ticket that arrives on
 * a resumed connection inherits the offered ticket's). With a CRL, both
 * also check the certificate a ticket stands for against the CRL as it is
 * now: a ticket does not outlive the revocation of its certificate.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/x509.h>

#include "tls.h"
#include "tls_resume.h"

/* Ticket app data: the full handshake's time, 8 bytes big-endian. */
#define AUTH_TIME_LEN 8u

struct resume_slot {
	char dest[RSEC_TLS_RESUME_DEST_MAX];
	SSL_SESSION *sess; /* NULL: free */
	uint64_t stored;   /* insertion order, for eviction */
	uint64_t auth_s;   /* when the server's certificate was last checked (time()) */
};

/* What a client SSL carries for its tickets: where it goes, and what it offered. */
struct resume_note {
	char dest[RSEC_TLS_RESUME_DEST_MAX];
	bool offered;
	uint64_t offered_auth_s;
};

struct resume_cache {
	pthread_mutex_t lock; /* new tickets arrive on whichever thread reads the connection */
	uint32_t lifetime_s;
	uint64_t clock;
	struct resume_slot slot[RSEC_TLS_RESUME_SLOTS];
};

struct resume_server {
	uint32_t lifetime_s;
};

static CRYPTO_ONCE once = CRYPTO_ONCE_STATIC_INIT;
static int cache_index = -1;  /* SSL_CTX: struct resume_cache (client) */
static int server_index = -1; /* SSL_CTX: struct resume_server */
static int note_index = -1;   /* SSL: struct resume_note (client) */

static void cache_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl, void *argp)
{
	(void)parent, (void)ad, (void)idx, (void)argl, (void)argp;
	struct resume_cache *c = ptr;
	if (!c)
		return;
	for (unsigned i = 0; i < RSEC_TLS_RESUME_SLOTS; i++)
		SSL_SESSION_free(c->slot[i].sess);
	pthread_mutex_destroy(&c->lock);
	OPENSSL_free(c);
}

static void plain_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl, void *argp)
{
	(void)parent, (void)ad, (void)idx, (void)argl, (void)argp;
	OPENSSL_free(ptr);
}

static void make_indices(void)
{
	cache_index = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, cache_free);
	server_index = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, plain_free);
	note_index = SSL_get_ex_new_index(0, NULL, NULL, NULL, plain_free);
}

static bool indices(void)
{
	return CRYPTO_THREAD_run_once(&once, make_indices) && cache_index >= 0 && server_index >= 0 &&
	       note_index >= 0;
}

/* The peer certificate a session carries is still within its validity, and not revoked. */
static bool peer_still_valid(SSL *ssl, const SSL_SESSION *sess)
{
	X509 *peer = SSL_SESSION_get0_peer((SSL_SESSION *)sess);
	return peer && X509_cmp_current_time(X509_get0_notAfter(peer)) > 0 && rsec_tls_crl_check(ssl, peer) == 0;
}

static bool younger_than(uint64_t since, uint32_t lifetime_s)
{
	uint64_t now = (uint64_t)time(NULL);
	return since <= now && now - since < lifetime_s;
}

/* ---- server ---- */

/* Called before each ticket is sealed: carry the authentication time over. */
static int ticket_gen(SSL *ssl, void *arg)
{
	(void)arg;
	SSL_SESSION *sess = SSL_get_session(ssl);
	if (!sess)
		return 0;
	void *data = NULL;
	size_t len = 0;
	SSL_SESSION_get0_ticket_appdata(sess, &data, &len);
	if (SSL_session_reused(ssl) && len == AUTH_TIME_LEN)
		return 1; /* resumed: the time of the full handshake stays */
	uint8_t t[AUTH_TIME_LEN];
	uint64_t now = (uint64_t)time(NULL);
	for (unsigned i = 0; i < AUTH_TIME_LEN; i++)
		t[i] = (uint8_t)(now >> (8 * (AUTH_TIME_LEN - 1 - i)));
	return SSL_SESSION_set1_ticket_appdata(sess, t, sizeof(t));
}

static bool auth_time(const SSL_SESSION *sess, uint64_t *out)
{
	void *data = NULL;
	size_t len = 0;
	SSL_SESSION_get0_ticket_appdata((SSL_SESSION *)sess, &data, &len);
	if (!data || len != AUTH_TIME_LEN)
		return false;
	const uint8_t *p = data;
	uint64_t t = 0;
	for (unsigned i = 0; i < AUTH_TIME_LEN; i++)
		t = t << 8 | p[i];
	*out = t;
	return true;
}

/* Called with each ticket a client offers, once OpenSSL has tried to open it. */
static SSL_TICKET_RETURN ticket_dec(SSL *ssl, SSL_SESSION *sess, const unsigned char *keyname, size_t keyname_len,
				    SSL_TICKET_STATUS status, void *arg)
{
	(void)keyname, (void)keyname_len, (void)arg;
	const struct resume_server *srv = SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), server_index);
	if (status == SSL_TICKET_FATAL_ERR_MALLOC || status == SSL_TICKET_FATAL_ERR_OTHER)
		return SSL_TICKET_RETURN_ABORT;
	if (status != SSL_TICKET_SUCCESS && status != SSL_TICKET_SUCCESS_RENEW)
		return SSL_TICKET_RETURN_IGNORE_RENEW; /* not ours (another process, say): full handshake */
	uint64_t t;
	if (!srv || !sess || !auth_time(sess, &t) || !younger_than(t, srv->lifetime_s) ||
	    !peer_still_valid(ssl, sess))
		return SSL_TICKET_RETURN_IGNORE_RENEW;
	return status == SSL_TICKET_SUCCESS ? SSL_TICKET_RETURN_USE : SSL_TICKET_RETURN_USE_RENEW;
}

int rsec_tls_resume_server(SSL_CTX *ctx, uint32_t lifetime_s)
{
	RSEC_ENSURE(ctx && lifetime_s > 0 && lifetime_s <= RSEC_MAX_RESUME_S, RSEC_E_INVAL);
	RSEC_ENSURE(indices(), RSEC_E_NOMEM);
	struct resume_server *srv = OPENSSL_zalloc(sizeof(*srv));
	if (!srv || !SSL_CTX_set_ex_data(ctx, server_index, srv)) {
		OPENSSL_free(srv);
		return RSEC_E_NOMEM;
	}
	srv->lifetime_s = lifetime_s;
	/* Stateless tickets only: nothing of a session stays in the server. */
	SSL_CTX_clear_options(ctx, SSL_OP_NO_TICKET);
	RSEC_ENSURE(SSL_CTX_set_num_tickets(ctx, 1), RSEC_E_TLS);
	SSL_CTX_set_timeout(ctx, (long)lifetime_s);
	/* OpenSSL refuses to resume a session with a verified client under an empty context. */
	static const unsigned char sid_ctx[] = "rdmasec";
	RSEC_ENSURE(SSL_CTX_set_session_id_context(ctx, sid_ctx, sizeof(sid_ctx) - 1), RSEC_E_TLS);
	RSEC_ENSURE(SSL_CTX_set_session_ticket_cb(ctx, ticket_gen, ticket_dec, NULL), RSEC_E_TLS);
	return 0;
}

/* ---- client ---- */

/*
 * A new ticket arrived on ssl: file a copy under ssl's destination. A copy,
 * because the session OpenSSL hands us stays the connection's, and OpenSSL
 * marks it unusable when the connection ends without close_notify; a TLS
 * 1.3 ticket does not depend on how the connection that carried it ended,
 * and a reset connection is the very case resumption is for.
 */
static int on_new_session(SSL *ssl, SSL_SESSION *fresh)
{
	struct resume_cache *c = SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), cache_index);
	const struct resume_note *note = SSL_get_ex_data(ssl, note_index);
	if (!c || !note || !SSL_SESSION_is_resumable(fresh))
		return 0;
	const char *dest = note->dest;
	/* Resumed: no certificate was checked now, the offered ticket's check still counts. */
	uint64_t auth_s = SSL_session_reused(ssl) && note->offered ? note->offered_auth_s : (uint64_t)time(NULL);
	SSL_SESSION *sess = SSL_SESSION_dup(fresh);
	if (!sess)
		return 0; /* no resumption next time: a full handshake, nothing worse */
	pthread_mutex_lock(&c->lock);
	struct resume_slot *use = NULL;
	for (unsigned i = 0; i < RSEC_TLS_RESUME_SLOTS && !use; i++)
		if (c->slot[i].sess && strcmp(c->slot[i].dest, dest) == 0)
			use = &c->slot[i];
	for (unsigned i = 0; i < RSEC_TLS_RESUME_SLOTS && !use; i++)
		if (!c->slot[i].sess)
			use = &c->slot[i];
	if (!use) {
		use = &c->slot[0];
		for (unsigned i = 1; i < RSEC_TLS_RESUME_SLOTS; i++)
			if (c->slot[i].stored < use->stored)
				use = &c->slot[i];
	}
	SSL_SESSION_free(use->sess);
	use->sess = sess;
	use->stored = ++c->clock;
	use->auth_s = auth_s;
	snprintf(use->dest, sizeof(use->dest), "%s", dest);
	pthread_mutex_unlock(&c->lock);
	return 0; /* OpenSSL keeps its own reference to fresh */
}

int rsec_tls_resume_client(SSL_CTX *ctx, uint32_t lifetime_s)
{
	RSEC_ENSURE(ctx && lifetime_s > 0 && lifetime_s <= RSEC_MAX_RESUME_S, RSEC_E_INVAL);
	RSEC_ENSURE(indices(), RSEC_E_NOMEM);
	struct resume_cache *c = OPENSSL_zalloc(sizeof(*c));
	RSEC_ENSURE(c, RSEC_E_NOMEM);
	if (pthread_mutex_init(&c->lock, NULL) != 0) {
		OPENSSL_free(c);
		return RSEC_E_NOMEM;
	}
	c->lifetime_s = lifetime_s;
	if (!SSL_CTX_set_ex_data(ctx, cache_index, c)) {
		pthread_mutex_destroy(&c->lock);
		OPENSSL_free(c);
		return RSEC_E_NOMEM;
	}
	/* Tickets go to on_new_session only; OpenSSL's own client store stays empty. */
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
	SSL_CTX_sess_set_new_cb(ctx, on_new_session);
	return 0;
}

/* Takes dest's ticket out of the cache, with its *auth_s; NULL when none or no longer usable. */
static SSL_SESSION *take(SSL *ssl, struct resume_cache *c, const char *dest, uint64_t *auth_s)
{
	SSL_SESSION *sess = NULL;
	pthread_mutex_lock(&c->lock);
	for (unsigned i = 0; i < RSEC_TLS_RESUME_SLOTS; i++) {
		if (c->slot[i].sess && strcmp(c->slot[i].dest, dest) == 0) {
			sess = c->slot[i].sess;
			*auth_s = c->slot[i].auth_s;
			c->slot[i].sess = NULL;
			break;
		}
	}
	pthread_mutex_unlock(&c->lock);
	if (!sess)
		return NULL;
	/* The server's ticket lifetime (RFC 8446 §4.6.1) bounds the ticket's age;
	 * it and ours, whichever ends first, bound the certificate check's. */
	unsigned long hint = SSL_SESSION_get_ticket_lifetime_hint(sess);
	uint32_t life = hint > 0 && hint < c->lifetime_s ? (uint32_t)hint : c->lifetime_s;
	if (!SSL_SESSION_is_resumable(sess) || SSL_SESSION_get_time(sess) < 0 ||
	    !younger_than((uint64_t)SSL_SESSION_get_time(sess), life) || !younger_than(*auth_s, life) ||
	    !peer_still_valid(ssl, sess)) {
		SSL_SESSION_free(sess);
		return NULL;
	}
	return sess;
}

int rsec_tls_resume_prepare(SSL *ssl, const char *dest)
{
	RSEC_ENSURE(ssl && dest, RSEC_E_INVAL);
	struct resume_cache *c = indices() ? SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), cache_index) : NULL;
	size_t n = strlen(dest);
	if (!c || n == 0 || n >= RSEC_TLS_RESUME_DEST_MAX)
		return 0;
	struct resume_note *note = OPENSSL_zalloc(sizeof(*note));
	if (!note || !SSL_set_ex_data(ssl, note_index, note)) {
		OPENSSL_free(note);
		return RSEC_E_NOMEM;
	}
	memcpy(note->dest, dest, n + 1);
	uint64_t auth_s = 0;
	SSL_SESSION *sess = take(ssl, c, dest, &auth_s);
	if (!sess)
		return 0;
	int ok = SSL_set_session(ssl, sess);
	SSL_SESSION_free(sess); /* ssl holds its own reference */
	note->offered = ok;
	note->offered_auth_s = auth_s;
	return ok ? 0 : RSEC_E_TLS;
}

bool rsec_tls_resume_enabled(const SSL *ssl)
{
	if (!ssl || !indices())
		return false;
	SSL_CTX *ctx = SSL_get_SSL_CTX(ssl);
	return SSL_CTX_get_ex_data(ctx, cache_index) || SSL_CTX_get_ex_data(ctx, server_index);
}
