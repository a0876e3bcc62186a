/* transport.c
 * The transport's bytes of each frame of a claimed TCP connection, in the byte budget
 * (transport.h).  A part of the TCP layer's one postdissector (post.h): it sees every TCP
 * frame, TCP's analysis and the protocols' entries done.  Until a protocol claims the
 * connection (p2pc_ledger_claimant()), its frames are summed in the connection's slot
 * (conn.h), and told in the frame that claimed it; from there each frame tells its own.  The
 * frame's headers are read by segment.c, the retransmission verdict is TCP's own.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/transport.h"
#include "core/budget.h"
#include "core/conn.h"
#include "core/frame-data.h"
#include "core/ledger.h"
#include "core/post.h"
#include "core/segment.h"

#include <epan/proto_data.h>
#include <epan/dissectors/packet-tcp.h>

#define TCP_FIXED_LEN   20

/* A frame's bytes, by layer and kind. */
typedef enum { LINK_IP, TCP_FIXED, TCP_OPTIONS, RETRANSMITTED, SYN, FIN, RST, ACK, PARTS } part_t;

static const struct {
    const char *layer;
    const char *kind;
} parts[PARTS] = {
    [LINK_IP] = { P2PC_LAYER_LINK_IP, "headers" },
    [TCP_FIXED] = { P2PC_LAYER_TCP_HEADER, "fixed" },
    [TCP_OPTIONS] = { P2PC_LAYER_TCP_HEADER, "options" },
    [RETRANSMITTED] = { P2PC_LAYER_RETRANSMISSION, "payload" },
    [SYN] = { P2PC_LAYER_ACK, "syn" },
    [FIN] = { P2PC_LAYER_ACK, "fin" },
    [RST] = { P2PC_LAYER_ACK, "rst" },
    [ACK] = { P2PC_LAYER_ACK, "ack" },
};

static int proto_p2pc = -1;
static int proto_transport = -1;

/* A TCP connection's frames before a protocol claimed it (its slot, conn.h); the claimant is
 * the ledger's (p2pc_ledger_claimant()). */
typedef struct {
    guint32 claimed_at;         /* the frame whose protocol entry claimed it; 0: not (yet) */
    guint claimed_in;           /* that frame's session: a session reset numbers frames anew */
    address addr0;              /* direction 0: the sender of the first frame seen */
    guint32 port0;
    guint64 before[2][PARTS];   /* per direction, the frames' bytes before claimed_at */
} before_t;

/* TCP's sequence analysis calls this frame's segment a retransmission of some kind (its
 * per-frame verdict, `ta`, as its own tree items read it). */
static gboolean
tcp_says_retransmission(packet_info *pinfo)
{
    const struct tcp_analysis *tcpd = get_tcp_conversation_data(NULL, pinfo);
    return tcpd && tcpd->ta && (tcpd->ta->flags & P2PC_TCP_A_RETRANSMITTED);
}

/* The retransmitted bytes of this frame's segment of `len` bytes (first pass; kept by the frame
 * for the others): none unless TCP calls it a retransmission and hands it to no protocol, and
 * not those the capture did not hold before (a retransmission that fills a hole is the only
 * copy the capture has: the claimant accounts it, ledger.h). */
static guint32
retransmitted(packet_info *pinfo, gboolean handed, guint32 len)
{
    guint32 *kept;

    if (PINFO_FD_VISITED(pinfo)) {
        kept = (guint32 *)p_get_proto_data(wmem_file_scope(), pinfo, proto_p2pc, P2PC_KEY_RETRANSMITTED);
        return kept ? *kept : 0;
    }
    if (handed || !tcp_says_retransmission(pinfo))
        return 0;
    kept = (guint32 *)p2pc_frame_data(wmem_file_scope(), pinfo, proto_p2pc, P2PC_KEY_RETRANSMITTED,
                                      sizeof(guint32), NULL);
    *kept = len - MIN(len, p2pc_ledger_frame_fresh(pinfo));
    return *kept;
}

/* This frame's bytes by part, from its own headers; FALSE when they are not in it whole. */
static gboolean
frame_parts(packet_info *pinfo, gboolean handed, guint64 *n)
{
    p2pc_segment_t seg;
    guint32 len = pinfo->fd->pkt_len;

    if (!p2pc_frame_segment(pinfo, &seg))
        return FALSE;
    memset(n, 0, PARTS * sizeof *n);
    if (!seg.len) {
        n[(seg.flags & TH_SYN) ? SYN : (seg.flags & TH_FIN) ? FIN : (seg.flags & TH_RST) ? RST : ACK] = len;
        return TRUE;
    }
    n[LINK_IP] = len - seg.hdr_len - seg.len;
    n[TCP_FIXED] = TCP_FIXED_LEN;
    n[TCP_OPTIONS] = seg.hdr_len - TCP_FIXED_LEN;
    n[RETRANSMITTED] = retransmitted(pinfo, handed, seg.len);
    return TRUE;
}

/* This frame's connection's frames before the claim: made at its first frame (first pass), NULL
 * in a later pass when no protocol claimed it by this frame. */
static before_t *
before_claim(packet_info *pinfo)
{
    p2pc_conn_t *pc;
    before_t *b;
    gboolean made;

    if (PINFO_FD_VISITED(pinfo)) {
        pc = p2pc_conn_find(pinfo);
        b = pc ? (before_t *)p2pc_conn_slot(pc, P2PC_SLOT_TRANSPORT) : NULL;
        return b && b->claimed_at && pinfo->num >= b->claimed_at ? b : NULL;
    }
    b = (before_t *)p2pc_conn_state(pinfo, P2PC_SLOT_TRANSPORT, sizeof *b, &made);
    if (made) {
        pc = p2pc_conn_find(pinfo);
        copy_address_wmem(p2pc_conn_pool(pc), &b->addr0, &pinfo->src);
        b->port0 = pinfo->srcport;
    }
    if (!b->claimed_at && p2pc_ledger_claimant(pinfo)) {
        b->claimed_at = pinfo->num;
        b->claimed_in = p2pc_conn_session();
    }
    return b;
}

static int
dissect_transport(tvbuff_t *tvb _U_, packet_info *pinfo, proto_tree *tree _U_, void *data)
{
    before_t *b = pinfo->ptype == PT_TCP ? before_claim(pinfo) : NULL;
    const char *proto;
    gboolean claiming;
    guint64 n[PARTS];
    int d;

    if (!b || !frame_parts(pinfo, ((const p2pc_post_frame_t *)data)->handed, n))
        return 0;
    d = p2pc_conn_dir(&b->addr0, b->port0, pinfo);
    if (!b->claimed_at) {
        for (int i = 0; i < PARTS; i++)
            b->before[d][i] += n[i];
        return 0;
    }
    proto = p2pc_ledger_claimant(pinfo);
    claiming = pinfo->num == b->claimed_at && p2pc_conn_session() == b->claimed_in;
    for (int i = 0; i < PARTS; i++) {
        if (claiming) {
            n[i] += b->before[d][i];
            p2pc_budget_add_reverse(pinfo, proto, parts[i].layer, parts[i].kind, (gint64)b->before[1 - d][i]);
        }
        p2pc_budget_add(pinfo, proto, parts[i].layer, parts[i].kind, (gint64)n[i]);
    }
    return 0;
}

void
p2pc_transport_register(int proto)
{
    proto_p2pc = proto;
    proto_transport = proto_register_protocol_in_name_only("P2PC transport bytes", "P2PC transport",
                                                           "p2pc.transport", proto, FT_PROTOCOL);
}

void
p2pc_transport_handoff(void)
{
    p2pc_post_add(create_dissector_handle(dissect_transport, proto_transport));
}
