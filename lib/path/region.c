/* SPDX-License-Identifier: MIT */
/*
 * Regions: memory an application registers (or has us map) to grant from
 * and to post from. Registered without remote access: their rkeys never
 * leave the process. In window mode a region also gets the registration
 * its grants' windows bind to; in fallback mode each grant registers its
 * own range (grant.c). A region in use by a bind or an operation goes when
 * that completes.
 */
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "grant.h"

int rsec_grant_use_mr(const struct rsec_path *path, bool *mr)
{
	RSEC_ENSURE(path->cfg.dev != NULL, RSEC_E_AGAIN);
	switch (path->cfg.grant_mode) {
	case RSEC_GRANT_MR:
		*mr = true;
		return 0;
	case RSEC_GRANT_MW:
		RSEC_ENSURE(path->cfg.dev->mw_type2, RSEC_E_NODEV);
		*mr = false;
		return 0;
	default:
		*mr = !path->cfg.dev->mw_type2;
		return 0;
	}
}

static RSEC_MUST_CHECK int region_register(struct rsec_path *path, struct rsec_region *r)
{
	bool mr;
	RSEC_GUARD(rsec_grant_use_mr(path, &mr));
	/* The local side of rsec_post: a READ writes into it. No remote access.
	 * Memory the process may not write (a read-only mapping) is still a
	 * source for WRITEs and READ grants. */
	r->local_mr = ibv_reg_mr(path->qp.pd, r->addr, r->len, IBV_ACCESS_LOCAL_WRITE);
	if (!r->local_mr) {
		r->local_mr = ibv_reg_mr(path->qp.pd, r->addr, r->len, 0);
		r->local_ro = true;
	}
	RSEC_ENSURE(r->local_mr != NULL, RSEC_E_VERBS);
	/* Fallback mode registers per grant; window mode binds windows to this. */
	if (mr || !(r->access & RSEC_GRANT_ACCESS_RW))
		return 0;
	return rsec_mr_reg(&path->qp, r->addr, r->len, r->access & RSEC_ACCESS_WRITE, &r->mr);
}

int rsec_region_make(struct rsec_path *path, void *addr, size_t len, unsigned access, struct rsec_region **out)
{
	*out = NULL;
	struct rsec_region *r = calloc(1, sizeof(*r));
	if (!r)
		return RSEC_E_NOMEM;
	r->path = path;
	r->serial = ++path->regions_made;
	r->addr = addr;
	r->len = len;
	r->access = access;
	int rc = region_register(path, r);
	if (rc < 0) {
		if (r->local_mr)
			(void)ibv_dereg_mr(r->local_mr);
		free(r);
		return rc;
	}
	r->next = path->regions;
	if (path->regions)
		path->regions->prev = r;
	path->regions = r;
	*out = r;
	return 0;
}

static void region_deregister(struct rsec_region *r)
{
	if (r->mr)
		(void)ibv_dereg_mr(r->mr);
	if (r->local_mr)
		(void)ibv_dereg_mr(r->local_mr);
	r->mr = r->local_mr = NULL;
}

/* Out of its path's list of live regions (a region of a torn-down path is in none). */
static void region_unlink(struct rsec_region *r)
{
	if (!r->path)
		return;
	if (r->path->regions == r)
		r->path->regions = r->next;
	else if (r->prev)
		r->prev->next = r->next;
	if (r->next)
		r->next->prev = r->prev;
	r->prev = r->next = NULL;
}

void rsec_region_teardown(struct rsec_path *path)
{
	while (path->regions) {
		struct rsec_region *r = path->regions;
		region_unlink(r);
		region_deregister(r);
		r->path = NULL;
		r->users = 0; /* nothing over it can complete any more */
	}
}

/*
 * Map len bytes at a random page-aligned address in the lower half of the
 * 47-bit user space, so a peer's address says nothing about the next one.
 * MAP_FIXED_NOREPLACE never clobbers an existing mapping; after a few
 * collisions the kernel's choice is the fallback.
 */
static void *map_random(size_t len)
{
	long page = sysconf(_SC_PAGESIZE);
	for (int tries = 0; tries < 8 && page > 0; tries++) {
		uint64_t r;
		if (RAND_bytes((uint8_t *)&r, sizeof(r)) != 1)
			break;
		uintptr_t hint = (uintptr_t)((UINT64_C(1) << 40) + (r % (UINT64_C(1) << 45))) & ~(uintptr_t)(page - 1);
		void *p = mmap((void *)hint, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (p == (void *)hint)
			return p;
		if (p != MAP_FAILED)
			(void)munmap(p, len); /* an old kernel ignoring NOREPLACE put it elsewhere */
	}
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

int rsec_region_map(struct rsec_path *path, size_t len, unsigned access, struct rsec_region **out)
{
	*out = NULL;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t map_len = (len + page - 1) / page * page;
	void *p = map_random(map_len);
	if (!p)
		return RSEC_E_NOMEM;
	int rc = rsec_region_make(path, p, len, access, out);
	if (rc < 0) {
		(void)munmap(p, map_len);
		return rc;
	}
	(*out)->map_len = map_len;
	return 0;
}

void rsec_region_destroy(struct rsec_region *r)
{
	region_unlink(r);
	region_deregister(r);
	if (r->map_len) {
		OPENSSL_cleanse(r->addr, r->map_len);
		(void)munmap(r->addr, r->map_len);
	}
	free(r);
}

void rsec_region_unuse(struct rsec_path *path, struct rsec_region *r)
{
	if (!r || r->users == 0 || --r->users > 0 || !r->dying)
		return;
	for (struct rsec_region **p = &path->dying; *p; p = &(*p)->next_dying) {
		if (*p == r) {
			*p = r->next_dying;
			break;
		}
	}
	rsec_region_destroy(r);
}
