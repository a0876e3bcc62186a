/* post.h
 * The one postdissector of p2pc's TCP layer (plugin/README.md, "The TCP path").  TCP hands some
 * segments to no protocol (retransmissions, the middle of a message tcp_dissect_pdus
 * reassembles, what it keeps behind a hole), and a frame with no bytes may acknowledge past a
 * hole: each TCP frame is looked at once more after every dissector, in one fixed order: the
 * retransmission check (retrans.c), the bytes a hole costs a tcp_dissect_pdus protocol
 * (holes.c), then each in-order feed (libp2p's) for the segments TCP kept from it.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef P2PC_POST_H
#define P2PC_POST_H

#include "core/p2pc-compat.h"

/* Registers the postdissector under `proto` (record.c's "p2pc"): it runs while p2pc is enabled
 * (p2pc.c, before the parts that add to it). */
void p2pc_post_register(int proto);

/* `part` is called, after those added before it, in every frame the postdissector sees (with no
 * data); its protocol, when enabled, is listed in the frame as a postdissector's would be. */
void p2pc_post_add(dissector_handle_t part);

#endif /* P2PC_POST_H */
