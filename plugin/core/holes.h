/* holes.h
 * Bytes a capture holds that TCP never hands to a protocol framed with tcp_dissect_pdus()
 * (Bitcoin, FISCO 2.x plain TCP and 3.x): after a segment the capture missed, TCP keeps the
 * message it cut, and with tcp.reassemble_out_of_order every later segment, waiting for bytes
 * that never come.  Each such byte is counted in an "undecoded" record, and each hole gets
 * the p2pc.hole expert item, so that the records of a direction add up to its TCP payload.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef P2PC_HOLES_H
#define P2PC_HOLES_H

#include "core/p2pc-compat.h"

/* Registers the expert item and the postdissector under `proto` (record.c's "p2pc"). */
void p2pc_holes_register(int proto);

/* A protocol's TCP entry point brackets its tcp_dissect_pdus() call (data: TCP's struct
 * tcpinfo) with these.  p2pc_holes_enter() counts the bytes TCP skipped before the ones it
 * hands over now (an undecoded record of `proto` in this frame); p2pc_holes_leave() reads
 * pinfo->desegment_offset/len (relative to `tvb`) to learn which bytes the protocol's records
 * cover. */
void p2pc_holes_enter(tvbuff_t *tvb, packet_info *pinfo, void *data, const char *proto);
void p2pc_holes_leave(tvbuff_t *tvb, packet_info *pinfo, void *data);

#endif /* P2PC_HOLES_H */
