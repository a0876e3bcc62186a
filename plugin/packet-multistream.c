/* packet-multistream.c
 * multistream-select 1.0 (libp2p/specs connections; multiformats/multistream-select): each
 * message is uvarint(len including '\n') || UTF-8 text || '\n'.  The header
 * "/multistream/1.0.0", then a protocol proposal, echoed to accept or answered "na"; "ls" lists.
 *
 * This file owns the "multistream.protocol" string table: a dissector registered under a
 * protocol ID receives every application message of the streams that negotiated it (with a
 * libp2p_app_info_t).  Add your own with a Lua script:
 *     DissectorTable.get("multistream.protocol"):add("/my/proto/1.0.0", my_proto)
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "p2pc-compat.h"
#include "p2pc-libp2p.h"

#include <epan/expert.h>

void proto_register_multistream(void);

static int proto_multistream = -1;
static int hf_ms_length = -1;
static int hf_ms_message = -1;
static int hf_ms_stream = -1;
static gint ett_ms = -1;
static expert_field ei_ms_na = EI_INIT;

void
libp2p_show_multistream(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, gboolean in_stream, guint32 stream_id)
{
    proto_item *ti = proto_tree_add_item(tree, proto_multistream, tvb, 0, -1, ENC_NA);
    proto_tree *t = proto_item_add_subtree(ti, ett_ms);
    guint len = tvb_captured_length(tvb);
    guint64 n;
    guint used;
    const char *text;

    if (!p2pc_uvarint(tvb_get_ptr(tvb, 0, len), len, &n, &used) || used + n > len || n == 0)
        return;
    proto_tree_add_uint64(t, hf_ms_length, tvb, 0, used, n);
    /* The text without its trailing newline. */
    text = (const char *)tvb_get_string_enc(pinfo->pool, tvb, used,
                                            (gint)(tvb_get_uint8(tvb, used + (guint)n - 1) == '\n' ? n - 1 : n), ENC_UTF_8);
    proto_tree_add_string(t, hf_ms_message, tvb, used, (gint)n, text);
    if (in_stream)
        proto_tree_add_uint(t, hf_ms_stream, tvb, 0, 0, stream_id);
    proto_item_append_text(ti, ": %s", text);
    col_append_sep_str(pinfo->cinfo, COL_INFO, ", ", text);
    if (!strcmp(text, "na"))
        expert_add_info(pinfo, ti, &ei_ms_na);
}

void
proto_register_multistream(void)
{
    static hf_register_info hf[] = {
        { &hf_ms_length, { "Length", "multistream.length", FT_UINT64, BASE_DEC, NULL, 0x0, NULL, HFILL } },
        { &hf_ms_message, { "Message", "multistream.message", FT_STRING, BASE_NONE, NULL, 0x0,
            "Protocol ID, header, na or ls", HFILL } },
        { &hf_ms_stream, { "Muxed stream", "multistream.stream", FT_UINT32, BASE_DEC, NULL, 0x0, NULL, HFILL } },
    };
    static gint *ett[] = { &ett_ms };
    static ei_register_info ei[] = {
        { &ei_ms_na, { "multistream.na", PI_RESPONSE_CODE, PI_NOTE, "Protocol refused (na)", EXPFILL } },
    };
    expert_module_t *expert;

    proto_multistream = proto_register_protocol("multistream-select 1.0", "multistream", "multistream");
    proto_register_field_array(proto_multistream, hf, array_length(hf));
    proto_register_subtree_array(ett, array_length(ett));
    expert = expert_register_protocol(proto_multistream);
    expert_register_field_array(expert, ei, array_length(ei));
    register_dissector_table("multistream.protocol", "multistream protocol ID", proto_multistream,
                             FT_STRING, P2PC_STRING_CASE_SENSITIVE);
}
