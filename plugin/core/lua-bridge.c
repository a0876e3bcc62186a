/* lua-bridge.c
 * p2pc for Lua dissectors (docs/lua-api.md): the shared decompressors and the common record,
 * reachable from Lua on every supported Wireshark through the two things every version's Lua
 * has, Dissector.get():call() and pinfo.private.
 *
 *   "p2pc.decompress.<codec>" (one per p2pc_codec_name(), and "p2pc.decompress" taking the codec
 *   from p2pc.dc.codec) decompresses the tvb it is called with under p2pc_bound(), adds the
 *   "Decompressed ..." tab and hands the output to the "p2pc.payload" string table entry named
 *   by p2pc.dc.payload.  Stream codecs keep one decoder per conversation, direction and the
 *   caller's p2pc.dc.stream key.  It answers in p2pc.dc.status/.raw_len/.detail.
 *
 *   "p2pc.record" adds the p2pc record whose fields the caller put in p2pc.record.*.
 *
 * Every input key is removed once read, so no value carries over to the next call.  Bad input
 * (an unknown codec, a malformed number, a record missing its protocol) is an expert item.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/p2pc-compat.h"
#include "core/codecs.h"
#include "core/prefs.h"
#include "core/record.h"

#include <epan/conversation.h>
#include <epan/expert.h>
#include <epan/proto_data.h>
#include <epan/to_str.h>
#include <wsutil/strtoi.h>

void proto_register_p2pc_lua(void);

/* A Lua caller's bound when it names none: the largest any p2pc protocol allows (FISCO's). */
#define LUA_DEFAULT_BOUND   (100 * 1024 * 1024)
/* Stream output kept for re-dissection, per direction; past it a frame decodes only once. */
#define LUA_STREAM_KEEP_MAX (24 * 1024 * 1024)
/* A record's strings (protocol, message type, codec) are names, not data. */
#define LUA_NAME_MAX        64

static const p2pc_codec_t lua_codecs[] = {
    P2PC_CODEC_LZO1X, P2PC_CODEC_ZLIB, P2PC_CODEC_DEFLATE, P2PC_CODEC_GZIP, P2PC_CODEC_SNAPPY,
    P2PC_CODEC_SNAPPY_FRAMED, P2PC_CODEC_BROTLI, P2PC_CODEC_ZSTD, P2PC_CODEC_GZIP_STREAM,
    P2PC_CODEC_DEFLATE_STREAM, P2PC_CODEC_BROTLI_STREAM,
};

static int proto_p2pc_lua = -1;
static int hf_lua_codec = -1;
static int hf_lua_status = -1;
static int hf_lua_in_len = -1;
static int hf_lua_raw_len = -1;
static gint ett_lua = -1;

static expert_field ei_lua_failed = EI_INIT;
static expert_field ei_lua_checksum = EI_INIT;
static expert_field ei_lua_arg = EI_INIT;
static expert_field ei_lua_payload = EI_INIT;
static expert_field ei_lua_not_kept = EI_INIT;
static expert_field ei_lua_record = EI_INIT;

static dissector_table_t payload_table;

/* ---- pinfo.private ---- */

/* Take (read and remove) a key: a copy in the packet's pool, or NULL. */
static const char *
take(packet_info *pinfo, const char *key)
{
    const char *v;
    char *copy;
    if (!pinfo->private_table)
        return NULL;
    v = (const char *)g_hash_table_lookup(pinfo->private_table, key);
    if (!v)
        return NULL;
    copy = wmem_strdup(pinfo->pool, v);
    g_hash_table_remove(pinfo->private_table, key);
    return copy;
}

/* Answer the caller.  Lua creates the table (with g_free for keys and values) when it sets its
 * first key; a caller that set none gets no answer, only the tree. */
static void
answer(packet_info *pinfo, const char *key, const char *value)
{
    if (!pinfo->private_table)
        return;
    if (value)
        g_hash_table_replace(pinfo->private_table, g_strdup(key), g_strdup(value));
    else
        g_hash_table_remove(pinfo->private_table, key);
}

/* A decimal u64 key: def when absent, FALSE (and an expert item) when malformed. */
static gboolean
take_u64(packet_info *pinfo, proto_item *ti, const char *key, guint64 def, guint64 *out)
{
    const char *v = take(pinfo, key);
    const char *end;
    *out = def;
    if (!v)
        return TRUE;
    if (!ws_strtou64(v, &end, out) || *end) {
        expert_add_info_format(pinfo, ti, &ei_lua_arg, "pinfo.private[\"%s\"] = \"%s\" is not a "
                               "non-negative integer", key, p2pc_format_text(pinfo->pool, v));
        return FALSE;
    }
    return TRUE;
}

/* ---- decompression ---- */

/* Keys of this protocol's per-packet data (pinfo->pool). */
enum { PKT_STREAM_CALLS = 0, PKT_OUTPUTS = 1 };

/* Remember a decompressed tvb for this packet's records: its 1-based number, which the caller
 * gets in p2pc.dc.output and may pass back in p2pc.record.raw_output. */
static guint
output_add(packet_info *pinfo, tvbuff_t *out)
{
    wmem_array_t *outs = (wmem_array_t *)p_get_proto_data(pinfo->pool, pinfo, proto_p2pc_lua, PKT_OUTPUTS);
    if (!outs) {
        outs = wmem_array_new(pinfo->pool, sizeof(tvbuff_t *));
        p_add_proto_data(pinfo->pool, pinfo, proto_p2pc_lua, PKT_OUTPUTS, outs);
    }
    wmem_array_append_one(outs, out);
    return wmem_array_get_count(outs);
}

static tvbuff_t *
output_get(packet_info *pinfo, guint64 n)
{
    wmem_array_t *outs = (wmem_array_t *)p_get_proto_data(pinfo->pool, pinfo, proto_p2pc_lua, PKT_OUTPUTS);
    if (!outs || n == 0 || n > wmem_array_get_count(outs))
        return NULL;
    return *(tvbuff_t **)wmem_array_index(outs, (guint)(n - 1));
}

static p2pc_codec_t
codec_by_name(const char *name)
{
    for (size_t i = 0; i < G_N_ELEMENTS(lua_codecs); i++)
        if (!strcmp(name, p2pc_codec_name(lua_codecs[i])))
            return lua_codecs[i];
    return P2PC_CODEC_NONE;
}

static gboolean
is_stream_codec(p2pc_codec_t codec)
{
    return codec == P2PC_CODEC_GZIP_STREAM || codec == P2PC_CODEC_DEFLATE_STREAM ||
           codec == P2PC_CODEC_BROTLI_STREAM;
}

/* One decoder: a conversation's direction under one caller key. */
typedef struct {
    p2pc_stream_t *dec;
    guint64 kept;               /* output kept for re-dissection so far */
    guint64 in_total;           /* compressed bytes fed so far (the ratio bound's) */
    guint64 out_total;          /* decompressed bytes produced so far */
} lua_stream_t;

/* What one stream call decoded in a frame, kept for re-dissection. */
typedef struct {
    p2pc_dc_status_t status;
    const char *detail;
    guint8 *out;
    size_t out_len;
    p2pc_limit_t bounded;       /* P2PC_LIMIT_RATIO or _CAPTURE: that bound stopped the stream */
} lua_result_t;

static p2pc_bool_t
free_stream_cb(wmem_allocator_t *allocator, wmem_cb_event_t event, void *user_data)
{
    p2pc_stream_free((p2pc_stream_t *)user_data);
    return FALSE;   /* once */
}

static lua_stream_t *
stream_for(packet_info *pinfo, p2pc_codec_t codec, const char *key)
{
    conversation_t *conv = find_or_create_conversation(pinfo);
    wmem_map_t *streams = (wmem_map_t *)conversation_get_proto_data(conv, proto_p2pc_lua);
    char *name;
    lua_stream_t *s;

    if (!streams) {
        streams = wmem_map_new(wmem_file_scope(), wmem_str_hash, g_str_equal);
        conversation_add_proto_data(conv, proto_p2pc_lua, streams);
    }
    /* The direction is the sender's address and port; the codec is part of the key so that a
     * caller switching codecs gets a fresh decoder rather than a wrong one. */
    name = wmem_strdup_printf(pinfo->pool, "%s|%s|%s:%u", key ? key : "", p2pc_codec_name(codec),
                              address_to_str(pinfo->pool, &pinfo->src), pinfo->srcport);
    s = (lua_stream_t *)wmem_map_lookup(streams, name);
    if (!s) {
        s = wmem_new0(wmem_file_scope(), lua_stream_t);
        s->dec = p2pc_stream_new(codec);
        wmem_register_callback(wmem_file_scope(), free_stream_cb, s->dec);
        wmem_map_insert(streams, wmem_strdup(wmem_file_scope(), name), s);
    }
    return s;
}

/* The n-th stream call in this frame (the same order on every pass). */
static guint
stream_call_index(packet_info *pinfo)
{
    guint *n = (guint *)p_get_proto_data(pinfo->pool, pinfo, proto_p2pc_lua, PKT_STREAM_CALLS);
    if (!n) {
        n = wmem_new0(pinfo->pool, guint);
        p_add_proto_data(pinfo->pool, pinfo, proto_p2pc_lua, PKT_STREAM_CALLS, n);
    }
    return ++*n;
}

/* Feed a stream on the first pass; on later passes read back what that pass kept.  NULL when
 * this pass cannot know (not kept). */
static lua_result_t *
stream_decode(tvbuff_t *tvb, packet_info *pinfo, p2pc_codec_t codec, const char *key, size_t own)
{
    guint idx = stream_call_index(pinfo);
    lua_result_t *r = (lua_result_t *)p_get_proto_data(wmem_file_scope(), pinfo, proto_p2pc_lua, idx);
    lua_stream_t *s;
    guint len = tvb_captured_length(tvb);
    wmem_allocator_t *scope;
    p2pc_bound_t bound;

    if (r || PINFO_FD_VISITED(pinfo))
        return r;
    s = stream_for(pinfo, codec, key);
    scope = p2pc_replay_scope(pinfo);
    if (scope != pinfo->pool && s->kept >= LUA_STREAM_KEEP_MAX)
        scope = pinfo->pool;
    r = wmem_new0(scope, lua_result_t);
    s->in_total += len;
    bound = p2pc_bound(pinfo, own, s->in_total, s->out_total);
    r->status = p2pc_stream_feed(s->dec, tvb_get_ptr(tvb, 0, len), len, bound.bound, scope,
                                 &r->out, &r->out_len, &r->detail);
    s->out_total += r->out_len;
    if (p2pc_bound_charge(pinfo, &bound, r->out_len, r->status == P2PC_DC_BOUND))
        r->bounded = bound.by;
    if (scope != pinfo->pool) {
        s->kept += r->out_len;
        p2pc_replay_charge(pinfo, sizeof(lua_result_t) + r->out_len);
        p_add_proto_data(wmem_file_scope(), pinfo, proto_p2pc_lua, idx, r);
    }
    return r;
}

/* How a decompress call ended: in the tree, in its answer to the Lua caller, and as the
 * expert item of a bound, a checksum or a failure. */
static void
report_status(tvbuff_t *tvb, packet_info *pinfo, proto_item *ti, proto_tree *st, p2pc_codec_t codec,
              p2pc_dc_status_t status, const char *detail, p2pc_limit_t bounded)
{
    proto_tree_add_string(st, hf_lua_status, tvb, 0, 0, p2pc_dc_status_name(status));
    answer(pinfo, "p2pc.dc.status", status == P2PC_DC_OK ? "ok" : p2pc_dc_status_name(status));
    answer(pinfo, "p2pc.dc.detail", detail);
    if (bounded != P2PC_LIMIT_OWN)
        p2pc_bound_expert(pinfo, ti, bounded);
    else if (status == P2PC_DC_CRC || status == P2PC_DC_LENGTH)
        expert_add_info_format(pinfo, ti, &ei_lua_checksum, "%s: %s", p2pc_dc_status_name(status),
                               detail ? detail : "");
    else if (status != P2PC_DC_OK)
        expert_add_info_format(pinfo, ti, &ei_lua_failed, "%s decompression failed (%s)%s%s",
                               p2pc_codec_name(codec), p2pc_dc_status_name(status),
                               detail ? ": " : "", detail ? detail : "");
}

/* The decompressed bytes `out`: their length and output number answered to the Lua caller, then
 * handed to the p2pc.payload dissector the caller named, if any. */
static void
hand_on(tvbuff_t *out, packet_info *pinfo, proto_tree *tree, proto_tree *st, proto_item *ti,
        const char *payload, void *data)
{
    dissector_handle_t h;

    proto_tree_add_uint(st, hf_lua_raw_len, out, 0, tvb_captured_length(out), tvb_reported_length(out));
    answer(pinfo, "p2pc.dc.raw_len", wmem_strdup_printf(pinfo->pool, "%u", tvb_reported_length(out)));
    answer(pinfo, "p2pc.dc.output", wmem_strdup_printf(pinfo->pool, "%u", output_add(pinfo, out)));
    if (!payload)
        return;
    h = dissector_get_string_handle(payload_table, payload);
    if (h)
        call_dissector_only(h, out, pinfo, tree, data);
    else
        expert_add_info_format(pinfo, ti, &ei_lua_payload, "No dissector in \"p2pc.payload\" "
                               "for \"%s\"", p2pc_format_text(pinfo->pool, payload));
}

static int
dissect_decompress(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data, void *cb_data)
{
    p2pc_codec_t codec = (p2pc_codec_t)GPOINTER_TO_INT(cb_data);
    const char *codec_name = take(pinfo, "p2pc.dc.codec");
    const char *tab = take(pinfo, "p2pc.dc.tab");
    const char *payload = take(pinfo, "p2pc.dc.payload");
    const char *key = take(pinfo, "p2pc.dc.stream");
    guint64 bound;
    proto_item *ti;
    proto_tree *st;
    tvbuff_t *out = NULL;
    p2pc_dc_status_t status = P2PC_DC_CORRUPT;
    const char *detail = NULL;
    guint in_len = tvb_captured_length(tvb);
    p2pc_limit_t bounded = P2PC_LIMIT_OWN;

    ti = proto_tree_add_item(tree, proto_p2pc_lua, tvb, 0, -1, ENC_NA);
    st = proto_item_add_subtree(ti, ett_lua);
    answer(pinfo, "p2pc.dc.raw_len", NULL);
    answer(pinfo, "p2pc.dc.output", NULL);
    if (codec == P2PC_CODEC_NONE && codec_name)
        codec = codec_by_name(codec_name);
    if (codec == P2PC_CODEC_NONE) {
        const char *what = codec_name ? p2pc_format_text(pinfo->pool, codec_name) : "(none)";
        expert_add_info_format(pinfo, ti, &ei_lua_arg, "Unknown p2pc codec \"%s\"", what);
        answer(pinfo, "p2pc.dc.status", "error");
        answer(pinfo, "p2pc.dc.detail", "unknown codec");
        return (int)in_len;
    }
    proto_item_append_text(ti, ": %s", p2pc_codec_name(codec));
    proto_tree_add_string(st, hf_lua_codec, tvb, 0, 0, p2pc_codec_name(codec));
    proto_tree_add_uint(st, hf_lua_in_len, tvb, 0, in_len, in_len);
    if (!take_u64(pinfo, ti, "p2pc.dc.bound", LUA_DEFAULT_BOUND, &bound)) {
        answer(pinfo, "p2pc.dc.status", "error");
        answer(pinfo, "p2pc.dc.detail", "bad bound");
        return (int)in_len;
    }
    bound = MIN(bound, (guint64)G_MAXINT);
    if (!tab)
        tab = wmem_strdup_printf(pinfo->pool, "Decompressed %s", p2pc_codec_name(codec));

    if (is_stream_codec(codec)) {
        lua_result_t *r = stream_decode(tvb, pinfo, codec, key, (size_t)bound);
        if (!r) {
            if (!p2pc_replay_missing(tvb, pinfo, st))
                expert_add_info(pinfo, ti, &ei_lua_not_kept);
            answer(pinfo, "p2pc.dc.status", "not kept");
            return (int)in_len;
        }
        status = r->status;
        detail = r->detail;
        bounded = r->bounded;
        /* A stream that failed still hands on what decoded before the error. */
        if (r->out_len && r->out_len <= G_MAXINT) {
            out = tvb_new_child_real_data(tvb, r->out, (guint)r->out_len, (gint)r->out_len);
            add_new_data_source(pinfo, out, tab);
        }
    } else {
        p2pc_bound_t b = p2pc_bound(pinfo, (size_t)bound, in_len, 0);
        out = p2pc_decompress_tvb(tvb, 0, -1, pinfo, codec, b.bound, tab, &status, &detail);
        if (p2pc_bound_charge(pinfo, &b, out ? tvb_captured_length(out) : 0, status == P2PC_DC_BOUND))
            bounded = b.by;
    }

    report_status(tvb, pinfo, ti, st, codec, status, detail, bounded);
    if (!out)
        return (int)in_len;

    proto_item_append_text(ti, ", %u -> %u bytes", in_len, tvb_reported_length(out));
    hand_on(out, pinfo, tree, st, ti, payload, data);
    return (int)in_len;
}

/* ---- the record ---- */

/* A record's name field: required ones must be there; every one is short. */
static const char *
take_name(packet_info *pinfo, proto_item *ti, const char *key, const char *def)
{
    const char *v = take(pinfo, key);
    if (!v)
        v = def;
    if (!v)
        expert_add_info_format(pinfo, ti, &ei_lua_record, "p2pc record without pinfo.private[\"%s\"]", key);
    else if (!*v || strlen(v) > LUA_NAME_MAX) {
        expert_add_info_format(pinfo, ti, &ei_lua_record, "p2pc record: pinfo.private[\"%s\"] must be "
                               "1 to " G_STRINGIFY(LUA_NAME_MAX) " bytes", key);
        v = NULL;
    }
    return v;
}

static int
dissect_lua_record(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    p2pc_record_t rec;
    guint64 batch, raw_output;
    guint len = tvb_reported_length(tvb);
    proto_item *ti = proto_tree_add_item(tree, proto_p2pc_lua, tvb, 0, 0, ENC_NA);
    gboolean ok;

    proto_item_set_hidden(ti);
    p2pc_record_init(&rec, NULL, NULL);
    rec.proto = take_name(pinfo, ti, "p2pc.record.proto", NULL);
    rec.msg_type = take_name(pinfo, ti, "p2pc.record.msg_type", NULL);
    rec.codec = take_name(pinfo, ti, "p2pc.record.codec", "none");
    /* Every number is read (and so removed) before any is judged. */
    ok = take_u64(pinfo, ti, "p2pc.record.wire_len", len, &rec.wire_len);
    ok &= take_u64(pinfo, ti, "p2pc.record.header_len", 0, &rec.header_len);
    ok &= take_u64(pinfo, ti, "p2pc.record.payload_len", G_MAXUINT64, &rec.payload_len);
    ok &= take_u64(pinfo, ti, "p2pc.record.raw_len", G_MAXUINT64, &rec.raw_len);
    ok &= take_u64(pinfo, ti, "p2pc.record.batch_count", 1, &batch);
    ok &= take_u64(pinfo, ti, "p2pc.record.raw_output", 0, &raw_output);
    if (!ok || !rec.proto || !rec.msg_type || !rec.codec) {
        proto_item_set_visible(ti);
        answer(pinfo, "p2pc.record.status", "error");
        return (int)len;
    }
    if (rec.header_len > rec.wire_len) {
        expert_add_info_format(pinfo, ti, &ei_lua_record, "p2pc record: header_len %" G_GUINT64_FORMAT
                               " exceeds wire_len %" G_GUINT64_FORMAT, rec.header_len, rec.wire_len);
        proto_item_set_visible(ti);
        answer(pinfo, "p2pc.record.status", "error");
        return (int)len;
    }
    if (rec.payload_len == G_MAXUINT64)
        rec.payload_len = rec.wire_len - rec.header_len;
    if (rec.raw_len == G_MAXUINT64)
        rec.raw_len = rec.payload_len;
    if (batch > G_MAXUINT32) {
        expert_add_info(pinfo, ti, &ei_lua_record);
        proto_item_set_visible(ti);
        answer(pinfo, "p2pc.record.status", "error");
        return (int)len;
    }
    rec.batch_count = (guint32)batch;
    /* The uncompressed payload, for -z p2pc,payloads: a decompress call's output, else (an
     * uncompressed message) the record's own bytes after its header. */
    if (raw_output)
        rec.raw_tvb = output_get(pinfo, raw_output);
    else if (!strcmp(rec.codec, "none") && rec.raw_len == rec.payload_len &&
             rec.header_len + rec.payload_len <= tvb_captured_length(tvb))
        rec.raw_tvb = tvb_new_subset_length(tvb, (gint)rec.header_len, (gint)rec.payload_len);
    p2pc_record_add(tvb, 0, -1, pinfo, tree, &rec);
    answer(pinfo, "p2pc.record.status", "ok");
    return (int)len;
}

void
proto_register_p2pc_lua(void)
{
    static hf_register_info hf[] = {
        { &hf_lua_codec, { "Codec", "p2pc_lua.codec", FT_STRING, BASE_NONE, NULL, 0x0,
            "Codec a Lua dissector asked to decompress with", HFILL } },
        { &hf_lua_status, { "Status", "p2pc_lua.status", FT_STRING, BASE_NONE, NULL, 0x0,
            "How the decompression ended", HFILL } },
        { &hf_lua_in_len, { "Compressed bytes", "p2pc_lua.in_len", FT_UINT32, BASE_DEC, NULL, 0x0,
            "Bytes the Lua dissector passed in", HFILL } },
        { &hf_lua_raw_len, { "Decompressed bytes", "p2pc_lua.raw_len", FT_UINT32, BASE_DEC, NULL, 0x0,
            "Bytes the decoder produced", HFILL } },
    };
    static gint *ett[] = { &ett_lua };
    static ei_register_info ei[] = {
        { &ei_lua_failed, { "p2pc_lua.decompress.failed", PI_MALFORMED, PI_ERROR,
            "Decompression failed", EXPFILL } },
        { &ei_lua_checksum, { "p2pc_lua.decompress.checksum", PI_CHECKSUM, PI_WARN,
            "Decompressed, but a checksum or declared length did not match", EXPFILL } },
        { &ei_lua_arg, { "p2pc_lua.bad_argument", PI_PROTOCOL, PI_ERROR,
            "A Lua dissector passed p2pc a bad argument", EXPFILL } },
        { &ei_lua_payload, { "p2pc_lua.no_payload_dissector", PI_PROTOCOL, PI_WARN,
            "No payload dissector registered under this name", EXPFILL } },
        { &ei_lua_not_kept, { "p2pc_lua.stream.not_kept", PI_UNDECODED, PI_NOTE,
            "This stream output was decoded on the first pass only and not kept "
            "(p2pc.keep_replay off, or the direction's kept output reached its budget)", EXPFILL } },
        { &ei_lua_record, { "p2pc_lua.record.bad", PI_PROTOCOL, PI_ERROR,
            "A Lua dissector's p2pc record is incomplete or inconsistent", EXPFILL } },
    };
    expert_module_t *expert;

    proto_p2pc_lua = proto_register_protocol("P2PC for Lua dissectors", "P2PC-Lua", "p2pc_lua");
    proto_register_field_array(proto_p2pc_lua, hf, array_length(hf));
    proto_register_subtree_array(ett, array_length(ett));
    expert = expert_register_protocol(proto_p2pc_lua);
    expert_register_field_array(expert, ei, array_length(ei));

    payload_table = register_dissector_table("p2pc.payload", "p2pc decompressed payload (Lua)",
                                             proto_p2pc_lua, FT_STRING, P2PC_STRING_CASE_SENSITIVE);
    register_dissector_with_data("p2pc.decompress", dissect_decompress, proto_p2pc_lua,
                                 GINT_TO_POINTER(P2PC_CODEC_NONE));
    for (size_t i = 0; i < G_N_ELEMENTS(lua_codecs); i++)
        register_dissector_with_data(g_strdup_printf("p2pc.decompress.%s", p2pc_codec_name(lua_codecs[i])),
                                     dissect_decompress, proto_p2pc_lua, GINT_TO_POINTER(lua_codecs[i]));
    register_dissector("p2pc.record", dissect_lua_record, proto_p2pc_lua);
}
