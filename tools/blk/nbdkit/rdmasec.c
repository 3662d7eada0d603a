/* SPDX-License-Identifier: MIT */
/*
 * nbdkit-rdmasec-plugin: an rdmasec-blk export as an NBD export
 * (nbdkit rdmasec server=HOST[:PORT] certs=DIR export=NAME). Each NBD
 * connection opens its own rdmasec-blk session; nbdkit's threads share it
 * through the client library's synchronous layer (its callers drive it in turn).
 */
#define NBDKIT_API_VERSION 2
#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL
#include <nbdkit-plugin.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blk_client.h"
#include "busy_poll.h"
#include "cli.h"

static struct blk_client_opts opts = {
	.queues = 1, .queue_depth = 32, .reconnect_ms = 30000, .busy_poll_us = BLK_CLIENT_BUSY_POLL_US,
};
static char host[256];

static int parse_uint(const char *what, const char *value, unsigned min, unsigned max, unsigned *out)
{
	if (nbdkit_parse_unsigned(what, value, out) < 0)
		return -1;
	if (*out < min || *out > max) {
		nbdkit_error("%s: %s is not in %u..%u", what, value, min, max);
		return -1;
	}
	return 0;
}

/* rekey_s= and rekey_bytes=: the bounds and parser of rdmasec-client's --rekey-s and --rekey-bytes. */
static int parse_rekey(const char *key, const char *value)
{
	uint64_t v;
	bool seconds = strcmp(key, "rekey_s") == 0;
	if (!cli_parse_u64(key, value, 1, seconds ? RSEC_MAX_REKEY_S : RSEC_MAX_REKEY_BYTES, !seconds, &v)) {
		nbdkit_error("%s=%s: refused (the reason is above)", key, value);
		return -1;
	}
	if (seconds)
		opts.rekey_s = (uint32_t)v;
	else
		opts.rekey_bytes = v;
	return 0;
}

static int parse_server(const char *value)
{
	uint16_t port = BLK_DEFAULT_PORT;
	if (!cli_parse_listen(value, host, sizeof(host), &port)) {
		nbdkit_error("server=%s: not HOST, HOST:PORT or [IPv6]:PORT", value);
		return -1;
	}
	opts.host = host;
	opts.port = port;
	return 0;
}

static int rdmasec_config(const char *key, const char *value)
{
	unsigned v;
	if (strcmp(key, "server") == 0)
		return parse_server(value);
	if (strcmp(key, "certs") == 0)
		return (opts.certs_dir = nbdkit_absolute_path(value)) ? 0 : -1;
	if (strcmp(key, "export") == 0) {
		if (!blk_name_valid(value)) {
			nbdkit_error("export=%s: 1..%u of [A-Za-z0-9._-]", value, BLK_NAME_MAX);
			return -1;
		}
		opts.export_name = value;
		return 0;
	}
	if (strcmp(key, "server-name") == 0)
		return (opts.server_name = value) ? 0 : -1;
	if (strcmp(key, "device") == 0)
		return (opts.device = value) ? 0 : -1;
	if (strcmp(key, "source") == 0)
		return (opts.source = value) ? 0 : -1;
	if (strcmp(key, "queues") == 0 && parse_uint("queues", value, 1, BLK_QUEUES_MAX, &v) == 0)
		return opts.queues = (uint16_t)v, 0;
	if (strcmp(key, "depth") == 0) /* the old spelling */
		fprintf(stderr, "nbdkit-rdmasec-plugin: depth= is deprecated: it is queue_depth= now\n");
	if ((strcmp(key, "queue_depth") == 0 || strcmp(key, "depth") == 0) &&
	    parse_uint(key, value, 1, BLK_QD_MAX, &v) == 0)
		return opts.queue_depth = (uint16_t)v, 0;
	if (strcmp(key, "timeout") == 0 && parse_uint("timeout", value, 1, 3600000, &v) == 0)
		return opts.timeout_ms = (int)v, 0;
	if (strcmp(key, "reconnect") == 0 && parse_uint("reconnect", value, 0, 3600000, &v) == 0)
		return opts.reconnect_ms = v, 0;
	if (strcmp(key, "rekey_s") == 0 || strcmp(key, "rekey_bytes") == 0)
		return parse_rekey(key, value);
	if (strcmp(key, "pool_window") == 0 && parse_uint("pool_window", value, 1, BLK_POOL_WINDOW_S_MAX, &v) == 0)
		return opts.pool_window_s = v, 0;
	if (strcmp(key, "busy_poll_us") == 0 && parse_uint("busy_poll_us", value, 0, BUSY_POLL_MAX_US, &v) == 0)
		return opts.busy_poll_us = v, 0;
	if (strcmp(key, "max-io") == 0) {
		int64_t n = nbdkit_parse_size(value);
		if (n < 512 || n > BLK_TRANSFER_MAX) {
			nbdkit_error("max-io=%s: not a size in 512..%u", value, BLK_TRANSFER_MAX);
			return -1;
		}
		opts.io_max = (uint32_t)n;
		return 0;
	}
	if (strcmp(key, "queues") && strcmp(key, "queue_depth") && strcmp(key, "depth") && strcmp(key, "timeout") &&
	    strcmp(key, "reconnect") &&
	    strcmp(key, "pool_window") && strcmp(key, "busy_poll_us"))
		nbdkit_error("unknown parameter \"%s\" (see nbdkit-rdmasec-plugin(1))", key);
	return -1;
}

static int rdmasec_config_complete(void)
{
	if (!opts.host || !opts.certs_dir || !opts.export_name) {
		nbdkit_error("server=, certs= and export= are required");
		return -1;
	}
	return 0;
}

/*
 * What NBD can say of an errno (nbdkit sends EPERM, EIO, ENOMEM, ENOSPC,
 * EINVAL and ESHUTDOWN, anything else as EINVAL): the target's refusals are
 * policy, so EPERM; a session that ended is EIO.
 */
static int nbd_errno(int e)
{
	switch (e) {
	case EROFS:
	case EACCES:
	case EPERM:
		return EPERM;
	case ENOSPC:
	case ENOMEM:
	case EINVAL:
		return e;
	case ERANGE:
		return EINVAL;
	default:
		return EIO;
	}
}

/* The target's word for an errno of one of its statuses, or NULL (EIO is two of them). */
static const char *status_word(int e)
{
	for (uint16_t st = 1; e != EIO && st <= BLK_S_MAX; st++)
		if (blk_status_errno(st) == e)
			return blk_status_name(st);
	return NULL;
}

/*
 * A write-open the target refuses read-only (the export or the identity may
 * only read) is opened again without asking to write and served read-only:
 * NBD's word for it is the export's READ_ONLY flag, on which nbd-client makes
 * the device read-only and clients refuse writes with EPERM. Failing the open
 * instead would say nothing: nbdkit 1.32 answers every failed open with
 * NBD_REP_ERR_UNKNOWN and no message ("Unknown error returned by server").
 */
static void *rdmasec_open(int readonly)
{
	struct blk_client_opts o = opts;
	o.write = !readonly;
	char err[512] = "";
	struct blk_sync *y;
	int rc = blk_sync_start(&o, &y, err, sizeof(err));
	if (rc == -EROFS && o.write) {
		nbdkit_error("rdmasec: %s: serving it read-only (writes fail with EPERM)", err);
		o.write = false;
		err[0] = '\0';
		rc = blk_sync_start(&o, &y, err, sizeof(err));
	}
	if (rc < 0) {
		nbdkit_error("rdmasec: %s", err[0] ? err : strerror(-rc));
		nbdkit_set_error(nbd_errno(-rc));
		return NULL;
	}
	return y;
}

static void rdmasec_close(void *h)
{
	char why[256];
	unsigned n = blk_sync_reconnects(h, why, sizeof(why));
	if (n)
		nbdkit_debug("rdmasec: %u session(s) opened again; the last one replaced ended: %s", n, why);
	blk_sync_stop(h);
}

static int64_t rdmasec_get_size(void *h)
{
	return (int64_t)blk_sync_info(h)->size;
}

static int rdmasec_can_write(void *h)
{
	return !(blk_sync_info(h)->flags & BLK_EXPORT_READ_ONLY);
}

static int rdmasec_can_flush(void *h)
{
	return !!(blk_sync_info(h)->flags & BLK_EXPORT_FLUSH);
}

static int rdmasec_can_fua(void *h)
{
	return blk_sync_info(h)->flags & BLK_EXPORT_FUA ? NBDKIT_FUA_NATIVE : NBDKIT_FUA_EMULATE;
}

/*
 * Each NBD connection is a session of its own, and the target's FLUSH reaches
 * the export's storage whichever session sent it: every write the export
 * completed before it, from any session, is made durable (docs/blk.md,
 * OPEN_REPLY's FLUSH). That is NBD's multi-conn, offered only with
 * reconnect=0: with more than one connection the kernel sends a request that
 * timed out again on another one, and a write this plugin sent again later,
 * over the session that replaced its own, could land over a newer write.
 */
static int rdmasec_can_multi_conn(void *h)
{
	return opts.reconnect_ms == 0 && (blk_sync_info(h)->flags & BLK_EXPORT_FLUSH);
}

static int rdmasec_block_size(void *h, uint32_t *minimum, uint32_t *preferred, uint32_t *maximum)
{
	const struct blk_open_reply *r = blk_sync_info(h);
	*minimum = r->block_size;
	*preferred = r->block_size > 4096 ? r->block_size : 4096;
	*maximum = 0xffffffffu; /* the library splits long requests */
	return 0;
}

/* nbdkit gets the errno NBD has for it, and the reason: the status (the target's, or the
 * client's own check of the same rule), or why the session ended. */
static int fail(void *h, const char *what, int rc, uint64_t offset, uint32_t count)
{
	char why[256];
	const char *word = status_word(-rc);
	blk_sync_error(h, why, sizeof(why));
	if (word)
		nbdkit_error("rdmasec: %s of %u bytes at %llu refused: %s", what, count, (unsigned long long)offset,
			     word);
	else
		nbdkit_error("rdmasec: %s of %u bytes at %llu: %s%s%s", what, count, (unsigned long long)offset,
			     strerror(-rc), why[0] ? ": " : "", why);
	nbdkit_set_error(nbd_errno(-rc));
	return -1;
}

static int rdmasec_pread(void *h, void *buf, uint32_t count, uint64_t offset, uint32_t flags)
{
	(void)flags;
	int rc = blk_sync_pread(h, buf, count, offset);
	return rc < 0 ? fail(h, "read", rc, offset, count) : 0;
}

static int rdmasec_pwrite(void *h, const void *buf, uint32_t count, uint64_t offset, uint32_t flags)
{
	int rc = blk_sync_pwrite(h, buf, count, offset, flags & NBDKIT_FLAG_FUA);
	return rc < 0 ? fail(h, "write", rc, offset, count) : 0;
}

static int rdmasec_flush(void *h, uint32_t flags)
{
	(void)flags;
	int rc = blk_sync_flush(h);
	return rc < 0 ? fail(h, "flush", rc, 0, 0) : 0;
}

static struct nbdkit_plugin plugin = {
	.name = "rdmasec",
	.longname = "rdmasec-blk client",
	.version = "1",
	.description = "an rdmasec-blk export (secure block storage over RDMA) as an NBD export",
	.config = rdmasec_config,
	.config_complete = rdmasec_config_complete,
	.config_help = "server=HOST[:PORT]   the rdmasec-blkd target (required; port default 7472)\n"
		       "certs=DIR            ca.pem, client.pem, client.key (required)\n"
		       "export=NAME          the export (required)\n"
		       "server-name=NAME     name the target's certificate must carry (default: HOST)\n"
		       "queues=N queue_depth=N  I/O queues, commands in flight per queue (default 1, 32)\n"
		       "max-io=SIZE          largest command (default 256K)\n"
		       "rekey_s=S rekey_bytes=B   renew the keys every S seconds (default 3600, 1..604800)\n"
		       "                     and every B bytes (K/M/G; default 64G, 1..128G)\n"
		       "pool_window=S        the target's key to the I/O slots changes every S seconds\n"
		       "                     (default 10, 1..86400)\n"
		       "busy_poll_us=US      with 1..4 commands in flight, poll completions up to US before\n"
		       "                     sleeping (default 2000, 0..10000)\n"
		       "reconnect=MS         a session that ends is replaced within MS, what was in\n"
		       "                     flight sent again (default 30000; 0: fail at once)\n"
		       "device=NAME source=ADDR timeout=MS",
	.magic_config_key = NULL,
	.open = rdmasec_open,
	.close = rdmasec_close,
	.get_size = rdmasec_get_size,
	.can_write = rdmasec_can_write,
	.can_flush = rdmasec_can_flush,
	.can_fua = rdmasec_can_fua,
	.can_multi_conn = rdmasec_can_multi_conn,
	.block_size = rdmasec_block_size,
	.pread = rdmasec_pread,
	.pwrite = rdmasec_pwrite,
	.flush = rdmasec_flush,
	.errno_is_preserved = 0,
};

NBDKIT_REGISTER_PLUGIN(plugin)
