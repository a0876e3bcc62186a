/* p2pc-record.c
 * The `p2pc` protocol: the common accounting record every p2pc dissector emits, its tap, the
 * Statistics tree (tshark -z p2pc,tree) and the exact record dump (tshark -z p2pc,records)
 * that the analyzer reads.  The dump's line format is specified in docs/tap-format.md.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "p2pc-record.h"
#include "p2pc-codecs.h"

#include <stdio.h>
#include <epan/prefs.h>
#include <epan/proto_data.h>
#include <epan/stats_tree.h>
#include <epan/stat_tap_ui.h>
#include <epan/to_str.h>
#include <epan/dissectors/packet-tcp.h>

void proto_register_p2pc(void);
void proto_reg_handoff_p2pc(void);
void register_tap_listener_p2pc(void);

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

static gint ett_p2pc = -1;

/* Global cap on any one decompression, in MiB (per-protocol limits apply beneath it). */
static guint pref_max_decompressed_mib = 128;

size_t
p2pc_decompress_cap(void)
{
    return (size_t)pref_max_decompressed_mib * 1024 * 1024;
}

void
p2pc_record_init(p2pc_record_t *rec, const char *proto, const char *msg_type)
{
    memset(rec, 0, sizeof *rec);
    rec->proto = proto;
    rec->msg_type = msg_type;
    rec->codec = "none";
    rec->batch_count = 1;
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

#define P2PC_HOLD_KEY 0         /* p_get_proto_data(pinfo->pool, ..., proto_p2pc, key) */

void
p2pc_record_hold(packet_info *pinfo)
{
    hold_t *h = wmem_new0(pinfo->pool, hold_t);
    h->recs = wmem_array_new(pinfo->pool, sizeof(held_record_t));
    h->outer = (hold_t *)p_get_proto_data(pinfo->pool, pinfo, proto_p2pc, P2PC_HOLD_KEY);
    p_add_proto_data(pinfo->pool, pinfo, proto_p2pc, P2PC_HOLD_KEY, h);
}

void
p2pc_record_release(packet_info *pinfo, p2pc_record_adjust_fn adjust, void *ctx)
{
    hold_t *h = (hold_t *)p_get_proto_data(pinfo->pool, pinfo, proto_p2pc, P2PC_HOLD_KEY);
    guint n;
    p2pc_record_t **recs;

    if (!h)
        return;
    /* Pop first: what is added below goes to the enclosing hold, if any. */
    p_add_proto_data(pinfo->pool, pinfo, proto_p2pc, P2PC_HOLD_KEY, h->outer);
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

proto_item *
p2pc_record_add(tvbuff_t *tvb, int offset, int len, packet_info *pinfo, proto_tree *tree,
                const p2pc_record_t *rec)
{
    proto_item *ti = NULL;
    p2pc_record_t *q;
    struct tcp_analysis *tcpd = NULL;
    hold_t *h = (hold_t *)p_get_proto_data(pinfo->pool, pinfo, proto_p2pc, P2PC_HOLD_KEY);

    if (h) {
        held_record_t r;
        r.tvb = tvb;
        r.offset = offset;
        r.len = len;
        r.tree = tree;
        r.rec = *rec;
        wmem_array_append_one(h->recs, r);
        return NULL;
    }
    if (len < 0)
        len = tvb_captured_length_remaining(tvb, offset);
    if (tree) {
        proto_tree *st;
        proto_item *pi;
        gint64 saved = (gint64)rec->raw_len - (gint64)rec->payload_len;

        ti = proto_tree_add_item(tree, proto_p2pc, tvb, offset, len, ENC_NA);
        proto_item_append_text(ti, ": %s %s, %s, %" G_GUINT64_FORMAT " B on the wire",
                               rec->proto, rec->msg_type, rec->codec, rec->wire_len);
        proto_item_set_generated(ti);
        st = proto_item_add_subtree(ti, ett_p2pc);
        pi = proto_tree_add_string(st, hf_p2pc_proto, tvb, offset, len, rec->proto);
        proto_item_set_generated(pi);
        pi = proto_tree_add_string(st, hf_p2pc_msg_type, tvb, offset, len, rec->msg_type);
        proto_item_set_generated(pi);
        pi = proto_tree_add_string(st, hf_p2pc_codec, tvb, offset, len, rec->codec);
        proto_item_set_generated(pi);
        pi = proto_tree_add_uint64(st, hf_p2pc_wire_len, tvb, offset, len, rec->wire_len);
        proto_item_set_generated(pi);
        pi = proto_tree_add_uint64(st, hf_p2pc_header_len, tvb, offset, len, rec->header_len);
        proto_item_set_generated(pi);
        pi = proto_tree_add_uint64(st, hf_p2pc_payload_len, tvb, offset, len, rec->payload_len);
        proto_item_set_generated(pi);
        pi = proto_tree_add_uint64(st, hf_p2pc_raw_len, tvb, offset, len, rec->raw_len);
        proto_item_set_generated(pi);
        pi = proto_tree_add_int64(st, hf_p2pc_saved, tvb, offset, len, saved);
        proto_item_set_generated(pi);
        pi = proto_tree_add_double(st, hf_p2pc_ratio, tvb, offset, len,
                                   rec->payload_len ? (double)rec->raw_len / (double)rec->payload_len : 1.0);
        proto_item_set_generated(pi);
        pi = proto_tree_add_uint(st, hf_p2pc_batch_count, tvb, offset, len, rec->batch_count);
        proto_item_set_generated(pi);
    }

    q = wmem_new(pinfo->pool, p2pc_record_t);
    *q = *rec;
    q->frame = pinfo->num;
    q->stream = G_MAXUINT32;
    if (pinfo->ptype == PT_TCP)
        tcpd = get_tcp_conversation_data(NULL, pinfo);
    if (tcpd)
        q->stream = tcpd->stream;
    copy_address_shallow(&q->src, &pinfo->src);
    copy_address_shallow(&q->dst, &pinfo->dst);
    q->srcport = pinfo->srcport;
    q->dstport = pinfo->destport;
    q->abs_ts = pinfo->abs_ts;
    tap_queue_packet(p2pc_tap, pinfo, q);
    return ti;
}

/* ---- Statistics tree: tshark -z p2pc,tree ---- */

static const char st_messages[] = "P2P messages";
static const char st_wire[] = "Bytes on the wire";
static const char st_payload[] = "Payload bytes sent";
static const char st_raw[] = "Payload bytes uncompressed";
static int st_node_messages = -1;
static int st_node_wire = -1;
static int st_node_payload = -1;
static int st_node_raw = -1;

static void
p2pc_stats_tree_init(stats_tree *st)
{
    st_node_messages = stats_tree_create_node(st, st_messages, 0, STAT_DT_INT, TRUE);
    st_node_wire = stats_tree_create_node(st, st_wire, 0, STAT_DT_INT, TRUE);
    st_node_payload = stats_tree_create_node(st, st_payload, 0, STAT_DT_INT, TRUE);
    st_node_raw = stats_tree_create_node(st, st_raw, 0, STAT_DT_INT, TRUE);
}

static void
stats_add(stats_tree *st, int root, const char *root_name, const p2pc_record_t *r, gint value)
{
    int proto_node;
    increase_stat_node(st, root_name, 0, FALSE, value);
    proto_node = increase_stat_node(st, r->proto, root, TRUE, value);
    increase_stat_node(st, r->msg_type, proto_node, FALSE, value);
}

static tap_packet_status
p2pc_stats_tree_packet(stats_tree *st, packet_info *pinfo, epan_dissect_t *edt,
                       const void *p, tap_flags_t flags)
{
    const p2pc_record_t *r = (const p2pc_record_t *)p;
    /* stats_tree counters are 32-bit: exact 64-bit totals are in -z p2pc,records. */
    stats_add(st, st_node_messages, st_messages, r, 1);
    stats_add(st, st_node_wire, st_wire, r, (gint)MIN(r->wire_len, G_MAXINT));
    stats_add(st, st_node_payload, st_payload, r, (gint)MIN(r->payload_len, G_MAXINT));
    stats_add(st, st_node_raw, st_raw, r, (gint)MIN(r->raw_len, G_MAXINT));
    return TAP_PACKET_REDRAW;
}

/* ---- Record dump: tshark -q -z p2pc,records[,filter] ---- */

typedef struct {
    guint32 frames;
    guint64 bytes;
    guint32 data_segs;
    guint64 data_bytes;         /* TCP payload bytes */
    guint64 data_frame_bytes;   /* whole frames carrying payload */
    guint32 pure_acks;
    guint64 pure_ack_bytes;
    guint32 max_seg;
    guint32 ctl_frames;         /* SYN/FIN/RST without payload */
    guint64 ctl_bytes;
    gchar *src;
    gchar *dst;
    guint32 srcport;
    guint32 dstport;
    nstime_t first_ts;
    nstime_t last_ts;
} tcp_dir_stats_t;

typedef struct {
    GHashTable *dirs;   /* "stream:src:port" -> tcp_dir_stats_t */
    GPtrArray *order;
    guint64 records;
} records_tap_t;

static void
print_ts(FILE *f, const nstime_t *ts)
{
    fprintf(f, "%" PRId64 ".%09d", (gint64)ts->secs, ts->nsecs);
}

static tap_packet_status
records_packet(void *tapdata, packet_info *pinfo, epan_dissect_t *edt, const void *p,
               tap_flags_t flags)
{
    records_tap_t *t = (records_tap_t *)tapdata;
    const p2pc_record_t *r = (const p2pc_record_t *)p;
    gchar *src = address_to_str(NULL, &r->src);
    gchar *dst = address_to_str(NULL, &r->dst);

    t->records++;
    printf("M\t%u\t%d\t%s\t%u\t%s\t%u\t", r->frame,
           r->stream == G_MAXUINT32 ? -1 : (int)r->stream, src, r->srcport, dst, r->dstport);
    print_ts(stdout, &r->abs_ts);
    printf("\t%s\t%s\t%s\t%" G_GUINT64_FORMAT "\t%" G_GUINT64_FORMAT "\t%" G_GUINT64_FORMAT
           "\t%" G_GUINT64_FORMAT "\t%u\n",
           r->proto, r->msg_type, r->codec, r->wire_len, r->header_len, r->payload_len,
           r->raw_len, r->batch_count);
    wmem_free(NULL, src);
    wmem_free(NULL, dst);
    return TAP_PACKET_DONT_REDRAW;
}

static tap_packet_status
records_tcp_packet(void *tapdata, packet_info *pinfo, epan_dissect_t *edt, const void *p,
                   tap_flags_t flags)
{
    records_tap_t *t = (records_tap_t *)tapdata;
    const tcp_info_t *th = (const tcp_info_t *)p;
    gchar *src = address_to_str(NULL, &th->ip_src);
    gchar *key = g_strdup_printf("%u\t%s\t%u", th->th_stream, src, th->th_sport);
    tcp_dir_stats_t *d = (tcp_dir_stats_t *)g_hash_table_lookup(t->dirs, key);
    guint32 frame_len = pinfo->fd->pkt_len;
    guint32 seglen = th->th_have_seglen ? th->th_seglen : 0;

    if (!d) {
        d = g_new0(tcp_dir_stats_t, 1);
        d->src = g_strdup(src);
        d->dst = address_to_str(NULL, &th->ip_dst);
        d->srcport = th->th_sport;
        d->dstport = th->th_dport;
        d->first_ts = pinfo->abs_ts;
        g_hash_table_insert(t->dirs, key, d);
        g_ptr_array_add(t->order, key);
    } else {
        g_free(key);
    }
    wmem_free(NULL, src);
    d->frames++;
    d->bytes += frame_len;
    d->last_ts = pinfo->abs_ts;
    if (seglen > 0) {
        d->data_segs++;
        d->data_bytes += seglen;
        d->data_frame_bytes += frame_len;
        if (seglen > d->max_seg)
            d->max_seg = seglen;
    } else if ((th->th_flags & (TH_SYN | TH_FIN | TH_RST)) == 0 && (th->th_flags & TH_ACK)) {
        d->pure_acks++;
        d->pure_ack_bytes += frame_len;
    } else {
        d->ctl_frames++;
        d->ctl_bytes += frame_len;
    }
    return TAP_PACKET_DONT_REDRAW;
}

static void
records_draw(void *tapdata)
{
    records_tap_t *t = (records_tap_t *)tapdata;
    guint i;

    printf("#T\tstream\tsrc\tsrcport\tdst\tdstport\tframes\tbytes\tdata_segs\tdata_bytes"
           "\tdata_frame_bytes\tpure_acks\tpure_ack_bytes\tctl_frames\tctl_bytes\tmax_seg"
           "\tfirst_time\tlast_time\n");
    for (i = 0; i < t->order->len; i++) {
        const gchar *key = (const gchar *)g_ptr_array_index(t->order, i);
        tcp_dir_stats_t *d = (tcp_dir_stats_t *)g_hash_table_lookup(t->dirs, key);
        guint stream = (guint)strtoul(key, NULL, 10);
        printf("T\t%u\t%s\t%u\t%s\t%u\t%u\t%" G_GUINT64_FORMAT "\t%u\t%" G_GUINT64_FORMAT
               "\t%" G_GUINT64_FORMAT "\t%u\t%" G_GUINT64_FORMAT "\t%u\t%" G_GUINT64_FORMAT "\t%u\t",
               stream, d->src, d->srcport, d->dst, d->dstport, d->frames, d->bytes,
               d->data_segs, d->data_bytes, d->data_frame_bytes, d->pure_acks,
               d->pure_ack_bytes, d->ctl_frames, d->ctl_bytes, d->max_seg);
        print_ts(stdout, &d->first_ts);
        printf("\t");
        print_ts(stdout, &d->last_ts);
        printf("\n");
    }
    printf("#END\trecords=%" G_GUINT64_FORMAT "\n", t->records);
}

static void
dir_stats_free(gpointer p)
{
    tcp_dir_stats_t *d = (tcp_dir_stats_t *)p;
    g_free(d->src);
    wmem_free(NULL, d->dst);
    g_free(d);
}

static void
records_finish(void *tapdata)
{
    records_tap_t *t = (records_tap_t *)tapdata;
    /* Called once at exit; the tcp listener (keyed by &t->order) gets no packets after this. */
    g_ptr_array_free(t->order, TRUE);
    g_hash_table_destroy(t->dirs);
    g_free(t);
}

/* The tcp listener shares the records tap's state through a trampoline: a tap's data pointer
 * identifies its listener, so the second listener is keyed by &t->order. */
static tap_packet_status
records_tcp_trampoline(void *tapdata, packet_info *pinfo, epan_dissect_t *edt, const void *p,
                       tap_flags_t flags)
{
    records_tap_t *t = (records_tap_t *)((char *)tapdata - offsetof(records_tap_t, order));
    return records_tcp_packet(t, pinfo, edt, p, flags);
}

static p2pc_tap_init_t
records_init(const char *opt_arg, void *userdata)
{
    records_tap_t *t = g_new0(records_tap_t, 1);
    const char *filter = NULL;
    GString *err;

    if (!strncmp(opt_arg, "p2pc,records,", 13))
        filter = opt_arg + 13;
    t->dirs = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, dir_stats_free);
    t->order = g_ptr_array_new_with_free_func(g_free);

    printf("#p2pc-records\t1\n");
    printf("#M\tframe\tstream\tsrc\tsrcport\tdst\tdstport\ttime\tproto\tmsg_type\tcodec"
           "\twire_len\theader_len\tpayload_len\traw_len\tbatch_count\n");
    err = register_tap_listener("p2pc", t, filter, TL_REQUIRES_NOTHING, NULL,
                                records_packet, records_draw, records_finish);
    if (err) {
        fprintf(stderr, "tshark: Couldn't register p2pc,records tap: %s\n", err->str);
        g_string_free(err, TRUE);
        g_free(t);
        exit(1);
    }
    /* TCP segment and ACK counts per connection direction, for the header/ACK model. */
    err = register_tap_listener("tcp", &t->order, NULL, TL_REQUIRES_NOTHING, NULL,
                                records_tcp_trampoline, NULL, NULL);
    if (err)
        g_string_free(err, TRUE);
    P2PC_TAP_INIT_STARTED;
}

/* ---- Payload dump: tshark -q -z p2pc,payloads[,filter] ----
 * One line per record that carries its uncompressed payload: `P frame proto msg_type codec hex`,
 * for `p2pc whatif` to recompress with other codecs. */
static tap_packet_status
payloads_packet(void *tapdata, packet_info *pinfo, epan_dissect_t *edt, const void *p,
                tap_flags_t flags)
{
    const p2pc_record_t *r = (const p2pc_record_t *)p;
    static const char hex[] = "0123456789abcdef";
    guint len, i;
    const guint8 *data;
    char *line;

    if (!r->raw_tvb)
        return TAP_PACKET_DONT_REDRAW;
    len = tvb_captured_length(r->raw_tvb);
    data = tvb_get_ptr(r->raw_tvb, 0, len);
    line = (char *)g_malloc((gsize)len * 2 + 1);
    for (i = 0; i < len; i++) {
        line[2 * i] = hex[data[i] >> 4];
        line[2 * i + 1] = hex[data[i] & 0xf];
    }
    line[2 * len] = '\0';
    printf("P\t%u\t%s\t%s\t%s\t%s\n", r->frame, r->proto, r->msg_type, r->codec, line);
    g_free(line);
    return TAP_PACKET_DONT_REDRAW;
}

static p2pc_tap_init_t
payloads_init(const char *opt_arg, void *userdata)
{
    const char *filter = NULL;
    GString *err;
    if (!strncmp(opt_arg, "p2pc,payloads,", 14))
        filter = opt_arg + 14;
    printf("#p2pc-payloads\t1\n#P\tframe\tproto\tmsg_type\tcodec\traw_hex\n");
    err = register_tap_listener("p2pc", (void *)payloads_init, filter, TL_REQUIRES_NOTHING, NULL,
                                payloads_packet, NULL, NULL);
    if (err) {
        fprintf(stderr, "tshark: Couldn't register p2pc,payloads tap: %s\n", err->str);
        g_string_free(err, TRUE);
        exit(1);
    }
    P2PC_TAP_INIT_STARTED;
}

static stat_tap_ui payloads_ui = {
    REGISTER_STAT_GROUP_GENERIC,
    NULL,
    "p2pc,payloads",
    payloads_init,
    0,
    NULL
};

static stat_tap_ui records_ui = {
    REGISTER_STAT_GROUP_GENERIC,
    NULL,
    "p2pc,records",
    records_init,
    0,
    NULL
};

void
proto_register_p2pc(void)
{
    module_t *p2pc_module;
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
        { &hf_p2pc_ratio, { "Compression ratio", "p2pc.ratio", FT_DOUBLE, BASE_NONE, NULL, 0x0,
            "raw_len / payload_len", HFILL } },
        { &hf_p2pc_batch_count, { "Batch count", "p2pc.batch_count", FT_UINT32, BASE_DEC, NULL, 0x0,
            "Items carried by this message (transactions in a batch; 1 otherwise)", HFILL } },
    };
    static gint *ett[] = { &ett_p2pc };

    proto_p2pc = proto_register_protocol("P2P Compression Accounting", "P2PC", "p2pc");
    proto_register_field_array(proto_p2pc, hf, array_length(hf));
    proto_register_subtree_array(ett, array_length(ett));
    p2pc_tap = register_tap("p2pc");

    p2pc_module = prefs_register_protocol(proto_p2pc, NULL);
    prefs_register_uint_preference(p2pc_module, "max_decompressed_mib",
        "Maximum decompressed size (MiB)",
        "Cap on the output of any one decompression, over every protocol's own limit",
        10, &pref_max_decompressed_mib);
}

void
proto_reg_handoff_p2pc(void)
{
}

void
register_tap_listener_p2pc(void)
{
    stats_tree_register_plugin("p2pc", "p2pc", "P2P Compression/Messages and Bytes", 0,
                               p2pc_stats_tree_packet, p2pc_stats_tree_init, NULL);
    register_stat_tap_ui(&records_ui, NULL);
    register_stat_tap_ui(&payloads_ui, NULL);
}
