/* record.h
 * The common per-message accounting record.  Every p2pc dissector reports each P2P message it
 * decodes, compressed or not, through p2pc_record_add(): one `p2pc` subtree in the packet tree
 * and one record queued on the "p2pc" tap.  The analyzer and the Statistics views read only this.
 * Beside it: where an item was seen and the other taps (taps.h), the unit the layers hand up
 * (unit.h), a transport's bytes shared out over the records above it (shares.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef P2PC_RECORD_H
#define P2PC_RECORD_H

#include "core/p2pc-compat.h"
#include "core/frame-data.h"
#include "core/taps.h"
#include "core/unit.h"

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
void p2pc_record_call_held(packet_info *pinfo, p2pc_call_fn call, void *call_ctx,
                           p2pc_record_adjust_fn adjust, void *ctx);

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

/* The tails of a connection a new one on its endpoints retired (core/conn.h, p2pc_conn_retired())
 * are the capture's, printed at its end, where the capture read without a reset has them, though
 * the connection's state goes at the end of its session.  The part emits them when the
 * connection is retired (p2pc_conn_on_retire()) with p2pc_tail_keep as `emit` and, as `ud`, a
 * list made by p2pc_tail_kept_new() (copies, addresses included); its tail function skips
 * retired connections and hands the list to p2pc_tail_kept_emit() at every call, which emits
 * it (in the order kept, or the last kept first) and empties it at the capture's end, and at a
 * session reset once it holds P2PC_TAILS_KEPT_MAX: a live run of days keeps no more than that
 * (those tails then come at that reset, before the later records of their endpoints). */
#define P2PC_TAILS_KEPT_MAX 1024
GArray *p2pc_tail_kept_new(void);
void p2pc_tail_keep(const p2pc_record_t *rec, void *kept);
void p2pc_tail_kept_emit(GArray *kept, gboolean last_first, p2pc_tail_emit_fn emit, void *ud, gboolean at_reset);

/* Keep the packet's frame and time in rec->at and rec->abs_ts; the first call also keeps its
 * TCP stream and endpoints (in `scope`, where rec is: a direction's endpoints do not change),
 * and the first after a session reset its stream's new number.
 * For a tail record: call it with each frame of the direction (first pass). */
void p2pc_where_keep(wmem_allocator_t *scope, packet_info *pinfo, p2pc_record_t *rec);

/* Swap pinfo's source and destination (addresses and ports): a record made for the other
 * direction of the frame's connection names that direction's endpoints; swap back after. */
void p2pc_swap_endpoints(packet_info *pinfo);

#endif /* P2PC_RECORD_H */
