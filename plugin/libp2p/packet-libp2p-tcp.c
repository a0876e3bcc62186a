/* packet-libp2p-tcp.c
 * Where a libp2p TCP connection enters p2pc: a heuristic on the first bytes (the
 * multistream-select header "/multistream/1.0.0"), or Decode As "libp2p" on a TCP port.  Each
 * direction is a pipe (engine.h) that starts in multistream-select; this file feeds it every
 * byte of the direction once and in order, by TCP sequence number, on the connection's TCP
 * ledger (core/ledger.h), whose cursor (`handed`) is the next byte to feed, libp2p being the
 * connection's claimant (P2PC_CLAIM_FED):
 *   - a retransmission repeats bytes already fed: skipped (the connection is watched by
 *     core/retrans.c, which flags one whose bytes differ from those first sent);
 *   - a segment TCP hands to no subdissector gets here all the same: TCP keeps back the earlier
 *     of two swapped segments (4.0, as a retransmission) and, with tcp.reassemble_out_of_order,
 *     every segment after a hole the capture never fills (queued for the missing bytes to the
 *     end of the capture).  Its part of the core TCP layer's postdissector (core/post.h) finds
 *     the bytes in the frame (p2pc_ledger_frame_bytes) and feeds them when the direction has not
 *     had them;
 *   - a segment ahead of the bytes expected (reordered in the network, or after a hole) is held
 *     in the ledger, copied, until the bytes before it arrive; then it is fed, in the frame that
 *     completed the sequence (its bytes show there as a tab of their own);
 *   - once the ledger confirms a hole before the bytes expected (the receiver acknowledged
 *     past it, even in a frame with no bytes of its own, or P2PC_HOLD_MAX bytes are captured
 *     past it), the frame that confirmed it gets p2pc.hole, the direction goes on after it with
 *     the segments held there, and its pipe is told (l2p_pipe_gap): the layer that frames the
 *     bytes resynchronises where its format allows (a yamux header) or shows the rest of the
 *     direction as undecoded bytes, counted; the other direction is not touched.
 * Every decision is made on the first pass and kept per frame, so later passes feed the same.
 *
 * Why an in-order feed of its own, where Bitcoin and FISCO use tcp_dissect_pdus(): libp2p's
 * layers are stacked (multistream-select, then Noise or TLS, then yamux or mplex, then each
 * stream's protocol), each cuts its own PDUs in its pipe (engine.h), and the framing changes
 * in the middle of a segment as each negotiation ends; only one layer could ask TCP for more
 * bytes (desegment_len), and TCP's reassembly keeps every byte after a hole in the capture back
 * for good, where a muxer can resynchronise (a yamux header) and the direction go on.  What is
 * TCP's here is read through the core TCP layer only (core/ledger.h): the
 * handshake, the sequence numbers in the headers, the holes and the acknowledgements.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/p2pc-compat.h"
#include "core/ledger.h"
#include "core/post.h"
#include "core/prefs.h"
#include "core/unit.h"
#include "libp2p/engine.h"

#include <epan/conversation.h>
#include <epan/exceptions.h>
#include <epan/expert.h>
#include <epan/prefs.h>
#include <epan/proto_data.h>
#include <epan/dissectors/packet-tcp.h>

void proto_register_libp2p_tcp(void);
void proto_reg_handoff_libp2p_tcp(void);

/* Per-frame data key: a segment TCP withheld, fed by the postdissector (file scope). */
#define KEY_WITHHELD 1

static int proto_libp2p = -1;
static int proto_libp2p_noise_tcp = -1;
static expert_field ei_libp2p_held = EI_INIT;
static dissector_handle_t libp2p_tcp_handle;
static dissector_handle_t libp2p_tcp_noise_handle;
/* A libp2p connection is in this capture: until one is, the postdissector returns at once. */
static gboolean have_conns;

/* Where a direction's feeding is (first pass only).  The next byte to feed, in the ledger's
 * numbers, is the ledger's cursor (p2pc_tcp_dir_t.handed). */
typedef struct {
    guint64 pos;                /* the direction's TCP payload bytes seen so far, each once where it was
                                   captured, repeats included, as the records' T lines count them (p2pc_unit_t) */
} dir_t;

/* A TCP connection: the two directions' first pipes and bookkeeping, [0] the direction of the
 * first side to send bytes (whether it dialed is its pipe's dir).  In its p2pc_conn_t (core/conn.h),
 * which carries it over session resets when p2pc live asks. */
typedef struct {
    address first_addr;
    guint32 first_port;
    l2p_pipe_t *root[2];
    dir_t dir[2];
    p2pc_tcp_t *tcp;            /* its ledger (first pass), once bytes with sequence numbers came */
} conn_t;

/* What the first pass fed in a frame, replayed on later passes: this frame's own bytes
 * [skip, skip + len), then the held segments the frame completed the sequence for (of this
 * direction, and of the other when this frame showed a hole in it). */
typedef struct {
    guint skip;
    guint len;
    p2pc_held_t *fed_held;      /* a list of copies (their `next` is this list's) */
    p2pc_held_t *fed_other;     /* the same for the other direction */
    guint32 held;               /* this frame's segment was held: the bytes missing before it */
    guint32 gap;                /* bytes missing from the capture in a direction, found here */
    guint32 gap_before;         /* ... before this frame */
    gboolean gap_other;         /* ... the other direction's (its receiver acknowledged past the hole) */
    /* Where what it fed ends in its direction's TCP payload bytes (p2pc_unit_t): its own bytes
     * and the held segments after them (counted where they were captured, so they end where the
     * frame's own do), the other direction's. */
    guint64 end;
    guint64 other_end;
} frame_t;

/* A segment TCP handed to no subdissector, fed by the postdissector (file scope, per frame). */
typedef struct {
    guint32 at;                 /* its payload in the frame */
    guint32 len;
    guint32 seq;                /* its sequence number as TCP gives them */
} withheld_t;

/* root: where each direction starts (multistream-select; Noise for a connection captured
 * after its start, with Decode As "libp2p.tcp.noise"). */
static conn_t *
get_conn(packet_info *pinfo, dissector_handle_t root)
{
    p2pc_conn_t *pc = p2pc_conn_get(pinfo);
    conn_t *c = (conn_t *)p2pc_conn_slot(pc, P2PC_SLOT_LIBP2P);
    if (!c) {
        int dialed = p2pc_tcp_sender_dialed(pinfo);
        c = wmem_new0(p2pc_conn_pool(pc), conn_t);
        copy_address_wmem(p2pc_conn_pool(pc), &c->first_addr, &pinfo->src);
        c->first_port = pinfo->srcport;
        c->root[0] = l2p_pipe_new(pc, root, 0);
        c->root[1] = l2p_pipe_new(pc, root, 1);
        /* A session reset dropped its state (core/conn.h): the rest is undecoded, and why. */
        for (int d = 0; d < 2 && p2pc_conn_dropped(pc); d++) {
            c->root[d]->undecodable = TRUE;
            c->root[d]->undecoded_reason = p2pc_conn_dropped(pc);
        }
        c->root[0]->peer = c->root[1];
        c->root[1]->peer = c->root[0];
        /* Until a fact says otherwise (engine.h, l2p_role_t), the first side to send stands in
         * for the dialer. */
        if (dialed >= 0)
            l2p_learn_role(c->root[0], pinfo, dialed, L2P_ROLE_SYN);
        p2pc_conn_set_slot(pc, P2PC_SLOT_LIBP2P, c);
        p2pc_conn_carry(pc);
    }
    have_conns = TRUE;
    return c;
}

/* The ledger's direction of this frame's sender, or (other) of its receiver. */
static p2pc_tcp_dir_t *
ledger_dir(const conn_t *c, gboolean other, const packet_info *pinfo)
{
    return &c->tcp->dir[p2pc_ledger_dir(c->tcp, pinfo) ^ other];
}

/* Direction d goes on after the confirmed holes at the bytes it expects, with the segments held
 * after each, onto the list at *tail (the frame's fed_held or fed_other). */
static void
skip_holes(conn_t *c, int d, gboolean other, frame_t *fr, p2pc_held_t **tail, packet_info *pinfo)
{
    p2pc_tcp_dir_t *td = ledger_dir(c, other, pinfo);
    guint32 resume;

    while (td->handing && (resume = p2pc_ledger_skip(td, td->handed)) != td->handed) {
        if (!fr->gap)
            fr->gap_before = td->held && td->held->seq == resume ? td->held->frame : pinfo->num;
        fr->gap += resume - td->handed;
        fr->gap_other = other;
        td->handed = resume;
        tail = p2pc_ledger_drain(c->tcp, td, &td->handed, tail);
    }
    if (other)
        fr->other_end = c->dir[d ^ other].pos;
}

/* First pass: decide what this frame feeds to direction d (the frame's sender's) and, when its
 * acknowledgement confirms a hole there, to the other. */
static void
plan_frame(conn_t *c, int d, frame_t *fr, const struct tcpinfo *tcpi, tvbuff_t *tvb, packet_info *pinfo)
{
    dir_t *fd = &c->dir[d];
    guint len = tvb_captured_length(tvb);
    const guint8 *p = len ? tvb_get_ptr(tvb, 0, len) : NULL;
    p2pc_tcp_dir_t *td, *to;
    guint32 seq;

    if (!tcpi) {                        /* no sequence numbers: take the bytes as they come */
        fr->len = len;
        return;
    }
    if (!c->tcp) {
        /* A connection another kind of protocol claimed is not fed from its ledger (ledger.h). */
        p2pc_tcp_t *l = len ? p2pc_ledger_enter(tvb, pinfo, tcpi->seq, P2PC_CLAIM_FED, "libp2p") : p2pc_ledger_find(pinfo);
        c->tcp = l && l->claim == P2PC_CLAIM_FED ? l : NULL;
    } else if (len) {
        p2pc_ledger_enter(tvb, pinfo, tcpi->seq, P2PC_CLAIM_FED, "libp2p");
    }
    if (!c->tcp) {
        fr->len = len;
        return;
    }
    td = ledger_dir(c, FALSE, pinfo);
    to = ledger_dir(c, TRUE, pinfo);
    /* This side acknowledged bytes of the other direction that were never fed: its receiver has
     * what the capture is missing.  The other direction goes on after each hole. */
    if (to->ack_known) {
        p2pc_ledger_confirm(to, to->acked, NULL);
        skip_holes(c, d, TRUE, fr, &fr->fed_other, pinfo);
    }
    if (!len)
        return;
    fd->pos += len;
    fr->end = fd->pos;
    seq = p2pc_ledger_seq(td, tcpi->seq);
    if (!td->handing) {
        td->handing = TRUE;
        td->handed = seq;
    }
    if (P2PC_SEQ_GT(seq, td->handed)) {
        /* Ahead of the bytes expected: hold it.  Enough captured past the hole confirms it: go
         * on after it with what is held (this segment among it). */
        p2pc_ledger_hold(c->tcp, td, seq, p, len, pinfo->num);
        if (!p2pc_ledger_held_past(td)) {
            fr->held = seq - td->handed;
        } else if (!fr->gap_other) {
            p2pc_ledger_confirm(td, td->cap_end, NULL);
            skip_holes(c, d, FALSE, fr, &fr->fed_held, pinfo);
        }
        return;
    }
    if (P2PC_SEQ_LT(seq, td->handed)) {
        /* Repeats bytes already fed: feed only what is new. */
        guint32 back = td->handed - seq;
        if (back >= len)
            return;
        fr->skip = back;
    }
    fr->len = len - fr->skip;
    td->handed += fr->len;
    p2pc_ledger_drain(c->tcp, td, &td->handed, &fr->fed_held);   /* the held segments this completes, in order */
}

/* Hand `tvb` to the direction's first pipe, its bytes ending at `end` of the direction's TCP
 * payload as the T lines count it (when TCP gave sequence numbers): the unit the layers above
 * narrow (p2pc_unit_t).  A frame's own new bytes are the tail of its payload, byte for byte
 * (identity); held segments were counted where they were captured, so all of theirs end here. */
static void
call_at(l2p_pipe_t *root, tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, gboolean seq, gboolean identity,
        guint64 end)
{
    p2pc_unit_t u = { seq, identity, end };
    l2p_pipe_call_unit(root, tvb, pinfo, tree, FALSE, u, NULL, NULL);
}

/* Feed a list of held segments (copies, back to back in sequence) to a direction's pipe in one
 * call, as one tab: after a hole they can be hundreds, and every dissector call adds a layer to
 * the frame, which Wireshark caps. */
static void
feed_held(l2p_pipe_t *root, const p2pc_held_t *first, tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree,
          gboolean seq, guint64 end)
{
    const p2pc_held_t *h, *last = first;
    guint32 total = 0, n = 0;
    guint8 *data;
    tvbuff_t *ht;

    if (!first)
        return;
    for (h = first; h; h = h->next) {
        total += h->len;
        n++;
        last = h;
    }
    if (n == 1) {
        data = first->data;
    } else {
        guint32 at = 0;
        data = (guint8 *)wmem_alloc(pinfo->pool, total);
        for (h = first; h; h = h->next) {
            memcpy(data + at, h->data, h->len);
            at += h->len;
        }
    }
    ht = tvb_new_child_real_data(tvb, data, total, total);
    add_new_data_source(pinfo, ht, n == 1 ?
        wmem_strdup_printf(pinfo->pool, "Out-of-order segment (frame %u)", first->frame) :
        wmem_strdup_printf(pinfo->pool, "Out-of-order segments (frames %u to %u)", first->frame, last->frame));
    call_at(root, ht, pinfo, tree, seq, FALSE, end);
}

/* What a list of held copies costs the frame that keeps it. */
static size_t
held_size(const p2pc_held_t *h)
{
    size_t n = 0;
    for (; h; h = h->next)
        n += sizeof(p2pc_held_t) + h->len;
    return n;
}

/* The other direction's held segments, fed in this frame because it showed the hole before
 * them: while they are dissected the endpoints are theirs, so their records name their own
 * sender. */
static void
feed_other_direction(l2p_pipe_t *root, const p2pc_held_t *h, tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree,
                     gboolean seq, guint64 end)
{
    p2pc_swap_endpoints(pinfo);
    TRY {
        feed_held(root, h, tvb, pinfo, tree, seq, end);
    }
    FINALLY {
        p2pc_swap_endpoints(pinfo);
    }
    ENDTRY;
}

static int
dissect_libp2p_tcp_from(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data, dissector_handle_t root)
{
    struct tcpinfo *tcpi = (struct tcpinfo *)data;
    conn_t *c = get_conn(pinfo, root);
    int d = p2pc_conn_dir(&c->first_addr, c->first_port, pinfo);
    guint len = tvb_captured_length(tvb);
    guint32 key = 100 + tvb_raw_offset(tvb);
    frame_t *fr = (frame_t *)p_get_proto_data(wmem_file_scope(), pinfo, proto_libp2p, key);
    gboolean forget = FALSE;    /* nothing is kept for replay: the held copies go once fed */

    col_set_str(pinfo->cinfo, COL_PROTOCOL, "libp2p");
    col_clear(pinfo->cinfo, COL_INFO);
    p2pc_post_handed(pinfo);
    if (!fr && !PINFO_FD_VISITED(pinfo)) {
        fr = wmem_new0(p2pc_replay_scope(pinfo), frame_t);
        forget = !p2pc_keep_replay(pinfo);
        if (!forget)
            p_add_proto_data(wmem_file_scope(), pinfo, proto_libp2p, key, fr);
        plan_frame(c, d, fr, tcpi, tvb, pinfo);
        if (!forget)
            p2pc_replay_charge(pinfo, sizeof(frame_t) + held_size(fr->fed_held) + held_size(fr->fed_other));
    }
    if (!fr) {
        p2pc_replay_missing(tvb, pinfo, tree);
        return len;
    }
    if (fr->held)
        proto_tree_add_expert_format(tree, pinfo, &ei_libp2p_held, tvb, 0, 0,
            "%u bytes before this segment have not arrived: it is held until they do", fr->held);
    if (fr->gap) {
        int hd = fr->gap_other ? 1 - d : d;
        p2pc_ledger_show_hole(tvb, pinfo, tree, "%u bytes of %s direction are missing from the capture (before frame %u): that "
            "direction goes on after them where its framing allows", fr->gap,
            fr->gap_other ? "the other" : "this", fr->gap_before);
        if (!PINFO_FD_VISITED(pinfo))
            l2p_pipe_gap(c->root[hd], fr->gap);
    }
    if (fr->fed_other)
        feed_other_direction(c->root[1 - d], fr->fed_other, tvb, pinfo, tree, tcpi != NULL, fr->other_end);
    if (fr->len)
        call_at(c->root[d], tvb_new_subset_length(tvb, fr->skip, fr->len), pinfo, tree, tcpi != NULL, TRUE, fr->end);
    feed_held(c->root[d], fr->fed_held, tvb, pinfo, tree, tcpi != NULL, fr->end);
    l2p_draw_roles(tvb, pinfo, tree);
    if (forget && c->tcp) {
        p2pc_ledger_free(c->tcp, fr->fed_other);
        p2pc_ledger_free(c->tcp, fr->fed_held);
    }
    /* Most segments of a large message complete nothing: say so rather than leave Info empty. */
    {
        const gchar *info = col_get_text(pinfo->cinfo, COL_INFO);
        if (info && !*info)
            col_set_str(pinfo->cinfo, COL_INFO, "[part of a libp2p message]");
    }
    return len;
}

static int
dissect_libp2p_tcp(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    return dissect_libp2p_tcp_from(tvb, pinfo, tree, data, l2p_multistream_handle());
}

/* A connection whose capture starts after multistream-select agreed on /noise. */
static int
dissect_libp2p_tcp_noise(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    return dissect_libp2p_tcp_from(tvb, pinfo, tree, data, find_dissector("libp2p_noise"));
}

/* First pass, a frame TCP handed to no subdissector, of a libp2p connection: its segment when
 * it carries bytes its direction has not had, or none (len 0) when its acknowledgement confirms
 * a hole where the other direction is.  Its sequence number is TCP's of this session, as TCP
 * would have handed it over. */
static withheld_t *
find_withheld(packet_info *pinfo)
{
    p2pc_conn_t *pc = p2pc_conn_find(pinfo);
    conn_t *c = pc ? (conn_t *)p2pc_conn_slot(pc, P2PC_SLOT_LIBP2P) : NULL;
    guint32 at, n, seq;
    p2pc_tcp_dir_t *td, *to;
    withheld_t *w;

    if (!c || !c->tcp || !p2pc_ledger_find(pinfo) || !p2pc_ledger_frame_bytes(c->tcp, pinfo, &at, &n, &seq))
        return NULL;
    td = ledger_dir(c, FALSE, pinfo);
    to = ledger_dir(c, TRUE, pinfo);
    if (n && td->started && td->handing && P2PC_SEQ_GT(seq + n, td->handed)) {
        w = wmem_new0(wmem_file_scope(), withheld_t);
        w->at = at;
        w->len = n;
        w->seq = seq - td->shift;   /* TCP's number in this session (p2pc_ledger_seq()) */
        return w;
    }
    /* bytes fed before (a retransmission): the T lines count them too */
    c->dir[p2pc_conn_dir(&c->first_addr, c->first_port, pinfo)].pos += n;
    if (to->ack_known && to->handing) {
        p2pc_ledger_confirm(to, to->acked, NULL);
        if (p2pc_ledger_skip(to, to->handed) != to->handed) {
            w = wmem_new0(wmem_file_scope(), withheld_t);
            w->at = at;
            return w;
        }
    }
    return NULL;
}

/* Its part of the core TCP layer's postdissector (core/post.h): a segment TCP kept from p2pc,
 * fed to its direction as TCP would have handed it over, or an acknowledgement that lets the
 * other direction go on after a hole.  No protocol tree needed. */
static int
dissect_libp2p_withheld(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    const p2pc_post_frame_t *pf = (const p2pc_post_frame_t *)data;
    withheld_t *w = NULL;
    struct tcpinfo tcpi = { 0 };

    if (!have_conns || pinfo->ptype != PT_TCP)
        return 0;
    if (PINFO_FD_VISITED(pinfo))
        w = (withheld_t *)p_get_proto_data(wmem_file_scope(), pinfo, proto_libp2p, KEY_WITHHELD);
    else if (!pf->handed && (w = find_withheld(pinfo)))
        p_add_proto_data(wmem_file_scope(), pinfo, proto_libp2p, KEY_WITHHELD, w);
    if (!w)
        return 0;
    tcpi.seq = w->seq;
    tcpi.nxtseq = w->seq + w->len;
    return dissect_libp2p_tcp_from(tvb_new_subset_length(tvb, w->at, w->len), pinfo, tree, &tcpi, NULL);
}

static void
reset_have_conns(void)
{
    have_conns = FALSE;
}

static p2pc_bool_t
dissect_libp2p_heur(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    static const guint8 header[] = "\x13" L2P_MULTISTREAM_HEADER "\n";   /* uvarint(19), text */
    const struct tcpinfo *tcpi = (const struct tcpinfo *)data;
    guint len = tvb_captured_length(tvb);

    /* A connection carried over a session reset (core/conn.h) goes on where it was; one whose
     * state the reset dropped is counted as undecoded. */
    p2pc_conn_t *pc = p2pc_conn_find(pinfo);
    if (pc && (p2pc_conn_slot(pc, P2PC_SLOT_LIBP2P) || p2pc_conn_had(pc, P2PC_SLOT_LIBP2P))) {
        conversation_set_dissector(find_or_create_conversation(pinfo), libp2p_tcp_handle);
        dissect_libp2p_tcp(tvb, pinfo, tree, data);
        return TRUE;
    }
    /* The whole header, or, as the direction's first bytes, a part of it: js-libp2p writes each
     * multistream message's length byte in a segment of its own. */
    if (len < sizeof header - 1 && !(len && tcpi && tcpi->seq == 1))
        return FALSE;
    if (tvb_memeql(tvb, 0, header, MIN(len, sizeof header - 1)) != 0)
        return FALSE;
    conversation_set_dissector(find_or_create_conversation(pinfo), libp2p_tcp_handle);
    dissect_libp2p_tcp(tvb, pinfo, tree, data);
    return TRUE;
}

void
proto_register_libp2p_tcp(void)
{
    static ei_register_info ei[] = {
        { &ei_libp2p_held, { "libp2p.held", PI_SEQUENCE, PI_NOTE,
            "Out of order: held until the bytes before it arrive", EXPFILL } },
    };
    expert_module_t *expert;
    module_t *module;

    proto_libp2p = proto_register_protocol("libp2p connection", "libp2p", "libp2p");
    expert = expert_register_protocol(proto_libp2p);
    expert_register_field_array(expert, ei, array_length(ei));
    module = prefs_register_protocol(proto_libp2p, NULL);
    /* Now p2pc.check_retransmissions, over every p2pc protocol (core/retrans.c). */
    prefs_register_obsolete_preference(module, "check_retransmissions");
    libp2p_tcp_handle = register_dissector("libp2p.tcp", dissect_libp2p_tcp, proto_libp2p);
    /* A protocol of its own: Decode As names its entries by protocol. */
    proto_libp2p_noise_tcp = proto_register_protocol("libp2p connection from its Noise layer (captured after "
                                                     "the security negotiation)", "libp2p (Noise)", "libp2p_noise_tcp");
    libp2p_tcp_noise_handle = register_dissector("libp2p_noise_tcp", dissect_libp2p_tcp_noise, proto_libp2p_noise_tcp);
    register_init_routine(reset_have_conns);
    p2pc_post_add(create_dissector_handle(dissect_libp2p_withheld, proto_libp2p));
}

void
proto_reg_handoff_libp2p_tcp(void)
{
    heur_dissector_add("tcp", dissect_libp2p_heur, "libp2p over TCP (multistream-select)", "libp2p_tcp",
                       proto_libp2p, HEURISTIC_ENABLE);
    dissector_add_for_decode_as("tcp.port", libp2p_tcp_handle);
    dissector_add_for_decode_as("tcp.port", libp2p_tcp_noise_handle);
}
