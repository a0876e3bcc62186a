/* taps.c
 * The taps beside the message records: where an item was seen, the per-frame batch, peer IDs
 * and QUIC datagrams (taps.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/taps.h"

#include <epan/proto_data.h>
#include <epan/tap.h>
#include <epan/dissectors/packet-tcp.h>

static int proto_p2pc = -1;
static int p2pc_peer_tap = -1;
static int p2pc_quic_tap = -1;

void
p2pc_where_of(packet_info *pinfo, p2pc_where_t *at)
{
    struct tcp_analysis *tcpd = NULL;
    if (pinfo->ptype == PT_TCP)
        tcpd = get_tcp_conversation_data(NULL, pinfo);
    at->frame = pinfo->num;
    at->stream = tcpd ? tcpd->stream : G_MAXUINT32;
    copy_address_shallow(&at->src, &pinfo->src);
    copy_address_shallow(&at->dst, &pinfo->dst);
    at->srcport = pinfo->srcport;
    at->dstport = pinfo->destport;
}

void
p2pc_batch_queue(int tap, p2pc_key_t key, packet_info *pinfo, const void *item)
{
    gboolean made;
    p2pc_batch_t *b = (p2pc_batch_t *)p2pc_frame_data(pinfo->pool, pinfo, proto_p2pc, key, sizeof(p2pc_batch_t), &made);
    if (made) {
        b->items = wmem_array_new(pinfo->pool, sizeof(const void *));
        tap_queue_packet(tap, pinfo, b);    /* the listeners run when the frame ends */
    }
    wmem_array_append_one(b->items, item);
}

void
p2pc_peer_add(packet_info *pinfo, const char *via, const char *peer_id)
{
    p2pc_peer_t *q = wmem_new0(pinfo->pool, p2pc_peer_t);
    q->via = via;
    q->peer_id = peer_id;
    p2pc_where_of(pinfo, &q->at);
    tap_queue_packet(p2pc_peer_tap, pinfo, q);
}

void
p2pc_quic_packet_add(packet_info *pinfo, const p2pc_quic_packet_t *pkt)
{
    p2pc_quic_packet_t *q = wmem_new(pinfo->pool, p2pc_quic_packet_t);
    *q = *pkt;
    tap_queue_packet(p2pc_quic_tap, pinfo, q);
}

void
p2pc_taps_register(int proto)
{
    proto_p2pc = proto;
    p2pc_peer_tap = register_tap("p2pc_peer");
    p2pc_quic_tap = register_tap("p2pc_quic");
}
