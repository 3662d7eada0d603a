/* SPDX-License-Identifier: MIT */
/*
 * mem-access (ReDMArk A3) backends: how the attacker connects to one kind of
 * victim as an ordinary client, learns its own registrations, and tries
 * (rkey, address) guesses. Every wrong guess costs the connection it was
 * made on (rxe NAKs it and moves both QPs to the error state), so a backend
 * makes each guess on a fresh connection.
 */
#ifndef RSEC_MEMACC_H
#define RSEC_MEMACC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memacc_model.h"

#define MEMACC_READ_MAX 4096u
#define MEMACC_BATCH_MAX 32u

struct memacc_cfg {
	const char *dst;       /* victim address (dotted IPv4, already scope-checked) */
	uint16_t port;
	const char *source;    /* local address for the control connection; NULL: the kernel's choice */
	const char *device;    /* naive: own RDMA device; NULL: the first */
	int gid_index;
	uint32_t read_len;     /* bytes each guess READs */
	int timeout_ms;        /* per connection set-up and per completion */
	const char *certs;     /* rdmasec: directory with ca.pem, NAME.pem, NAME.key */
	const char *identity;  /* rdmasec: NAME */
};

struct memacc_own {
	uint32_t rkey;
	uint64_t addr;
	uint64_t len;
};

enum memacc_verdict {
	MEMACC_HIT,       /* the READ completed: the bytes are in data */
	MEMACC_MISS,      /* refused by the victim (remote access error): the connection is gone */
	MEMACC_NOANSWER,  /* no verdict (timeout, set-up failure): worth retrying */
};

struct memacc_try {
	struct memacc_candidate c;
	enum memacc_verdict v;
	char status[96];           /* what the attacker's side saw, e.g. the completion status */
	uint8_t data[MEMACC_READ_MAX];
};

struct memacc_backend {
	const char *name;
	size_t batch_max;
	/* 0 or -1 (said why on stderr). */
	int (*open)(const struct memacc_cfg *cfg, void **state);
	/* Two consecutive registrations of the attacker's own at the victim. */
	int (*calibrate)(void *state, struct memacc_own own[2]);
	/* Try n guesses (n <= batch_max), filling each t[i].v/status/data. -1 on a local failure. */
	int (*guess)(void *state, struct memacc_try *t, size_t n);
	/* WRITE len bytes at (rkey, addr), READ them back into back. 0, 1 (refused; status says why), -1. */
	int (*write)(void *state, uint32_t rkey, uint64_t addr, const uint8_t *buf, size_t len, uint8_t *back,
		     char status[static 96]);
	void (*close)(void *state);
};

extern const struct memacc_backend memacc_naive_backend;
extern const struct memacc_backend memacc_rdmasec_backend;

#endif /* RSEC_MEMACC_H */
