/* quic-bytes.c
 * A libp2p QUIC datagram's bytes by budget layer and kind (quic-bytes.h), from the lengths of
 * Wireshark's QUIC items in the frame's tree (the postdissector's wanted fields): the UDP
 * payload, each packet's length and header form, its payload, its frames' types (where each
 * frame starts in the decrypted payload) and the STREAM frames' data.  The parts add up to the frame's bytes less its STREAM data by
 * construction: what the items do not cover is the header, the tag or the datagram's padding.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "libp2p/quic-bytes.h"
#include "core/budget.h"

#define UDP_HEADER_LEN 8

static const struct {
    const char *layer;
    const char *kind;
} parts[QB_PARTS] = {
    [QB_LINK_IP] = { P2PC_LAYER_LINK_IP, "headers" },
    [QB_UDP] = { P2PC_LAYER_UDP_HEADER, "fixed" },
    [QB_LONG_HEADER] = { P2PC_LAYER_SECURITY, "quic_long_header" },
    [QB_SHORT_HEADER] = { P2PC_LAYER_SECURITY, "quic_short_header" },
    [QB_TAG] = { P2PC_LAYER_SECURITY, "quic_tag" },
    [QB_COALESCED] = { P2PC_LAYER_SECURITY, "quic_coalesced_padding" },
    [QB_STREAM_HEADER] = { P2PC_LAYER_MUXER, "quic_stream_header" },
    /* The kind of the record the connection's other such datagrams are counted in. */
    [QB_UNDECRYPTED] = { P2PC_LAYER_UNDECODED, "quic (encrypted)" },
    [QB_PADDING] = { P2PC_LAYER_SECURITY, "quic_padding" },
    [QB_PING] = { P2PC_LAYER_SECURITY, "quic_ping" },
    [QB_ACK] = { P2PC_LAYER_SECURITY, "quic_ack" },
    [QB_RESET_STREAM] = { P2PC_LAYER_MUXER, "quic_reset_stream" },
    [QB_STOP_SENDING] = { P2PC_LAYER_MUXER, "quic_stop_sending" },
    [QB_CRYPTO] = { P2PC_LAYER_NEGOTIATION, "quic_crypto" },
    [QB_NEW_TOKEN] = { P2PC_LAYER_SECURITY, "quic_new_token" },
    [QB_MAX_DATA] = { P2PC_LAYER_MUXER, "quic_max_data" },
    [QB_MAX_STREAM_DATA] = { P2PC_LAYER_MUXER, "quic_max_stream_data" },
    [QB_MAX_STREAMS] = { P2PC_LAYER_MUXER, "quic_max_streams" },
    [QB_DATA_BLOCKED] = { P2PC_LAYER_MUXER, "quic_data_blocked" },
    [QB_STREAM_DATA_BLOCKED] = { P2PC_LAYER_MUXER, "quic_stream_data_blocked" },
    [QB_STREAMS_BLOCKED] = { P2PC_LAYER_MUXER, "quic_streams_blocked" },
    [QB_NEW_CONNECTION_ID] = { P2PC_LAYER_SECURITY, "quic_new_connection_id" },
    [QB_RETIRE_CONNECTION_ID] = { P2PC_LAYER_SECURITY, "quic_retire_connection_id" },
    [QB_PATH_CHALLENGE] = { P2PC_LAYER_SECURITY, "quic_path_challenge" },
    [QB_PATH_RESPONSE] = { P2PC_LAYER_SECURITY, "quic_path_response" },
    [QB_CONNECTION_CLOSE] = { P2PC_LAYER_SECURITY, "quic_connection_close" },
    [QB_HANDSHAKE_DONE] = { P2PC_LAYER_SECURITY, "quic_handshake_done" },
    [QB_OTHER] = { P2PC_LAYER_SECURITY, "quic_other" },
};

/* RFC 9000 19 (table 3): frame types 0x00 to 0x1e, STREAM's (0x08 to 0x0f) apart. */
static const guint8 frame_part[] = {
    QB_PADDING, QB_PING, QB_ACK, QB_ACK, QB_RESET_STREAM, QB_STOP_SENDING, QB_CRYPTO, QB_NEW_TOKEN,
    QB_STREAM_HEADER, QB_STREAM_HEADER, QB_STREAM_HEADER, QB_STREAM_HEADER,
    QB_STREAM_HEADER, QB_STREAM_HEADER, QB_STREAM_HEADER, QB_STREAM_HEADER,
    QB_MAX_DATA, QB_MAX_STREAM_DATA, QB_MAX_STREAMS, QB_MAX_STREAMS, QB_DATA_BLOCKED,
    QB_STREAM_DATA_BLOCKED, QB_STREAMS_BLOCKED, QB_STREAMS_BLOCKED, QB_NEW_CONNECTION_ID,
    QB_RETIRE_CONNECTION_ID, QB_PATH_CHALLENGE, QB_PATH_RESPONSE, QB_CONNECTION_CLOSE,
    QB_CONNECTION_CLOSE, QB_HANDSHAKE_DONE,
};

static int hf_udp_payload = -1;
static int hf_packet_length = -1;
static int hf_header_form = -1;
static int hf_payload = -1;
static int hf_protected_payload = -1;
static int hf_frame_type = -1;
static int hf_stream_data = -1;

/* The items of field `hf` in the tree (none: an empty array). */
static GPtrArray *
items(proto_tree *tree, int hf)
{
    static GPtrArray none;
    GPtrArray *a = proto_get_finfo_ptr_array(tree, hf);
    return a ? a : &none;
}

#define ITEM(a, i) ((field_info *)g_ptr_array_index((a), (i)))

/* The sum of the lengths of field `hf`'s items. */
static gint64
length_sum(proto_tree *tree, int hf)
{
    GPtrArray *a = items(tree, hf);
    gint64 sum = 0;
    for (guint i = 0; i < a->len; i++)
        sum += ITEM(a, i)->length;
    return sum;
}

void
l2p_quic_bytes_read(packet_info *pinfo, proto_tree *tree, gboolean decrypted, gboolean undecrypted_part,
                    gint64 *n)
{
    gint64 udp_payload = length_sum(tree, hf_udp_payload);
    gint64 payloads = length_sum(tree, hf_payload), protected_payloads = length_sum(tree, hf_protected_payload);
    GPtrArray *lens = items(tree, hf_packet_length), *forms = items(tree, hf_header_form);
    GPtrArray *types = items(tree, hf_frame_type);

    n[QB_LINK_IP] += (gint64)pinfo->fd->pkt_len - UDP_HEADER_LEN - udp_payload;
    n[QB_UDP] += UDP_HEADER_LEN;
    if (!decrypted) {
        if (undecrypted_part)
            n[QB_UNDECRYPTED] += udp_payload;
        return;
    }
    /* Each packet's length, by its header form (one of each a packet, in the packets' order),
     * less its payload: its header; the datagram's bytes after the last packet. */
    n[QB_COALESCED] += udp_payload;
    for (guint i = 0; i < lens->len; i++) {
        guint32 len = p2pc_field_uint(ITEM(lens, i));
        n[i < forms->len && p2pc_field_uint(ITEM(forms, i)) == 0 ? QB_SHORT_HEADER : QB_LONG_HEADER] += len;
        n[QB_COALESCED] -= len;
    }
    n[QB_LONG_HEADER] -= payloads;
    n[QB_SHORT_HEADER] -= protected_payloads;
    /* The payloads less their frames: the tag.  A frame runs from its type to the next frame's
     * in the packet's decrypted payload, or to its end (an item's length is not kept in a tree
     * nobody sees when its dissector sets it after adding the item, as QUIC's does quic.frame's:
     * the frame types' items, added whole, say where each frame starts). */
    n[QB_TAG] += payloads + protected_payloads;
    for (guint i = 0; i < types->len; i++) {
        field_info *fi = ITEM(types, i), *next = i + 1 < types->len ? ITEM(types, i + 1) : NULL;
        guint64 type = p2pc_field_uint64(fi);
        gint64 len = (next && next->ds_tvb == fi->ds_tvb ? next->start : (gint)tvb_reported_length(fi->ds_tvb)) - fi->start;
        n[type < G_N_ELEMENTS(frame_part) ? frame_part[type] : QB_OTHER] += len;
        n[QB_TAG] -= len;
    }
    n[QB_STREAM_HEADER] -= length_sum(tree, hf_stream_data);
}

l2p_quic_bytes_t *
l2p_quic_bytes_keep(wmem_allocator_t *scope, const gint64 *n)
{
    guint8 count = 0;
    l2p_quic_bytes_t *b;

    for (int i = 0; i < QB_PARTS; i++)
        count += n[i] != 0;
    b = (l2p_quic_bytes_t *)wmem_alloc(scope, sizeof(*b) + count * sizeof(b->item[0]));
    b->n = 0;
    for (int i = 0; i < QB_PARTS; i++) {
        if (n[i]) {
            b->item[b->n].part = (guint8)i;
            b->item[b->n++].bytes = (gint32)n[i];
        }
    }
    return b;
}

void
l2p_quic_bytes_report(packet_info *pinfo, const gint64 *n, gboolean reverse)
{
    for (int i = 0; i < QB_PARTS; i++)
        (reverse ? p2pc_budget_add_reverse : p2pc_budget_add)(pinfo, "libp2p", parts[i].layer, parts[i].kind, n[i]);
}

void
l2p_quic_bytes_report_kept(packet_info *pinfo, const l2p_quic_bytes_t *b)
{
    for (guint i = 0; i < b->n; i++)
        p2pc_budget_add(pinfo, "libp2p", parts[b->item[i].part].layer, parts[b->item[i].part].kind, b->item[i].bytes);
}

void
l2p_quic_bytes_report_retransmitted(packet_info *pinfo, gint64 retransmitted)
{
    p2pc_budget_add(pinfo, "libp2p", P2PC_LAYER_RETRANSMISSION, "quic_stream_data", retransmitted);
}

void
l2p_quic_bytes_handoff(GArray *wanted)
{
    static const struct {
        int *hf;
        const char *name;
    } fields[] = {
        { &hf_udp_payload, "udp.payload" },
        { &hf_packet_length, "quic.packet_length" },
        { &hf_header_form, "quic.header_form" },
        { &hf_payload, "quic.payload" },
        { &hf_protected_payload, "quic.protected_payload" },
        { &hf_frame_type, "quic.frame_type" },
        { &hf_stream_data, "quic.stream_data" },
    };
    for (guint i = 0; i < G_N_ELEMENTS(fields); i++) {
        *fields[i].hf = proto_registrar_get_id_byname(fields[i].name);
        g_array_append_val(wanted, *fields[i].hf);
    }
}
