/* segment.c
 * The TCP segment in a frame's own bytes (segment.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/segment.h"
#include "core/frame-data.h"

#include <epan/ipproto.h>
#include <epan/proto_data.h>

#define IP_AT_MAX   256             /* how far into a frame its IP header is looked for */

static int proto_p2pc = -1;

/* What this dissection of a frame found, for which endpoints. */
typedef struct {
    address src;
    address dst;
    guint32 srcport;
    guint32 dstport;
    gboolean found;
    p2pc_segment_t seg;
} found_t;

/* The segment's IP header (version 4, unfragmented, or 6 with TCP next) is looked for in the first IP_AT_MAX
 * bytes, as one that carries those addresses and is followed by a TCP header with those ports,
 * and whose length ends within the bytes captured. */
static gboolean
find_segment(tvbuff_t *frame, const packet_info *pinfo, p2pc_segment_t *seg)
{
    guint len = tvb_captured_length(frame);
    const guint8 *p = len ? tvb_get_ptr(frame, 0, len) : NULL;
    const int alen = pinfo->src.type == AT_IPv4 ? 4 : pinfo->src.type == AT_IPv6 ? 16 : 0;

    if (!alen || pinfo->dst.type != pinfo->src.type)
        return FALSE;
    for (guint ip = 0; ip < len && ip < IP_AT_MAX; ip++) {
        guint tcp, end, hlen;
        if (alen == 4) {
            if ((p[ip] >> 4) != 4 || ip + 20 > len || p[ip + 9] != IP_PROTO_TCP ||
                (pntohu16(p + ip + 6) & 0x3FFF) != 0 ||             /* a fragment */
                memcmp(p + ip + 12, pinfo->src.data, 4) != 0 || memcmp(p + ip + 16, pinfo->dst.data, 4) != 0)
                continue;
            tcp = ip + (p[ip] & 0x0F) * 4u;
            end = ip + pntohu16(p + ip + 2);
        } else {
            if ((p[ip] >> 4) != 6 || ip + 40 > len || p[ip + 6] != IP_PROTO_TCP ||
                memcmp(p + ip + 8, pinfo->src.data, 16) != 0 || memcmp(p + ip + 24, pinfo->dst.data, 16) != 0)
                continue;
            tcp = ip + 40;
            end = tcp + pntohu16(p + ip + 4);
        }
        if (tcp < ip + 20 || tcp + 20 > len ||
            pntohu16(p + tcp) != pinfo->srcport || pntohu16(p + tcp + 2) != pinfo->destport)
            continue;
        hlen = (p[tcp + 12] >> 4) * 4u;
        if (hlen < 20 || tcp + hlen > end || end > len)
            continue;
        seg->seq = pntohu32(p + tcp + 4);
        seg->ack = pntohu32(p + tcp + 8);
        seg->flags = p[tcp + 13];
        seg->hdr_len = hlen;
        seg->at = tcp + hlen;
        seg->len = end - seg->at;
        return TRUE;
    }
    return FALSE;
}

/* The frame's own bytes: the first data source. */
static tvbuff_t *
frame_tvb(const packet_info *pinfo)
{
    return pinfo->data_src ? get_data_source_tvb((const struct data_source *)pinfo->data_src->data) : NULL;
}

gboolean
p2pc_frame_segment(packet_info *pinfo, p2pc_segment_t *seg)
{
    found_t *f = (found_t *)p_get_proto_data(pinfo->pool, pinfo, proto_p2pc, P2PC_KEY_SEGMENT);
    tvbuff_t *frame;

    if (!f || f->srcport != pinfo->srcport || f->dstport != pinfo->destport ||
        !addresses_equal(&f->src, &pinfo->src) || !addresses_equal(&f->dst, &pinfo->dst)) {
        if (!f) {
            f = wmem_new0(pinfo->pool, found_t);
            p_add_proto_data(pinfo->pool, pinfo, proto_p2pc, P2PC_KEY_SEGMENT, f);
        }
        copy_address_shallow(&f->src, &pinfo->src);
        copy_address_shallow(&f->dst, &pinfo->dst);
        f->srcport = pinfo->srcport;
        f->dstport = pinfo->destport;
        frame = frame_tvb(pinfo);
        f->found = frame && find_segment(frame, pinfo, &f->seg);
    }
    *seg = f->seg;
    return f->found;
}

gboolean
p2pc_seq_base(tvbuff_t *tvb, packet_info *pinfo, guint32 seq, guint32 *base)
{
    p2pc_segment_t seg;
    guint at;

    if (tvb_get_ds_tvb(tvb) != frame_tvb(pinfo) || !p2pc_frame_segment(pinfo, &seg))
        return FALSE;
    at = (guint)tvb_raw_offset(tvb);
    if (at < seg.at || at > seg.at + seg.len)
        return FALSE;
    *base = seg.seq + (at - seg.at) - seq;
    return TRUE;
}

void
p2pc_segment_register(int proto)
{
    proto_p2pc = proto;
}
