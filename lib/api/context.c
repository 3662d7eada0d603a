/* SPDX-License-Identifier: MIT */
/*
 * A context's exported calls (rdmasec.h, "Contexts" and "Rotation"): create and
 * free, the allow rules, reloads and their audit, rechecking a peer, and the
 * listener, over session/ctx.c.
 */
#include <stdlib.h>
#include <unistd.h>

#include "session/conn.h"

uint64_t rsec_ctx_audit_errors(const struct rsec_ctx *ctx)
{
	return ctx ? __atomic_load_n(&ctx->audit_errors, __ATOMIC_RELAXED) : 0;
}

const char *rsec_ctx_device(const struct rsec_ctx *ctx)
{
	return ctx && ctx->dev ? ctx->dev->name : NULL;
}

int rsec_listener_fd(const struct rsec_listener *l)
{
	return l ? l->fd : -1;
}

void rsec_listener_free(struct rsec_listener *l)
{
	if (!l)
		return;
	close(l->fd);
	free(l);
}

int rsec_ctx_new(const struct rsec_ctx_attr *a, struct rsec_ctx **out, char *err, size_t errlen)
{
	return rsec_ctx_create(a, out, err, errlen);
}

int rsec_ctx_set_allow(struct rsec_ctx *ctx, const char *const *rules, uint32_t n, char *err, size_t errlen)
{
	return rsec_ctx_allow(ctx, rules, n, err, errlen);
}

void rsec_ctx_free(struct rsec_ctx *ctx)
{
	rsec_ctx_destroy(ctx);
}

int rsec_ctx_reload(struct rsec_ctx *ctx, char *err, size_t errlen)
{
	return rsec_ctx_reload_files(ctx, err, errlen);
}

void rsec_ctx_reload_failed(struct rsec_ctx *ctx, const char *why)
{
	rsec_ctx_audit_reload_failed(ctx, why);
}

int rsec_ctx_cert_expiry(struct rsec_ctx *ctx, int64_t *unix_s)
{
	return rsec_ctx_own_not_after(ctx, unix_s);
}

int rsec_conn_check_peer(struct rsec_conn *c, char *why, size_t whylen)
{
	return rsec_conn_recheck_peer(c, why, whylen);
}

int rsec_listen(struct rsec_ctx *ctx, const char *addr, uint16_t port, int backlog, struct rsec_listener **out)
{
	return rsec_ctx_listen(ctx, addr, port, backlog, out);
}
