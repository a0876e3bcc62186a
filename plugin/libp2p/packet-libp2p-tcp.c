/* packet-libp2p-tcp.c
 * Where a libp2p TCP connection enters p2pc: a heuristic on the first bytes (the
 * multistream-select header "/multistream/1.0.0"), or Decode As "libp2p" on a TCP port.  Each
 * direction is a pipe (engine.h) that starts in multistream-select; this file feeds it every
 * byte of the direction once and in order.  TCP retransmissions repeat bytes and are skipped;
 * a hole (a segment missing from the capture) cannot be bridged by any length-prefixed framing,
 * so that direction stops, with the expert item libp2p.gap, and the other goes on.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/p2pc-compat.h"
#include "libp2p/engine.h"

#include <epan/conversation.h>
#include <epan/expert.h>
#include <epan/proto_data.h>
#include <epan/dissectors/packet-tcp.h>

void proto_register_libp2p_tcp(void);
void proto_reg_handoff_libp2p_tcp(void);

static int proto_libp2p = -1;
static expert_field ei_libp2p_gap = EI_INIT;
static dissector_handle_t libp2p_tcp_handle;

/* A TCP connection: the two directions' first pipes, and the TCP bookkeeping that feeds each
 * byte once. */
typedef struct {
    address dialer_addr;
    guint32 dialer_port;
    l2p_pipe_t *root[2];
    guint32 next_seq[2];
    gboolean seq_known[2];
    gboolean stopped[2];
} conn_t;

/* What the first pass fed from a frame, replayed on later passes. */
typedef struct {
    guint skip;
    guint len;
    guint gap;      /* bytes missing before this frame (decoding of the direction stopped) */
} frame_t;

static conn_t *
get_conn(packet_info *pinfo)
{
    conversation_t *conv = find_or_create_conversation(pinfo);
    conn_t *c = (conn_t *)conversation_get_proto_data(conv, proto_libp2p);
    if (!c) {
        c = wmem_new0(wmem_file_scope(), conn_t);
        /* The side that sends the first multistream header is the dialer. */
        copy_address_wmem(wmem_file_scope(), &c->dialer_addr, &pinfo->src);
        c->dialer_port = pinfo->srcport;
        c->root[0] = l2p_pipe_new(l2p_multistream_handle(), 0);
        c->root[1] = l2p_pipe_new(l2p_multistream_handle(), 1);
        c->root[0]->peer = c->root[1];
        c->root[1]->peer = c->root[0];
        conversation_add_proto_data(conv, proto_libp2p, c);
    }
    return c;
}

static int
dissect_libp2p_tcp(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    struct tcpinfo *tcpi = (struct tcpinfo *)data;
    conn_t *c = get_conn(pinfo);
    int d = (addresses_equal(&c->dialer_addr, &pinfo->src) && c->dialer_port == pinfo->srcport) ? 0 : 1;
    guint len = tvb_captured_length(tvb);
    guint32 key = 100 + tvb_raw_offset(tvb);
    frame_t *fr = (frame_t *)p_get_proto_data(wmem_file_scope(), pinfo, proto_libp2p, key);

    col_set_str(pinfo->cinfo, COL_PROTOCOL, "libp2p");
    col_clear(pinfo->cinfo, COL_INFO);
    if (!fr && !PINFO_FD_VISITED(pinfo)) {
        /* Feed each byte of the direction once, in order.  A hole (a segment missing from the
         * capture) cannot be bridged by any length-prefixed framing: the direction stops. */
        fr = wmem_new0(wmem_file_scope(), frame_t);
        p_add_proto_data(wmem_file_scope(), pinfo, proto_libp2p, key, fr);
        fr->len = len;
        if (c->stopped[d]) {
            fr->len = 0;
        } else if (tcpi && c->seq_known[d] && (gint32)(tcpi->seq - c->next_seq[d]) > 0) {
            fr->gap = tcpi->seq - c->next_seq[d];
            fr->len = 0;
            c->stopped[d] = TRUE;
        } else if (tcpi && c->seq_known[d] && (gint32)(tcpi->nxtseq - c->next_seq[d]) <= 0) {
            fr->len = 0;    /* a retransmission of bytes already fed */
        } else if (tcpi && c->seq_known[d] && (gint32)(tcpi->seq - c->next_seq[d]) < 0) {
            fr->skip = c->next_seq[d] - tcpi->seq;
            fr->len = len > fr->skip ? len - fr->skip : 0;
        }
        if (tcpi && !c->stopped[d] && (!c->seq_known[d] || (gint32)(tcpi->nxtseq - c->next_seq[d]) > 0)) {
            c->next_seq[d] = tcpi->nxtseq;
            c->seq_known[d] = TRUE;
        }
    }
    if (fr && fr->gap)
        proto_tree_add_expert_format(tree, pinfo, &ei_libp2p_gap, tvb, 0, 0,
            "%u bytes of this direction are missing from the capture: decoding of this direction stops here", fr->gap);
    if (fr && fr->len)
        l2p_pipe_call(c->root[d], tvb_new_subset_length(tvb, fr->skip, fr->len), pinfo, tree, FALSE);
    /* Most segments of a large message complete nothing: say so rather than leave Info empty. */
    {
        const gchar *info = col_get_text(pinfo->cinfo, COL_INFO);
        if (info && !*info)
            col_set_str(pinfo->cinfo, COL_INFO, "[part of a libp2p message]");
    }
    return len;
}

static p2pc_bool_t
dissect_libp2p_heur(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    /* uvarint(19) "/multistream/1.0.0\n" */
    if (tvb_captured_length(tvb) < 20 || tvb_get_uint8(tvb, 0) != 19 ||
        tvb_memeql(tvb, 1, (const guint8 *)L2P_MULTISTREAM_HEADER "\n", 19) != 0)
        return FALSE;
    conversation_set_dissector(find_or_create_conversation(pinfo), libp2p_tcp_handle);
    dissect_libp2p_tcp(tvb, pinfo, tree, data);
    return TRUE;
}

void
proto_register_libp2p_tcp(void)
{
    static ei_register_info ei[] = {
        { &ei_libp2p_gap, { "libp2p.gap", PI_SEQUENCE, PI_WARN,
            "Bytes missing from the capture: decoding of this direction stops", EXPFILL } },
    };
    expert_module_t *expert;

    proto_libp2p = proto_register_protocol("libp2p connection", "libp2p", "libp2p");
    expert = expert_register_protocol(proto_libp2p);
    expert_register_field_array(expert, ei, array_length(ei));
    libp2p_tcp_handle = register_dissector("libp2p.tcp", dissect_libp2p_tcp, proto_libp2p);
}

void
proto_reg_handoff_libp2p_tcp(void)
{
    heur_dissector_add("tcp", dissect_libp2p_heur, "libp2p over TCP (multistream-select)", "libp2p_tcp",
                       proto_libp2p, HEURISTIC_ENABLE);
    dissector_add_for_decode_as("tcp.port", libp2p_tcp_handle);
}
