/* holes.h
 * Bytes a capture holds that TCP never hands to a protocol framed with tcp_dissect_pdus()
 * (Bitcoin, FISCO 2.x plain TCP and 3.x): after a segment the capture missed, TCP keeps the
 * message it cut, and with tcp.reassemble_out_of_order every later segment, waiting for bytes
 * that never come.  Each such byte is counted in an "undecoded" record, and each hole gets
 * the p2pc.hole expert item, so that the records of a direction add up to its TCP payload.
 * With p2pc.live_state_mib, a connection's framing state goes on across tshark's session reset
 * (core/conn.h), the message TCP was reassembling included.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef P2PC_HOLES_H
#define P2PC_HOLES_H

#include "core/p2pc-compat.h"

/* A protocol framed by tcp_dissect_pdus(): what its TCP entry hands it. */
typedef struct {
    const char *proto;          /* of its records */
    guint fixed_len;
    guint (*pdu_len)(packet_info *pinfo, tvbuff_t *tvb, int offset, void *data);
    dissector_t dissect_pdu;
} p2pc_framing_t;

/* Registers under `proto` (record.c's "p2pc") its part of the TCP layer's one postdissector
 * (post.h). */
void p2pc_holes_register(int proto);

/* A protocol's TCP entry point brackets its framing with these (data: TCP's struct tcpinfo).
 * p2pc_holes_enter() counts the bytes TCP skipped before the ones it hands over now (an
 * undecoded record of the protocol in this frame).  With p2pc.live_state_mib (p2pc live), it
 * also finishes the message a session reset cut (tshark -M drops TCP's reassembly): its bytes
 * of the last session, kept by p2pc, and those of `tvb` that complete it are dissected as one
 * message (a data source of its own).  It returns the offset in `tvb` where the protocol's
 * next message starts: 0, unless it took bytes for such a message.
 * p2pc_holes_dissect_pdus() is tcp_dissect_pdus() from `offset` of `tvb`.
 * p2pc_holes_leave() reads pinfo->desegment_offset/len (relative to `tvb`) to learn which bytes
 * the protocol's records cover, and which bytes TCP is reassembling (kept, in live). */
guint p2pc_holes_enter(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data, const p2pc_framing_t *fr);
void p2pc_holes_dissect_pdus(tvbuff_t *tvb, guint offset, packet_info *pinfo, proto_tree *tree, void *data,
                             const p2pc_framing_t *fr);
void p2pc_holes_leave(tvbuff_t *tvb, packet_info *pinfo, void *data);

/* The protocol lets go of this frame's connection (a heuristic's wrong guess): its bytes from
 * here on are not the protocol's, so none of them is counted (first pass). */
void p2pc_holes_let_go(packet_info *pinfo);

/* The framing of this frame's connection, when a session reset carried it over (the first
 * frames of a session may be in the middle of a message, where no heuristic would know it). */
const p2pc_framing_t *p2pc_holes_carried(packet_info *pinfo);

#endif /* P2PC_HOLES_H */
