/* SPDX-License-Identifier: MIT */
#ifndef RSEC_BLK_CLI_H
#define RSEC_BLK_CLI_H

#include <stdbool.h>
#include <stdint.h>

#include "blk_client.h"

/* What every subcommand's options fill in. */
struct blk_cli {
	struct blk_client_opts conn;
	char host[256];
	/* bench */
	const char *rw;
	uint64_t bs, runtime_s, ramp_s, size, seed, offset, length;
	bool verify, json, fua, length_set;
};

int blk_bench_main(struct blk_cli *c);
int blk_info_main(struct blk_cli *c);
int blk_read_main(struct blk_cli *c);
int blk_write_main(struct blk_cli *c);

/* Open the session the options name; prints why not. */
int blk_cli_open(struct blk_cli *c, struct blk_session **s);

#endif
