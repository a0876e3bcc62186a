/* fisco3.h
 * What the FISCO BCOS 2.x dissector needs of the 3.x one: both generations listen on port
 * 30300, and a connection's first message says which one it speaks.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef P2PC_FISCO3_H
#define P2PC_FISCO3_H

#include "core/p2pc-compat.h"

/* True when tvb[offset..] starts a plausible 3.x gateway header: Length in range, Version V0 to
 * V3, a known packet type, and only the defined Ext flags. */
gboolean fisco3_plausible(tvbuff_t *tvb, int offset);

/* True when tvb[offset..] holds a whole V0 Handshake, the first message each side of a 3.x
 * connection sends (Service.cpp), its ProtocolInfo parsed: the heuristics' test. */
gboolean fisco3_handshake_at(tvbuff_t *tvb, guint offset);

/* The 3.x TCP entry (data: TCP's struct tcpinfo), called from the 2.x one in its place, at
 * TCP's own level: call_dissector() would take away TCP's reassembly for that frame. */
int dissect_fisco3(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data);

/* Data Wireshark's TLS decrypted on a connection whose first message is 3.x's (the 2.x TLS
 * entry decides, as on TCP): whole messages reassembled across TLS records. */
int dissect_fisco3_tls(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data);

#endif /* P2PC_FISCO3_H */
