/* record.h
 * The common per-message accounting record.  Every p2pc dissector reports each P2P message it
 * decodes, compressed or not, through p2pc_record_add(): one `p2pc` subtree in the packet tree
 * and one record queued on the "p2pc" tap.  The analyzer and the Statistics views read only this.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef P2PC_RECORD_H
#define P2PC_RECORD_H

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

typedef struct {
    /* Filled by the dissector. */
    const char *proto;          /* "bitcoin", "fisco", "eth2", "libp2p", ... */
    const char *msg_type;       /* "cblock", "BlockSync.Transactions", ...: the protocol's own
                                   names and "unknown" only (core/msgtype.h) */
    const char *codec;          /* p2pc_codec_name() */
    guint64 wire_len;           /* bytes of this message on the wire, its P2P header included */
    guint64 header_len;         /* the P2P framing around the payload */
    guint64 payload_len;        /* payload bytes as sent */
    guint64 raw_len;            /* payload bytes after decompression */
    guint32 batch_count;        /* items carried (txs in a batch); 1 otherwise */
    tvbuff_t *raw_tvb;          /* optional: the uncompressed payload (for -z p2pc,payloads) */
    /* Filled by p2pc_record_add(), in the tap's copy only: that copy points into no tvb (the
       tvb of a PDU not drawn is freed before the tap runs, libp2p/engine.c).  raw_tvb's bytes
       when a p2pc,payloads listener wants them (p2pc_record_want_raw), else NULL. */
    const guint8 *raw_bytes;
    guint raw_bytes_len;
    const char *reason;         /* msg_type "undecoded": why, when it is a bound ("bound": a
                                   decompression ratio or the capture's budget; NULL otherwise) */
    /* How the framing cut the message up (0 / -1 where there is no such framing). */
    gint64 mux_stream;          /* its muxed stream's id (yamux, mplex); -1: not in a muxed stream */
    guint32 mux_frames;         /* the muxer frames that carried its bytes; 0: not muxed */
    guint32 snappy_chunks;      /* data chunks (compressed or not) of its framed Snappy stream */
    /* Where the unit that completed it ends in its direction's TCP payload byte stream (bytes
     * from the direction's first, repeats included, as the T lines count them): its last byte,
     * or the end of the Noise/TLS record or flush
     * unit that carried it (p2pc_unit_t).  Filled by p2pc_record_add() from the packet's unit
     * when the dissector left has_unit_end FALSE; none when not over TCP. */
    gboolean has_unit_end;
    guint64 unit_end;
    /* Filled by p2pc_record_add() from the packet. */
    p2pc_where_t at;
    nstime_t abs_ts;
} p2pc_record_t;

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

/* Add the `p2pc` subtree under `tree` (covering tvb[offset, offset+len)) and queue the tap
 * record.  Strings must outlive the packet (static, or wmem_file_scope / pinfo->pool). */
proto_item *p2pc_record_add(tvbuff_t *tvb, int offset, int len, packet_info *pinfo,
                            proto_tree *tree, const p2pc_record_t *rec);

/* The record's fields and taps on the p2pc protocol (p2pc.c). */
void p2pc_record_register(int proto);

/* Called by the p2pc,payloads listener: the tap's copies carry their raw_tvb's bytes. */
void p2pc_record_want_raw(void);

/* Set a record's defaults: codec "none", batch_count 1, mux_stream -1. */
void p2pc_record_init(p2pc_record_t *rec, const char *proto, const char *msg_type);

/* Add a record of `bytes` bytes of `proto` that are no message it could decode (msg_type
 * "undecoded", and why when known: `reason`, p2pc.undecoded_reason), its subtree covering
 * tvb[offset, offset+len). */
void p2pc_record_undecoded(tvbuff_t *tvb, int offset, int len, packet_info *pinfo, proto_tree *tree,
                           const char *proto, guint64 bytes, const char *reason);

/* Add a record of a security layer's message that was not decrypted (no key, or decryption
 * stopped), so that no byte goes uncounted: proto `proto`, msg_type `msg_type` ("noise
 * (encrypted)", "tls (encrypted)"), the message's first `framing` bytes its header, the rest
 * its payload.  The subtree covers the whole tvb; its item is returned. */
proto_item *p2pc_record_encrypted(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, const char *proto,
                                  const char *msg_type, guint framing);

/* The expert note of a TLS record or QUIC packet Wireshark's TLS did not decrypt: it names the
 * key log that would open it (tls.keylog_file, or secrets embedded in the pcapng).  One note
 * for every protocol that rides on Wireshark's TLS (p2pc.tls_no_keys). */
void p2pc_tls_no_keys(packet_info *pinfo, proto_item *item);

/* How every compression ratio field (FT_DOUBLE, BASE_CUSTOM, CF_FUNC(p2pc_ratio_format)) reads
 * in the tree and in a custom column of the packet list: two decimals, 1.71 rather than
 * 1.714285…  Custom columns print a field through its hf's formatter, so this is what keeps the
 * p2pc profile's Ratio column short; the value stays exact for filters and -T fields. */
void p2pc_ratio_format(gchar *buf, double ratio);

/* A message whose decompression a ratio or capture bound stopped (p2pc_bound_charge): its bytes
 * are counted as undecoded, reason "bound", never as saved. */
void p2pc_record_bound(p2pc_record_t *rec);

/* A transport that re-encodes every byte above it (the libp2p compression transport) learns
 * what the messages inside cost on the wire only once all the messages a frame completes are
 * known.  It brackets its call to the layers above with p2pc_record_hold() and
 * p2pc_record_release(): records added in between are held back; release passes them, in the
 * order they were added, to `adjust` (which may change codec and byte counts) and then adds
 * each where its dissector asked.  Holds nest; a release adds into the enclosing hold. */
typedef void (*p2pc_record_adjust_fn)(packet_info *pinfo, p2pc_record_t **recs, guint n, void *ctx);
void p2pc_record_hold(packet_info *pinfo);
void p2pc_record_release(packet_info *pinfo, p2pc_record_adjust_fn adjust, void *ctx);
/* call(call_ctx) between the two, the records released also when it throws (then rethrown). */
typedef void (*p2pc_record_call_fn)(void *call_ctx);
void p2pc_record_call_held(packet_info *pinfo, p2pc_record_call_fn call, void *call_ctx,
                           p2pc_record_adjust_fn adjust, void *ctx);

/* A transport's bytes (its framing, or all it sent) shared out over the n records the layers
 * above it added in one frame, in proportion to each record's wire_len (P2PC_SHARE_BY_WIRE) or
 * raw_len (P2PC_SHARE_BY_RAW); the last takes what the rounding left.  The shares are kept for
 * re-dissection (p2pc_replay_scope), so that every pass gives each record the same; a record
 * past the end of `shares` (or NULL) gets 0. */
typedef enum { P2PC_SHARE_BY_WIRE, P2PC_SHARE_BY_RAW } p2pc_share_by_t;
wmem_array_t *p2pc_record_shares(packet_info *pinfo, p2pc_record_t **recs, guint n, guint64 bytes,
                                 p2pc_share_by_t by);
/* The same split appended to `shares` (guint64s), the caller keeping and charging them: a
 * layer that shares out several budgets over groups of its records (compression's flush units). */
void p2pc_record_shares_append(wmem_array_t *shares, p2pc_record_t **recs, guint n, guint64 bytes,
                               p2pc_share_by_t by);
guint64 p2pc_record_share(wmem_array_t *shares, guint i);
guint64 p2pc_record_shares_sum(wmem_array_t *shares);
/* A security layer's framing given to the n records the layers above added for one of its
 * records (Noise's and TLS's adjust callbacks): on the first pass (`unattributed` not NULL) the
 * framing bytes not yet given are shared out by wire_len into *shares and *unattributed is
 * zeroed; on every pass each record's share is added to its header_len and wire_len. */
void p2pc_record_give_framing(packet_info *pinfo, p2pc_record_t **recs, guint n, guint64 *unattributed,
                              wmem_array_t **shares);

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

/* What a protocol still holds when the capture ends, in no record: the message the capture
 * cut short, the segments TCP keeps behind a hole nothing confirmed, the compressed bytes no
 * message completed.  A dissector registers (at proto_register) a function that emits one
 * "undecoded" record per direction holding such bytes, named after the direction's last frame
 * (p2pc_where_keep); the records tap prints them after the capture's own records, so that the
 * records of a direction add up to what it sent (docs/tap-format.md).  With `at_reset`, the
 * tails of a session that a reset ends (tshark -M), not the capture's: what a connection carried
 * over the reset holds (core/conn.h, p2pc_conn_goes_on()) is not a tail. */
typedef void (*p2pc_tail_emit_fn)(const p2pc_record_t *rec, void *ud);
typedef void (*p2pc_tail_fn)(p2pc_tail_emit_fn emit, void *ud, gboolean at_reset);
void p2pc_tail_register(p2pc_tail_fn fn);
void p2pc_tail_foreach(p2pc_tail_emit_fn emit, void *ud, gboolean at_reset);
/* For a tail function: emit a record of `bytes` bytes of `proto` (its `msg_type`, `codec` and
 * undecoded `reason`; wire_len = payload_len = raw_len = bytes) where and when `last` was kept
 * (p2pc_where_keep); nothing when bytes is 0 or nothing was.  p2pc_tail_undecoded(): msg_type
 * "undecoded", with the reason a session reset cuts its connection (p2pc_conn_cut()), if any. */
void p2pc_tail_record(p2pc_tail_emit_fn emit, void *ud, const p2pc_record_t *last,
                      const char *proto, const char *msg_type, const char *codec, guint64 bytes,
                      const char *reason);
void p2pc_tail_undecoded(p2pc_tail_emit_fn emit, void *ud, const p2pc_record_t *last,
                         const char *proto, const char *codec, guint64 bytes, const char *reason);

/* Keep the packet's frame and time in rec->at and rec->abs_ts; the first call also keeps its
 * TCP stream and endpoints (in `scope`, where rec is: a direction's endpoints do not change),
 * and the first after a session reset its stream's new number.
 * For a tail record: call it with each frame of the direction (first pass). */
void p2pc_where_keep(wmem_allocator_t *scope, packet_info *pinfo, p2pc_record_t *rec);

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

/* The unit the layers are handing up now, in the numbering of the lowest layer that knows it:
 * `end` is where the bytes of the current call end (a pipe call's tvb, a PDU) and, when
 * `identity`, each of those bytes is one byte of that numbering, so a PDU ending k bytes before
 * the call's end ends at end - k; otherwise (a decrypted record) every byte inside maps to
 * `end`.  The libp2p TCP feeder starts it (TCP payload bytes of the direction), the libp2p
 * engine narrows it to each PDU, Noise and TLS make it opaque inside a record, and the
 * compression layer numbers its output and maps back to flush units (docs/tap-format.md,
 * unit_end).  pinfo-scoped; a layer changes it only for the call that hands its bytes up
 * (p2pc_unit_call()). */
typedef struct {
    gboolean set;
    gboolean identity;
    guint64 end;
} p2pc_unit_t;
p2pc_unit_t p2pc_unit_get(packet_info *pinfo);
/* call(ctx) with `u` as the unit, the one before put back when it returns or throws: the one
 * way a layer hands bytes up under a unit of its own. */
void p2pc_unit_call(packet_info *pinfo, p2pc_unit_t u, p2pc_record_call_fn call, void *ctx);
/* The unit of the bytes that end k bytes before u's end: u narrowed when it numbers its bytes
 * one to one (identity), else u itself (an unset or opaque unit has nothing finer). */
p2pc_unit_t p2pc_unit_before(p2pc_unit_t u, guint64 k);
/* u made opaque: every byte inside maps to u's end (a decrypted record's plaintext). */
p2pc_unit_t p2pc_unit_opaque(p2pc_unit_t u);

/* Swap pinfo's source and destination (addresses and ports): a record made for the other
 * direction of the frame's connection names that direction's endpoints; swap back after. */
void p2pc_swap_endpoints(packet_info *pinfo);

#endif /* P2PC_RECORD_H */
