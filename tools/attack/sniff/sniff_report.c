/* SPDX-License-Identifier: MIT */
#include <arpa/inet.h>
#include <inttypes.h>
#include <string.h>
#include <sys/socket.h>

#include "common/attack.h"
#include "sniff_report.h"

/* A small nested JSON writer: commas and nesting tracked per level. */
struct jw {
	FILE *f;
	int depth;
	bool first[8];
};

static void jw_key(struct jw *w, const char *key)
{
	if (!w->first[w->depth])
		fputc(',', w->f);
	w->first[w->depth] = false;
	if (key)
		fprintf(w->f, "\"%s\":", key);
}

static void jw_open(struct jw *w, const char *key, char bracket)
{
	jw_key(w, key);
	fputc(bracket, w->f);
	if (w->depth + 1 < (int)(sizeof(w->first) / sizeof(w->first[0])))
		w->depth++;
	w->first[w->depth] = true;
}

static void jw_close(struct jw *w, char bracket)
{
	fputc(bracket, w->f);
	if (w->depth > 0)
		w->depth--;
}

static void jw_str(struct jw *w, const char *key, const char *val)
{
	jw_key(w, key);
	fputc('"', w->f);
	for (const unsigned char *p = (const unsigned char *)val; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(w->f, "\\%c", *p);
		else if (*p < 0x20 || *p >= 0x7f)
			fprintf(w->f, "\\u%04x", *p);
		else
			fputc(*p, w->f);
	}
	fputc('"', w->f);
}

static void jw_u64(struct jw *w, const char *key, uint64_t v)
{
	jw_key(w, key);
	fprintf(w->f, "%" PRIu64, v);
}

static void jw_hex(struct jw *w, const char *key, uint64_t v)
{
	char s[24];

	snprintf(s, sizeof(s), "0x%" PRIx64, v);
	jw_str(w, key, s);
}

static void jw_bool(struct jw *w, const char *key, bool v)
{
	jw_key(w, key);
	fputs(v ? "true" : "false", w->f);
}

static void jw_null(struct jw *w, const char *key)
{
	jw_key(w, key);
	fputs("null", w->f);
}

static void jw_ip(struct jw *w, const char *key, uint32_t ip)
{
	char s[16];

	jw_str(w, key, ipv4_str(ip, s));
}

static const char *gid_str(const uint8_t gid[16], char buf[static INET6_ADDRSTRLEN])
{
	if (!inet_ntop(AF_INET6, gid, buf, INET6_ADDRSTRLEN))
		snprintf(buf, INET6_ADDRSTRLEN, "?");
	return buf;
}

static const char *opcode_name(uint8_t op)
{
	const char *name = "?";

	if (roce_opcode_info(op, NULL, &name) != 0)
		return "?";
	return name;
}

static void json_conn(struct jw *w, const struct sniff_conn *c)
{
	jw_open(w, NULL, '{');
	jw_ip(w, "src", c->src);
	jw_ip(w, "dst", c->dst);
	jw_hex(w, "dest_qpn", c->dqpn);
	jw_u64(w, "packets", c->packets);
	jw_u64(w, "payload_bytes", c->payload_bytes);
	jw_u64(w, "requests", c->req.count);
	jw_u64(w, "responses", c->resp.count);
	jw_open(w, "opcodes", '[');
	for (uint8_t op = 0; op < SNIFF_OPCODES; op++) {
		if (!c->opcodes[op])
			continue;
		jw_open(w, NULL, '{');
		jw_u64(w, "opcode", op);
		jw_str(w, "name", opcode_name(op));
		jw_u64(w, "packets", c->opcodes[op]);
		jw_close(w, '}');
	}
	jw_close(w, ']');
	if (c->req.count) {
		jw_hex(w, "first_psn", c->req.first);
		jw_hex(w, "last_psn", c->req.max);
		jw_hex(w, "next_psn", c->next_psn);
	} else {
		jw_null(w, "first_psn");
		jw_null(w, "last_psn");
		jw_null(w, "next_psn");
	}
	if (c->resp.count) {
		jw_hex(w, "response_first_psn", c->resp.first);
		jw_hex(w, "response_last_psn", c->resp.max);
	} else {
		jw_null(w, "response_first_psn");
		jw_null(w, "response_last_psn");
	}
	if (c->has_peer)
		jw_hex(w, "peer_qpn", c->peer_qpn);
	else
		jw_null(w, "peer_qpn");
	jw_open(w, "reths", '[');
	for (size_t k = 0; k < c->nranges; k++) {
		const struct sniff_range *r = &c->ranges[k];
		jw_open(w, NULL, '{');
		jw_hex(w, "rkey", r->rkey);
		jw_hex(w, "va", r->va);
		jw_hex(w, "end", r->end);
		jw_u64(w, "length", r->end - r->va);
		jw_u64(w, "count", r->reths);
		jw_bool(w, "in_plaintext", r->in_plaintext);
		jw_close(w, '}');
	}
	jw_close(w, ']');
	jw_u64(w, "reths_dropped", c->ranges_dropped);
	jw_bool(w, "plaintext_exchange", c->plaintext);
	if (c->plaintext)
		jw_u64(w, "exchange", c->exchange);
	else
		jw_null(w, "exchange");
	jw_close(w, '}');
}

static void json_exchange(struct jw *w, size_t id, const struct sniff_exchange *e)
{
	char g[INET6_ADDRSTRLEN];

	jw_open(w, NULL, '{');
	jw_u64(w, "id", id);
	jw_str(w, "format", sniff_format_name(e->p.format));
	jw_ip(w, "src", e->src);
	jw_u64(w, "sport", e->sport);
	jw_ip(w, "dst", e->dst);
	jw_u64(w, "dport", e->dport);
	jw_u64(w, "count", e->count);
	jw_hex(w, "lid", e->p.lid);
	jw_hex(w, "qpn", e->p.qpn);
	jw_hex(w, "psn", e->p.psn);
	jw_str(w, "gid", gid_str(e->p.gid, g));
	jw_bool(w, "gid_is_src", e->gid_is_src);
	if (e->p.has_rkey) {
		jw_hex(w, "rkey", e->p.rkey);
		jw_hex(w, "va", e->p.va);
	} else {
		jw_null(w, "rkey");
		jw_null(w, "va");
	}
	if (e->p.has_len)
		jw_u64(w, "len", e->p.len);
	else
		jw_null(w, "len");
	jw_bool(w, "qpn_seen", e->qpn_seen);
	jw_bool(w, "psn_seen", e->psn_seen);
	if (e->p.has_rkey) {
		jw_bool(w, "rkey_seen", e->rkey_seen);
		jw_bool(w, "va_seen", e->va_seen);
	} else {
		jw_null(w, "rkey_seen");
		jw_null(w, "va_seen");
	}
	jw_close(w, '}');
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
	struct jw w = { .f = f, .first = { true } };
	uint64_t plain_conns, rkeys, rkeys_plain;

	count_summary(s, &plain_conns, &rkeys, &rkeys_plain);
	jw_open(&w, NULL, '{');
	jw_str(&w, "cmd", "sniff");
	jw_str(&w, "source", src->name);
	jw_bool(&w, "live", src->live);
	jw_str(&w, "linktype", src->linktype);
	jw_u64(&w, "frames", s->st.frames);
	jw_u64(&w, "bytes", s->st.bytes);
	jw_u64(&w, "malformed", s->st.malformed);
	jw_u64(&w, "not_ip", s->st.not_ip);
	jw_u64(&w, "fragments", s->st.fragments);
	jw_u64(&w, "roce_packets", s->st.roce);
	jw_u64(&w, "roce_malformed", s->st.roce_malformed);
	jw_u64(&w, "icrc_bad", s->st.icrc_bad);
	jw_u64(&w, "tcp_segments", s->st.tcp_segments);
	jw_u64(&w, "tcp_payload_bytes", s->st.tcp_payload);
	jw_u64(&w, "untracked", s->st.untracked);
	jw_u64(&w, "plaintext_connections", plain_conns);
	jw_u64(&w, "reth_ranges", rkeys);
	jw_u64(&w, "reth_ranges_in_plaintext", rkeys_plain);
	jw_open(&w, "connections", '[');
	for (size_t i = 0; i < s->nconns; i++)
		json_conn(&w, &s->conns[i]);
	jw_close(&w, ']');
	jw_open(&w, "exchanges", '[');
	for (size_t i = 0; i < s->nex; i++)
		json_exchange(&w, i, &s->ex[i]);
	jw_close(&w, ']');
	jw_open(&w, "tcp_streams", '[');
	for (size_t i = 0; i < s->nstreams; i++) {
		const struct sniff_stream *t = &s->streams[i];
		jw_open(&w, NULL, '{');
		jw_ip(&w, "src", t->src);
		jw_u64(&w, "sport", t->sport);
		jw_ip(&w, "dst", t->dst);
		jw_u64(&w, "dport", t->dport);
		jw_u64(&w, "bytes", t->bytes);
		jw_u64(&w, "gaps", t->gaps);
		jw_bool(&w, "tls", t->tls);
		jw_u64(&w, "messages", t->messages);
		jw_close(&w, '}');
	}
	jw_close(&w, ']');
	jw_close(&w, '}');
	fputc('\n', f);
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
