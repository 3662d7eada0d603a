/* SPDX-License-Identifier: MIT */
/*
 * Stand-in for libFuzzer when the fuzz targets are built as ordinary tests:
 * feeds every file of a seed corpus directory to LLVMFuzzerTestOneInput, then
 * deterministic mutations of each (bit flips, truncations, splices, random
 * bytes), so parser regressions show up in every "make check".
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { REPLAY_MAX_INPUT = 1 << 16, MUTATIONS_PER_SEED = 4000 };

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng_next(void)
{
	/* xorshift64*: reproducible, not for secrets. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static void mutate(uint8_t *buf, size_t *len, const uint8_t *seed, size_t seed_len)
{
	memcpy(buf, seed, seed_len);
	*len = seed_len;
	unsigned rounds = 1 + rng_next() % 4;
	for (unsigned r = 0; r < rounds; r++) {
		switch (rng_next() % 5) {
		case 0: /* flip a bit */
			if (*len)
				buf[rng_next() % *len] ^= (uint8_t)(1u << (rng_next() % 8));
			break;
		case 1: /* truncate */
			if (*len)
				*len = rng_next() % *len;
			break;
		case 2: /* overwrite a byte with an edge value */
			if (*len) {
				static const uint8_t edges[] = { 0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff };
				buf[rng_next() % *len] = edges[rng_next() % sizeof(edges)];
			}
			break;
		case 3: /* append random bytes */
			for (unsigned n = rng_next() % 16; n && *len < REPLAY_MAX_INPUT; n--)
				buf[(*len)++] = (uint8_t)rng_next();
			break;
		default: /* duplicate a slice */
			if (*len > 1 && *len * 2 <= REPLAY_MAX_INPUT) {
				size_t at = rng_next() % *len, n = rng_next() % (*len - at) + 1;
				memmove(buf + at + n, buf + at, *len - at);
				*len += n;
			}
			break;
		}
	}
}

static int replay_file(const char *path, uint8_t *seed, uint8_t *work)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return -1;
	}
	size_t n = fread(seed, 1, REPLAY_MAX_INPUT, f);
	int bad = ferror(f);
	fclose(f);
	if (bad) {
		fprintf(stderr, "%s: read error\n", path);
		return -1;
	}
	LLVMFuzzerTestOneInput(seed, n);
	for (int i = 0; i < MUTATIONS_PER_SEED; i++) {
		size_t len;
		mutate(work, &len, seed, n);
		LLVMFuzzerTestOneInput(work, len);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
		return 2;
	}
	DIR *dir = opendir(argv[1]);
	if (!dir) {
		perror(argv[1]);
		return 2;
	}
	uint8_t *seed = malloc(REPLAY_MAX_INPUT), *work = malloc(2 * REPLAY_MAX_INPUT);
	if (!seed || !work) {
		fprintf(stderr, "out of memory\n");
		return 2;
	}
	unsigned files = 0;
	int rc = 0;
	struct dirent *de;
	while ((de = readdir(dir))) {
		if (de->d_name[0] == '.')
			continue;
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", argv[1], de->d_name);
		if (replay_file(path, seed, work) < 0)
			rc = 1;
		files++;
	}
	closedir(dir);
	free(seed);
	free(work);
	if (files == 0) {
		fprintf(stderr, "%s: empty corpus\n", argv[1]);
		return 1;
	}
	printf("replayed %u seeds, %d mutations each\n", files, MUTATIONS_PER_SEED);
	return rc;
}
