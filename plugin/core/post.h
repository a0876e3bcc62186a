/* post.h
 * The one postdissector of p2pc's TCP layer (plugin/README.md, "The TCP path").  TCP hands some
 * segments to no protocol (retransmissions, the middle of a message tcp_dissect_pdus
 * reassembles, what it keeps behind a hole), and a frame with no bytes may acknowledge past a
 * hole: each TCP frame is looked at once more after every dissector, in one fixed order: the
 * retransmission check (retrans.c), the bytes a hole costs a tcp_dissect_pdus protocol
 * (holes.c), then each in-order feed (libp2p's) for the segments TCP kept from it, and last
 * the transport's bytes of the frame (transport.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef P2PC_POST_H
#define P2PC_POST_H

#include "core/p2pc-compat.h"

/* Registers the postdissector under `proto` (record.c's "p2pc"): it runs while p2pc is enabled
 * (p2pc.c, before the parts that add to it). */
void p2pc_post_register(int proto);

/* What the postdissector tells each part about the frame (the part's `data`). */
typedef struct {
    gboolean handed;            /* TCP handed the frame's bytes to a p2pc protocol (p2pc_post_handed()) */
} p2pc_post_frame_t;

/* `part` is called, after those added before it, in every frame the postdissector sees (data:
 * a p2pc_post_frame_t); its protocol, when enabled, is listed in the frame as a
 * postdissector's would be. */
void p2pc_post_add(dissector_handle_t part);

/* A protocol's TCP entry (its first pass): TCP handed it this frame's bytes.  Recorded once,
 * here, for every protocol: a part then knows the frame's segment reached its protocol. */
void p2pc_post_handed(packet_info *pinfo);

#endif /* P2PC_POST_H */
