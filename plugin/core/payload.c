/* payload.c
 * A message's compressed payload decoded, bounded and shown (payload.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/payload.h"
#include "core/prefs.h"

static expert_field ei_larger = EI_INIT;

tvbuff_t *
p2pc_payload_decompress(const p2pc_payload_codec_t *how, tvbuff_t *payload, packet_info *pinfo,
                        proto_tree *tree, proto_item *ti, gboolean *bounded, p2pc_codec_t *codec)
{
    guint in = tvb_captured_length(payload), out;
    p2pc_bound_t bound = p2pc_bound(pinfo, how->max, in, 0);
    p2pc_dc_status_t st;
    const char *detail = NULL;
    tvbuff_t *raw = p2pc_decompress_tvb(payload, 0, -1, pinfo, how->codec, bound.bound, how->tab,
                                        &st, &detail);
    p2pc_codec_t used = how->codec;

    *bounded = p2pc_bound_charge(pinfo, &bound, raw ? tvb_captured_length(raw) : 0, st == P2PC_DC_BOUND);
    if (!raw && !*bounded && how->fallback != P2PC_CODEC_NONE) {
        /* The first codec's error stays the one reported when the fallback fails too: the
         * caller chose it as the likelier reading. */
        p2pc_dc_status_t fb_st;
        const char *fb_detail = NULL;
        raw = p2pc_decompress_tvb(payload, 0, -1, pinfo, how->fallback, bound.bound, how->tab,
                                  &fb_st, &fb_detail);
        *bounded = p2pc_bound_charge(pinfo, &bound, raw ? tvb_captured_length(raw) : 0,
                                     fb_st == P2PC_DC_BOUND);
        if (raw)
            used = how->fallback;
    }
    if (codec)
        *codec = used;
    if (*bounded) {
        p2pc_bound_expert(pinfo, ti, bound.by);
        return NULL;
    }
    if (!raw) {
        if (st == P2PC_DC_BOUND && how->ei_bound)
            expert_add_info_format(pinfo, ti, how->ei_bound, "%s exceeds the bound of %zu bytes",
                                   how->tab, bound.bound);
        else
            expert_add_info_format(pinfo, ti, how->ei_failed, "%s decompression failed: %s",
                                   p2pc_codec_name(used), detail ? detail : p2pc_dc_status_name(st));
        return NULL;
    }
    out = tvb_captured_length(raw);
    proto_item_set_generated(proto_tree_add_uint(tree, *how->hf_len, payload, 0, in, out));
    if (how->hf_ratio && out) {
        double ratio = (double)in / out;
        proto_item_set_generated(proto_tree_add_double(tree, *how->hf_ratio, payload, 0, in, ratio));
    }
    /* A protocol whose specification rules this out reports it as that rule (spec_not_smaller):
     * one name for one condition in a frame, the stronger one. */
    if (in > out && !how->spec_not_smaller)
        expert_add_info_format(pinfo, ti, &ei_larger, "%s made the payload larger: %u bytes sent for %u "
                               "uncompressed", p2pc_codec_name(used), in, out);
    return raw;
}

void
p2pc_payload_register(int proto)
{
    static ei_register_info ei[] = {
        { &ei_larger, { "p2pc.compressed_larger", PI_PROTOCOL, PI_NOTE,
            "Compressed payload larger than its uncompressed bytes (sent anyway)", EXPFILL } },
    };
    expert_register_field_array(expert_register_protocol(proto), ei, array_length(ei));
}
