/* taps.h
 * What p2pc puts on Wireshark's taps besides the message records (record.h): where an item
 * was seen, the per-frame batch the "p2pc", "p2pc_spec" and "p2pc_budget" taps carry, the peer IDs
 * security handshakes state ("p2pc_peer") and libp2p QUIC's datagrams ("p2pc_quic").  Who reads
 * them: printers.c (-z p2pc,records) and stats-tree.c.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef P2PC_TAPS_H
#define P2PC_TAPS_H

#include "core/p2pc-compat.h"
#include "core/frame-data.h"

/* Where a tap item was seen, filled from the packet when it is queued. */
typedef struct {
    guint32 frame;
    guint32 stream;             /* tcp.stream, or G_MAXUINT32 when not over TCP */
    address src;
    address dst;
    guint32 srcport;
    guint32 dstport;
} p2pc_where_t;

/* The packet's frame, TCP stream (G_MAXUINT32 when it is not over TCP) and endpoints; the
 * addresses are shallow copies (for a tap item in pinfo->pool). */
void p2pc_where_of(packet_info *pinfo, p2pc_where_t *at);

/* What the "p2pc" tap (and "p2pc_spec") carries: everything one frame queued, in order, as
 * one tap item.  Wireshark's tap queue holds at most 5,000 items a frame (tap.c) and drops the
 * rest with a warning; a segment of a decompressed stream can complete many more messages. */
typedef struct {
    wmem_array_t *items;        /* const void * each: a p2pc_record_t, a p2pc_spec_hit_t */
} p2pc_batch_t;

#define P2PC_BATCH_COUNT(b) wmem_array_get_count(((const p2pc_batch_t *)(b))->items)
#define P2PC_BATCH_ITEM(b, i) (*(const void **)wmem_array_index(((const p2pc_batch_t *)(b))->items, (i)))

/* Queue `item` on `tap` in this frame's batch for it (`key`: the batch's own, one per tap). */
void p2pc_batch_queue(int tap, p2pc_key_t key, packet_info *pinfo, const void *item);

/* What a security handshake says of who is at one end of a connection: the sender of the
 * packet (its address and port) is the libp2p peer `peer_id` (base58btc, as libp2p prints it),
 * learnt `via` "noise" (the handshake payload, its signature verified), "tls" (the certificate's
 * libp2p extension) or "plaintext" (the /plaintext/2.0.0 Exchange).  Not a message: it goes on
 * the "p2pc_peer" tap, and -z p2pc,records prints it as an `I` line (docs/tap-format.md). */
typedef struct {
    const char *via;
    const char *peer_id;
    p2pc_where_t at;            /* filled by p2pc_peer_add() from the packet */
} p2pc_peer_t;

/* Queue the sender's peer ID.  Strings must outlive the packet (pinfo->pool will do). */
void p2pc_peer_add(packet_info *pinfo, const char *via, const char *peer_id);

/* One UDP datagram of a libp2p QUIC connection, for the header/ACK model (the "p2pc_quic" tap;
 * -z p2pc,records counts them per direction as it counts TCP segments, docs/tap-format.md). */
typedef struct {
    guint32 frame_len;          /* the whole frame */
    guint32 stream_bytes;       /* STREAM frame data it carried (0 when not decrypted) */
    gboolean ack_only;          /* only ACK and PADDING frames: QUIC's pure ACK */
    /* The same sender's packets before this one, not told apart as libp2p's then (the first
     * Initial packets of a ClientHello that spans several): control frames. */
    guint32 before_frames;
    guint64 before_bytes;
} p2pc_quic_packet_t;

void p2pc_quic_packet_add(packet_info *pinfo, const p2pc_quic_packet_t *pkt);

/* The "p2pc_peer" and "p2pc_quic" taps (p2pc.c). */
void p2pc_taps_register(int proto);

#endif /* P2PC_TAPS_H */
