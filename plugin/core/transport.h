/* transport.h
 * The byte budget below the stream (budget.h): in every frame of a TCP connection a p2pc
 * protocol claimed (ledger.h), the bytes that carry no stream byte, reported once, here, for
 * every protocol, with the claimant's proto:
 *   link_ip         the frame's bytes before its TCP header and after its payload (link and IP
 *                   headers, a link trailer or padding), in frames with payload
 *   tcp_header      its TCP header: `fixed` (20 bytes) and `options`, in frames with payload
 *   ack             the whole frame when it carries no payload: `syn`, `fin`, `rst` (by its
 *                   flags, in that order) or `ack` (a pure ACK)
 *   retransmission  the payload of a segment Wireshark's TCP analysis calls a retransmission
 *                   (tcp.analysis.retransmission, fast_retransmission, spurious_retransmission)
 * so that a connection direction's records and B lines add up to its frames' bytes.  Frames
 * of the connection before the frame that claimed it (the handshake) are told in that frame.
 * The first pass decides; every pass reports (budget lines are queued as records are).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef P2PC_TRANSPORT_H
#define P2PC_TRANSPORT_H

#include "core/p2pc-compat.h"

/* Registers its protocol (a name, under `proto`, p2pc.c's) and, at the handoff, its part of
 * the TCP layer's one postdissector (post.h): the last, after every part that may note a
 * frame in the ledger. */
void p2pc_transport_register(int proto);
void p2pc_transport_handoff(void);

#endif /* P2PC_TRANSPORT_H */
