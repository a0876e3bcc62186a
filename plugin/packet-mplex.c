/* packet-mplex.c
 * /mplex/6.7.0 frames (libp2p/specs mplex): uvarint(stream_id << 3 | flag) || uvarint(len) ||
 * data; flags 0 NewStream, 1 MessageReceiver, 2 MessageInitiator, 3 CloseReceiver,
 * 4 CloseInitiator, 5 ResetReceiver, 6 ResetInitiator.  Both sides number their streams
 * independently, so a stream is its id plus the side that opened it (packet-libp2p.c keys
 * them so); this file draws a frame.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "p2pc-compat.h"
#include "p2pc-libp2p.h"

void proto_register_mplex(void);

static int proto_mplex = -1;
static int hf_mplex_stream = -1;
static int hf_mplex_flag = -1;
static int hf_mplex_length = -1;
static int hf_mplex_data = -1;
static gint ett_mplex = -1;

static const value_string mplex_flag_vals[] = {
    { 0, "NewStream" }, { 1, "MessageReceiver" }, { 2, "MessageInitiator" },
    { 3, "CloseReceiver" }, { 4, "CloseInitiator" }, { 5, "ResetReceiver" }, { 6, "ResetInitiator" },
    { 0, NULL }
};

void
libp2p_show_mplex(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree)
{
    proto_item *ti = proto_tree_add_item(tree, proto_mplex, tvb, 0, -1, ENC_NA);
    proto_tree *t = proto_item_add_subtree(ti, ett_mplex);
    guint len = tvb_captured_length(tvb), u1, u2;
    const guint8 *p = tvb_get_ptr(tvb, 0, len);
    guint64 hdr, dlen;

    if (!p2pc_uvarint(p, len, &hdr, &u1) || !p2pc_uvarint(p + u1, len - u1, &dlen, &u2))
        return;
    proto_tree_add_uint64(t, hf_mplex_stream, tvb, 0, u1, hdr >> 3);
    proto_tree_add_uint(t, hf_mplex_flag, tvb, 0, u1, (guint32)(hdr & 7));
    proto_tree_add_uint64(t, hf_mplex_length, tvb, u1, u2, dlen);
    if (dlen)
        proto_tree_add_item(t, hf_mplex_data, tvb, u1 + u2, -1, ENC_NA);
    proto_item_append_text(ti, ": %s, stream %" G_GUINT64_FORMAT,
                           val_to_str_const((guint32)(hdr & 7), mplex_flag_vals, "?"), hdr >> 3);
    if ((hdr & 7) == 0 || (hdr & 7) > 2)    /* messages are named by the application data */
        col_append_sep_fstr(pinfo->cinfo, COL_INFO, ", ", "mplex %s stream %" G_GUINT64_FORMAT,
                            val_to_str_const((guint32)(hdr & 7), mplex_flag_vals, "?"), hdr >> 3);
}

void
proto_register_mplex(void)
{
    static hf_register_info hf[] = {
        { &hf_mplex_stream, { "Stream ID", "mplex.stream", FT_UINT64, BASE_DEC, NULL, 0x0, NULL, HFILL } },
        { &hf_mplex_flag, { "Flag", "mplex.flag", FT_UINT32, BASE_DEC, VALS(mplex_flag_vals), 0x0, NULL, HFILL } },
        { &hf_mplex_length, { "Length", "mplex.length", FT_UINT64, BASE_DEC, NULL, 0x0, NULL, HFILL } },
        { &hf_mplex_data, { "Data", "mplex.data", FT_BYTES, BASE_NONE, NULL, 0x0, NULL, HFILL } },
    };
    static gint *ett[] = { &ett_mplex };

    proto_mplex = proto_register_protocol("mplex 6.7.0", "mplex", "mplex");
    proto_register_field_array(proto_mplex, hf, array_length(hf));
    proto_register_subtree_array(ett, array_length(ett));
}
