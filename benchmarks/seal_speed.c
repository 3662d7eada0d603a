/* SPDX-License-Identifier: MIT */
/*
 * seal-speed: what sealing costs per message and per byte, natively (no
 * RDMA device): rsec_seal_frame and rsec_open_frame (lib/seal.h), the calls
 * the data path makes for every two-sided fragment, for each AEAD and size;
 * then rsec_sealed_seal and rsec_sealed_open (lib/sealed.h), what a sealed
 * grant's transfer costs each end on top of the RDMA operation.
 * Times are this thread's CPU time, as `openssl speed` counts its own, so
 * benchmarks/report.py can set them against it on a loaded machine too.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/rand.h>

#include "cli.h"
#include "seal.h"
#include "sealed.h"

#define BATCH 64 /* frames sealed, then opened, per round */
static const uint32_t sizes[] = { 64, 4096, 65536 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static const struct {
	const char *name;
	enum rsec_aead_alg alg;
} aeads[] = {
	{ "aes-256-gcm", RSEC_AEAD_AES256GCM },
	{ "chacha20-poly1305", RSEC_AEAD_CHACHA20POLY1305 },
};
#define NAEADS (sizeof(aeads) / sizeof(aeads[0]))

struct figures {
	double seal_ns, open_ns; /* per message */
	uint64_t messages;
};

static uint64_t cpu_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* A client's tx and a server's rx from one random secret: what one direction of a connection holds. */
static int pair_new(enum rsec_aead_alg alg, struct rsec_seal *client, struct rsec_seal *server)
{
	uint8_t secret[RSEC_SEAL_SECRET_LEN];
	if (RAND_bytes(secret, sizeof(secret)) != 1)
		return RSEC_E_CRYPTO;
	int rc = rsec_seal_from_secret(client, secret, false, alg);
	if (rc == 0)
		rc = rsec_seal_from_secret(server, secret, true, alg);
	return rc;
}

/* One round: BATCH frames sealed, then opened in order; the two times add up separately. */
static int round_trip(struct rsec_seal *client, struct rsec_seal *server, uint32_t size, uint8_t *pt,
		      uint8_t *frames, uint64_t *seal_ns, uint64_t *open_ns)
{
	size_t frame_cap = size + RSEC_SEAL_OVERHEAD, lens[BATCH];
	uint64_t t0 = cpu_ns();
	for (int i = 0; i < BATCH; i++)
		RSEC_GUARD(rsec_seal_frame(client->tx, 1, RSEC_SEAL_FLAG_FIRST | RSEC_SEAL_FLAG_LAST, pt, size,
					   frames + i * frame_cap, frame_cap, &lens[i]));
	uint64_t t1 = cpu_ns();
	for (int i = 0; i < BATCH; i++) {
		struct rsec_seal_hdr h;
		RSEC_GUARD(rsec_open_frame(server->rx, frames + i * frame_cap, lens[i], &h, pt, size));
	}
	*seal_ns += t1 - t0;
	*open_ns += cpu_ns() - t1;
	return 0;
}

static int measure(enum rsec_aead_alg alg, uint32_t size, double seconds, struct figures *f)
{
	struct rsec_seal client = { 0 }, server = { 0 };
	uint8_t *pt = calloc(1, size), *frames = malloc((size_t)BATCH * (size + RSEC_SEAL_OVERHEAD));
	uint64_t seal_ns = 0, open_ns = 0, budget = (uint64_t)(seconds * 1e9);
	int rc = pt && frames ? pair_new(alg, &client, &server) : RSEC_E_NOMEM;
	f->messages = 0;
	while (rc == 0 && seal_ns + open_ns < budget) {
		rc = round_trip(&client, &server, size, pt, frames, &seal_ns, &open_ns);
		f->messages += BATCH;
	}
	f->seal_ns = f->messages ? (double)seal_ns / (double)f->messages : 0;
	f->open_ns = f->messages ? (double)open_ns / (double)f->messages : 0;
	rsec_seal_free(&client);
	rsec_seal_free(&server);
	free(pt);
	free(frames);
	return rc;
}

/* Sealed grants: one transfer of these sizes, sealed in place then opened in place. */
static const uint32_t transfer_sizes[] = { 4096, 65536, 1u << 20 };
#define NTRANSFERS (sizeof(transfer_sizes) / sizeof(transfer_sizes[0]))

static int measure_transfer(enum rsec_aead_alg alg, uint32_t size, double seconds, struct figures *f)
{
	uint8_t key[RSEC_SEALED_KEY_LEN];
	struct rsec_sealed_params p = { .alg = alg, .grant_id = 1, .plain_len = size };
	uint8_t *buf = calloc(1, rsec_sealed_len(size));
	uint64_t seal_ns = 0, open_ns = 0, budget = (uint64_t)(seconds * 1e9);
	int rc = buf && RAND_bytes(key, sizeof(key)) == 1 ? 0 : RSEC_E_NOMEM;
	f->messages = 0;
	while (rc == 0 && seal_ns + open_ns < budget) {
		uint64_t t0 = cpu_ns();
		rc = rsec_sealed_seal(key, &p, buf);
		uint64_t t1 = cpu_ns();
		if (rc == 0)
			rc = rsec_sealed_open(key, &p, buf);
		seal_ns += t1 - t0;
		open_ns += cpu_ns() - t1;
		f->messages++;
	}
	f->seal_ns = f->messages ? (double)seal_ns / (double)f->messages : 0;
	f->open_ns = f->messages ? (double)open_ns / (double)f->messages : 0;
	free(buf);
	return rc;
}

static int transfers(double seconds, bool json)
{
	if (json)
		printf("], \"sealed_transfers\": [\n");
	for (size_t a = 0; a < NAEADS; a++) {
		for (size_t i = 0; i < NTRANSFERS; i++) {
			struct figures f;
			int rc = measure_transfer(aeads[a].alg, transfer_sizes[i], seconds, &f);
			if (rc < 0) {
				fprintf(stderr, "seal-speed: sealed %s, %u bytes: %s\n", aeads[a].name, transfer_sizes[i],
					rsec_strerror(rc));
				return rc;
			}
			bool last = a + 1 == NAEADS && i + 1 == NTRANSFERS;
			if (json)
				printf("    {\"aead\": \"%s\", \"bytes\": %u, \"transfers\": %llu, \"seal_ns\": %.2f, "
				       "\"open_ns\": %.2f}%s\n",
				       aeads[a].name, transfer_sizes[i], (unsigned long long)f.messages, f.seal_ns, f.open_ns,
				       last ? "" : ",");
			else
				printf("%-18s %7u B  sealed grant: seal %10.1f ns (%6.3f ns/B)  open %10.1f ns (%6.3f ns/B)\n",
				       aeads[a].name, transfer_sizes[i], f.seal_ns, f.seal_ns / transfer_sizes[i], f.open_ns,
				       f.open_ns / transfer_sizes[i]);
		}
	}
	return 0;
}

/* Least squares over the sizes: cost = fixed + per_byte * size. */
static void fit(const struct figures f[NSIZES], bool open, double *fixed, double *per_byte)
{
	double sx = 0, sy = 0, sxx = 0, sxy = 0, n = NSIZES;
	for (size_t i = 0; i < NSIZES; i++) {
		double x = sizes[i], y = open ? f[i].open_ns : f[i].seal_ns;
		sx += x;
		sy += y;
		sxx += x * x;
		sxy += x * y;
	}
	*per_byte = (n * sxy - sx * sy) / (n * sxx - sx * sx);
	*fixed = (sy - *per_byte * sx) / n;
}

static void print_text(size_t a, const struct figures f[NSIZES])
{
	double fixed, per_byte;
	for (size_t i = 0; i < NSIZES; i++)
		printf("%-18s %6u B  seal %9.1f ns (%6.3f ns/B)  open %9.1f ns (%6.3f ns/B)\n", aeads[a].name,
		       sizes[i], f[i].seal_ns, f[i].seal_ns / sizes[i], f[i].open_ns, f[i].open_ns / sizes[i]);
	fit(f, false, &fixed, &per_byte);
	printf("%-18s seal: %.1f ns per message + %.3f ns per byte\n", aeads[a].name, fixed, per_byte);
}

static void print_json(size_t a, const struct figures f[NSIZES], bool last)
{
	double sf, sb, of, ob;
	fit(f, false, &sf, &sb);
	fit(f, true, &of, &ob);
	printf("    {\"aead\": \"%s\", \"seal_fixed_ns\": %.2f, \"seal_per_byte_ns\": %.4f, "
	       "\"open_fixed_ns\": %.2f, \"open_per_byte_ns\": %.4f, \"sizes\": [\n",
	       aeads[a].name, sf, sb, of, ob);
	for (size_t i = 0; i < NSIZES; i++)
		printf("      {\"bytes\": %u, \"messages\": %llu, \"seal_ns\": %.2f, \"open_ns\": %.2f}%s\n", sizes[i],
		       (unsigned long long)f[i].messages, f[i].seal_ns, f[i].open_ns, i + 1 < NSIZES ? "," : "");
	printf("    ]}%s\n", last ? "" : ",");
}

static void usage(FILE *f)
{
	fprintf(f, "usage: seal-speed [--json] [--seconds S]\n"
		   "Seals and opens frames of 64, 4096 and 65536 bytes with each AEAD for S CPU seconds\n"
		   "each (default 1; 1..60), and prints the cost per message and per byte; then the\n"
		   "same for sealed-grant transfers of 4 KiB, 64 KiB and 1 MiB.\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' }, { "seconds", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' }, { 0 },
	};
	bool json = false;
	uint64_t seconds = 1;
	int c;
	while ((c = getopt_long(argc, argv, "js:h", opts, NULL)) != -1) {
		if (c == 'j')
			json = true;
		else if (c == 's' && cli_parse_u64("--seconds", optarg, 1, 60, false, &seconds))
			continue;
		else {
			usage(c == 'h' ? stdout : stderr);
			return c == 'h' ? 0 : 2;
		}
	}
	if (json)
		printf("{\"tool\": \"seal-speed\", \"cpu_time\": \"thread\", \"aeads\": [\n");
	for (size_t a = 0; a < NAEADS; a++) {
		struct figures f[NSIZES];
		for (size_t i = 0; i < NSIZES; i++) {
			int rc = measure(aeads[a].alg, sizes[i], (double)seconds, &f[i]);
			if (rc < 0) {
				fprintf(stderr, "seal-speed: %s, %u bytes: %s\n", aeads[a].name, sizes[i], rsec_strerror(rc));
				return 1;
			}
		}
		if (json)
			print_json(a, f, a + 1 == NAEADS);
		else
			print_text(a, f);
	}
	if (transfers((double)seconds, json) < 0)
		return 1;
	if (json)
		printf("]}\n");
	return 0;
}
