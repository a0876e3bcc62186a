/* record.c
 * The common accounting record every p2pc dissector emits (its fields in the packet tree under
 * the `p2pc` protocol, p2pc.c, and its "p2pc" tap), the hold/release bracket of transports that
 * learn their messages' wire cost late, and the tails of what dissectors hold at the end.  Who
 * reads the tap: stats-tree.c (-z p2pc,tree) and printers.c (-z p2pc,records and -z
 * p2pc,payloads, the analyzer's input).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/record.h"
#include "core/prefs.h"
#include "core/tree-room.h"

#include <epan/exceptions.h>
#include <epan/expert.h>
#include <epan/proto_data.h>
#include <epan/dissectors/packet-tcp.h>

static int proto_p2pc = -1;
static int p2pc_tap = -1;

static int hf_p2pc_proto = -1;
static int hf_p2pc_msg_type = -1;
static int hf_p2pc_codec = -1;
static int hf_p2pc_wire_len = -1;
static int hf_p2pc_header_len = -1;
static int hf_p2pc_payload_len = -1;
static int hf_p2pc_raw_len = -1;
static int hf_p2pc_saved = -1;
static int hf_p2pc_ratio = -1;
static int hf_p2pc_batch_count = -1;
static int hf_p2pc_reason = -1;
static int hf_p2pc_mux_stream = -1;
static int hf_p2pc_mux_frames = -1;
static int hf_p2pc_snappy_chunks = -1;

static gint ett_p2pc = -1;

static expert_field ei_tls_no_keys = EI_INIT;
static gboolean want_raw;       /* a p2pc,payloads listener is registered */

void
p2pc_ratio_format(gchar *buf, double ratio)
{
    snprintf(buf, ITEM_LABEL_LENGTH, "%.2f", ratio);
}

void
p2pc_record_init(p2pc_record_t *rec, const char *proto, const char *msg_type)
{
    memset(rec, 0, sizeof *rec);
    rec->proto = proto;
    rec->msg_type = msg_type;
    rec->codec = "none";
    rec->batch_count = 1;
    rec->mux_stream = -1;
}

void
p2pc_record_want_raw(void)
{
    want_raw = TRUE;
}

/* A record that outlives the PDU it was made in (held, or queued for the tap) keeps no tvb:
 * raw_tvb's bytes are copied when a listener wants them. */
static void
detach_raw(packet_info *pinfo, p2pc_record_t *rec)
{
    if (rec->raw_tvb && want_raw) {
        guint8 *copy;
        rec->raw_bytes_len = tvb_captured_length(rec->raw_tvb);
        copy = (guint8 *)wmem_alloc(pinfo->pool, rec->raw_bytes_len ? rec->raw_bytes_len : 1);
        tvb_memcpy(rec->raw_tvb, copy, 0, rec->raw_bytes_len);
        rec->raw_bytes = copy;
    }
    rec->raw_tvb = NULL;
}

void
p2pc_record_undecoded(tvbuff_t *tvb, int offset, int len, packet_info *pinfo, proto_tree *tree,
                      const char *proto, guint64 bytes, const char *reason)
{
    p2pc_record_t rec;
    p2pc_record_init(&rec, proto, "undecoded");
    rec.wire_len = rec.payload_len = rec.raw_len = bytes;
    rec.reason = reason;
    p2pc_record_add(tvb, offset, len, pinfo, tree, &rec);
}

proto_item *
p2pc_record_encrypted(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, const char *proto,
                      const char *msg_type, guint framing)
{
    p2pc_record_t rec;
    p2pc_record_init(&rec, proto, msg_type);
    rec.wire_len = tvb_captured_length(tvb);
    rec.header_len = MIN(rec.wire_len, framing);
    rec.payload_len = rec.raw_len = rec.wire_len - rec.header_len;
    return p2pc_record_add(tvb, 0, -1, pinfo, tree, &rec);
}

void
p2pc_tls_no_keys(packet_info *pinfo, proto_item *item)
{
    expert_add_info(pinfo, item, &ei_tls_no_keys);
}

void
p2pc_record_bound(p2pc_record_t *rec)
{
    rec->msg_type = "undecoded";
    rec->reason = "bound";
    rec->raw_len = rec->payload_len;
    rec->raw_tvb = NULL;
}

/* Records held back by p2pc_record_hold(): where each was to be added, and the record. */
typedef struct {
    tvbuff_t *tvb;
    int offset;
    int len;
    proto_tree *tree;
    p2pc_record_t rec;
} held_record_t;

typedef struct hold {
    wmem_array_t *recs;         /* held_record_t */
    struct hold *outer;
} hold_t;

void
p2pc_record_hold(packet_info *pinfo)
{
    hold_t *h = wmem_new0(pinfo->pool, hold_t);
    h->recs = wmem_array_new(pinfo->pool, sizeof(held_record_t));
    h->outer = (hold_t *)p_get_proto_data(pinfo->pool, pinfo, proto_p2pc, P2PC_KEY_HOLD);
    p_add_proto_data(pinfo->pool, pinfo, proto_p2pc, P2PC_KEY_HOLD, h);
}

void
p2pc_record_release(packet_info *pinfo, p2pc_record_adjust_fn adjust, void *ctx)
{
    hold_t *h = (hold_t *)p_get_proto_data(pinfo->pool, pinfo, proto_p2pc, P2PC_KEY_HOLD);
    guint n;
    p2pc_record_t **recs;

    if (!h)
        return;
    /* Pop first: what is added below goes to the enclosing hold, if any. */
    p_add_proto_data(pinfo->pool, pinfo, proto_p2pc, P2PC_KEY_HOLD, h->outer);
    n = wmem_array_get_count(h->recs);
    recs = wmem_alloc_array(pinfo->pool, p2pc_record_t *, n ? n : 1);
    for (guint i = 0; i < n; i++)
        recs[i] = &((held_record_t *)wmem_array_index(h->recs, i))->rec;
    if (adjust)
        adjust(pinfo, recs, n, ctx);
    for (guint i = 0; i < n; i++) {
        held_record_t *r = (held_record_t *)wmem_array_index(h->recs, i);
        p2pc_record_add(r->tvb, r->offset, r->len, pinfo, r->tree, &r->rec);
    }
}

void
p2pc_record_call_held(packet_info *pinfo, p2pc_call_fn call, void *call_ctx,
                      p2pc_record_adjust_fn adjust, void *ctx)
{
    p2pc_record_hold(pinfo);
    TRY {
        call(call_ctx);
    }
    CATCH_ALL {
        p2pc_record_release(pinfo, adjust, ctx);
        RETHROW;
    }
    ENDTRY;
    p2pc_record_release(pinfo, adjust, ctx);
}

void
p2pc_where_keep(wmem_allocator_t *scope, packet_info *pinfo, p2pc_record_t *rec)
{
    if (rec->at.src.type == AT_NONE) {
        p2pc_where_of(pinfo, &rec->at);
        copy_address_wmem(scope, &rec->at.src, &pinfo->src);
        copy_address_wmem(scope, &rec->at.dst, &pinfo->dst);
    } else if (pinfo->num < rec->at.frame) {
        /* A session reset numbered frames and TCP streams anew (a state carried over it,
         * core/conn.h): the stream's new number. */
        p2pc_where_t now;
        p2pc_where_of(pinfo, &now);
        rec->at.stream = now.stream;
    }
    rec->at.frame = pinfo->num;
    rec->abs_ts = pinfo->abs_ts;
}

/* The dissectors' tail functions (registration time: epan scope). */
static GSList *tails;

void
p2pc_tail_register(p2pc_tail_fn fn)
{
    tails = g_slist_append(tails, (gpointer)fn);
}

void
p2pc_tail_foreach(p2pc_tail_emit_fn emit, void *ud, gboolean at_reset)
{
    for (GSList *l = tails; l; l = l->next)
        ((p2pc_tail_fn)l->data)(emit, ud, at_reset);
}

void
p2pc_tail_undecoded(p2pc_tail_emit_fn emit, void *ud, const p2pc_record_t *last,
                    const char *proto, const char *codec, guint64 bytes, const char *reason)
{
    p2pc_tail_record(emit, ud, last, proto, "undecoded", codec, bytes, reason);
}

void
p2pc_tail_record(p2pc_tail_emit_fn emit, void *ud, const p2pc_record_t *last,
                 const char *proto, const char *msg_type, const char *codec, guint64 bytes,
                 const char *reason)
{
    p2pc_record_t rec;
    if (!bytes || last->at.src.type == AT_NONE)
        return;
    p2pc_record_init(&rec, proto, msg_type);
    rec.codec = codec;
    rec.reason = reason;
    rec.wire_len = rec.payload_len = rec.raw_len = bytes;
    rec.at = last->at;
    rec.abs_ts = last->abs_ts;
    emit(&rec, ud);
}

static void
kept_free(gpointer data)
{
    p2pc_record_t *rec = (p2pc_record_t *)data;
    free_address(&rec->at.src);
    free_address(&rec->at.dst);
}

GArray *
p2pc_tail_kept_new(void)
{
    GArray *kept = g_array_new(FALSE, FALSE, sizeof(p2pc_record_t));
    g_array_set_clear_func(kept, kept_free);
    return kept;
}

void
p2pc_tail_keep(const p2pc_record_t *rec, void *kept)
{
    p2pc_record_t copy = *rec;
    copy_address(&copy.at.src, &rec->at.src);
    copy_address(&copy.at.dst, &rec->at.dst);
    g_array_append_val((GArray *)kept, copy);
}

void
p2pc_tail_kept_emit(GArray *kept, gboolean last_first, p2pc_tail_emit_fn emit, void *ud, gboolean at_reset)
{
    if (at_reset && kept->len < P2PC_TAILS_KEPT_MAX)
        return;
    for (guint i = 0; i < kept->len; i++)
        emit(&g_array_index(kept, p2pc_record_t, last_first ? kept->len - 1 - i : i), ud);
    g_array_remove_range(kept, 0, kept->len);
}

/* A record the dissector gave no unit end takes the one being handed up. */
static void
unit_of(packet_info *pinfo, p2pc_record_t *rec)
{
    p2pc_unit_t u;
    if (rec->has_unit_end)
        return;
    u = p2pc_unit_get(pinfo);
    rec->has_unit_end = u.set;
    rec->unit_end = u.end;
}

proto_item *
p2pc_record_add(tvbuff_t *tvb, int offset, int len, packet_info *pinfo, proto_tree *tree,
                const p2pc_record_t *rec)
{
    proto_item *ti = NULL;
    p2pc_record_t *q;
    hold_t *h = (hold_t *)p_get_proto_data(pinfo->pool, pinfo, proto_p2pc, P2PC_KEY_HOLD);

    if (h) {
        /* Only a drawn record keeps its tvb, which then lives as long as the tree. */
        held_record_t r;
        r.tvb = tree ? tvb : NULL;
        r.offset = offset;
        r.len = len;
        r.tree = tree;
        r.rec = *rec;
        detach_raw(pinfo, &r.rec);
        unit_of(pinfo, &r.rec);
        wmem_array_append_one(h->recs, r);
        return NULL;
    }
    /* Its fields fit in the frame's tree, or the record is counted without them. */
    tree = p2pc_tree_room(tree, pinfo, tvb, 16);
    if (tree) {
        proto_tree *st;
        gint64 saved = (gint64)rec->raw_len - (gint64)rec->payload_len;
        double ratio;

        if (len < 0)
            len = tvb_captured_length_remaining(tvb, offset);
        ti = proto_tree_add_item(tree, proto_p2pc, tvb, offset, len, ENC_NA);
        proto_item_append_text(ti, ": %s %s, %s, %" G_GUINT64_FORMAT " B on the wire",
                               rec->proto, rec->msg_type, rec->codec, rec->wire_len);
        proto_item_set_generated(ti);
        st = proto_item_add_subtree(ti, ett_p2pc);
        /* Every field is computed, none is a byte of the packet: all are generated. */
        proto_item_set_generated(proto_tree_add_string(st, hf_p2pc_proto, tvb, offset, len, rec->proto));
        proto_item_set_generated(proto_tree_add_string(st, hf_p2pc_msg_type, tvb, offset, len, rec->msg_type));
        proto_item_set_generated(proto_tree_add_string(st, hf_p2pc_codec, tvb, offset, len, rec->codec));
        proto_item_set_generated(proto_tree_add_uint64(st, hf_p2pc_wire_len, tvb, offset, len, rec->wire_len));
        proto_item_set_generated(proto_tree_add_uint64(st, hf_p2pc_header_len, tvb, offset, len, rec->header_len));
        proto_item_set_generated(proto_tree_add_uint64(st, hf_p2pc_payload_len, tvb, offset, len, rec->payload_len));
        proto_item_set_generated(proto_tree_add_uint64(st, hf_p2pc_raw_len, tvb, offset, len, rec->raw_len));
        proto_item_set_generated(proto_tree_add_int64(st, hf_p2pc_saved, tvb, offset, len, saved));
        ratio = rec->payload_len ? (double)rec->raw_len / (double)rec->payload_len : 1.0;
        proto_item_set_generated(proto_tree_add_double(st, hf_p2pc_ratio, tvb, offset, len, ratio));
        proto_item_set_generated(proto_tree_add_uint(st, hf_p2pc_batch_count, tvb, offset, len, rec->batch_count));
        if (rec->reason)
            proto_item_set_generated(proto_tree_add_string(st, hf_p2pc_reason, tvb, offset, len, rec->reason));
        if (rec->mux_stream >= 0) {
            proto_item_set_generated(proto_tree_add_uint64(st, hf_p2pc_mux_stream, tvb, offset, len, (guint64)rec->mux_stream));
            proto_item_set_generated(proto_tree_add_uint(st, hf_p2pc_mux_frames, tvb, offset, len, rec->mux_frames));
        }
        if (rec->snappy_chunks)
            proto_item_set_generated(proto_tree_add_uint(st, hf_p2pc_snappy_chunks, tvb, offset, len, rec->snappy_chunks));
    }

    q = wmem_new(pinfo->pool, p2pc_record_t);
    *q = *rec;
    detach_raw(pinfo, q);
    unit_of(pinfo, q);
    p2pc_where_of(pinfo, &q->at);
    q->abs_ts = pinfo->abs_ts;
    p2pc_batch_queue(p2pc_tap, P2PC_KEY_BATCH_RECORDS, pinfo, q);
    return ti;
}

void
p2pc_record_register(int proto)
{
    static hf_register_info hf[] = {
        { &hf_p2pc_proto, { "Protocol", "p2pc.proto", FT_STRING, BASE_NONE, NULL, 0x0,
            "P2P protocol this message belongs to", HFILL } },
        { &hf_p2pc_msg_type, { "Message type", "p2pc.msg_type", FT_STRING, BASE_NONE, NULL, 0x0,
            "Message type within the protocol", HFILL } },
        { &hf_p2pc_codec, { "Codec", "p2pc.codec", FT_STRING, BASE_NONE, NULL, 0x0,
            "Compression codec of the payload as sent (none when uncompressed)", HFILL } },
        { &hf_p2pc_wire_len, { "Bytes on the wire", "p2pc.wire_len", FT_UINT64, BASE_DEC, NULL, 0x0,
            "Bytes of this message on the wire, its P2P header included", HFILL } },
        { &hf_p2pc_header_len, { "Header bytes", "p2pc.header_len", FT_UINT64, BASE_DEC, NULL, 0x0,
            "P2P framing bytes around the payload", HFILL } },
        { &hf_p2pc_payload_len, { "Payload bytes sent", "p2pc.payload_len", FT_UINT64, BASE_DEC, NULL, 0x0,
            "Payload bytes as sent (compressed size when compressed)", HFILL } },
        { &hf_p2pc_raw_len, { "Payload bytes uncompressed", "p2pc.raw_len", FT_UINT64, BASE_DEC, NULL, 0x0,
            "Payload bytes after decompression", HFILL } },
        { &hf_p2pc_saved, { "Payload bytes saved", "p2pc.saved", FT_INT64, BASE_DEC, NULL, 0x0,
            "raw_len - payload_len (negative when compression grew the payload)", HFILL } },
        { &hf_p2pc_ratio, { "Compression ratio", "p2pc.ratio", FT_DOUBLE, BASE_CUSTOM, CF_FUNC(p2pc_ratio_format), 0x0,
            "raw_len / payload_len", HFILL } },
        { &hf_p2pc_reason, { "Undecoded because", "p2pc.undecoded_reason", FT_STRING, BASE_NONE, NULL, 0x0,
            "Why bytes counted as undecoded were not decoded: bound (a decompression ratio or the capture's "
            "decompression budget stopped them)", HFILL } },
        { &hf_p2pc_mux_stream, { "Muxed stream", "p2pc.mux_stream", FT_UINT64, BASE_DEC, NULL, 0x0,
            "ID of the muxed stream (yamux, mplex) that carried this message", HFILL } },
        { &hf_p2pc_mux_frames, { "Muxer frames", "p2pc.mux_frames", FT_UINT32, BASE_DEC, NULL, 0x0,
            "Muxer frames (yamux, mplex) whose data carried bytes of this message", HFILL } },
        { &hf_p2pc_snappy_chunks, { "Snappy chunks", "p2pc.snappy_chunks", FT_UINT32, BASE_DEC, NULL, 0x0,
            "Data chunks (compressed or uncompressed) of this message's framed Snappy stream", HFILL } },
        { &hf_p2pc_batch_count, { "Batch count", "p2pc.batch_count", FT_UINT32, BASE_DEC, NULL, 0x0,
            "Items carried by this message (transactions in a batch; 1 otherwise)", HFILL } },
    };
    static gint *ett[] = { &ett_p2pc };
    static ei_register_info ei[] = {
        { &ei_tls_no_keys, { "p2pc.tls_no_keys", PI_DECRYPTION, PI_NOTE,
            "Not decrypted: give this connection's TLS secrets in the key log (tls.keylog_file, NSS "
            "format, as SSLKEYLOGFILE writes it; p2pc --keylog) or embed them in the pcapng", EXPFILL } },
    };

    proto_p2pc = proto;
    proto_register_field_array(proto_p2pc, hf, array_length(hf));
    proto_register_subtree_array(ett, array_length(ett));
    expert_register_field_array(expert_register_protocol(proto_p2pc), ei, array_length(ei));
    p2pc_tap = register_tap("p2pc");
}

void
p2pc_swap_endpoints(packet_info *pinfo)
{
    address a = pinfo->src;
    guint32 port = pinfo->srcport;
    pinfo->src = pinfo->dst;
    pinfo->dst = a;
    pinfo->srcport = pinfo->destport;
    pinfo->destport = port;
}
