/* packet-libp2p-noise.c
 * libp2p's /noise security layer (libp2p/specs noise): every message, handshake or transport,
 * is a u16 big-endian length and then its payload.  The frames are shown with their sizes and
 * labelled encrypted.  A layer under multistream-select: registered in "multistream.protocol"
 * (the "/noise" family), called with the connection direction's pipe.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/p2pc-compat.h"
#include "libp2p/engine.h"

#include <epan/expert.h>

void proto_register_libp2p_noise(void);
void proto_reg_handoff_libp2p_noise(void);

static int proto_noise = -1;
static int hf_noise_length = -1;
static int hf_noise_data = -1;
static gint ett_noise = -1;
static expert_field ei_noise_encrypted = EI_INIT;
static dissector_handle_t noise_handle;

static void
draw_noise(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree)
{
    proto_item *ti = proto_tree_add_item(tree, proto_noise, tvb, 0, -1, ENC_NA);
    proto_tree *t = proto_item_add_subtree(ti, ett_noise);
    proto_tree_add_item(t, hf_noise_length, tvb, 0, 2, ENC_BIG_ENDIAN);
    proto_tree_add_item(t, hf_noise_data, tvb, 2, -1, ENC_NA);
    expert_add_info(pinfo, ti, &ei_noise_encrypted);
    col_append_sep_str(pinfo->cinfo, COL_INFO, ", ", "Noise (encrypted)");
}

static gint64
noise_len(l2p_pipe_t *pipe, const guint8 *p, guint avail)
{
    if (avail < 2)
        return 0;
    return 2 + (gint64)pntohu16(p);
}

static void
noise_pdu(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, l2p_pipe_t *pipe, l2p_pdu_t *pdu)
{
    col_set_str(pinfo->cinfo, COL_PROTOCOL, "libp2p Noise");
    draw_noise(tvb, pinfo, tree);
}

static int
dissect_noise(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    l2p_pipe_t *pipe = (l2p_pipe_t *)data;
    if (!pipe) {
        draw_noise(tvb, pinfo, tree);
        return tvb_captured_length(tvb);
    }
    l2p_dissect_pdus(tvb, pinfo, tree, pipe, noise_len, noise_pdu);
    return tvb_captured_length(tvb);
}

void
proto_register_libp2p_noise(void)
{
    static hf_register_info hf[] = {
        { &hf_noise_length, { "Length", "libp2p_noise.length", FT_UINT16, BASE_DEC, NULL, 0x0,
            "Length of the Noise message that follows", HFILL } },
        { &hf_noise_data, { "Encrypted data", "libp2p_noise.data", FT_BYTES, BASE_NONE, NULL, 0x0,
            "The Noise message: handshake payload or ciphertext with its 16-byte tag", HFILL } },
    };
    static gint *ett[] = { &ett_noise };
    static ei_register_info ei[] = {
        { &ei_noise_encrypted, { "libp2p_noise.encrypted", PI_DECRYPTION, PI_NOTE,
            "Noise-encrypted: go and rust libp2p export no keys", EXPFILL } },
    };
    expert_module_t *expert;

    proto_noise = proto_register_protocol("libp2p Noise", "libp2p Noise", "libp2p_noise");
    proto_register_field_array(proto_noise, hf, array_length(hf));
    proto_register_subtree_array(ett, array_length(ett));
    expert = expert_register_protocol(proto_noise);
    expert_register_field_array(expert, ei, array_length(ei));
    noise_handle = register_dissector("libp2p_noise", dissect_noise, proto_noise);
}

void
proto_reg_handoff_libp2p_noise(void)
{
    /* Every Noise variant ("/noise", and any "/noise/..." through the family lookup). */
    dissector_add_string("multistream.protocol", "/noise", noise_handle);
}
