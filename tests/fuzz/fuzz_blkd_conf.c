/* SPDX-License-Identifier: MIT */
/*
 * Target functions: blkd_conf_parse_string, blkd_conf_export_spec,
 * blkd_conf_check (rdmasec-blkd's configuration). The input is the file text
 * (NUL-terminated copy); the piece after its first NUL byte, if any, is
 * also fed to blkd_conf_export_spec. Must never crash; a failure explains
 * itself; every string stays terminated within its field.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "blkd_conf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_terminated(const struct blkd_conf *c)
{
	if (!memchr(c->listen_addr, 0, sizeof(c->listen_addr)) || !memchr(c->audit_log, 0, sizeof(c->audit_log)) ||
	    c->n_exports > BLKD_EXPORTS_MAX)
		abort();
	for (unsigned i = 0; i < c->n_exports; i++) {
		const struct blkd_export_conf *x = &c->exports[i];
		if (!blk_name_valid(x->name) || !memchr(x->path, 0, sizeof(x->path)) || x->n_rw > BLKD_IDS_MAX ||
		    x->n_ro > BLKD_IDS_MAX || (x->block_size != 512 && x->block_size != 4096))
			abort();
		for (unsigned j = 0; j < x->n_rw; j++)
			if (!x->rw_ids[j][0] || !memchr(x->rw_ids[j], 0, BLKD_ID_LEN))
				abort();
	}
	if (c->queue_depth < 1 || c->queue_depth > BLK_QD_MAX || c->max_transfer > BLK_TRANSFER_MAX ||
	    c->max_inline > BLK_INLINE_MAX)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	struct blkd_conf *c = blkd_conf_new();
	if (!text || !c)
		abort();
	memcpy(text, data, size);
	text[size] = '\0';
	char err[200];
	err[0] = '\0';
	if (blkd_conf_parse_string(c, text, err, sizeof(err)) < 0 && err[0] == '\0')
		abort();
	size_t first = strlen(text);
	if (first < size) {
		err[0] = '\0';
		if (blkd_conf_export_spec(c, text + first + 1, err, sizeof(err)) < 0 && err[0] == '\0')
			abort();
	}
	err[0] = '\0';
	if (blkd_conf_check(c, err, sizeof(err)) < 0 && err[0] == '\0')
		abort();
	check_terminated(c);
	free(c);
	free(text);
	return 0;
}
