/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <inttypes.h>
#include <string.h>
#include <sys/socket.h>

#include "common/attack.h"
#include "sniff_report.h"

static void json_add_ip(struct json_object *o, const char *key, uint32_t ip)
{
	char s[16];

	json_add_str(o, key, ipv4_str(ip, s));
}

/* A TCP flow's two ends, as exchanges and streams both name them. */
static void json_add_flow(struct json_object *o, uint32_t src, uint16_t sport, uint32_t dst, uint16_t dport)
{
	json_add_ip(o, "src", src);
	json_add_u64(o, "sport", sport);
	json_add_ip(o, "dst", dst);
	json_add_u64(o, "dport", dport);
}

static const char *gid_str(const uint8_t gid[16], char buf[static INET6_ADDRSTRLEN])
{
	if (!inet_ntop(AF_INET6, gid, buf, INET6_ADDRSTRLEN))
		snprintf(buf, INET6_ADDRSTRLEN, "?");
	return buf;
}

/* A field the capture may not have seen: its value, or an explicit null. */
static void json_add_hex_or_null(struct json_object *o, const char *key, bool known, uint64_t val)
{
	if (known)
		json_add_hex(o, key, val);
	else
		json_add_null(o, key);
}

static void json_add_u64_or_null(struct json_object *o, const char *key, bool known, uint64_t val)
{
	if (known)
		json_add_u64(o, key, val);
	else
		json_add_null(o, key);
}

static void json_add_bool_or_null(struct json_object *o, const char *key, bool known, bool val)
{
	if (known)
		json_add_bool(o, key, val);
	else
		json_add_null(o, key);
}

static const char *opcode_name(uint8_t op)
{
	const char *name = "?";

	if (roce_opcode_info(op, NULL, &name) != 0)
		return "?";
	return name;
}

static void json_conn(struct json_object *a, const struct sniff_conn *c)
{
	struct json_object *o = json_append_object(a), *list;

	json_add_ip(o, "src", c->src);
	json_add_ip(o, "dst", c->dst);
	json_add_hex(o, "dest_qpn", c->dqpn);
	json_add_u64(o, "packets", c->packets);
	json_add_u64(o, "payload_bytes", c->payload_bytes);
	json_add_u64(o, "requests", c->req.count);
	json_add_u64(o, "responses", c->resp.count);
	list = json_add_array(o, "opcodes");
	for (uint8_t op = 0; op < SNIFF_OPCODES; op++) {
		if (!c->opcodes[op])
			continue;
		struct json_object *e = json_append_object(list);
		json_add_u64(e, "opcode", op);
		json_add_str(e, "name", opcode_name(op));
		json_add_u64(e, "packets", c->opcodes[op]);
	}
	json_add_hex_or_null(o, "first_psn", c->req.count, c->req.first);
	json_add_hex_or_null(o, "last_psn", c->req.count, c->req.max);
	json_add_hex_or_null(o, "next_psn", c->req.count, c->next_psn);
	json_add_hex_or_null(o, "response_first_psn", c->resp.count, c->resp.first);
	json_add_hex_or_null(o, "response_last_psn", c->resp.count, c->resp.max);
	json_add_hex_or_null(o, "peer_qpn", c->has_peer, c->peer_qpn);
	list = json_add_array(o, "reths");
	for (size_t k = 0; k < c->nranges; k++) {
		const struct sniff_range *r = &c->ranges[k];
		struct json_object *e = json_append_object(list);
		json_add_hex(e, "rkey", r->rkey);
		json_add_hex(e, "va", r->va);
		json_add_hex(e, "end", r->end);
		json_add_u64(e, "length", r->end - r->va);
		json_add_u64(e, "count", r->reths);
		json_add_bool(e, "in_plaintext", r->in_plaintext);
	}
	json_add_u64(o, "reths_dropped", c->ranges_dropped);
	json_add_bool(o, "plaintext_exchange", c->plaintext);
	json_add_u64_or_null(o, "exchange", c->plaintext, c->exchange);
}

static void json_exchange(struct json_object *a, size_t id, const struct sniff_exchange *e)
{
	struct json_object *o = json_append_object(a);
	char g[INET6_ADDRSTRLEN];

	json_add_u64(o, "id", id);
	json_add_str(o, "format", sniff_format_name(e->p.format));
	json_add_flow(o, e->src, e->sport, e->dst, e->dport);
	json_add_u64(o, "count", e->count);
	json_add_hex(o, "lid", e->p.lid);
	json_add_hex(o, "qpn", e->p.qpn);
	json_add_hex(o, "psn", e->p.psn);
	json_add_str(o, "gid", gid_str(e->p.gid, g));
	json_add_bool(o, "gid_is_src", e->gid_is_src);
	json_add_hex_or_null(o, "rkey", e->p.has_rkey, e->p.rkey);
	json_add_hex_or_null(o, "va", e->p.has_rkey, e->p.va);
	json_add_u64_or_null(o, "len", e->p.has_len, e->p.len);
	json_add_bool(o, "qpn_seen", e->qpn_seen);
	json_add_bool(o, "psn_seen", e->psn_seen);
	json_add_bool_or_null(o, "rkey_seen", e->p.has_rkey, e->rkey_seen);
	json_add_bool_or_null(o, "va_seen", e->p.has_rkey, e->va_seen);
}

static void json_stream(struct json_object *a, const struct sniff_stream *t)
{
	struct json_object *o = json_append_object(a);

	json_add_flow(o, t->src, t->sport, t->dst, t->dport);
	json_add_u64(o, "bytes", t->bytes);
	json_add_u64(o, "gaps", t->gaps);
	json_add_bool(o, "tls", t->tls);
	json_add_u64(o, "messages", t->messages);
}

static void count_summary(const struct sniff_state *s, uint64_t *plain_conns, uint64_t *rkeys,
			  uint64_t *rkeys_plain)
{
	*plain_conns = *rkeys = *rkeys_plain = 0;
	for (size_t i = 0; i < s->nconns; i++) {
		*plain_conns += s->conns[i].plaintext;
		for (size_t k = 0; k < s->conns[i].nranges; k++) {
			(*rkeys)++;
			*rkeys_plain += s->conns[i].ranges[k].in_plaintext;
		}
	}
}

void sniff_report_json(FILE *f, const struct sniff_source *src, const struct sniff_state *s)
{
	struct json_object *o = json_new_object(), *list;
	uint64_t plain_conns, rkeys, rkeys_plain;

	count_summary(s, &plain_conns, &rkeys, &rkeys_plain);
	json_add_str(o, "cmd", "sniff");
	json_add_str(o, "source", src->name);
	json_add_bool(o, "live", src->live);
	json_add_str(o, "linktype", src->linktype);
	json_add_u64(o, "frames", s->st.frames);
	json_add_u64(o, "bytes", s->st.bytes);
	json_add_u64(o, "malformed", s->st.malformed);
	json_add_u64(o, "not_ip", s->st.not_ip);
	json_add_u64(o, "fragments", s->st.fragments);
	json_add_u64(o, "roce_packets", s->st.roce);
	json_add_u64(o, "roce_malformed", s->st.roce_malformed);
	json_add_u64(o, "icrc_bad", s->st.icrc_bad);
	json_add_u64(o, "tcp_segments", s->st.tcp_segments);
	json_add_u64(o, "tcp_payload_bytes", s->st.tcp_payload);
	json_add_u64(o, "untracked", s->st.untracked);
	json_add_u64(o, "plaintext_connections", plain_conns);
	json_add_u64(o, "reth_ranges", rkeys);
	json_add_u64(o, "reth_ranges_in_plaintext", rkeys_plain);
	list = json_add_array(o, "connections");
	for (size_t i = 0; i < s->nconns; i++)
		json_conn(list, &s->conns[i]);
	list = json_add_array(o, "exchanges");
	for (size_t i = 0; i < s->nex; i++)
		json_exchange(list, i, &s->ex[i]);
	list = json_add_array(o, "tcp_streams");
	for (size_t i = 0; i < s->nstreams; i++)
		json_stream(list, &s->streams[i]);
	json_write(o, f);
}

static void text_opcodes(FILE *f, const struct sniff_conn *c)
{
	bool first = true;

	for (uint8_t op = 0; op < SNIFF_OPCODES; op++) {
		if (!c->opcodes[op])
			continue;
		fprintf(f, "%s%u", first ? "" : ",", op);
		first = false;
	}
}

static void text_conn(FILE *f, const struct sniff_conn *c)
{
	char a[16], b[16], line[64];

	snprintf(line, sizeof(line), "%s -> %s", ipv4_str(c->src, a), ipv4_str(c->dst, b));
	fprintf(f, "  %-27s 0x%06x %8" PRIu64 " %8" PRIu64 " %8" PRIu64 "  ", line, c->dqpn, c->packets,
		c->req.count, c->resp.count);
	if (c->req.count)
		fprintf(f, "0x%06x 0x%06x 0x%06x  ", c->req.first, c->req.max, c->next_psn);
	else
		fprintf(f, "%-8s %-8s %-8s  ", "-", "-", "-");
	if (c->has_peer)
		fprintf(f, "0x%06x  ", c->peer_qpn);
	else
		fprintf(f, "%-8s  ", "-");
	if (c->plaintext)
		fprintf(f, "yes (#%zu)  ", c->exchange);
	else
		fprintf(f, "%-9s ", "no");
	text_opcodes(f, c);
	fputc('\n', f);
	for (size_t k = 0; k < c->nranges; k++) {
		const struct sniff_range *r = &c->ranges[k];
		fprintf(f, "      RETH rkey 0x%08x  VA 0x%" PRIx64 "..0x%" PRIx64 " (%" PRIu64 " bytes, %" PRIu64
			" RETHs)  rkey in plaintext: %s\n", r->rkey, r->va, r->end, r->end - r->va, r->reths,
			r->in_plaintext ? "YES" : "no");
	}
	if (c->ranges_dropped)
		fprintf(f, "      (%" PRIu64 " more RETHs in ranges beyond the %d kept)\n", c->ranges_dropped,
			SNIFF_MAX_RANGES);
}

static const char *yes_no(bool has, bool v)
{
	return !has ? "-" : v ? "yes" : "no";
}

static void text_exchange(FILE *f, size_t id, const struct sniff_exchange *e)
{
	char a[16], b[16], g[INET6_ADDRSTRLEN];

	fprintf(f, "  #%zu %s  %s:%u -> %s:%u  (x%" PRIu64 ")\n", id, sniff_format_name(e->p.format),
		ipv4_str(e->src, a), e->sport, ipv4_str(e->dst, b), e->dport, e->count);
	fprintf(f, "      qpn 0x%06x  psn 0x%06x  lid 0x%04x  gid %s", e->p.qpn, e->p.psn, e->p.lid,
		gid_str(e->p.gid, g));
	if (e->p.has_rkey)
		fprintf(f, "  rkey 0x%08x  va 0x%" PRIx64, e->p.rkey, e->p.va);
	if (e->p.has_len)
		fprintf(f, "  len %u", e->p.len);
	fprintf(f, "\n      on the wire: qpn %s, first psn %s, rkey in a RETH %s, va in range %s, gid = sender %s\n",
		yes_no(true, e->qpn_seen), yes_no(true, e->psn_seen), yes_no(e->p.has_rkey, e->rkey_seen),
		yes_no(e->p.has_rkey, e->va_seen), yes_no(true, e->gid_is_src));
}

void sniff_report_text(FILE *f, const struct sniff_source *src, const struct sniff_state *s)
{
	uint64_t plain_conns, rkeys, rkeys_plain;

	count_summary(s, &plain_conns, &rkeys, &rkeys_plain);
	fprintf(f, "%s %s (%s): %" PRIu64 " frames, %" PRIu64 " RoCEv2 packets (%" PRIu64 " malformed, %" PRIu64
		" bad ICRC), %" PRIu64 " TCP segments (%" PRIu64 " payload bytes)",
		src->live ? "live capture on" : "capture", src->name, src->linktype, s->st.frames, s->st.roce,
		s->st.roce_malformed, s->st.icrc_bad, s->st.tcp_segments, s->st.tcp_payload);
	if (s->st.malformed || s->st.fragments || s->st.untracked)
		fprintf(f, "; %" PRIu64 " malformed frames, %" PRIu64 " IP fragments, %" PRIu64 " beyond the tables",
			s->st.malformed, s->st.fragments, s->st.untracked);
	fputs("\n\n", f);

	fprintf(f, "RC connections (%zu; %" PRIu64 " with parameters told in plaintext):\n", s->nconns, plain_conns);
	if (s->nconns)
		fprintf(f, "  %-27s %-8s %8s %8s %8s  %-8s %-8s %-8s  %-8s  %-9s %s\n", "src -> dst", "dest QPN",
			"packets", "requests", "resp", "firstPSN", "lastPSN", "nextPSN", "peer QPN", "plaintext",
			"opcodes");
	for (size_t i = 0; i < s->nconns; i++)
		text_conn(f, &s->conns[i]);
	fprintf(f, "\nPlaintext exchanges (%zu):\n", s->nex);
	for (size_t i = 0; i < s->nex; i++)
		text_exchange(f, i, &s->ex[i]);
	fprintf(f, "\nTCP streams (%zu):\n", s->nstreams);
	for (size_t i = 0; i < s->nstreams; i++) {
		const struct sniff_stream *t = &s->streams[i];
		char a[16], b[16];
		fprintf(f, "  %s:%u -> %s:%u  %" PRIu64 " bytes%s%s, %" PRIu64 " exchange messages\n",
			ipv4_str(t->src, a), t->sport, ipv4_str(t->dst, b), t->dport, t->bytes,
			t->tls ? ", TLS" : "", t->gaps ? ", with gaps" : "", t->messages);
	}
	fprintf(f, "\nRETH rkeys: %" PRIu64 " (rkey, VA range) seen, %" PRIu64 " of them also in TCP plaintext\n",
		rkeys, rkeys_plain);
}
