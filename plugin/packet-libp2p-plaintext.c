/* packet-libp2p-plaintext.c
 * libp2p security handshakes: /plaintext/2.0.0 (libp2p/specs plaintext: one
 * uvarint(len) || protobuf Exchange { bytes id = 1; PublicKey pubkey = 2 } per side, with
 * PublicKey { KeyType Type = 1; bytes Data = 2 }), and /noise, whose u16-length-prefixed
 * frames are labelled as encrypted (go and rust libp2p export no session keys).
 * Both are layers under multistream-select: registered in "multistream.protocol", called with
 * the connection direction's pipe.  After the Exchange the direction negotiates its muxer,
 * so the rest of the pipe goes back to multistream-select.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "p2pc-compat.h"
#include "p2pc-libp2p.h"

#include <epan/expert.h>

void proto_register_libp2p_plaintext(void);
void proto_reg_handoff_libp2p_plaintext(void);

static int proto_plaintext = -1;
static int proto_noise = -1;
static int hf_pt_length = -1;
static int hf_pt_peer_id = -1;
static int hf_pt_key_type = -1;
static int hf_pt_key = -1;
static int hf_noise_length = -1;
static int hf_noise_data = -1;
static gint ett_pt = -1;
static gint ett_noise = -1;
static expert_field ei_noise_encrypted = EI_INIT;
static expert_field ei_pt_truncated = EI_INIT;
static dissector_handle_t pt_handle;
static dissector_handle_t noise_handle;

static const value_string key_type_vals[] = {
    { 0, "RSA" }, { 1, "Ed25519" }, { 2, "Secp256k1" }, { 3, "ECDSA" }, { 0, NULL }
};

static proto_item *
draw_plaintext(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree)
{
    proto_item *ti = proto_tree_add_item(tree, proto_plaintext, tvb, 0, -1, ENC_NA);
    proto_tree *t = proto_item_add_subtree(ti, ett_pt);
    guint len = tvb_captured_length(tvb), used, off, wt, ds, dl;
    const guint8 *p = tvb_get_ptr(tvb, 0, len);
    guint64 n, num, iv;

    col_append_sep_str(pinfo->cinfo, COL_INFO, ", ", "plaintext Exchange");
    if (!p2pc_uvarint(p, len, &n, &used))
        return ti;
    proto_tree_add_uint64(t, hf_pt_length, tvb, 0, used, n);
    off = used;
    while (p2pc_pb_next(p, len, &off, &num, &wt, &ds, &dl, &iv)) {
        if (num == 1 && wt == 2) {
            proto_tree_add_item(t, hf_pt_peer_id, tvb, ds, dl, ENC_NA);
        } else if (num == 2 && wt == 2) {
            guint koff = ds, kwt, kds, kdl;
            guint64 knum, kiv;
            while (p2pc_pb_next(p, ds + dl, &koff, &knum, &kwt, &kds, &kdl, &kiv)) {
                if (knum == 1 && kwt == 0)
                    proto_tree_add_uint(t, hf_pt_key_type, tvb, ds, dl, (guint32)kiv);
                else if (knum == 2 && kwt == 2)
                    proto_tree_add_item(t, hf_pt_key, tvb, kds, kdl, ENC_NA);
            }
        }
    }
    return ti;
}

void
libp2p_show_plaintext(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree)
{
    draw_plaintext(tvb, pinfo, tree);
}

/* One Exchange per direction: uvarint(len) || protobuf. */
static gint64
pt_len(l2p_pipe_t *pipe, const guint8 *p, guint avail)
{
    guint64 n;
    guint used;
    if (!p2pc_uvarint(p, avail, &n, &used))
        return avail >= 9 ? -1 : 0;
    if (n > 64 * 1024)
        return -1;
    return used + n <= avail ? (gint64)(used + n) : 0;
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
    ti = draw_plaintext(tvb, pinfo, tree);
    if (pdu->truncated)
        expert_add_info(pinfo, ti, &ei_pt_truncated);
}

static int
dissect_plaintext(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    l2p_pipe_t *pipe = l2p_pipe_from(data);
    if (!pipe) {
        draw_plaintext(tvb, pinfo, tree);
        return tvb_captured_length(tvb);
    }
    l2p_dissect_pdus(tvb, pinfo, tree, pipe, pt_len, pt_pdu);
    return tvb_captured_length(tvb);
}

void
libp2p_show_noise(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree)
{
    proto_item *ti = proto_tree_add_item(tree, proto_noise, tvb, 0, -1, ENC_NA);
    proto_tree *t = proto_item_add_subtree(ti, ett_noise);
    proto_tree_add_item(t, hf_noise_length, tvb, 0, 2, ENC_BIG_ENDIAN);
    proto_tree_add_item(t, hf_noise_data, tvb, 2, -1, ENC_NA);
    expert_add_info(pinfo, ti, &ei_noise_encrypted);
    col_append_sep_str(pinfo->cinfo, COL_INFO, ", ", "Noise (encrypted)");
}

/* libp2p/specs noise: every message, handshake or transport, is u16 BE length || payload. */
static gint64
noise_len(l2p_pipe_t *pipe, const guint8 *p, guint avail)
{
    if (avail < 2)
        return 0;
    return 2 + ((guint)p[0] << 8 | p[1]);
}

static void
noise_pdu(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, l2p_pipe_t *pipe, l2p_pdu_t *pdu)
{
    col_set_str(pinfo->cinfo, COL_PROTOCOL, "libp2p Noise");
    libp2p_show_noise(tvb, pinfo, tree);
}

static int
dissect_noise(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    l2p_pipe_t *pipe = l2p_pipe_from(data);
    if (!pipe) {
        libp2p_show_noise(tvb, pinfo, tree);
        return tvb_captured_length(tvb);
    }
    l2p_dissect_pdus(tvb, pinfo, tree, pipe, noise_len, noise_pdu);
    return tvb_captured_length(tvb);
}

void
proto_register_libp2p_plaintext(void)
{
    static hf_register_info hf[] = {
        { &hf_pt_length, { "Length", "libp2p_plaintext.length", FT_UINT64, BASE_DEC, NULL, 0x0, NULL, HFILL } },
        { &hf_pt_peer_id, { "Peer ID", "libp2p_plaintext.peer_id", FT_BYTES, BASE_NONE, NULL, 0x0, NULL, HFILL } },
        { &hf_pt_key_type, { "Key type", "libp2p_plaintext.key_type", FT_UINT32, BASE_DEC, VALS(key_type_vals), 0x0, NULL, HFILL } },
        { &hf_pt_key, { "Public key", "libp2p_plaintext.key", FT_BYTES, BASE_NONE, NULL, 0x0, NULL, HFILL } },
    };
    static hf_register_info hf_noise[] = {
        { &hf_noise_length, { "Length", "libp2p_noise.length", FT_UINT16, BASE_DEC, NULL, 0x0, NULL, HFILL } },
        { &hf_noise_data, { "Encrypted data", "libp2p_noise.data", FT_BYTES, BASE_NONE, NULL, 0x0, NULL, HFILL } },
    };
    static gint *ett[] = { &ett_pt, &ett_noise };
    static ei_register_info ei[] = {
        { &ei_noise_encrypted, { "libp2p_noise.encrypted", PI_DECRYPTION, PI_NOTE,
            "Noise-encrypted: go and rust libp2p export no keys", EXPFILL } },
    };
    static ei_register_info ei_pt[] = {
        { &ei_pt_truncated, { "libp2p_plaintext.truncated", PI_MALFORMED, PI_WARN,
            "The connection closed inside the Exchange", EXPFILL } },
    };
    expert_module_t *expert;

    proto_plaintext = proto_register_protocol("libp2p plaintext/2.0.0", "libp2p plaintext", "libp2p_plaintext");
    proto_noise = proto_register_protocol("libp2p Noise", "libp2p Noise", "libp2p_noise");
    proto_register_field_array(proto_plaintext, hf, array_length(hf));
    proto_register_field_array(proto_noise, hf_noise, array_length(hf_noise));
    proto_register_subtree_array(ett, array_length(ett));
    expert = expert_register_protocol(proto_noise);
    expert_register_field_array(expert, ei, array_length(ei));
    expert = expert_register_protocol(proto_plaintext);
    expert_register_field_array(expert, ei_pt, array_length(ei_pt));
    pt_handle = register_dissector("libp2p_plaintext", dissect_plaintext, proto_plaintext);
    noise_handle = register_dissector("libp2p_noise", dissect_noise, proto_noise);
}

void
proto_reg_handoff_libp2p_plaintext(void)
{
    dissector_add_string("multistream.protocol", "/plaintext/2.0.0", pt_handle);
    /* Every Noise variant ("/noise", and any "/noise/..." through the family lookup). */
    dissector_add_string("multistream.protocol", "/noise", noise_handle);
}
