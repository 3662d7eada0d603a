/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "cli.h"
#include "psk.h"
#include "rdmasec.h"

/*
 * Hex into psk, skipping whitespace; false unless it is PSK_MIN_LEN..PSK_MAX_LEN
 * whole bytes. Which digits they are never changes a branch.
 */
static bool decode(const uint8_t *text, size_t n, uint8_t psk[static PSK_MAX_LEN], size_t *len)
{
	unsigned bad = 0, hi = 0;
	size_t nibbles = 0;
	for (size_t i = 0; i < n && !bad; i++) {
		uint8_t ch = text[i];
		if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n')
			continue;
		if (nibbles >= 2 * PSK_MAX_LEN) {
			bad = 1;
			break;
		}
		uint8_t v = cli_hex_digit(ch, &bad);
		if (nibbles % 2 == 0)
			hi = v;
		else
			psk[nibbles / 2] = (uint8_t)(hi << 4 | v);
		nibbles++;
	}
	OPENSSL_cleanse(&hi, sizeof(hi)); /* a key nibble; a plain store may be optimised away */
	if (bad || nibbles % 2 || nibbles / 2 < PSK_MIN_LEN)
		return false;
	*len = nibbles / 2;
	return true;
}

/* The file's identity and mode: only a private regular file may hold a key. */
static int check_file(int fd, const char *path, char *err, size_t errlen)
{
	struct stat st;
	if (fstat(fd, &st) != 0) {
		snprintf(err, errlen, "PSK file '%s': cannot stat: %s", path, strerror(errno));
		return RSEC_E_IO;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "PSK file '%s' is not a regular file", path);
		return RSEC_E_CONFIG;
	}
	if (st.st_mode & 077) {
		snprintf(err, errlen, "PSK file '%s' has mode %04o; refusing a key others can access (chmod 600)", path,
			 (unsigned)(st.st_mode & 07777));
		return RSEC_E_CONFIG;
	}
	if (st.st_uid != geteuid() && st.st_uid != 0) {
		snprintf(err, errlen, "PSK file '%s' is owned by uid %u, not by us or root", path, (unsigned)st.st_uid);
		return RSEC_E_CONFIG;
	}
	return 0;
}

int psk_load(const char *path, uint8_t psk[static PSK_MAX_LEN], size_t *len, char *err, size_t errlen)
{
	char spare[1];
	if (!err || errlen == 0) {
		err = spare;
		errlen = sizeof(spare);
	}
	err[0] = '\0';
	if (!path || !psk || !len) {
		snprintf(err, errlen, "PSK file: no path");
		return RSEC_E_INVAL;
	}
	/* O_NOFOLLOW: a symlink could point anywhere; O_NONBLOCK: a FIFO must not hang us before fstat refuses it. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ELOOP)
			snprintf(err, errlen, "PSK file '%s' is a symbolic link; give the file itself", path);
		else
			snprintf(err, errlen, "PSK file '%s': cannot open: %s", path, strerror(errno));
		return RSEC_E_IO;
	}
	int rc = check_file(fd, path, err, errlen);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	/* Room for a maximal key with whitespace around every digit; a fuller buffer is too long. */
	uint8_t buf[4 * PSK_MAX_LEN + 1];
	size_t got = 0;
	while (got < sizeof(buf)) {
		ssize_t n = read(fd, buf + got, sizeof(buf) - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			snprintf(err, errlen, "PSK file '%s': cannot read: %s", path, strerror(errno));
			rc = RSEC_E_IO;
			break;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	bool ok = rc == 0 && got < sizeof(buf) && decode(buf, got, psk, len);
	OPENSSL_cleanse(buf, sizeof(buf));
	if (!ok) {
		OPENSSL_cleanse(psk, PSK_MAX_LEN);
		if (rc == 0) {
			snprintf(err, errlen, "PSK file '%s' must hold %d..%d bytes as hex", path, PSK_MIN_LEN,
				 PSK_MAX_LEN);
			rc = RSEC_E_CONFIG;
		}
	}
	return rc;
}

int psk_load_option(const char *prog, const char *path, const char *identity, uint8_t psk[static PSK_MAX_LEN],
		    size_t *len)
{
	if (!identity) {
		fprintf(stderr, "%s: --psk-file needs --psk-identity\n", prog);
		return 2;
	}
	char err[512];
	if (psk_load(path, psk, len, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return 1;
	}
	return 0;
}
