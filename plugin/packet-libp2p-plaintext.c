/* packet-libp2p-plaintext.c
 * libp2p security handshakes: /plaintext/2.0.0 (libp2p/specs plaintext: one
 * uvarint(len) || protobuf Exchange { bytes id = 1; PublicKey pubkey = 2 } per side, with
 * PublicKey { KeyType Type = 1; bytes Data = 2 }), and /noise, whose u16-length-prefixed
 * frames are labelled as encrypted (go and rust libp2p export no session keys).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "p2pc-compat.h"
#include "p2pc-libp2p.h"

#include <epan/expert.h>

void proto_register_libp2p_plaintext(void);

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

static const value_string key_type_vals[] = {
    { 0, "RSA" }, { 1, "Ed25519" }, { 2, "Secp256k1" }, { 3, "ECDSA" }, { 0, NULL }
};

void
libp2p_show_plaintext(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree)
{
    proto_item *ti = proto_tree_add_item(tree, proto_plaintext, tvb, 0, -1, ENC_NA);
    proto_tree *t = proto_item_add_subtree(ti, ett_pt);
    guint len = tvb_captured_length(tvb), used, off, wt, ds, dl;
    const guint8 *p = tvb_get_ptr(tvb, 0, len);
    guint64 n, num, iv;

    col_append_sep_str(pinfo->cinfo, COL_INFO, ", ", "plaintext Exchange");
    if (!p2pc_uvarint(p, len, &n, &used))
        return;
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
}

void
libp2p_show_noise(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree)
{
    proto_item *ti = proto_tree_add_item(tree, proto_noise, tvb, 0, -1, ENC_NA);
    proto_tree *t = proto_item_add_subtree(ti, ett_noise);
    proto_tree_add_item(t, hf_noise_length, tvb, 0, 2, ENC_BIG_ENDIAN);
    proto_tree_add_item(t, hf_noise_data, tvb, 2, -1, ENC_NA);
    expert_add_info(pinfo, ti, &ei_noise_encrypted);
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
    expert_module_t *expert;

    proto_plaintext = proto_register_protocol("libp2p plaintext/2.0.0", "libp2p plaintext", "libp2p_plaintext");
    proto_noise = proto_register_protocol("libp2p Noise", "libp2p Noise", "libp2p_noise");
    proto_register_field_array(proto_plaintext, hf, array_length(hf));
    proto_register_field_array(proto_noise, hf_noise, array_length(hf_noise));
    proto_register_subtree_array(ett, array_length(ett));
    expert = expert_register_protocol(proto_noise);
    expert_register_field_array(expert, ei, array_length(ei));
}
