/* p2pc-libp2p.h
 * What the libp2p connection dissector (packet-libp2p.c) hands to the application protocols
 * found by multistream-select: each complete application message of a muxed stream, with the
 * stream's protocol ID and which side sent it.  Application dissectors register their protocol
 * IDs in the "multistream.protocol" string table and receive this as `data`.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef P2PC_LIBP2P_H
#define P2PC_LIBP2P_H

#include "p2pc-compat.h"

typedef struct {
    const char *protocol;   /* negotiated protocol ID, e.g. "/meshsub/1.1.0" */
    const char *muxer;      /* "yamux" or "mplex" */
    guint32 stream_id;
    gboolean from_opener;   /* sent by the side that opened the stream (the requester) */
    guint32 index;          /* position of this message in its stream direction (0 = first) */
    guint32 muxer_overhead; /* muxer frame header bytes of the frames that carried it */
} libp2p_app_info_t;

/* The trees of the connection layers, each drawn by its own dissector file, for the messages
 * packet-libp2p.c's engine found (tvb = exactly one message). */
void libp2p_show_multistream(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, gboolean in_stream,
                             guint32 stream_id);
void libp2p_show_plaintext(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree);
void libp2p_show_noise(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree);
void libp2p_show_yamux(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree);
void libp2p_show_mplex(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree);

/* uvarint (multiformats unsigned-varint, at most 9 bytes); FALSE when incomplete or too long. */
gboolean p2pc_uvarint(const guint8 *p, guint avail, guint64 *value, guint *used);

/* The next protobuf field in p[*off, end): its number and wire type; a varint's value in
 * *ival, a length-delimited field's bytes at p[*dstart, *dstart + *dlen).  FALSE at the end or
 * on a malformed field (never reads past end). */
gboolean p2pc_pb_next(const guint8 *p, guint end, guint *off, guint64 *num, guint *wt,
                      guint *dstart, guint *dlen, guint64 *ival);

#endif /* P2PC_LIBP2P_H */
