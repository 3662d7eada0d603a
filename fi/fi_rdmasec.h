/* SPDX-License-Identifier: MIT */
/*
 * What the rdmasec libfabric provider adds to libfabric's API
 * (fi_rdmasec(7)). Include after <rdma/fi_endpoint.h>.
 */
#ifndef FI_RDMASEC_H
#define FI_RDMASEC_H

/*
 * fi_getopt(&ep->fid, FI_OPT_ENDPOINT, FI_RDMASEC_OPT_PEER_IDENTITY, buf, &len):
 * the peer's authenticated identity as rdmasec names it (rsec_conn_peer(3):
 * a certificate's first URI or DNS subjectAltName, else its subject DN),
 * NUL-terminated. Available on a server's endpoint opened from a CONNREQ's
 * info (before fi_accept or fi_reject: decide on it), and on a client's
 * endpoint once FI_CONNECTED was read. len in: the size of buf; out: the
 * bytes written, NUL included (-FI_ETOOSMALL with the size needed).
 * -FI_ENOTCONN before there is a peer.
 */
#define FI_RDMASEC_OPT_PEER_IDENTITY 0x52530001

#endif /* FI_RDMASEC_H */
