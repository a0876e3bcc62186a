/* packet-libp2p-plaintext.c
 * libp2p's /plaintext/2.0.0 security handshake (libp2p/specs plaintext: one
 * uvarint(len) || protobuf Exchange { bytes id = 1; PublicKey pubkey = 2 } per side, with
 * PublicKey { KeyType Type = 1; bytes Data = 2 }).  A layer under multistream-select:
 * registered in "multistream.protocol", called with the connection direction's pipe.  After
 * the Exchange the direction negotiates its muxer, so the rest of the pipe goes back to
 * multistream-select.  The peer ID an Exchange states goes to the records (p2pc_peer_add()) as
 * its sender's: the Exchange is not authenticated, it is what the peer says it is.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/p2pc-compat.h"
#include "core/base58.h"
#include "core/record.h"
#include "core/spec.h"
#include "core/taps.h"
#include "libp2p/engine.h"

#include <epan/expert.h>

void proto_register_libp2p_plaintext(void);
void proto_reg_handoff_libp2p_plaintext(void);

static int proto_plaintext = -1;
static int hf_pt_length = -1;
static int hf_pt_peer_id = -1;
static int hf_pt_peer_id_b58 = -1;
static int hf_pt_key_type = -1;
static int hf_pt_key = -1;
static gint ett_pt = -1;
static expert_field ei_pt_truncated = EI_INIT;
static expert_field ei_pt_peer_id_long = EI_INIT;

/* The identity multihash of a key up to 42 bytes (libp2p peer-ids spec); longer keys are hashed. */
#define PT_PEER_ID_MAX 44
static dissector_handle_t pt_handle;

static const value_string key_type_vals[] = {
    { 0, "RSA" }, { 1, "Ed25519" }, { 2, "Secp256k1" }, { 3, "ECDSA" }, { 0, NULL }
};

static proto_item *
draw_plaintext(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree)
{
    proto_item *ti = proto_tree_add_item(tree, proto_plaintext, tvb, 0, -1, ENC_NA);
    proto_tree *t = proto_item_add_subtree(ti, ett_pt);
    int len = (int)tvb_captured_length(tvb), off;
    guint64 n;
    guint used;
    p2pc_pb_field_t f, k;

    col_append_sep_str(pinfo->cinfo, COL_INFO, ", ", "plaintext Exchange");
    used = tvb_get_varint(tvb, 0, MIN(FT_VARINT_MAX_LEN, len), &n, ENC_VARINT_PROTOBUF);
    if (!used)
        return ti;
    p2pc_spec_varint(tvb, 0, used, pinfo, proto_tree_add_uint64(t, hf_pt_length, tvb, 0, used, n));
    off = (int)used;
    while (p2pc_pb_next(tvb, &off, len, &f)) {
        if (f.number == 1 && f.wire_type == 2) {
            proto_item *pi = proto_tree_add_item(t, hf_pt_peer_id, tvb, f.start, f.len, ENC_NA);
            const char *peer_id = f.len <= PT_PEER_ID_MAX ?
                p2pc_base58_encode(pinfo->pool, tvb_get_ptr(tvb, f.start, f.len), (size_t)f.len) : NULL;
            if (!peer_id) {
                expert_add_info_format(pinfo, pi, &ei_pt_peer_id_long, "Peer ID of %d bytes: a libp2p "
                                       "peer ID has at most %d (not encoded)", f.len, PT_PEER_ID_MAX);
                continue;
            }
            pi = proto_tree_add_string(t, hf_pt_peer_id_b58, tvb, f.start, f.len, peer_id);
            proto_item_set_generated(pi);
            p2pc_peer_add(pinfo, "plaintext", peer_id);
        } else if (f.number == 2 && f.wire_type == 2) {
            int koff = f.start;
            while (p2pc_pb_next(tvb, &koff, f.start + f.len, &k)) {
                if (k.number == 1 && k.wire_type == 0)
                    proto_tree_add_uint(t, hf_pt_key_type, tvb, f.start, f.len, (guint32)k.value);
                else if (k.number == 2 && k.wire_type == 2)
                    proto_tree_add_item(t, hf_pt_key, tvb, k.start, k.len, ENC_NA);
            }
        }
    }
    return ti;
}

/* One Exchange per direction: uvarint(len) || protobuf. */
static gint64
pt_len(l2p_pipe_t *pipe, const guint8 *p, guint avail)
{
    return p2pc_uvarint_prefixed(p, avail, 64 * 1024);
}

static void
pt_pdu(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, l2p_pipe_t *pipe, l2p_pdu_t *pdu)
{
    proto_item *ti;
    /* The raw connection follows: its muxer is negotiated by multistream-select again.  (State
     * first: drawing a malformed Exchange may throw.) */
    if (!PINFO_FD_VISITED(pinfo))
        l2p_handoff(pipe, "", l2p_multistream_handle());
    col_set_str(pinfo->cinfo, COL_PROTOCOL, "libp2p");
    p2pc_budget_add(pinfo, "libp2p", P2PC_LAYER_NEGOTIATION, "plaintext_exchange", tvb_captured_length(tvb));
    ti = draw_plaintext(tvb, pinfo, tree);
    if (pdu->truncated)
        expert_add_info(pinfo, ti, &ei_pt_truncated);
}

static int
dissect_plaintext(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    l2p_pipe_t *pipe = (l2p_pipe_t *)data;
    if (!pipe) {
        draw_plaintext(tvb, pinfo, tree);
        return tvb_captured_length(tvb);
    }
    l2p_dissect_pdus(tvb, pinfo, tree, pipe, pt_len, pt_pdu);
    return tvb_captured_length(tvb);
}

void
proto_register_libp2p_plaintext(void)
{
    static hf_register_info hf[] = {
        { &hf_pt_length, { "Length", "libp2p_plaintext.length", FT_UINT64, BASE_DEC, NULL, 0x0,
            "Length of the Exchange message (uvarint)", HFILL } },
        { &hf_pt_peer_id, { "Peer ID", "libp2p_plaintext.peer_id", FT_BYTES, BASE_NONE, NULL, 0x0,
            "The sender's peer ID (a multihash of its public key)", HFILL } },
        { &hf_pt_peer_id_b58, { "Peer ID (base58)", "libp2p_plaintext.peer_id_b58", FT_STRING, BASE_NONE, NULL, 0x0,
            "The sender's peer ID as libp2p prints it: base58btc (12D3KooW... for an Ed25519 key)", HFILL } },
        { &hf_pt_key_type, { "Key type", "libp2p_plaintext.key_type", FT_UINT32, BASE_DEC, VALS(key_type_vals), 0x0,
            "Type of the sender's identity key", HFILL } },
        { &hf_pt_key, { "Public key", "libp2p_plaintext.key", FT_BYTES, BASE_NONE, NULL, 0x0,
            "The sender's identity public key", HFILL } },
    };
    static gint *ett[] = { &ett_pt };
    static ei_register_info ei[] = {
        { &ei_pt_truncated, { "libp2p_plaintext.truncated", PI_MALFORMED, PI_WARN,
            "The connection closed inside the Exchange", EXPFILL } },
        { &ei_pt_peer_id_long, { "libp2p_plaintext.peer_id_long", PI_MALFORMED, PI_WARN,
            "A peer ID longer than any libp2p peer ID (not encoded)", EXPFILL } },
    };
    expert_module_t *expert;

    proto_plaintext = proto_register_protocol("libp2p plaintext/2.0.0", "libp2p plaintext", "libp2p_plaintext");
    proto_register_field_array(proto_plaintext, hf, array_length(hf));
    proto_register_subtree_array(ett, array_length(ett));
    expert = expert_register_protocol(proto_plaintext);
    expert_register_field_array(expert, ei, array_length(ei));
    pt_handle = register_dissector("libp2p_plaintext", dissect_plaintext, proto_plaintext);
}

void
proto_reg_handoff_libp2p_plaintext(void)
{
    dissector_add_string("multistream.protocol", "/plaintext/2.0.0", pt_handle);
}
