/* SPDX-License-Identifier: MIT */
/*
 * Keys an application may have of a connection (rdmasec.h, "Keys"): the rekey
 * count and generation, keys derived from a generation's secret, and TLS
 * exporter keys of the control channel.
 */
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/ssl.h>

#include "base/rekey.h"
#include "path/chan.h"
#include "session/conn.h"

uint64_t rsec_conn_rekeys(const struct rsec_conn *c)
{
	return c ? c->path.rk.count : 0;
}

uint64_t rsec_conn_key_id(const struct rsec_conn *c)
{
	return c ? rsec_rekey_id(&c->path.rk) : 0;
}

int rsec_conn_derive_key(const struct rsec_conn *c, uint64_t id, const char *label, const void *context,
			 size_t context_len, void *out, size_t out_len)
{
	static const char ours[] = "rdmasec";
	RSEC_ENSURE(c && label && out && strncmp(label, ours, sizeof(ours) - 1) != 0, RSEC_E_INVAL);
	RSEC_ENSURE(c->path.rk.have_secret, RSEC_E_AGAIN);
	const uint8_t *secret = rsec_rekey_secret_of(&c->path.rk, id);
	RSEC_ENSURE(secret != NULL, RSEC_E_RANGE);
	return rsec_rekey_export(secret, label, context, context_len, out, out_len);
}

/*
 * Keys for an application's own sealed transfers through long-lived grants
 * (rdmasec-blk): from the session's TLS exporter, never sent. The library's
 * own labels are refused, so no application key equals one of ours.
 */
int rsec_conn_export_key(const struct rsec_conn *c, const char *label, const void *context, size_t context_len,
			 void *out, size_t out_len)
{
	static const char ours[] = "EXPORTER-rdmasec";
	RSEC_ENSURE(c && label && out && (context || !context_len), RSEC_E_INVAL);
	size_t label_len = strlen(label);
	RSEC_ENSURE(label_len > 9 && label_len <= 64 && strncmp(label, "EXPORTER-", 9) == 0 &&
			    strncmp(label, ours, sizeof(ours) - 1) != 0,
		    RSEC_E_INVAL);
	RSEC_ENSURE(out_len >= 16 && out_len <= 64 && context_len <= 64, RSEC_E_INVAL);
	SSL *ssl = rsec_chan_ssl(c->path.chan);
	RSEC_ENSURE(c->path.phase == PHASE_ESTABLISHED && ssl && SSL_version(ssl) == TLS1_3_VERSION, RSEC_E_AGAIN);
	if (SSL_export_keying_material(ssl, out, out_len, label, label_len, context, context_len,
				       context_len > 0) != 1) {
		OPENSSL_cleanse(out, out_len);
		return RSEC_E_TLS;
	}
	return 0;
}
