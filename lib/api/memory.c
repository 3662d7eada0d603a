/* SPDX-License-Identifier: MIT */
/*
 * Regions of a connection: the arguments and the connection checked, then
 * path/region.c registers or maps them and path/sealed_post.c seals and
 * opens sealed transfers in them.
 */
#include <stdbool.h>

#include "path/grant.h"
#include "path/sealed_post.h"
#include "session/conn.h"

int rsec_region_reg(struct rsec_conn *c, void *addr, size_t len, unsigned access, struct rsec_region **out)
{
	if (!c || !addr || !len || !out || !rsec_region_access_valid(access))
		return RSEC_E_INVAL;
	*out = NULL;
	RSEC_GUARD(rsec_path_usable(&c->path, false));
	return rsec_region_make(&c->path, addr, len, access, out);
}

int rsec_region_alloc(struct rsec_conn *c, size_t len, unsigned access, struct rsec_region **out)
{
	if (!c || !len || len > RSEC_WIRE_GRANT_LEN_MAX || !out || !rsec_region_access_valid(access))
		return RSEC_E_INVAL;
	*out = NULL;
	RSEC_GUARD(rsec_path_usable(&c->path, false));
	return rsec_region_map(&c->path, len, access, out);
}

const char *rsec_conn_grant_mechanism(const struct rsec_conn *c)
{
	bool mr;
	if (!c || rsec_grant_use_mr(&c->path, &mr) < 0)
		return NULL;
	return mr ? "mr" : "mw2";
}

int rsec_region_seal(struct rsec_conn *c, const struct rsec_remote_grant *g, uint64_t remote_off, struct rsec_region *r,
		     size_t off, size_t plain_len)
{
	if (!c)
		return RSEC_E_INVAL;
	return rsec_sealed_region_seal(&c->path, g, remote_off, r, off, plain_len);
}

int rsec_region_open(struct rsec_conn *c, const struct rsec_remote_grant *g, struct rsec_region *r, size_t off,
		     size_t *plain_len)
{
	if (!c)
		return RSEC_E_INVAL;
	return rsec_sealed_region_open(&c->path, g, r, off, plain_len);
}

void *rsec_region_addr(const struct rsec_region *r)
{
	return r ? r->addr : NULL;
}

/* A bind or an operation over the region is in flight: the device still uses its registration, so it goes when that completes. */
void rsec_region_free(struct rsec_region *r)
{
	if (!r)
		return;
	if (r->users == 0) {
		rsec_region_destroy(r);
		return;
	}
	r->dying = true;
	r->next_dying = r->path->dying;
	r->path->dying = r;
}

size_t rsec_sealed_len(size_t plain_len)
{
	return rsec_sealed_size(plain_len);
}
