/* SPDX-License-Identifier: MIT */
/* Contexts (device + credentials) and listeners. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "base/audit.h"
#include "base/authz.h"
#include "base/errtext.h"
#include "conn.h"

static void set_err(char *err, size_t errlen, const char *msg)
{
	if (err && errlen)
		snprintf(err, errlen, "%s", msg);
}

static RSEC_MUST_CHECK int dup_opt(const char *in, char **out)
{
	*out = NULL;
	if (!in)
		return 0;
	*out = strdup(in);
	return *out ? 0 : RSEC_E_NOMEM;
}

static uint32_t or_default(uint32_t v, uint32_t def)
{
	return v ? v : def;
}

static RSEC_MUST_CHECK int ctx_check_attr(const struct rsec_ctx_attr *a, char *err, size_t errlen)
{
	if (a->comp_mask & ~(uint32_t)(RSEC_CTX_ATTR_AUDIT | RSEC_CTX_ATTR_GRANT_MODE | RSEC_CTX_ATTR_QP_POOL |
				       RSEC_CTX_ATTR_DEPTH | RSEC_CTX_ATTR_POLL | RSEC_CTX_ATTR_RESUME |
				       RSEC_CTX_ATTR_QPS | RSEC_CTX_ATTR_REBUILDS | RSEC_CTX_ATTR_GRACE |
				       RSEC_CTX_ATTR_CRL | RSEC_CTX_ATTR_ALLOW | RSEC_CTX_ATTR_REKEY)) {
		set_err(err, errlen, "unsupported comp_mask bits");
		return RSEC_E_INVAL;
	}
	bool certs = a->ca_file || a->cert_file || a->key_file;
	bool psk = a->psk || a->psk_len;
	if (certs == psk) {
		set_err(err, errlen, "give either certificates (ca, cert, key) or a PSK");
		return RSEC_E_CONFIG;
	}
	if (certs && !(a->ca_file && a->cert_file && a->key_file)) {
		set_err(err, errlen, "certificate mode needs ca, cert and key files");
		return RSEC_E_CONFIG;
	}
	if ((a->comp_mask & RSEC_CTX_ATTR_CRL) && a->crl_file && !certs) {
		set_err(err, errlen, "a CRL needs certificate mode");
		return RSEC_E_CONFIG;
	}
	if (psk && (!a->psk || a->psk_len < 32 || a->psk_len > 64 || !a->psk_identity)) {
		set_err(err, errlen, "PSK mode needs a 32..64 byte key and an identity");
		return RSEC_E_CONFIG;
	}
	if (a->aead != RSEC_AEAD_DEFAULT && a->aead != RSEC_AEAD_AES_256_GCM &&
	    a->aead != RSEC_AEAD_CHACHA20_POLY1305) {
		set_err(err, errlen, "unknown AEAD");
		return RSEC_E_INVAL;
	}
	uint32_t slot = or_default(a->slot_size, RSEC_DEFAULT_SLOT_SIZE);
	uint32_t slots = or_default(a->recv_slots, RSEC_DEFAULT_RECV_SLOTS);
	if (slot < RSEC_SLOT_SIZE_MIN || slot > RSEC_SLOT_SIZE_MAX || slots < RSEC_RECV_SLOTS_MIN ||
	    slots > RSEC_RECV_SLOTS_MAX) {
		set_err(err, errlen, "slot_size must be 4096..1048576 and recv_slots 4..4096");
		return RSEC_E_RANGE;
	}
	if (a->max_msg > (1u << 30)) {
		set_err(err, errlen, "max_msg must be at most 1 GiB");
		return RSEC_E_RANGE;
	}
	return 0;
}

/* The fields read only when their comp_mask bit is set. */
static RSEC_MUST_CHECK int ctx_check_optional(const struct rsec_ctx_attr *a, char *err, size_t errlen)
{
	if ((a->comp_mask & RSEC_CTX_ATTR_GRANT_MODE) && a->grant_mode != RSEC_GRANT_AUTO &&
	    a->grant_mode != RSEC_GRANT_MW && a->grant_mode != RSEC_GRANT_MR) {
		set_err(err, errlen, "unknown grant mode");
		return RSEC_E_INVAL;
	}
	if ((a->comp_mask & RSEC_CTX_ATTR_POLL) && a->poll_mode != RSEC_POLL_EVENT && a->poll_mode != RSEC_POLL_BUSY) {
		set_err(err, errlen, "unknown poll mode");
		return RSEC_E_INVAL;
	}
	/* Counts whose range is 0..max (0: the default). */
	const struct {
		uint32_t bit, value, max;
		const char *name;
	} counts[] = {
		{ RSEC_CTX_ATTR_QP_POOL, a->qp_pool, RSEC_QPOOL_MAX, "qp_pool" },
		{ RSEC_CTX_ATTR_DEPTH, a->max_inflight, RSEC_MAX_INFLIGHT, "max_inflight" },
		{ RSEC_CTX_ATTR_QPS, a->max_qps, RSEC_MAX_QPS, "max_qps" },
		{ RSEC_CTX_ATTR_RESUME, a->tls_resume_s, RSEC_MAX_RESUME_S, "tls_resume_s" },
		{ RSEC_CTX_ATTR_REBUILDS, a->rebuilds_per_min, RSEC_MAX_REBUILDS, "rebuilds_per_min" },
		{ RSEC_CTX_ATTR_GRACE, a->resume_grace_ms, RSEC_MAX_RESUME_GRACE_MS, "resume_grace_ms" },
		{ RSEC_CTX_ATTR_REKEY, a->rekey_s, RSEC_MAX_REKEY_S, "rekey_s" },
	};
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		if ((a->comp_mask & counts[i].bit) && counts[i].value > counts[i].max) {
			if (err && errlen)
				snprintf(err, errlen, "%s must be 0..%u", counts[i].name, counts[i].max);
			return RSEC_E_RANGE;
		}
	}
	if ((a->comp_mask & RSEC_CTX_ATTR_REKEY) && a->rekey_bytes > RSEC_MAX_REKEY_BYTES) {
		if (err && errlen)
			snprintf(err, errlen, "rekey_bytes must be 0..%llu", (unsigned long long)RSEC_MAX_REKEY_BYTES);
		return RSEC_E_RANGE;
	}
	return 0;
}

/* Sizes, depths and limits from a (checked): each unset one gets its default. */
static void ctx_set_limits(struct rsec_ctx *ctx, const struct rsec_ctx_attr *a)
{
	ctx->is_server = a->is_server;
	ctx->aead = a->aead == RSEC_AEAD_CHACHA20_POLY1305 ? RSEC_AEAD_CHACHA20POLY1305 : RSEC_AEAD_AES256GCM;
	ctx->recv_slots = or_default(a->recv_slots, RSEC_DEFAULT_RECV_SLOTS);
	ctx->slot_size = or_default(a->slot_size, RSEC_DEFAULT_SLOT_SIZE);
	ctx->max_msg = or_default(a->max_msg, RSEC_DEFAULT_MAX_MSG);
	ctx->handshake_timeout_ms = a->handshake_timeout_ms > 0 ? a->handshake_timeout_ms : RSEC_DEFAULT_HANDSHAKE_MS;
	ctx->max_inflight = (a->comp_mask & RSEC_CTX_ATTR_DEPTH) ? or_default(a->max_inflight, RSEC_DEFAULT_INFLIGHT)
								  : RSEC_DEFAULT_INFLIGHT;
	ctx->poll_mode = (a->comp_mask & RSEC_CTX_ATTR_POLL) ? a->poll_mode : RSEC_POLL_EVENT;
	/* A server takes further queue pairs only if its application asked for them: one that never calls
	 * rsec_conn_add_qp must not hold queue pairs its peers asked for and nobody uses. */
	ctx->max_qps = (a->comp_mask & RSEC_CTX_ATTR_QPS) ? or_default(a->max_qps, RSEC_DEFAULT_QPS)
			: a->is_server ? 1 : RSEC_DEFAULT_QPS;
	/* Here 0 means none: an application may want a failed data path to close, as before. */
	ctx->rebuilds_per_min = (a->comp_mask & RSEC_CTX_ATTR_REBUILDS) ? a->rebuilds_per_min : RSEC_DEFAULT_REBUILDS;
	ctx->resume_grace_ms = (a->comp_mask & RSEC_CTX_ATTR_GRACE) ? a->resume_grace_ms : 0;
	ctx->rekey_s = (a->comp_mask & RSEC_CTX_ATTR_REKEY) ? a->rekey_s : RSEC_DEFAULT_REKEY_S;
	ctx->rekey_bytes = (a->comp_mask & RSEC_CTX_ATTR_REKEY) ? a->rekey_bytes : RSEC_DEFAULT_REKEY_BYTES;
	ctx->pool_opts = (struct rsec_qpool_opts){
		.size = rsec_qpool_size(a->comp_mask & RSEC_CTX_ATTR_QP_POOL, a->qp_pool, a->is_server),
		.burn_max = RSEC_QPOOL_BURN_DEFAULT,
		.send_wr = rsec_data_send_wr(ctx->max_inflight),
		.recv_wr = ctx->recv_slots,
	};
}

/* Who may connect (admission hook, allow rules), how grants are made, where the audit log goes. */
static RSEC_MUST_CHECK int ctx_set_policy(struct rsec_ctx *ctx, const struct rsec_ctx_attr *a, char *err,
					  size_t errlen)
{
	ctx->admit = a->admit;
	ctx->admit_arg = a->admit_arg;
	if (a->comp_mask & RSEC_CTX_ATTR_ALLOW)
		RSEC_GUARD(rsec_authz_set_load(&ctx->allow, a->allow, a->n_allow, err, errlen));
	ctx->grant_mode = (a->comp_mask & RSEC_CTX_ATTR_GRANT_MODE) ? a->grant_mode : RSEC_GRANT_AUTO;
	if ((a->comp_mask & RSEC_CTX_ATTR_AUDIT) && a->audit_path) {
		int rc = rsec_audit_open(a->audit_path, &ctx->audit);
		if (rc < 0) {
			if (err && errlen)
				snprintf(err, errlen, "cannot open the audit log %s: %s", a->audit_path,
					 rc == RSEC_E_IO ? strerror(errno) : rsec_error_text(rc));
			return RSEC_E_CONFIG;
		}
	}
	return 0;
}

/* The credentials, copied (a reload makes a new TLS context from them), and the TLS context. */
static RSEC_MUST_CHECK int ctx_set_tls(struct rsec_ctx *ctx, const struct rsec_ctx_attr *a, char *err, size_t errlen)
{
	if (dup_opt(a->ca_file, &ctx->ca_file) || dup_opt(a->cert_file, &ctx->cert_file) ||
	    dup_opt(a->key_file, &ctx->key_file) || dup_opt(a->psk_identity, &ctx->psk_identity) ||
	    dup_opt(a->local_addr, &ctx->local_addr) ||
	    dup_opt(a->comp_mask & RSEC_CTX_ATTR_CRL ? a->crl_file : NULL, &ctx->crl_file))
		return RSEC_E_NOMEM;
	if (a->psk) {
		memcpy(ctx->psk, a->psk, a->psk_len);
		ctx->psk_len = a->psk_len;
	}
	ctx->tls_opts = (struct rsec_tls_opts){
		.is_server = a->is_server,
		.ca_file = ctx->ca_file,
		.cert_file = ctx->cert_file,
		.key_file = ctx->key_file,
		.crl_file = ctx->crl_file,
		.psk = ctx->psk_len ? ctx->psk : NULL,
		.psk_len = ctx->psk_len,
		.psk_identity = ctx->psk_identity,
		.resume_s = (a->comp_mask & RSEC_CTX_ATTR_RESUME) ? a->tls_resume_s : RSEC_DEFAULT_RESUME_S,
	};
	return rsec_tls_ctx_new(&ctx->tls_opts, &ctx->tls, err, errlen);
}

/* The device a names (by name or local address) and its QP pool; none when a names neither. */
static RSEC_MUST_CHECK int ctx_open_device(struct rsec_ctx *ctx, const struct rsec_ctx_attr *a, char *err,
					   size_t errlen)
{
	if (!a->device && !a->local_addr)
		return 0;
	int rc = rsec_dev_open(a->device, a->local_addr, &ctx->dev);
	if (rc < 0) {
		if (err && errlen)
			snprintf(err, errlen, "no usable RDMA device%s%s%s%s", a->device ? " " : "",
				 a->device ? a->device : "", a->local_addr ? " for " : "",
				 a->local_addr ? a->local_addr : "");
		return rc;
	}
	rc = rsec_qpool_new(ctx->dev, &ctx->pool_opts, &ctx->pool);
	if (rc < 0)
		set_err(err, errlen, "cannot start the QP pool");
	return rc;
}

int rsec_ctx_create(const struct rsec_ctx_attr *a, struct rsec_ctx **out, char *err, size_t errlen)
{
	if (!a || !out)
		return RSEC_E_INVAL;
	*out = NULL;
	RSEC_GUARD(ctx_check_attr(a, err, errlen));
	RSEC_GUARD(ctx_check_optional(a, err, errlen));

	struct rsec_ctx *ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return RSEC_E_NOMEM;
	ctx_set_limits(ctx, a);
	pthread_mutex_init(&ctx->dev_lock, NULL);
	pthread_mutex_init(&ctx->sessions_lock, NULL);
	pthread_mutex_init(&ctx->tls_lock, NULL);
	pthread_mutex_init(&ctx->authz_lock, NULL);
	int rc = ctx_set_policy(ctx, a, err, errlen);
	if (rc == 0)
		rc = ctx_set_tls(ctx, a, err, errlen);
	if (rc == 0)
		rc = ctx_open_device(ctx, a, err, errlen);
	if (rc < 0) {
		rsec_ctx_destroy(ctx);
		return rc;
	}
	*out = ctx;
	return 0;
}

int rsec_ctx_allow(struct rsec_ctx *ctx, const char *const *rules, uint32_t n, char *err, size_t errlen)
{
	RSEC_ENSURE_REF(ctx);
	pthread_mutex_lock(&ctx->authz_lock);
	int rc = rsec_authz_set_load(&ctx->allow, rules, n, err, errlen);
	pthread_mutex_unlock(&ctx->authz_lock);
	return rc;
}

/* Whether identity may connect; if not, why names the rules it matched none of. */
bool rsec_ctx_authorized(struct rsec_ctx *ctx, const char *identity, char *why, size_t cap)
{
	pthread_mutex_lock(&ctx->authz_lock);
	bool ok = rsec_authz_set_allows(&ctx->allow, identity);
	if (!ok)
		rsec_authz_set_describe(&ctx->allow, why, cap);
	pthread_mutex_unlock(&ctx->authz_lock);
	return ok;
}

void rsec_ctx_destroy(struct rsec_ctx *ctx)
{
	if (!ctx)
		return;
	/* Pools first: their workers use the devices. */
	rsec_qpool_free(ctx->pool);
	if (ctx->dev)
		rsec_dev_put(ctx->dev);
	for (unsigned i = 0; i < RSEC_DEV_CACHE; i++) {
		rsec_qpool_free(ctx->dev_cache[i].pool);
		if (ctx->dev_cache[i].dev)
			rsec_dev_put(ctx->dev_cache[i].dev);
	}
	pthread_mutex_destroy(&ctx->dev_lock);
	pthread_mutex_destroy(&ctx->sessions_lock);
	pthread_mutex_destroy(&ctx->tls_lock);
	pthread_mutex_destroy(&ctx->authz_lock);
	rsec_authz_set_free(&ctx->allow);
	SSL_CTX_free(ctx->tls);
	rsec_audit_close(ctx->audit);
	free(ctx->ca_file);
	free(ctx->cert_file);
	free(ctx->key_file);
	free(ctx->crl_file);
	free(ctx->psk_identity);
	free(ctx->local_addr);
	OPENSSL_cleanse(ctx->psk, sizeof(ctx->psk));
	free(ctx);
}

int rsec_ctx_tls_new(struct rsec_ctx *ctx, int fd, const struct rsec_tls_opts *o, SSL **out)
{
	pthread_mutex_lock(&ctx->tls_lock);
	int rc = rsec_tls_new(ctx->tls, fd, o, out); /* the SSL takes its own reference */
	pthread_mutex_unlock(&ctx->tls_lock);
	return rc;
}

/* The current TLS context, with a reference of the caller's (a reload may replace it meanwhile). */
static SSL_CTX *ctx_tls_ref(struct rsec_ctx *ctx)
{
	pthread_mutex_lock(&ctx->tls_lock);
	SSL_CTX *tls = ctx->tls;
	if (tls && SSL_CTX_up_ref(tls) != 1)
		tls = NULL;
	pthread_mutex_unlock(&ctx->tls_lock);
	return tls;
}

/* A record about the context itself, not one connection. */
static void ctx_audit(struct rsec_ctx *ctx, enum rsec_audit_event ev, const char *result, const char *reason)
{
	struct rsec_audit_record r = { .event = ev, .is_server = ctx->is_server, .result = result, .reason = reason };
	if (ctx->audit && rsec_audit_write(ctx->audit, &r) < 0)
		__atomic_add_fetch(&ctx->audit_errors, 1, __ATOMIC_RELAXED);
}

/* A fresh TLS context from the files ctx was made with, and a line saying what it holds. */
static RSEC_MUST_CHECK int ctx_tls_fresh(struct rsec_ctx *ctx, SSL_CTX **out, char *said, size_t cap)
{
	*out = NULL;
	if (!ctx->cert_file) {
		set_err(said, cap, "a PSK context has no files to reload");
		return RSEC_E_CONFIG;
	}
	int rc = rsec_tls_ctx_new(&ctx->tls_opts, out, said, cap);
	if (rc < 0)
		return rc;
	if (rsec_tls_own_cert_desc(*out, said, cap) < 0)
		set_err(said, cap, "certificate loaded");
	return 0;
}

int rsec_ctx_reload_files(struct rsec_ctx *ctx, char *err, size_t errlen)
{
	if (!ctx)
		return RSEC_E_INVAL;
	char said[600] = "";
	SSL_CTX *fresh = NULL;
	int rc = ctx_tls_fresh(ctx, &fresh, said, sizeof(said));
	if (rc == 0) {
		pthread_mutex_lock(&ctx->tls_lock);
		if (ctx->is_server)
			rsec_tls_keep_tickets(ctx->tls, fresh);
		SSL_CTX *old = ctx->tls;
		ctx->tls = fresh;
		pthread_mutex_unlock(&ctx->tls_lock);
		SSL_CTX_free(old); /* connections made from it hold their own references */
	} else {
		set_err(err, errlen, said[0] ? said : rsec_error_text(rc));
	}
	ctx_audit(ctx, RSEC_AUDIT_RELOAD, rc == 0 ? "ok" : "failed", said[0] ? said : rsec_error_text(rc));
	return rc;
}

void rsec_ctx_audit_reload_failed(struct rsec_ctx *ctx, const char *why)
{
	if (ctx)
		ctx_audit(ctx, RSEC_AUDIT_RELOAD, "failed", why ? why : "reload failed");
}

int rsec_ctx_own_not_after(struct rsec_ctx *ctx, int64_t *unix_s)
{
	if (!ctx || !unix_s)
		return RSEC_E_INVAL;
	SSL_CTX *tls = ctx_tls_ref(ctx);
	int rc = tls ? rsec_tls_own_not_after(tls, unix_s) : RSEC_E_CONFIG;
	SSL_CTX_free(tls);
	return rc;
}

int rsec_conn_recheck_peer(struct rsec_conn *c, char *why, size_t whylen)
{
	if (!c)
		return RSEC_E_INVAL;
	set_err(why, whylen, "");
	/* Before authentication there is no peer to recheck. */
	if (c->path.phase == PHASE_TLS || c->path.phase == PHASE_CLOSED)
		return 0;
	/* The allow rules in force now (rsec_ctx_set_allow), also while the channel is lost. */
	char rules[160] = "";
	if (c->is_server && !c->lane && !rsec_ctx_authorized(c->ctx, c->peer, rules, sizeof(rules))) {
		char reason[224];
		snprintf(reason, sizeof(reason), "no longer allowed (%s)", rules);
		rsec_conn_audit(c, RSEC_AUDIT_PEER_REVOKED, "closed", reason, NULL);
		set_err(why, whylen, reason);
		return RSEC_E_AUTH;
	}
	/* A lost channel's certificate is checked at resumption. */
	if (!rsec_chan_ssl(c->path.chan))
		return 0;
	SSL_CTX *now = ctx_tls_ref(c->ctx);
	if (!now)
		return 0;
	const char *reason = NULL;
	int rc = rsec_tls_peer_recheck(now, rsec_chan_ssl(c->path.chan), &reason);
	SSL_CTX_free(now);
	if (rc == RSEC_E_AUTH) {
		rsec_conn_audit(c, RSEC_AUDIT_PEER_REVOKED, "closed", reason, NULL);
		set_err(why, whylen, reason);
	}
	return rc;
}

int rsec_ctx_dev_for(struct rsec_ctx *ctx, const char *ip, struct rsec_dev **out)
{
	if (ctx->dev) {
		*out = rsec_dev_ref(ctx->dev);
		return 0;
	}
	int rc = RSEC_E_LIMIT;
	pthread_mutex_lock(&ctx->dev_lock);
	for (unsigned i = 0; i < RSEC_DEV_CACHE; i++) {
		struct rsec_dev_slot *s = &ctx->dev_cache[i];
		if (s->dev && strcmp(s->ip, ip) == 0) {
			*out = rsec_dev_ref(s->dev);
			rc = 0;
			break;
		}
		if (!s->dev) {
			rc = rsec_dev_open(NULL, ip, &s->dev);
			if (rc == 0) {
				rc = rsec_qpool_new(s->dev, &ctx->pool_opts, &s->pool);
				if (rc < 0) {
					rsec_dev_put(s->dev);
					s->dev = NULL;
				}
			}
			if (rc == 0) {
				snprintf(s->ip, sizeof(s->ip), "%s", ip);
				*out = rsec_dev_ref(s->dev);
			}
			break;
		}
	}
	pthread_mutex_unlock(&ctx->dev_lock);
	return rc;
}

int rsec_ctx_take_qp(struct rsec_ctx *ctx, struct rsec_dev *dev, struct rsec_qp *q)
{
	struct rsec_qpool *pool = dev == ctx->dev ? ctx->pool : NULL;

	if (!pool) {
		pthread_mutex_lock(&ctx->dev_lock);
		for (unsigned i = 0; i < RSEC_DEV_CACHE && !pool; i++)
			if (ctx->dev_cache[i].dev == dev)
				pool = ctx->dev_cache[i].pool;
		pthread_mutex_unlock(&ctx->dev_lock);
	}
	/* Every device a connection gets comes with a pool; a stray one still works, unpooled. */
	if (!pool)
		return rsec_qp_create(dev, ctx->pool_opts.send_wr, ctx->pool_opts.recv_wr, q);
	return rsec_qpool_take(pool, q);
}

int rsec_ctx_listen(struct rsec_ctx *ctx, const char *addr, uint16_t port, int backlog, struct rsec_listener **out)
{
	if (!ctx || !ctx->is_server || !out || port == 0)
		return RSEC_E_INVAL;
	*out = NULL;
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV };
	struct addrinfo *ai;
	char service[8];
	snprintf(service, sizeof(service), "%u", port);
	if (getaddrinfo(addr, service, &hints, &ai) != 0)
		return RSEC_E_INVAL;
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	int rc = RSEC_E_IO;
	if (fd < 0)
		goto out;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, backlog > 0 ? backlog : 128) < 0)
		goto out;
	struct rsec_listener *l = calloc(1, sizeof(*l));
	if (!l) {
		rc = RSEC_E_NOMEM;
		goto out;
	}
	l->ctx = ctx;
	l->fd = fd;
	fd = -1;
	*out = l;
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	freeaddrinfo(ai);
	return rc;
}

