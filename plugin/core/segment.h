/* segment.h
 * The TCP segment a frame carries, read from the frame's own IP and TCP headers: for the
 * postdissectors that need a segment TCP handed to no subdissector (retransmissions, the
 * bytes TCP keeps behind a hole), and for the sequence numbers in the headers, which TCP's
 * (relative by default) are not.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef P2PC_SEGMENT_H
#define P2PC_SEGMENT_H

#include "core/p2pc-compat.h"

/* A TCP segment as its headers in a frame give it. */
typedef struct {
    guint32 seq;                /* as in the header (absolute) */
    guint32 at;                 /* its payload's offset in the frame */
    guint32 len;                /* ... and length (from the IP header's) */
    guint32 ack;                /* the acknowledgement number (absolute) */
    guint32 hdr_len;            /* the TCP header's length, options included */
    guint8 flags;               /* the TCP flags' low byte (TH_ACK 0x10) */
} p2pc_segment_t;

/* Registers under `proto` (record.c's "p2pc") the frame data p2pc_frame_segment() keeps. */
void p2pc_segment_register(int proto);

/* The TCP segment of this frame from pinfo's source address and port to its destination's,
 * found in the frame's own IP and TCP headers, whatever the link layer and without a protocol
 * tree.  Found once per dissection of a frame: every caller shares it. */
gboolean p2pc_frame_segment(packet_info *pinfo, p2pc_segment_t *seg);

/* What to subtract from a sequence number in the TCP header to get TCP's own, learnt from
 * bytes TCP hands over (`tvb`, starting at TCP's sequence number `seq`) when they are this
 * frame's own bytes; FALSE when they are not (reassembled, or from another data source). */
gboolean p2pc_seq_base(tvbuff_t *tvb, packet_info *pinfo, guint32 seq, guint32 *base);

#endif /* P2PC_SEGMENT_H */
