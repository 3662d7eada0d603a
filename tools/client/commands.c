/* SPDX-License-Identifier: MIT */
/*
 * rdmasec-client's commands. Every command checks its round trip: echoes
 * byte for byte, one-sided writes and reads by SHA-256 on both ends.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "app_proto.h"
#include "cli.h"
#include "client.h"

#define MAX_DATA (16u << 20)

static int fail_conn(struct client *cl, const char *what, int rc)
{
	cl->last_rc = rc;
	fprintf(stderr, "%s: %s", what, rsec_strerror(rc));
	const char *why = rsec_conn_error(cl->conn);
	if (why && *why)
		fprintf(stderr, " (%s)", why);
	fputc('\n', stderr);
	if (rsec_conn_state(cl->conn) == RSEC_CONN_CLOSED)
		cl->closed = true;
	return -1;
}

static int send_app(struct client *cl, const struct app_msg *m, const char *what)
{
	uint8_t buf[128];
	size_t n = app_encode(m, buf, sizeof(buf));
	int rc = rsec_send(cl->conn, buf, n, cl->timeout_ms);
	return rc < 0 ? fail_conn(cl, what, rc) : 0;
}

/* Receive the server's answer, expecting opcode op. */
static int recv_app(struct client *cl, uint8_t op, struct app_msg *m, const char *what)
{
	size_t len;
	int rc = rsec_recv(cl->conn, cl->buf, cl->buf_cap, &len, cl->timeout_ms);
	if (rc < 0)
		return fail_conn(cl, what, rc);
	const char *why;
	if (!app_decode(cl->buf, len, m, &why)) {
		fprintf(stderr, "%s: malformed reply from the server (%s)\n", what, why);
		return -1;
	}
	if (m->op == APP_ERROR) {
		fprintf(stderr, "%s: server error: %s\n", what, m->text);
		return -1;
	}
	if (m->op != op) {
		fprintf(stderr, "%s: unexpected %s reply\n", what, app_op_name(m->op));
		return -1;
	}
	return 0;
}

static bool printable(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isprint(p[i]))
			return false;
	return true;
}

/* "TEXT" or "-s SIZE" (that many random bytes) into a fresh buffer. */
static int command_data(const char *args, const char *what, uint8_t **out, size_t *len)
{
	if (strncmp(args, "-s ", 3) == 0) {
		uint64_t n;
		if (!cli_parse_u64(what, args + 3, 1, MAX_DATA, true, &n))
			return -1;
		*out = malloc(n);
		if (!*out || RAND_bytes(*out, (int)n) != 1) {
			fprintf(stderr, "%s: cannot make %llu random bytes\n", what, (unsigned long long)n);
			free(*out);
			return -1;
		}
		*len = n;
		return 0;
	}
	*len = strlen(args);
	if (*len == 0 || *len > MAX_DATA) {
		fprintf(stderr, "%s: give TEXT or -s SIZE\n", what);
		return -1;
	}
	*out = malloc(*len);
	if (!*out)
		return -1;
	memcpy(*out, args, *len);
	return 0;
}

static void show(const char *what, const uint8_t *data, size_t len, const char *verdict)
{
	if (len <= 200 && printable(data, len))
		printf("%s: %.*s\n", what, (int)len, (const char *)data);
	else
		printf("%s: %zu bytes, %s\n", what, len, verdict);
	fflush(stdout);
}

static int cmd_send(struct client *cl, const char *args)
{
	uint8_t *data;
	size_t len;
	if (command_data(args, "send", &data, &len) < 0)
		return -1;
	int rc = -1;
	if (len + 1 > cl->buf_cap)
		goto out;
	cl->buf[0] = APP_ECHO;
	memcpy(cl->buf + 1, data, len);
	int err = rsec_send(cl->conn, cl->buf, len + 1, cl->timeout_ms);
	if (err < 0) {
		fail_conn(cl, "send", err);
		goto out;
	}
	struct app_msg m;
	if (recv_app(cl, APP_ECHO_REPLY, &m, "send") < 0)
		goto out;
	if (m.payload_len != len || CRYPTO_memcmp(m.payload, data, len) != 0) {
		fprintf(stderr, "send: the echo differs from what was sent (%zu bytes back, %zu sent)\n",
			m.payload_len, len);
		goto out;
	}
	show("reply", m.payload, m.payload_len, "echo verified");
	rc = 0;
out:
	free(data);
	return rc;
}

/* "--sealed ARGS": true, and *args past the flag. */
static bool sealed_flag(const char **args)
{
	static const char flag[] = "--sealed";
	size_t n = sizeof(flag) - 1;
	if (strncmp(*args, flag, n) != 0 || ((*args)[n] && !isspace((unsigned char)(*args)[n])))
		return false;
	*args += n;
	while (isspace((unsigned char)**args))
		(*args)++;
	return true;
}

static int write_once(struct client *cl, const char *args)
{
	bool sealed = sealed_flag(&args);
	uint8_t *data;
	size_t len;
	if (command_data(args, "write", &data, &len) < 0)
		return -1;
	struct app_msg m = { .op = sealed ? APP_SEALED_WRITE_REQ : APP_WRITE_REQ, .len = len };
	struct rsec_remote_grant g;
	int rc;
	if (send_app(cl, &m, "write") < 0 || recv_app(cl, APP_WRITE_GRANTED, &m, "write") < 0)
		goto fail;
	rc = rsec_grant_wait(cl->conn, m.tag, &g, cl->timeout_ms);
	if (rc < 0) {
		fail_conn(cl, "write: no grant", rc);
		goto fail;
	}
	if (sealed != ((g.access & RSEC_GRANT_SEALED) != 0)) {
		fprintf(stderr, "write: the server granted a %s grant\n", sealed ? "plain" : "sealed");
		goto fail;
	}
	/* Sealed: ciphertext on the wire, opened by the server after it revoked the grant.
	 * Otherwise the MAC of what we wrote goes over TLS; the server revokes, then checks it. */
	rc = sealed ? rsec_write_sealed(cl->conn, &g, 0, data, len, cl->timeout_ms)
		    : rsec_write_verified(cl->conn, &g, 0, data, len, cl->timeout_ms);
	if (rc < 0) {
		fail_conn(cl, "write", rc);
		goto fail;
	}
	struct app_msg done = { .op = APP_WRITE_DONE, .tag = m.tag };
	if (send_app(cl, &done, "write") < 0 || recv_app(cl, APP_WRITE_RESULT, &m, "write") < 0)
		goto fail;
	uint8_t mine[APP_SHA256_LEN];
	app_sha256(data, len, mine);
	if (m.len != len || CRYPTO_memcmp(mine, m.sha256, sizeof(mine)) != 0) {
		fprintf(stderr, "write: the server received other bytes than were written\n");
		goto fail;
	}
	free(cl->last);
	cl->last = data;
	cl->last_len = len;
	printf(sealed ? "write: %zu bytes sealed, server opened them and verified sha256\n"
		      : "write: %zu bytes, server verified data MAC and sha256\n",
	       len);
	fflush(stdout);
	return 0;
fail:
	free(data);
	return -1;
}

/* A read's bytes, checked: against the server's hash, and against this client's last write if it made one. */
static int read_check(const struct client *cl, const struct app_msg *m, const uint8_t *data, bool sealed)
{
	uint8_t mine[APP_SHA256_LEN];
	app_sha256(data, m->len, mine);
	if (CRYPTO_memcmp(mine, m->sha256, sizeof(mine)) != 0) {
		fprintf(stderr, "read: the bytes read differ from the server's\n");
		return -1;
	}
	if (cl->last && (cl->last_len != m->len || CRYPTO_memcmp(cl->last, data, m->len) != 0)) {
		fprintf(stderr, "read: the bytes read differ from what this client wrote\n");
		return -1;
	}
	show("read", data, m->len,
	     sealed ? (cl->last ? "sealed, opened and verified against the last write" : "sealed, opened and verified")
		    : (cl->last ? "verified against the last write" : "verified"));
	return 0;
}

/* The granted read into data (span bytes: room for the tags when sealed), then READ_DONE and the check. */
static int read_granted(struct client *cl, const struct app_msg *m, const struct rsec_remote_grant *g, bool sealed,
			uint8_t *data, uint64_t span)
{
	/* Sealed: opened with the grant's key; otherwise checked against the MAC
	 * the server sent with the grant. */
	size_t got = m->len;
	int rc = sealed ? rsec_read_sealed(cl->conn, g, data, span, &got, cl->timeout_ms)
			: rsec_read_verified(cl->conn, g, data, m->len, cl->timeout_ms);
	if (rc < 0) {
		fail_conn(cl, "read", rc);
		if (!cl->closed) { /* the server lets the grant go and may grant again */
			struct app_msg done = { .op = APP_READ_DONE, .tag = m->tag }, ack;
			if (send_app(cl, &done, "read") == 0)
				(void)recv_app(cl, APP_READ_RESULT, &ack, "read: the failed read's grant");
			cl->last_rc = rc;
		}
		return -1;
	}
	if (got != m->len) {
		fprintf(stderr, "read: %zu bytes opened, the server announced %llu\n", got, (unsigned long long)m->len);
		return -1;
	}
	struct app_msg done = { .op = APP_READ_DONE, .tag = m->tag }, ack;
	if (send_app(cl, &done, "read") < 0 || recv_app(cl, APP_READ_RESULT, &ack, "read") < 0)
		return -1;
	return read_check(cl, m, data, sealed);
}

static int read_once(struct client *cl, const char *args)
{
	bool sealed = sealed_flag(&args);
	if (*args) {
		fprintf(stderr, "read: takes no arguments but --sealed\n");
		return -1;
	}
	struct app_msg m = { .op = sealed ? APP_SEALED_READ_REQ : APP_READ_REQ };
	if (send_app(cl, &m, "read") < 0 || recv_app(cl, APP_READ_GRANTED, &m, "read") < 0)
		return -1;
	if (m.len == 0 || m.len > MAX_DATA) {
		fprintf(stderr, "read: the server offers %llu bytes\n", (unsigned long long)m.len);
		return -1;
	}
	struct rsec_remote_grant g;
	int rc = rsec_grant_wait(cl->conn, m.tag, &g, cl->timeout_ms);
	if (rc < 0)
		return fail_conn(cl, "read: no grant", rc);
	uint64_t span = sealed ? rsec_sealed_len(m.len) : m.len;
	if (g.len != span || sealed != ((g.access & RSEC_GRANT_SEALED) != 0)) {
		fprintf(stderr, "read: the grant covers %llu bytes%s, the server announced %llu%s\n",
			(unsigned long long)g.len, g.access & RSEC_GRANT_SEALED ? " sealed" : "",
			(unsigned long long)m.len, sealed ? " sealed" : "");
		return -1;
	}
	uint8_t *data = malloc(span); /* sealed: room for the tags too */
	if (!data)
		return -1;
	int status = read_granted(cl, &m, &g, sealed, data, span);
	free(data);
	return status;
}

/*
 * A forged packet rebuilds the data path (rdmasec(7)): grants go with it, and
 * an operation in flight ends with RSEC_E_QP. The connection goes on, so a
 * command whose grant went with it asks for a new one, once.
 */
static int healed(struct client *cl, int (*once)(struct client *, const char *), const char *args,
		  const char *what)
{
	cl->last_rc = 0;
	if (once(cl, args) == 0)
		return 0;
	if (cl->closed || (cl->last_rc != RSEC_E_GRANT && cl->last_rc != RSEC_E_QP))
		return -1;
	fprintf(stderr, "%s: again with a new grant\n", what);
	return once(cl, args);
}

static int cmd_write(struct client *cl, const char *args)
{
	return healed(cl, write_once, args, "write");
}

static int cmd_read(struct client *cl, const char *args)
{
	return healed(cl, read_once, args, "read");
}

static int cmd_stats(struct client *cl, const char *args)
{
	(void)args;
	struct rsec_conn_stats s;
	if (rsec_conn_stats(cl->conn, &s) < 0)
		return -1;
	printf("stats: peer=%s msgs_sent=%llu msgs_received=%llu bytes_sent=%llu bytes_received=%llu "
	       "rdma_writes=%llu rdma_reads=%llu mac_failures=%llu seq_violations=%llu malformed=%llu "
	       "qp_errors=%llu rebuilds=%llu resumes=%llu\n",
	       rsec_conn_peer(cl->conn), (unsigned long long)s.msgs_sent, (unsigned long long)s.msgs_received,
	       (unsigned long long)s.bytes_sent, (unsigned long long)s.bytes_received,
	       (unsigned long long)s.rdma_writes, (unsigned long long)s.rdma_reads,
	       (unsigned long long)s.mac_failures, (unsigned long long)s.seq_violations,
	       (unsigned long long)s.malformed, (unsigned long long)s.qp_errors, (unsigned long long)s.rebuilds,
	       (unsigned long long)s.resumes);
	fflush(stdout);
	/* Then what the server counted about this client's identity, this connection included. */
	struct app_msg m = { .op = APP_STATS_REQ };
	if (send_app(cl, &m, "stats") < 0 || recv_app(cl, APP_STATS_REPLY, &m, "stats") < 0)
		return -1;
	printf("server-stats: peer=%s mac_failures=%llu seq_violations=%llu qp_errors=%llu refused_handshakes=%llu "
	       "connections=%llu\n",
	       m.text, (unsigned long long)m.stats.mac_failures, (unsigned long long)m.stats.seq_violations,
	       (unsigned long long)m.stats.qp_errors, (unsigned long long)m.stats.refused_handshakes,
	       (unsigned long long)m.stats.connections);
	fflush(stdout);
	return 0;
}

static int cmd_quit(struct client *cl, const char *args)
{
	(void)args;
	int rc = rsec_conn_close(cl->conn, "client quit");
	cl->closed = true;
	return rc < 0 ? fail_conn(cl, "quit", rc) : 0;
}

static int cmd_help(struct client *cl, const char *args);

static const struct command {
	const char *name;
	int (*run)(struct client *cl, const char *args);
	const char *help;
} commands[] = {
	{ "send", cmd_send, "send TEXT | send -s SIZE   two-sided message, echoed and compared" },
	{ "write", cmd_write, "write [--sealed] TEXT | write [--sealed] -s SIZE\n"
			      "                             one-sided RDMA WRITE through a grant; --sealed:\n"
			      "                             encrypted on the wire, opened by the server" },
	{ "read", cmd_read, "read [--sealed]            RDMA READ back what was written (--sealed: encrypted)" },
	{ "stats", cmd_stats, "stats                      this connection's counters, then the server's about us" },
	{ "quit", cmd_quit, "quit                       authenticated disconnect" },
	{ "help", cmd_help, "help                       this list" },
};

static int cmd_help(struct client *cl, const char *args)
{
	(void)cl;
	(void)args;
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		printf("  %s\n", commands[i].help);
	return 0;
}

int client_command(struct client *cl, char *line)
{
	while (isspace((unsigned char)*line))
		line++;
	size_t n = strlen(line);
	while (n && isspace((unsigned char)line[n - 1]))
		line[--n] = '\0';
	if (!*line)
		return 0;
	char *args = line + strcspn(line, " \t");
	if (*args)
		*args++ = '\0';
	while (isspace((unsigned char)*args))
		args++;
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(line, commands[i].name) == 0)
			return commands[i].run(cl, args);
	fprintf(stderr, "unknown command '%s' (try 'help')\n", line);
	return -1;
}
