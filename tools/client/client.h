/* SPDX-License-Identifier: MIT */
#ifndef RSEC_CLIENT_H
#define RSEC_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rdmasec.h"

struct client {
	struct rsec_conn *conn;
	int timeout_ms;
	bool closed;
	uint8_t *buf;     /* one message, opcode included */
	size_t buf_cap;
	uint8_t *last;    /* what the last write sent, for read to compare */
	size_t last_len;
	int last_rc;      /* the library's code of the latest failed call */
};

/* Runs one command line; 0 if it succeeded. */
int client_command(struct client *cl, char *line);

#endif
