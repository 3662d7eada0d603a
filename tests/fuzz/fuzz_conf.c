/* SPDX-License-Identifier: MIT */
/*
 * Target functions: rsec_conf_parse_string, rsec_conf_set, rsec_conf_check.
 * The input is the file text (NUL-terminated copy). If it holds NUL bytes,
 * the pieces after the first are also fed to rsec_conf_set as
 * section, key, value. Must never crash, and a failed parse must leave the
 * configuration untouched and explain itself.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';

	struct rsec_conf *c = malloc(sizeof(*c)), *before = malloc(sizeof(*c));
	if (!c || !before)
		abort();
	rsec_conf_defaults(c);
	*before = *c;
	char err[160];
	err[0] = '\0';
	int rc = rsec_conf_parse_string(c, text, err, sizeof(err));
	if (rc < 0 && (memcmp(c, before, sizeof(*c)) != 0 || err[0] == '\0'))
		abort();
	if (rc == 0) {
		/* Every string field stays terminated within its bounds. */
		if (!memchr(c->listen_addr, 0, sizeof(c->listen_addr)) || !memchr(c->device, 0, sizeof(c->device)) ||
		    !memchr(c->cert, 0, sizeof(c->cert)) || !memchr(c->psk_identity, 0, sizeof(c->psk_identity)))
			abort();
		if (c->listen_port == 0 || c->max_clients == 0 || c->slot_size < 4096)
			abort();
		err[0] = '\0';
		if (rsec_conf_check(c, err, sizeof(err)) < 0 && err[0] == '\0')
			abort();
	}

	const char *section = memchr(text, '\0', size) ? text + strlen(text) + 1 : NULL;
	if (section && section < text + size) {
		const char *key = section + strlen(section) + 1;
		if (key < text + size) {
			const char *value = key + strlen(key) + 1;
			if (value <= text + size) {
				*before = *c;
				rc = rsec_conf_set(c, section, key, value, err, sizeof(err));
				if (rc < 0 && memcmp(c, before, sizeof(*c)) != 0)
					abort();
			}
		}
	}
	free(c);
	free(before);
	free(text);
	return 0;
}
