/* packet-yamux.c
 * /yamux/1.0.0 frames (libp2p/specs yamux, hashicorp/yamux spec.md): a 12-byte big-endian
 * header version u8 (0) | type u8 (0 data, 1 window update, 2 ping, 3 go away) | flags u16
 * (SYN 1, ACK 2, FIN 4, RST 8) | stream id u32 | length u32, then `length` bytes for data
 * frames.  The dialer opens odd stream ids, the listener even ones.  packet-libp2p.c finds the
 * frames and reassembles each stream; this file draws a frame.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "p2pc-compat.h"
#include "p2pc-libp2p.h"

void proto_register_yamux(void);

static int proto_yamux = -1;
static int hf_yamux_version = -1;
static int hf_yamux_type = -1;
static int hf_yamux_flags = -1;
static int hf_yamux_flag_syn = -1;
static int hf_yamux_flag_ack = -1;
static int hf_yamux_flag_fin = -1;
static int hf_yamux_flag_rst = -1;
static int hf_yamux_stream = -1;
static int hf_yamux_length = -1;
static int hf_yamux_data = -1;
static gint ett_yamux = -1;
static gint ett_yamux_flags = -1;

static const value_string yamux_type_vals[] = {
    { 0, "Data" }, { 1, "Window Update" }, { 2, "Ping" }, { 3, "Go Away" }, { 0, NULL }
};

void
libp2p_show_yamux(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree)
{
    static int *const flags[] = { &hf_yamux_flag_syn, &hf_yamux_flag_ack, &hf_yamux_flag_fin, &hf_yamux_flag_rst, NULL };
    proto_item *ti;
    proto_tree *t;
    guint8 type;

    if (tvb_captured_length(tvb) < 12)
        return;
    ti = proto_tree_add_item(tree, proto_yamux, tvb, 0, -1, ENC_NA);
    t = proto_item_add_subtree(ti, ett_yamux);
    type = tvb_get_uint8(tvb, 1);
    proto_tree_add_item(t, hf_yamux_version, tvb, 0, 1, ENC_BIG_ENDIAN);
    proto_tree_add_item(t, hf_yamux_type, tvb, 1, 1, ENC_BIG_ENDIAN);
    proto_tree_add_bitmask(t, tvb, 2, hf_yamux_flags, ett_yamux_flags, flags, ENC_BIG_ENDIAN);
    proto_tree_add_item(t, hf_yamux_stream, tvb, 4, 4, ENC_BIG_ENDIAN);
    proto_tree_add_item(t, hf_yamux_length, tvb, 8, 4, ENC_BIG_ENDIAN);
    if (type == 0 && tvb_captured_length(tvb) > 12)
        proto_tree_add_item(t, hf_yamux_data, tvb, 12, -1, ENC_NA);
    proto_item_append_text(ti, ": %s, stream %u", val_to_str_const(type, yamux_type_vals, "?"), tvb_get_ntohl(tvb, 4));
    if (type != 0)  /* data frames are named by the messages they complete */
        col_append_sep_fstr(pinfo->cinfo, COL_INFO, ", ", "yamux %s stream %u",
                            val_to_str_const(type, yamux_type_vals, "?"), tvb_get_ntohl(tvb, 4));
}

void
proto_register_yamux(void)
{
    static hf_register_info hf[] = {
        { &hf_yamux_version, { "Version", "yamux.version", FT_UINT8, BASE_DEC, NULL, 0x0, NULL, HFILL } },
        { &hf_yamux_type, { "Type", "yamux.type", FT_UINT8, BASE_DEC, VALS(yamux_type_vals), 0x0, NULL, HFILL } },
        { &hf_yamux_flags, { "Flags", "yamux.flags", FT_UINT16, BASE_HEX, NULL, 0x0, NULL, HFILL } },
        { &hf_yamux_flag_syn, { "SYN", "yamux.flags.syn", FT_BOOLEAN, 16, NULL, 0x1, NULL, HFILL } },
        { &hf_yamux_flag_ack, { "ACK", "yamux.flags.ack", FT_BOOLEAN, 16, NULL, 0x2, NULL, HFILL } },
        { &hf_yamux_flag_fin, { "FIN", "yamux.flags.fin", FT_BOOLEAN, 16, NULL, 0x4, NULL, HFILL } },
        { &hf_yamux_flag_rst, { "RST", "yamux.flags.rst", FT_BOOLEAN, 16, NULL, 0x8, NULL, HFILL } },
        { &hf_yamux_stream, { "Stream ID", "yamux.stream", FT_UINT32, BASE_DEC, NULL, 0x0, NULL, HFILL } },
        { &hf_yamux_length, { "Length", "yamux.length", FT_UINT32, BASE_DEC, NULL, 0x0,
            "Data bytes (Data), window delta (Window Update), ping value or go-away code", HFILL } },
        { &hf_yamux_data, { "Data", "yamux.data", FT_BYTES, BASE_NONE, NULL, 0x0, NULL, HFILL } },
    };
    static gint *ett[] = { &ett_yamux, &ett_yamux_flags };

    proto_yamux = proto_register_protocol("yamux 1.0.0", "yamux", "yamux");
    proto_register_field_array(proto_yamux, hf, array_length(hf));
    proto_register_subtree_array(ett, array_length(ett));
}
