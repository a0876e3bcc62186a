/* bip324.h
 * Bitcoin's v2 P2P transport (BIP324), reached from the v1 framing's TCP entry
 * (packet-bitcoin-compress.c): a connection on a Bitcoin port whose first bytes are no v1
 * message header is BIP324, its bytes encrypted records (packet-bip324.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef P2PC_BIP324_H
#define P2PC_BIP324_H

#include "core/p2pc-compat.h"

/* This frame's direction of its TCP connection is BIP324.  Decided once per direction, at the
 * first bytes of it the first pass hands over (data: TCP's struct tcpinfo); `v1_start`: those
 * bytes begin a v1 message header, as far as they go. */
gboolean btc_bip324_direction(packet_info *pinfo, void *data, gboolean v1_start);

/* The TCP entry of a BIP324 direction: one `bip324 (encrypted)` record per segment. */
int btc_bip324_dissect(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data);

#endif /* P2PC_BIP324_H */
