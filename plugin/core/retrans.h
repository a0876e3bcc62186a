/* retrans.h
 * Retransmissions whose bytes differ from those first sent, in the TCP connections of every p2pc
 * protocol: the p2pc.check_retransmissions preference and the p2pc.retransmission_differs
 * expert item.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef P2PC_RETRANS_H
#define P2PC_RETRANS_H

#include "core/p2pc-compat.h"

#include <epan/prefs.h>

/* Registers the preference in `module` and the expert item and postdissector under `proto`
 * (record.c's "p2pc"). */
void p2pc_retrans_register(int proto, module_t *module);

/* A TCP segment as its headers in a frame give it. */
typedef struct {
    guint32 seq;                /* as in the header (absolute) */
    guint32 at;                 /* its payload's offset in the frame */
    guint32 len;                /* ... and length (from the IP header's) */
    guint32 ack;                /* the acknowledgement number (absolute) */
    guint8 flags;               /* the TCP flags' low byte (TH_ACK 0x10) */
} p2pc_segment_t;

/* The TCP segment of this frame from pinfo's source address and port to its destination's,
 * found in the frame's own IP and TCP headers, whatever the link layer and without a protocol
 * tree (a postdissector's way to the bytes of a segment TCP handed to no subdissector). */
gboolean p2pc_find_segment(tvbuff_t *frame, const packet_info *pinfo, p2pc_segment_t *seg);

/* Called by a protocol's TCP entry point: from this frame on, the segments of pinfo's TCP
 * connection are checked (nothing on a later pass, or with the preference off). */
void p2pc_retrans_watch(packet_info *pinfo);

#endif /* P2PC_RETRANS_H */
