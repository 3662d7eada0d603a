/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "share.h"

struct share *share_join(struct share **list, const char *identity)
{
	size_t len = strlen(identity);
	if (len >= BLKD_ID_LEN)
		return NULL; /* the target refuses such an identity before it gets here */
	for (struct share *sh = *list; sh; sh = sh->next)
		if (strcmp(sh->identity, identity) == 0) {
			sh->sessions++;
			return sh;
		}
	struct share *sh = calloc(1, sizeof(*sh));
	if (!sh)
		return NULL;
	memcpy(sh->identity, identity, len + 1);
	sh->sessions = 1;
	sh->next = *list;
	if (*list)
		(*list)->prev = sh;
	*list = sh;
	return sh;
}

void share_leave(struct share **list, struct share *sh)
{
	if (--sh->sessions)
		return;
	if (*list == sh)
		*list = sh->next;
	else
		sh->prev->next = sh->next;
	if (sh->next)
		sh->next->prev = sh->prev;
	free(sh);
}

static void turn_start(struct share *sh, uint64_t turn)
{
	if (sh->turn != turn) {
		sh->turn = turn;
		sh->turn_bytes = 0;
	}
}

bool share_turn_left(struct share *sh, uint64_t turn, uint64_t per_turn)
{
	turn_start(sh, turn);
	return sh->turn_bytes < per_turn;
}

void share_turn_spend(struct share *sh, uint64_t turn, uint64_t bytes)
{
	turn_start(sh, turn);
	sh->turn_bytes += bytes;
}
