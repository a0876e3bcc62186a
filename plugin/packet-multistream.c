/* packet-multistream.c
 * multistream-select 1.0 (libp2p/specs connections; multiformats/multistream-select): each
 * message is uvarint(len including '\n') || UTF-8 text || '\n'.  The header
 * "/multistream/1.0.0", then a protocol proposal, echoed to accept or answered "na"; "ls" lists.
 *
 * This file is where a libp2p TCP connection enters p2pc (heuristic on the first bytes, or
 * Decode As "multistream" on a TCP port), and it owns the string dissector table
 * "multistream.protocol": once a side has proposed or echoed a protocol ID and its next bytes
 * are not another multistream message (go-libp2p sends header, proposal and the first
 * application bytes in one write: "optimistic" or "lazy" negotiation), the rest of that
 * direction goes to the dissector registered for that ID -- the security layer
 * (/plaintext/2.0.0, /noise), the muxer (/yamux/1.0.0, /mplex/6.7.0), or, inside a muxed
 * stream, the application protocol (packet-eth2.c registers Ethereum's).  Map your own:
 *   - Decode As on the table: tshark -d 'multistream.protocol==/my/proto/1.0.0,eth2'
 *   - the preference multistream.protocol_map: "/my/proto/1.0.0=eth2,/other/1=gossipsub"
 *   - Lua: DissectorTable.get("multistream.protocol"):add("/my/proto/1.0.0", my_proto)
 *     (a Lua dissector receives the stream's bytes as they arrive).
 * Protocols nobody registered are shown by name with their bytes ("libp2p_app"), framed for
 * the families with a known framing (identify and gossip-style uvarint messages, ping).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "p2pc-compat.h"
#include "p2pc-libp2p.h"
#include "p2pc-record.h"

#include <epan/conversation.h>
#include <epan/decode_as.h>
#include <epan/expert.h>
#include <epan/prefs.h>
#include <epan/proto_data.h>
#include <epan/dissectors/packet-tcp.h>

void proto_register_multistream(void);
void proto_reg_handoff_multistream(void);

#define MS_MAX_MSG 1024     /* go-multistream refuses longer messages */

static int proto_multistream = -1;
static int proto_app = -1;
static int hf_ms_length = -1;
static int hf_ms_message = -1;
static int hf_ms_stream = -1;
static int hf_ms_selected = -1;
static int hf_app_protocol = -1;
static int hf_app_stream = -1;
static int hf_app_data = -1;
static int hf_app_length = -1;
static int hf_id_protocol_version = -1;
static int hf_id_agent_version = -1;
static int hf_id_public_key = -1;
static int hf_id_listen_addr = -1;
static int hf_id_observed_addr = -1;
static int hf_id_protocol = -1;
static gint ett_ms = -1;
static gint ett_app = -1;
static expert_field ei_ms_na = EI_INIT;
static expert_field ei_ms_gap = EI_INIT;
static expert_field ei_app_truncated = EI_INIT;

static dissector_handle_t ms_handle;
static dissector_handle_t ms_tcp_handle;
static dissector_handle_t app_handle;

/* Per pipe: the protocol this side proposed or echoed and may switch to. */
typedef struct {
    const char *proposed;
} ms_state_t;

/* A TCP connection: the two directions' first pipes, and the TCP bookkeeping that feeds each
 * byte once (retransmissions repeat bytes; a hole stops the direction). */
typedef struct {
    address dialer_addr;
    guint32 dialer_port;
    l2p_pipe_t *root[2];
    guint32 next_seq[2];
    gboolean seq_known[2];
    gboolean stopped[2];
} ms_conn_t;

/* What the first pass fed from a frame, replayed on later passes. */
typedef struct {
    guint skip;
    guint len;
    guint gap;      /* bytes missing before this frame (decoding of the direction stopped) */
} ms_frame_t;

/* 1: a multistream message starts at p; 0: it does not; 2: cannot tell yet. */
static int
looks_like_ms(const guint8 *p, guint avail)
{
    guint64 n;
    guint used;
    if (avail == 0)
        return 2;
    if (!p2pc_uvarint(p, avail, &n, &used))
        return avail >= 3 ? 0 : 2;
    if (n < 2 || n > MS_MAX_MSG)
        return 0;
    if (avail == used)
        return 2;
    if (p[used] == '/')
        return 1;
    if (n == 3 && (p[used] == 'n' || p[used] == 'l'))
        return 1;
    return 0;
}

static gint64
ms_len(l2p_pipe_t *pipe, const guint8 *p, guint avail)
{
    ms_state_t *st = (ms_state_t *)pipe->state;
    int looks = looks_like_ms(p, avail);
    guint64 n;
    guint used;

    if (looks == 2)
        return 0;
    if (looks == 0) {
        if (st && st->proposed) {
            /* Not another negotiation message: the agreed protocol has begun. */
            l2p_handoff(pipe, st->proposed, NULL);
            return 0;
        }
        return -1;
    }
    p2pc_uvarint(p, avail, &n, &used);
    if (used + n > avail)
        return 0;
    if (p[used + n - 1] != '\n')
        return -1;
    return used + n;
}

/* The text of a complete message without its newline (pinfo->pool or file scope). */
static const char *
ms_text(tvbuff_t *tvb, wmem_allocator_t *scope, guint *text_off, guint *len_used, guint64 *n_out)
{
    guint len = tvb_captured_length(tvb);
    guint64 n;
    guint used;
    if (!p2pc_uvarint(tvb_get_ptr(tvb, 0, len), len, &n, &used) || used + n > len || n == 0)
        return NULL;
    if (text_off)
        *text_off = used;
    if (len_used)
        *len_used = used;
    if (n_out)
        *n_out = n;
    return (const char *)tvb_get_string_enc(scope, tvb, used,
                                            (gint)(tvb_get_uint8(tvb, used + (guint)n - 1) == '\n' ? n - 1 : n), ENC_UTF_8);
}

static proto_item *
draw_ms(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, gboolean in_stream, guint64 stream_id, const char **text_out)
{
    proto_item *ti = proto_tree_add_item(tree, proto_multistream, tvb, 0, -1, ENC_NA);
    proto_tree *t = proto_item_add_subtree(ti, ett_ms);
    guint used;
    guint64 n;
    const char *text = ms_text(tvb, pinfo->pool, NULL, &used, &n);
    if (text_out)
        *text_out = text;
    if (!text)
        return ti;
    proto_tree_add_uint64(t, hf_ms_length, tvb, 0, used, n);
    proto_tree_add_string(t, hf_ms_message, tvb, used, (gint)n, text);
    if (in_stream)
        proto_item_set_generated(proto_tree_add_uint64(t, hf_ms_stream, tvb, 0, 0, stream_id));
    proto_item_append_text(ti, ": %s", text);
    col_append_sep_str(pinfo->cinfo, COL_INFO, ", ", text);
    if (!strcmp(text, "na"))
        expert_add_info(pinfo, ti, &ei_ms_na);
    return ti;
}

static void
ms_pdu(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, l2p_pipe_t *pipe, l2p_pdu_t *pdu)
{
    const char *text;
    proto_item *ti = draw_ms(tvb, pinfo, tree, pipe->muxer != NULL, pipe->stream_id, &text);

    if (!PINFO_FD_VISITED(pinfo) && text) {
        ms_state_t *st = (ms_state_t *)pipe->state;
        /* Negotiation is no message of its own in the accounting: the muxer framing that
         * carried it goes to the stream's first application message. */
        pipe->overhead += pdu->overhead;
        pdu->overhead = 0;
        if (!st)
            pipe->state = st = wmem_new0(wmem_file_scope(), ms_state_t);
        if (!strcmp(text, "na")) {
            /* The other side's proposal is refused: it will propose again. */
            if (pipe->peer && pipe->peer->state)
                ((ms_state_t *)pipe->peer->state)->proposed = NULL;
            st->proposed = NULL;
        } else if (text[0] == '/' && strcmp(text, L2P_MULTISTREAM_HEADER)) {
            st->proposed = wmem_strdup(wmem_file_scope(), text);
        }
        pdu->info = st->proposed ? (void *)st->proposed : NULL;
        /* For Decode As: the protocol ID this frame negotiated. */
        if (st->proposed && !p_get_proto_data(wmem_file_scope(), pinfo, proto_multistream, 3))
            p_add_proto_data(wmem_file_scope(), pinfo, proto_multistream, 3, (void *)st->proposed);
    }
    /* Which dissector the proposal selects (shown on every proposal/echo). */
    if (pdu->info && text && !strcmp(text, (const char *)pdu->info)) {
        dissector_handle_t h = l2p_handle_for(text);
        proto_item *si = proto_tree_add_string(proto_item_get_subtree(ti), hf_ms_selected, tvb, 0, 0,
                                               h ? dissector_handle_get_protocol_short_name(h) : "?");
        proto_item_set_generated(si);
    }
}

static int
dissect_multistream(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    l2p_pipe_t *pipe = l2p_pipe_from(data);
    if (!pipe) {
        /* Called on its own (not through a libp2p connection): one message. */
        draw_ms(tvb, pinfo, tree, FALSE, 0, NULL);
        return tvb_captured_length(tvb);
    }
    l2p_dissect_pdus(tvb, pinfo, tree, pipe, ms_len, ms_pdu);
    return tvb_captured_length(tvb);
}

/* Decode As on "multistream.protocol": the protocol ID negotiated in the selected frame. */
static void
ms_da_label(packet_info *pinfo, gchar *result)
{
    const char *p = (const char *)p_get_proto_data(wmem_file_scope(), pinfo, proto_multistream, 3);
    snprintf(result, MAX_DECODE_AS_PROMPT_LEN, "Protocol ID %s", p ? p : "(none in this frame)");
}

static gpointer
ms_da_value(packet_info *pinfo)
{
    return p_get_proto_data(wmem_file_scope(), pinfo, proto_multistream, 3);
}

/* ---- the TCP connection ---- */

static ms_conn_t *
get_conn(packet_info *pinfo)
{
    conversation_t *conv = find_or_create_conversation(pinfo);
    ms_conn_t *c = (ms_conn_t *)conversation_get_proto_data(conv, proto_multistream);
    if (!c) {
        c = wmem_new0(wmem_file_scope(), ms_conn_t);
        /* The side that sends the first multistream header is the dialer. */
        copy_address_wmem(wmem_file_scope(), &c->dialer_addr, &pinfo->src);
        c->dialer_port = pinfo->srcport;
        c->root[0] = l2p_pipe_new(ms_handle, 0);
        c->root[1] = l2p_pipe_new(ms_handle, 1);
        c->root[0]->peer = c->root[1];
        c->root[1]->peer = c->root[0];
        conversation_add_proto_data(conv, proto_multistream, c);
    }
    return c;
}

static int
dissect_multistream_tcp(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    struct tcpinfo *tcpi = (struct tcpinfo *)data;
    ms_conn_t *c = get_conn(pinfo);
    int d = (addresses_equal(&c->dialer_addr, &pinfo->src) && c->dialer_port == pinfo->srcport) ? 0 : 1;
    guint len = tvb_captured_length(tvb);
    guint32 key = 100 + tvb_raw_offset(tvb);
    ms_frame_t *fr = (ms_frame_t *)p_get_proto_data(wmem_file_scope(), pinfo, proto_multistream, key);

    col_set_str(pinfo->cinfo, COL_PROTOCOL, "libp2p");
    col_clear(pinfo->cinfo, COL_INFO);
    if (!fr && !PINFO_FD_VISITED(pinfo)) {
        /* Feed each byte of the direction once, in order.  A hole (a segment missing from the
         * capture) cannot be bridged by any length-prefixed framing: the direction stops. */
        fr = wmem_new0(wmem_file_scope(), ms_frame_t);
        p_add_proto_data(wmem_file_scope(), pinfo, proto_multistream, key, fr);
        fr->len = len;
        if (c->stopped[d]) {
            fr->len = 0;
        } else if (tcpi && c->seq_known[d] && (gint32)(tcpi->seq - c->next_seq[d]) > 0) {
            fr->gap = tcpi->seq - c->next_seq[d];
            fr->len = 0;
            c->stopped[d] = TRUE;
        } else if (tcpi && c->seq_known[d] && (gint32)(tcpi->nxtseq - c->next_seq[d]) <= 0) {
            fr->len = 0;    /* a retransmission of bytes already fed */
        } else if (tcpi && c->seq_known[d] && (gint32)(tcpi->seq - c->next_seq[d]) < 0) {
            fr->skip = c->next_seq[d] - tcpi->seq;
            fr->len = len > fr->skip ? len - fr->skip : 0;
        }
        if (tcpi && !c->stopped[d] && (!c->seq_known[d] || (gint32)(tcpi->nxtseq - c->next_seq[d]) > 0)) {
            c->next_seq[d] = tcpi->nxtseq;
            c->seq_known[d] = TRUE;
        }
    }
    if (fr && fr->gap)
        proto_tree_add_expert_format(tree, pinfo, &ei_ms_gap, tvb, 0, 0,
            "%u bytes of this direction are missing from the capture: decoding of this direction stops here", fr->gap);
    if (fr && fr->len)
        l2p_pipe_call(c->root[d], tvb_new_subset_length(tvb, fr->skip, fr->len), pinfo, tree, FALSE);
    /* Most segments of a large message complete nothing: say so rather than leave Info empty. */
    {
        const gchar *info = col_get_text(pinfo->cinfo, COL_INFO);
        if (info && !*info)
            col_set_str(pinfo->cinfo, COL_INFO, "[part of a libp2p message]");
    }
    return len;
}

static p2pc_bool_t
dissect_multistream_heur(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    /* uvarint(19) "/multistream/1.0.0\n" */
    if (tvb_captured_length(tvb) < 20 || tvb_get_uint8(tvb, 0) != 19 ||
        tvb_memeql(tvb, 1, (const guint8 *)L2P_MULTISTREAM_HEADER "\n", 19) != 0)
        return FALSE;
    conversation_set_dissector(find_or_create_conversation(pinfo), ms_tcp_handle);
    dissect_multistream_tcp(tvb, pinfo, tree, data);
    return TRUE;
}

/* ---- application protocols without a dissector of their own ---- */

static gint64
app_len(l2p_pipe_t *pipe, const guint8 *p, guint avail)
{
    const char *proto = pipe->protocol;
    if (g_str_has_prefix(proto, "/ipfs/id/") || g_str_has_prefix(proto, "/meshsub/") ||
        g_str_has_prefix(proto, "/floodsub/")) {
        guint64 n;
        guint used;
        if (!p2pc_uvarint(p, avail, &n, &used))
            return avail >= 9 ? -1 : 0;
        if (n > L2P_MAX_PDU)
            return -1;
        return used + n <= avail ? (gint64)(used + n) : 0;
    }
    if (!strcmp(proto, "/ipfs/ping/1.0.0"))
        return avail >= 32 ? 32 : 0;
    return avail;   /* unknown framing: whatever arrived */
}

/* identify (libp2p/specs identify): protobuf Identify { publicKey 1, listenAddrs 2, protocols 3,
 * observedAddr 4, protocolVersion 5, agentVersion 6 }. */
static void
draw_identify(tvbuff_t *tvb, proto_tree *t, guint start, guint end)
{
    const guint8 *p = tvb_get_ptr(tvb, 0, end);
    guint off = start, wt, ds, dl;
    guint64 num, iv;
    while (p2pc_pb_next(p, end, &off, &num, &wt, &ds, &dl, &iv)) {
        if (wt != 2)
            continue;
        switch (num) {
        case 1: proto_tree_add_item(t, hf_id_public_key, tvb, ds, dl, ENC_NA); break;
        case 2: proto_tree_add_item(t, hf_id_listen_addr, tvb, ds, dl, ENC_NA); break;
        case 3: proto_tree_add_item(t, hf_id_protocol, tvb, ds, dl, ENC_UTF_8); break;
        case 4: proto_tree_add_item(t, hf_id_observed_addr, tvb, ds, dl, ENC_NA); break;
        case 5: proto_tree_add_item(t, hf_id_protocol_version, tvb, ds, dl, ENC_UTF_8); break;
        case 6: proto_tree_add_item(t, hf_id_agent_version, tvb, ds, dl, ENC_UTF_8); break;
        default: break;
        }
    }
}

static void
app_pdu(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, l2p_pipe_t *pipe, l2p_pdu_t *pdu)
{
    proto_item *ti = proto_tree_add_item(tree, proto_app, tvb, 0, -1, ENC_NA);
    proto_tree *t = proto_item_add_subtree(ti, ett_app);
    guint len = tvb_captured_length(tvb);
    p2pc_record_t rec;

    proto_item_append_text(ti, ": %s", pipe->protocol);
    proto_tree_add_string(t, hf_app_protocol, tvb, 0, 0, pipe->protocol);
    if (pipe->muxer)
        proto_item_set_generated(proto_tree_add_uint64(t, hf_app_stream, tvb, 0, 0, pipe->stream_id));
    if (pdu->truncated)
        expert_add_info(pinfo, ti, &ei_app_truncated);
    if (g_str_has_prefix(pipe->protocol, "/ipfs/id/") && !pdu->truncated) {
        guint64 n;
        guint used;
        if (p2pc_uvarint(tvb_get_ptr(tvb, 0, len), len, &n, &used) && used + n <= len) {
            proto_tree_add_uint64(t, hf_app_length, tvb, 0, used, n);
            draw_identify(tvb, t, used, used + (guint)n);
        }
    }
    proto_tree_add_item(t, hf_app_data, tvb, 0, -1, ENC_NA);
    col_append_sep_str(pinfo->cinfo, COL_INFO, ", ", pipe->protocol);
    /* A protocol without a dissector of its own still gets its record: its bytes as they left
     * the muxer. */
    p2pc_record_init(&rec, "libp2p", pipe->protocol);
    rec.raw_len = len;
    rec.payload_len = len;
    rec.header_len = pdu->overhead;
    rec.wire_len = rec.header_len + rec.payload_len;
    rec.raw_tvb = tvb;
    p2pc_record_add(tvb, 0, -1, pinfo, t, &rec);
}

static int
dissect_app(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    l2p_pipe_t *pipe = l2p_pipe_from(data);
    if (!pipe) {
        proto_tree_add_item(tree, hf_app_data, tvb, 0, -1, ENC_NA);
        return tvb_captured_length(tvb);
    }
    l2p_dissect_pdus(tvb, pinfo, tree, pipe, app_len, app_pdu);
    return tvb_captured_length(tvb);
}

/* Transitional, for plugin/packet-libp2p.c's old engine. */
void
libp2p_show_multistream(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, gboolean in_stream, guint32 stream_id)
{
    draw_ms(tvb, pinfo, tree, in_stream, stream_id, NULL);
}

void
proto_register_multistream(void)
{
    static hf_register_info hf[] = {
        { &hf_ms_length, { "Length", "multistream.length", FT_UINT64, BASE_DEC, NULL, 0x0, NULL, HFILL } },
        { &hf_ms_message, { "Message", "multistream.message", FT_STRING, BASE_NONE, NULL, 0x0,
            "Protocol ID, header, na or ls", HFILL } },
        { &hf_ms_stream, { "Muxed stream", "multistream.stream", FT_UINT64, BASE_DEC, NULL, 0x0, NULL, HFILL } },
        { &hf_ms_selected, { "Dissector", "multistream.dissector", FT_STRING, BASE_NONE, NULL, 0x0,
            "The dissector multistream.protocol maps this protocol ID to", HFILL } },
    };
    static hf_register_info hf_app[] = {
        { &hf_app_protocol, { "Protocol", "libp2p_app.protocol", FT_STRING, BASE_NONE, NULL, 0x0,
            "The stream's protocol ID from multistream-select", HFILL } },
        { &hf_app_stream, { "Stream", "libp2p_app.stream", FT_UINT64, BASE_DEC, NULL, 0x0, NULL, HFILL } },
        { &hf_app_length, { "Length", "libp2p_app.length", FT_UINT64, BASE_DEC, NULL, 0x0, NULL, HFILL } },
        { &hf_app_data, { "Data", "libp2p_app.data", FT_BYTES, BASE_NONE, NULL, 0x0, NULL, HFILL } },
        { &hf_id_protocol_version, { "Protocol version", "libp2p_app.identify.protocol_version", FT_STRING, BASE_NONE, NULL, 0x0, NULL, HFILL } },
        { &hf_id_agent_version, { "Agent version", "libp2p_app.identify.agent_version", FT_STRING, BASE_NONE, NULL, 0x0, NULL, HFILL } },
        { &hf_id_public_key, { "Public key", "libp2p_app.identify.public_key", FT_BYTES, BASE_NONE, NULL, 0x0, NULL, HFILL } },
        { &hf_id_listen_addr, { "Listen address", "libp2p_app.identify.listen_addr", FT_BYTES, BASE_NONE, NULL, 0x0, "Multiaddr", HFILL } },
        { &hf_id_observed_addr, { "Observed address", "libp2p_app.identify.observed_addr", FT_BYTES, BASE_NONE, NULL, 0x0, "Multiaddr", HFILL } },
        { &hf_id_protocol, { "Protocol", "libp2p_app.identify.protocol", FT_STRING, BASE_NONE, NULL, 0x0, NULL, HFILL } },
    };
    static gint *ett[] = { &ett_ms, &ett_app };
    static ei_register_info ei[] = {
        { &ei_ms_na, { "multistream.na", PI_RESPONSE_CODE, PI_NOTE, "Protocol refused (na)", EXPFILL } },
        { &ei_ms_gap, { "multistream.gap", PI_SEQUENCE, PI_WARN,
            "Bytes missing from the capture: decoding of this direction stops", EXPFILL } },
    };
    static ei_register_info ei_app[] = {
        { &ei_app_truncated, { "libp2p_app.truncated", PI_MALFORMED, PI_WARN,
            "The stream closed inside a message", EXPFILL } },
    };
    module_t *module;
    expert_module_t *expert;

    proto_multistream = proto_register_protocol("multistream-select 1.0", "multistream", "multistream");
    proto_app = proto_register_protocol("libp2p application data", "libp2p app", "libp2p_app");
    proto_register_field_array(proto_multistream, hf, array_length(hf));
    proto_register_field_array(proto_app, hf_app, array_length(hf_app));
    proto_register_subtree_array(ett, array_length(ett));
    expert = expert_register_protocol(proto_multistream);
    expert_register_field_array(expert, ei, array_length(ei));
    expert = expert_register_protocol(proto_app);
    expert_register_field_array(expert, ei_app, array_length(ei_app));
    l2p_register_engine(proto_multistream);

    module = prefs_register_protocol(proto_multistream, NULL);
    prefs_register_string_preference(module, "protocol_map", "Protocol ID map",
        "protocol-ID=dissector pairs, comma-separated (e.g. /my/blocks/1.0.0=eth2): which dissector gets "
        "the streams that negotiated that ID; overrides the multistream.protocol table",
        &l2p_pref_protocol_map);

    register_dissector_table("multistream.protocol", "multistream-select protocol ID", proto_multistream,
                             FT_STRING, P2PC_STRING_CASE_SENSITIVE);
    ms_handle = register_dissector("multistream", dissect_multistream, proto_multistream);
    ms_tcp_handle = register_dissector("multistream.tcp", dissect_multistream_tcp, proto_multistream);
    app_handle = register_dissector("libp2p_app", dissect_app, proto_app);
    l2p_init(proto_multistream, ms_handle, app_handle);
    {
        static build_valid_func da_values[] = { ms_da_value };
        static decode_as_value_t da_value[] = { { ms_da_label, 1, da_values } };
        static decode_as_t da = { "multistream", "multistream.protocol", 1, 0, da_value, NULL, NULL,
                                  decode_as_default_populate_list, decode_as_default_reset,
                                  decode_as_default_change, NULL };
        register_decode_as(&da);
    }
}

void
proto_reg_handoff_multistream(void)
{
    heur_dissector_add("tcp", dissect_multistream_heur, "libp2p over TCP (multistream-select)", "multistream_tcp",
                       proto_multistream, HEURISTIC_ENABLE);
    dissector_add_for_decode_as("tcp.port", ms_tcp_handle);
    /* Families p2pc frames without decoding them further. */
    dissector_add_string("multistream.protocol", "/ipfs/id/1.0.0", app_handle);
    dissector_add_string("multistream.protocol", "/ipfs/id/push/1.0.0", app_handle);
    dissector_add_string("multistream.protocol", "/ipfs/ping/1.0.0", app_handle);
    dissector_add_for_decode_as("multistream.protocol", ms_handle);
    dissector_add_for_decode_as("multistream.protocol", app_handle);
}
