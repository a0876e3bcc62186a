/* packet-libp2p-app.c
 * libp2p protocols without a dissector of their own ("libp2p_app"): what multistream-select
 * hands a stream whose protocol ID nobody registered in "multistream.protocol".  Shown by name
 * with their bytes, framed for the families with a known framing (uvarint-prefixed messages of
 * identify and gossip-style protocols; ping's 32-byte payloads), with identify decoded.  Each
 * message gets its p2pc record, so its bytes are accounted like every other protocol's.
 *
 * A protocol ID is a string the peers choose: the record names it (msg_type) when it is one of
 * libp2p's own (libp2p_protocol_ids) or one the user named (Decode As on multistream.protocol,
 * a Lua registration), and counts it as "unknown" otherwise (core/msgtype.h); the ID as
 * negotiated is libp2p_app.protocol.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/p2pc-compat.h"
#include "core/msgtype.h"
#include "core/record.h"
#include "libp2p/engine.h"

#include <epan/expert.h>

void proto_register_libp2p_app(void);
void proto_reg_handoff_libp2p_app(void);

static int proto_app = -1;
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
static gint ett_app = -1;
static expert_field ei_app_truncated = EI_INIT;
static dissector_handle_t app_handle;

/* The protocol IDs of libp2p's own protocols (libp2p/specs) and of IPFS's on libp2p. */
static const string_string libp2p_protocol_ids[] = {
    { "/ipfs/id/1.0.0", "/ipfs/id/1.0.0" },
    { "/ipfs/id/push/1.0.0", "/ipfs/id/push/1.0.0" },
    { "/ipfs/ping/1.0.0", "/ipfs/ping/1.0.0" },
    { "/ipfs/kad/1.0.0", "/ipfs/kad/1.0.0" },
    { "/ipfs/lan/kad/1.0.0", "/ipfs/lan/kad/1.0.0" },
    { "/meshsub/1.0.0", "/meshsub/1.0.0" },
    { "/meshsub/1.1.0", "/meshsub/1.1.0" },
    { "/meshsub/1.2.0", "/meshsub/1.2.0" },
    { "/floodsub/1.0.0", "/floodsub/1.0.0" },
    { "/libp2p/autonat/1.0.0", "/libp2p/autonat/1.0.0" },
    { "/libp2p/autonat/2/dial-request", "/libp2p/autonat/2/dial-request" },
    { "/libp2p/autonat/2/dial-back", "/libp2p/autonat/2/dial-back" },
    { "/libp2p/circuit/relay/0.2.0/hop", "/libp2p/circuit/relay/0.2.0/hop" },
    { "/libp2p/circuit/relay/0.2.0/stop", "/libp2p/circuit/relay/0.2.0/stop" },
    { "/libp2p/dcutr", "/libp2p/dcutr" },
    { "/libp2p/fetch/0.0.1", "/libp2p/fetch/0.0.1" },
    { "/rendezvous/1.0.0", "/rendezvous/1.0.0" },
    { NULL, NULL }
};

static gint64
app_len(l2p_pipe_t *pipe, const guint8 *p, guint avail)
{
    const char *proto = pipe->protocol;
    if (g_str_has_prefix(proto, "/ipfs/id/") || g_str_has_prefix(proto, "/meshsub/") ||
        g_str_has_prefix(proto, "/floodsub/"))
        return p2pc_uvarint_prefixed(p, avail, L2P_MAX_PDU);
    if (!strcmp(proto, "/ipfs/ping/1.0.0"))
        return avail >= 32 ? 32 : 0;
    return avail;   /* unknown framing: whatever arrived */
}

/* identify (libp2p/specs identify): protobuf Identify { publicKey 1, listenAddrs 2, protocols 3,
 * observedAddr 4, protocolVersion 5, agentVersion 6 } in tvb[start, end). */
static void
draw_identify(tvbuff_t *tvb, proto_tree *t, int start, int end)
{
    static int *const by_number[] = {
        NULL, &hf_id_public_key, &hf_id_listen_addr, &hf_id_protocol, &hf_id_observed_addr,
        &hf_id_protocol_version, &hf_id_agent_version,
    };
    int off = start;
    p2pc_pb_field_t f;
    while (p2pc_pb_next(tvb, &off, end, &f)) {
        if (f.wire_type == 2 && f.number >= 1 && f.number < G_N_ELEMENTS(by_number))
            proto_tree_add_item(t, *by_number[f.number], tvb, f.start, f.len,
                                proto_registrar_get_ftype(*by_number[f.number]) == FT_STRING ? ENC_UTF_8 : ENC_NA);
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
        guint used = tvb_get_varint(tvb, 0, MIN(FT_VARINT_MAX_LEN, len), &n, ENC_VARINT_PROTOBUF);
        if (used && n <= len - used) {
            proto_tree_add_uint64(t, hf_app_length, tvb, 0, used, n);
            draw_identify(tvb, t, (int)used, (int)(used + n));
        }
    }
    proto_tree_add_item(t, hf_app_data, tvb, 0, -1, ENC_NA);
    col_append_sep_str(pinfo->cinfo, COL_INFO, ", ", pipe->protocol);
    /* A protocol without a dissector of its own still gets its record: its bytes as they left
     * the muxer. */
    p2pc_record_init(&rec, "libp2p", l2p_protocol_named(pipe->protocol) ? pipe->protocol :
                     p2pc_msg_type_of(pinfo, ti, pipe->protocol, libp2p_protocol_ids));
    rec.raw_len = len;
    rec.payload_len = len;
    rec.header_len = pdu->overhead;
    rec.wire_len = rec.header_len + rec.payload_len;
    rec.raw_tvb = tvb;
    l2p_record_framing(&rec, pipe, pdu);
    p2pc_record_add(tvb, 0, -1, pinfo, t, &rec);
}

static int
dissect_app(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    l2p_pipe_t *pipe = (l2p_pipe_t *)data;
    if (!pipe) {
        proto_tree_add_item(tree, hf_app_data, tvb, 0, -1, ENC_NA);
        return tvb_captured_length(tvb);
    }
    l2p_dissect_pdus(tvb, pinfo, tree, pipe, app_len, app_pdu);
    return tvb_captured_length(tvb);
}

void
proto_register_libp2p_app(void)
{
    static hf_register_info hf[] = {
        { &hf_app_protocol, { "Protocol", "libp2p_app.protocol", FT_STRING, BASE_NONE, NULL, 0x0,
            "The stream's protocol ID from multistream-select", HFILL } },
        { &hf_app_stream, { "Stream", "libp2p_app.stream", FT_UINT64, BASE_DEC, NULL, 0x0,
            "The muxed stream carrying this message", HFILL } },
        { &hf_app_length, { "Length", "libp2p_app.length", FT_UINT64, BASE_DEC, NULL, 0x0,
            "Length prefix of the message (uvarint)", HFILL } },
        { &hf_app_data, { "Data", "libp2p_app.data", FT_BYTES, BASE_NONE, NULL, 0x0,
            "The message's bytes", HFILL } },
        { &hf_id_protocol_version, { "Protocol version", "libp2p_app.identify.protocol_version", FT_STRING, BASE_NONE, NULL, 0x0,
            "identify: the peer's protocol version (e.g. ipfs/0.1.0)", HFILL } },
        { &hf_id_agent_version, { "Agent version", "libp2p_app.identify.agent_version", FT_STRING, BASE_NONE, NULL, 0x0,
            "identify: the peer's implementation and version", HFILL } },
        { &hf_id_public_key, { "Public key", "libp2p_app.identify.public_key", FT_BYTES, BASE_NONE, NULL, 0x0,
            "identify: the peer's identity public key (protobuf PublicKey)", HFILL } },
        { &hf_id_listen_addr, { "Listen address", "libp2p_app.identify.listen_addr", FT_BYTES, BASE_NONE, NULL, 0x0,
            "identify: an address the peer listens on (multiaddr)", HFILL } },
        { &hf_id_observed_addr, { "Observed address", "libp2p_app.identify.observed_addr", FT_BYTES, BASE_NONE, NULL, 0x0,
            "identify: the address the peer sees this connection come from (multiaddr)", HFILL } },
        { &hf_id_protocol, { "Protocol", "libp2p_app.identify.protocol", FT_STRING, BASE_NONE, NULL, 0x0,
            "identify: a protocol ID the peer supports", HFILL } },
    };
    static gint *ett[] = { &ett_app };
    static ei_register_info ei[] = {
        { &ei_app_truncated, { "libp2p_app.truncated", PI_MALFORMED, PI_WARN,
            "The stream closed inside a message", EXPFILL } },
    };
    expert_module_t *expert;

    proto_app = proto_register_protocol("libp2p application data", "libp2p app", "libp2p_app");
    proto_register_field_array(proto_app, hf, array_length(hf));
    proto_register_subtree_array(ett, array_length(ett));
    expert = expert_register_protocol(proto_app);
    expert_register_field_array(expert, ei, array_length(ei));
    app_handle = register_dissector("libp2p_app", dissect_app, proto_app);
}

void
proto_reg_handoff_libp2p_app(void)
{
    /* Families p2pc frames without decoding them further. */
    dissector_add_string("multistream.protocol", "/ipfs/id/1.0.0", app_handle);
    dissector_add_string("multistream.protocol", "/ipfs/id/push/1.0.0", app_handle);
    dissector_add_string("multistream.protocol", "/ipfs/ping/1.0.0", app_handle);
    dissector_add_for_decode_as("multistream.protocol", app_handle);
}
