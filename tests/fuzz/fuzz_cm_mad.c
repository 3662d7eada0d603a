/* SPDX-License-Identifier: MIT */
/*
 * Target Functions: cm_mad_parse, cm_learn_msg, cm_conn_dreq, cm_dreq_build
 * (tools/attack/proto/cm_mad.c).
 * Input: one CM MAD, the payload of a UD SEND to QP1 as the sniffer hands it
 * over. Whatever parses feeds one learner, alternately as sent by either of
 * two hosts; every connection it completes must yield a DREQ for both of its
 * sides that builds and parses back to the same IDs and QPN. A parsed DREQ
 * must survive the same round trip.
 */
#include <stdint.h>
#include <stdlib.h>

#include "../../tools/attack/proto/cm_mad.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void round_trip(const struct cm_dreq *d)
{
	uint8_t mad[CM_MAD_LEN];
	struct cm_msg m;

	if (cm_dreq_build(d, mad) != 0 || cm_mad_parse(mad, sizeof(mad), &m) != 0)
		abort();
	if (m.attr_id != CM_ATTR_DREQ || m.local_comm_id != d->local_comm_id ||
	    m.remote_comm_id != d->remote_comm_id || m.qpn != d->remote_qpn)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct cm_learn learner;
	static unsigned calls;
	const uint32_t a = 0x0a4d0001, b = 0x0a4d0002;
	const struct cm_conn *done;
	struct cm_msg m;
	struct cm_dreq d;
	uint32_t peer;

	if (cm_mad_parse(data, size, &m) != 0)
		return 0;
	if (!cm_attr_name(m.attr_id) || m.qpn > 0xffffff)
		abort();
	if (m.attr_id == CM_ATTR_DREQ)
		round_trip(&(struct cm_dreq){ .local_comm_id = m.local_comm_id,
					      .remote_comm_id = m.remote_comm_id, .remote_qpn = m.qpn });
	calls++;
	cm_learn_msg(&learner, calls & 1 ? a : b, calls & 1 ? b : a, &m, &done);
	if (learner.n > CM_LEARN_MAX || (done && !done->have_rep))
		abort();
	if (!done)
		return 0;
	for (int side = 0; side < 2; side++) {
		uint32_t victim = side ? done->active_ip : done->passive_ip;
		if (cm_conn_dreq(done, victim, &d, &peer) != 0 || peer == victim)
			abort();
		round_trip(&d);
	}
	return 0;
}
