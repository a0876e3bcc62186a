/* p2pc-libp2p.c
 * The pieces every libp2p layer dissector uses (see p2pc-libp2p.h): uvarint and protobuf
 * readers, and l2p_dissect_pdus(), the per-pipe reassembly engine with its per-frame cache.
 *
 * Why not Wireshark's reassembly_table: a muxed stream is not TCP (no sequence numbers of its
 * own, and its bytes arrive inside PDUs of the layer below, which is itself reassembled), and
 * multistream-select switches the framing in the middle of a pipe.  So, as packet-websocket.c
 * does for its stateful decompression, each pipe keeps a byte buffer that only the first pass
 * feeds, and each frame records what every pipe cut out of it (PDUs as offsets into that
 * frame's data where they lie in it, copies where they were reassembled); later passes replay
 * the record and never touch the buffers.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "p2pc-libp2p.h"

#include <epan/exceptions.h>
#include <epan/expert.h>
#include <epan/proto_data.h>
#include <epan/show_exception.h>

static int l2p_proto = -1;
static dissector_handle_t ms_handle;
static dissector_handle_t appdata_handle;
static dissector_table_t ms_table;
static guint32 next_pipe_id = 1;
const char *l2p_pref_protocol_map = "";

/* Weak while plugin/packet-libp2p.c still carries its own copies (the old single-file engine):
 * a full build links theirs, a build without it links these. */
__attribute__((weak)) gboolean
p2pc_uvarint(const guint8 *p, guint avail, guint64 *value, guint *used)
{
    guint64 v = 0;
    for (guint i = 0; i < avail && i < 9; i++) {
        v |= (guint64)(p[i] & 0x7f) << (7 * i);
        if (!(p[i] & 0x80)) {
            *value = v;
            *used = i + 1;
            return TRUE;
        }
    }
    return FALSE;
}

__attribute__((weak)) gboolean
p2pc_pb_next(const guint8 *p, guint end, guint *off, guint64 *num, guint *wt, guint *dstart, guint *dlen, guint64 *ival)
{
    guint64 tag, l;
    guint u;
    if (*off >= end || !p2pc_uvarint(p + *off, end - *off, &tag, &u))
        return FALSE;
    *off += u;
    *num = tag >> 3;
    *wt = (guint)(tag & 7);
    if (*wt == 0) {
        if (!p2pc_uvarint(p + *off, end - *off, ival, &u))
            return FALSE;
        *off += u;
    } else if (*wt == 2) {
        if (!p2pc_uvarint(p + *off, end - *off, &l, &u) || l > end - *off - u)
            return FALSE;
        *dstart = *off + u;
        *dlen = (guint)l;
        *off = *dstart + (guint)l;
    } else if (*wt == 5) {
        if (end - *off < 4) return FALSE;
        *off += 4;
    } else if (*wt == 1) {
        if (end - *off < 8) return FALSE;
        *off += 8;
    } else {
        return FALSE;
    }
    return TRUE;
}

void
l2p_init(int proto, dissector_handle_t multistream, dissector_handle_t appdata)
{
    l2p_proto = proto;
    ms_handle = multistream;
    appdata_handle = appdata;
}

dissector_handle_t
l2p_multistream_handle(void)
{
    return ms_handle;
}

l2p_pipe_t *
l2p_pipe_new(dissector_handle_t handle, int dir)
{
    l2p_pipe_t *p = wmem_new0(wmem_file_scope(), l2p_pipe_t);
    p->magic = L2P_PIPE_MAGIC;
    p->id = next_pipe_id++;
    p->handle = handle;
    p->dir = dir;
    p->protocol = "";
    return p;
}

dissector_handle_t
l2p_handle_for(const char *protocol)
{
    dissector_handle_t h = NULL;
    if (!ms_table)
        ms_table = find_dissector_table("multistream.protocol");
    /* The user's map first (protocol=dissector pairs): it overrides the built-in entries. */
    if (l2p_pref_protocol_map && *l2p_pref_protocol_map) {
        gchar **pairs = g_strsplit(l2p_pref_protocol_map, ",", -1);
        for (gchar **p = pairs; *p && !h; p++) {
            gchar **kv = g_strsplit(g_strstrip(*p), "=", 2);
            if (kv[0] && kv[1] && !strcmp(g_strstrip(kv[0]), protocol))
                h = find_dissector(g_strstrip(kv[1]));
            g_strfreev(kv);
        }
        g_strfreev(pairs);
        if (h)
            return h;
    }
    if (ms_table && (h = dissector_get_string_handle(ms_table, protocol)) != NULL)
        return h;
    /* Families registered by their first path element ("/noise" for every Noise variant). */
    if (ms_table && protocol[0] == '/') {
        const char *slash = strchr(protocol + 1, '/');
        if (slash) {
            char *first = g_strndup(protocol, slash - protocol);
            h = dissector_get_string_handle(ms_table, first);
            g_free(first);
            if (h)
                return h;
        }
    }
    return appdata_handle;
}

l2p_pipe_t *
l2p_handoff(l2p_pipe_t *pipe, const char *protocol, dissector_handle_t handle)
{
    l2p_pipe_t *n = l2p_pipe_new(handle ? handle : l2p_handle_for(protocol), pipe->dir);
    n->protocol = wmem_strdup(wmem_file_scope(), protocol);
    n->muxer = pipe->muxer;
    n->stream_id = pipe->stream_id;
    /* Both directions of a stream hand off to the same protocol: link the new pipes so each
     * layer can see its other direction. */
    if (pipe->peer && pipe->peer->next && !strcmp(pipe->peer->next->protocol, n->protocol)) {
        n->peer = pipe->peer->next;
        n->peer->peer = n;
    }
    pipe->next = n;
    return n;
}

void
l2p_pipe_call(l2p_pipe_t *pipe, tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, gboolean fin)
{
    pipe->fin = fin;
    call_dissector_with_data(pipe->handle, tvb, pinfo, tree, pipe);
    pipe->fin = FALSE;
}

/* ---- the per-frame record of what a pipe cut ---- */

typedef enum { IT_PDU, IT_FORWARD, IT_UNDECODED } item_kind_t;

typedef struct item {
    item_kind_t kind;
    gint off;                   /* in this frame's tvb, or -1: reassembled, see data */
    guint len;
    guint8 *data;
    l2p_pdu_t pdu;
    gboolean fin;               /* IT_FORWARD */
    l2p_pipe_t *to;             /* IT_FORWARD */
    struct item *next;
} item_t;

typedef struct {
    item_t *first;
    item_t *last;
} feed_t;

static expert_field ei_undecoded = EI_INIT;
static int hf_undecoded = -1;

/* The record for this (frame, pipe, n-th call in this dissection of the frame); *replay says
 * whether it was written by an earlier pass.  NULL when a later pass finds nothing recorded. */
static feed_t *
feed_slot(packet_info *pinfo, l2p_pipe_t *pipe, gboolean *replay)
{
    wmem_map_t *frame = (wmem_map_t *)p_get_proto_data(wmem_file_scope(), pinfo, l2p_proto, 0);
    wmem_map_t *cursor = (wmem_map_t *)p_get_proto_data(pinfo->pool, pinfo, l2p_proto, 1);
    wmem_array_t *feeds;
    guint n;
    feed_t *f;

    if (!frame) {
        frame = wmem_map_new(wmem_file_scope(), g_direct_hash, g_direct_equal);
        p_add_proto_data(wmem_file_scope(), pinfo, l2p_proto, 0, frame);
    }
    if (!cursor) {
        cursor = wmem_map_new(pinfo->pool, g_direct_hash, g_direct_equal);
        p_add_proto_data(pinfo->pool, pinfo, l2p_proto, 1, cursor);
    }
    n = GPOINTER_TO_UINT(wmem_map_lookup(cursor, GUINT_TO_POINTER(pipe->id)));
    wmem_map_insert(cursor, GUINT_TO_POINTER(pipe->id), GUINT_TO_POINTER(n + 1));
    feeds = (wmem_array_t *)wmem_map_lookup(frame, GUINT_TO_POINTER(pipe->id));
    if (!feeds) {
        feeds = wmem_array_new(wmem_file_scope(), sizeof(feed_t *));
        wmem_map_insert(frame, GUINT_TO_POINTER(pipe->id), feeds);
    }
    if (n < wmem_array_get_count(feeds)) {
        *replay = TRUE;
        return *(feed_t **)wmem_array_index(feeds, n);
    }
    *replay = PINFO_FD_VISITED(pinfo);
    if (*replay)
        return NULL;
    f = wmem_new0(wmem_file_scope(), feed_t);
    wmem_array_append_one(feeds, f);
    return f;
}

/* wmem_user_cb_t returns gboolean in 4.0, bool from 4.2: p2pc_bool_t follows. */
static p2pc_bool_t
free_pipe_buf(wmem_allocator_t *allocator, wmem_cb_event_t event, void *user_data)
{
    l2p_pipe_t *pipe = (l2p_pipe_t *)user_data;
    if (pipe->buf)
        g_byte_array_free(pipe->buf, TRUE);
    pipe->buf = NULL;
    return FALSE;
}

static tvbuff_t *
item_tvb(tvbuff_t *tvb, packet_info *pinfo, l2p_pipe_t *pipe, item_t *it)
{
    tvbuff_t *t;
    if (it->off >= 0)
        return tvb_new_subset_length(tvb, it->off, it->len);
    t = tvb_new_child_real_data(tvb, it->data, it->len, it->len);
    if (it->kind == IT_PDU && it->len)
        add_new_data_source(pinfo, t, pipe->muxer ?
            wmem_strdup_printf(pinfo->pool, "Reassembled %s stream %" G_GUINT64_FORMAT " (%u bytes)", pipe->muxer, pipe->stream_id, it->len) :
            wmem_strdup_printf(pinfo->pool, "Reassembled libp2p PDU (%u bytes)", it->len));
    return t;
}

static void
run_item(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, l2p_pipe_t *pipe, item_t *it, l2p_pdu_fn pdu_fn)
{
    tvbuff_t *volatile t = item_tvb(tvb, pinfo, pipe, it);
    switch (it->kind) {
    case IT_PDU:
        /* One PDU's exception must not stop the PDUs after it, nor the pipe's bookkeeping. */
        TRY {
            pdu_fn(t, pinfo, tree, pipe, &it->pdu);
        }
        CATCH_NONFATAL_ERRORS {
            show_exception(t, pinfo, tree, EXCEPT_CODE, GET_MESSAGE);
        }
        ENDTRY;
        break;
    case IT_FORWARD:
        l2p_pipe_call(it->to, t, pinfo, tree, it->fin);
        break;
    case IT_UNDECODED: {
        proto_item *ti = proto_tree_add_item(tree, hf_undecoded, t, 0, -1, ENC_NA);
        expert_add_info_format(pinfo, ti, &ei_undecoded, "%u bytes p2pc cannot frame%s%s", it->len,
                               *pipe->protocol ? " on " : "", pipe->protocol);
        break;
    }
    }
}

/* Record p[0, len) as an item; `fresh` is this frame's tvb data (fresh_len bytes). */
static item_t *
add_item(feed_t *f, item_kind_t kind, const guint8 *fresh, guint fresh_len, const guint8 *p, guint len)
{
    item_t *it = wmem_new0(wmem_file_scope(), item_t);
    it->kind = kind;
    it->len = len;
    it->off = -1;
    /* Bytes that all came in this frame's tvb are recorded as an offset into it. */
    if (fresh && p >= fresh && p + len <= fresh + fresh_len)
        it->off = (gint)(p - fresh);
    else if (len == 0)
        it->off = 0;
    else
        it->data = (guint8 *)wmem_memdup(wmem_file_scope(), p, len);
    if (f->last)
        f->last->next = it;
    else
        f->first = it;
    f->last = it;
    return it;
}

void
l2p_dissect_pdus(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, l2p_pipe_t *pipe,
                 l2p_len_fn len_fn, l2p_pdu_fn pdu_fn)
{
    gboolean replay;
    feed_t *f = feed_slot(pinfo, pipe, &replay);
    guint inlen = tvb_captured_length(tvb);
    const guint8 *in = inlen ? tvb_get_ptr(tvb, 0, inlen) : NULL;
    const guint8 *work;
    guint worklen, pos = 0;
    gboolean direct;        /* work is this frame's tvb itself (nothing was buffered) */
    item_t *it;

    if (replay) {
        for (it = f ? f->first : NULL; it; it = it->next)
            run_item(tvb, pinfo, tree, pipe, it, pdu_fn);
        return;
    }
    if (pipe->next) {
        pipe->next->overhead += pipe->overhead;     /* the framing that carried these bytes */
        pipe->overhead = 0;
        it = add_item(f, IT_FORWARD, in, inlen, in, inlen);
        it->to = pipe->next;
        it->fin = pipe->fin;
        run_item(tvb, pinfo, tree, pipe, it, pdu_fn);
        return;
    }
    if (pipe->closed)
        return;
    if (pipe->undecodable) {
        if (inlen)
            run_item(tvb, pinfo, tree, pipe, add_item(f, IT_UNDECODED, in, inlen, in, inlen), pdu_fn);
        return;
    }
    if (!pipe->buf) {
        /* The buffer lives outside wmem (it shrinks as PDUs leave it): free it with the file
         * if the pipe never closes. */
        if (!pipe->buf_cb) {
            wmem_register_callback(wmem_file_scope(), free_pipe_buf, pipe);
            pipe->buf_cb = TRUE;
        }
        pipe->buf = g_byte_array_new();
    }
    direct = pipe->buf->len == 0;
    if (direct) {
        work = in;
        worklen = inlen;
    } else {
        if (inlen)
            g_byte_array_append(pipe->buf, in, inlen);
        work = pipe->buf->data;
        worklen = pipe->buf->len;
    }
    /* In `work`, the bytes from this frame start at fresh_at. */
#define FRESH_AT (direct ? 0 : worklen - inlen)
#define ADD(kind, p, l) add_item(f, kind, work + FRESH_AT, inlen, p, l)
    while (pos < worklen) {
        gint64 n = len_fn(pipe, work + pos, worklen - pos);
        if (pipe->next)
            break;
        if (n == 0)
            break;
        if (n < 0 || (guint64)n > worklen - pos) {
            if (n > 0)  /* a len_fn asking for bytes it has not seen: wait for them */
                break;
            pipe->undecodable = TRUE;
            run_item(tvb, pinfo, tree, pipe, ADD(IT_UNDECODED, work + pos, worklen - pos), pdu_fn);
            pos = worklen;
            break;
        }
        it = ADD(IT_PDU, work + pos, (guint)n);
        it->pdu.index = pipe->pdus++;
        it->pdu.overhead = pipe->overhead;
        pipe->overhead = 0;
        pos += (guint)n;
        run_item(tvb, pinfo, tree, pipe, it, pdu_fn);
        if (pipe->next)
            break;
    }
    if (pipe->next) {
        /* The rest belongs to the next layer (and so does a close). */
        if (pos < worklen || pipe->fin) {
            pipe->next->overhead += pipe->overhead;
            pipe->overhead = 0;
            it = ADD(IT_FORWARD, work + pos, worklen - pos);
            it->to = pipe->next;
            it->fin = pipe->fin;
            pos = worklen;
            run_item(tvb, pinfo, tree, pipe, it, pdu_fn);
        }
    } else if (pipe->fin && pos < worklen && !pipe->undecodable) {
        /* Closed inside a PDU: hand over what there is, marked truncated. */
        it = ADD(IT_PDU, work + pos, worklen - pos);
        it->pdu.index = pipe->pdus++;
        it->pdu.overhead = pipe->overhead;
        it->pdu.truncated = TRUE;
        pipe->overhead = 0;
        pos = worklen;
        run_item(tvb, pinfo, tree, pipe, it, pdu_fn);
    }
#undef ADD
#undef FRESH_AT
    if (pipe->fin)
        pipe->closed = TRUE;
    /* Keep what is left for the next frame. */
    if (direct) {
        if (pos < worklen)
            g_byte_array_append(pipe->buf, work + pos, worklen - pos);
    } else if (pos) {
        g_byte_array_remove_range(pipe->buf, 0, pos);
    }
    if (pipe->closed || pipe->next) {
        g_byte_array_free(pipe->buf, TRUE);
        pipe->buf = NULL;
    }
}

void
l2p_register_engine(int proto)
{
    static hf_register_info hf[] = {
        { &hf_undecoded, { "Undecoded bytes", "multistream.undecoded", FT_BYTES, BASE_NONE, NULL, 0x0,
            "Bytes of a pipe whose framing broke", HFILL } },
    };
    static ei_register_info ei[] = {
        { &ei_undecoded, { "multistream.undecoded.expert", PI_MALFORMED, PI_WARN, "Bytes p2pc cannot frame", EXPFILL } },
    };
    expert_module_t *expert;
    proto_register_field_array(proto, hf, array_length(hf));
    expert = expert_register_protocol(proto);
    expert_register_field_array(expert, ei, array_length(ei));
}
