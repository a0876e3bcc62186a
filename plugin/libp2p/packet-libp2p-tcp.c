/* packet-libp2p-tcp.c
 * Where a libp2p TCP connection enters p2pc: a heuristic on the first bytes (the
 * multistream-select header "/multistream/1.0.0"), or Decode As "libp2p" on a TCP port.  Each
 * direction is a pipe (engine.h) that starts in multistream-select; this file feeds it every
 * byte of the direction once and in order, by TCP sequence number:
 *   - a retransmission repeats bytes already fed: skipped (the connection is watched by
 *     core/retrans.c, which flags one whose bytes differ from those first sent);
 *   - a segment TCP hands to no subdissector gets here all the same: TCP keeps back the earlier
 *     of two swapped segments (4.0, as a retransmission) and, with tcp.reassemble_out_of_order,
 *     every segment after a hole the capture never fills (queued for the missing bytes to the
 *     end of the capture).  A postdissector finds the bytes in the frame (p2pc_frame_segment)
 *     and feeds them when the direction has not had them;
 *   - a segment ahead of the bytes expected (reordered in the network, or after a hole) is held,
 *     copied, until the bytes before it arrive; then it is fed, in the frame that completed the
 *     sequence (its bytes show there as a tab of their own);
 *   - a hole is in the capture, not in the network, once the receiver acknowledges bytes past it
 *     (they reached it, the capture missed them) or once HOLD_MAX bytes are held behind it: it
 *     gets libp2p.gap (on the frame that showed it), the direction goes on after it with the
 *     segments held there, and its pipe is told (l2p_pipe_gap): the layer that frames the
 *     bytes resynchronises where its format allows (a yamux header) or shows the rest of the
 *     direction as undecoded bytes, counted; the other direction is not touched.
 * Every decision is made on the first pass and kept per frame, so later passes feed the same.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/p2pc-compat.h"
#include "core/prefs.h"
#include "core/retrans.h"
#include "core/segment.h"
#include "libp2p/engine.h"

#include <epan/conversation.h>
#include <epan/exceptions.h>
#include <epan/expert.h>
#include <epan/prefs.h>
#include <epan/proto_data.h>
#include <epan/dissectors/packet-tcp.h>

void proto_register_libp2p_tcp(void);
void proto_reg_handoff_libp2p_tcp(void);

#define HOLD_MAX    (1024 * 1024)   /* bytes held ahead of a missing segment, per direction */

/* Per-frame data keys: a segment TCP withheld, fed by the postdissector (file scope), and
 * whether the libp2p TCP dissector ran in this dissection of the frame (packet scope). */
#define KEY_WITHHELD 1
#define KEY_SEEN     2

static int proto_libp2p = -1;
static int proto_libp2p_noise_tcp = -1;
static expert_field ei_libp2p_gap = EI_INIT;
static expert_field ei_libp2p_held = EI_INIT;
static dissector_handle_t libp2p_tcp_handle;
static dissector_handle_t libp2p_tcp_noise_handle;
/* A libp2p connection is in this capture: until one is, the postdissector returns at once. */
static gboolean have_conns;

/* A segment received ahead of the bytes expected, its bytes after it in one allocation (file
 * scope: the frame that feeds it keeps it, or frees it when nothing is kept for replay). */
typedef struct held {
    guint32 seq;
    guint32 len;
    guint32 frame;
    guint8 *data;               /* within the bytes that follow */
    struct held *next;          /* by seq */
} held_t;

/* One direction's bookkeeping (first pass only). */
typedef struct {
    guint32 next_seq;           /* the next byte to feed */
    guint32 acked;              /* the highest acknowledgement this direction sent */
    gboolean ack_known;
    gboolean seq_known;
    held_t *held;
    guint32 held_bytes;
    guint32 seq_base;           /* a sequence number in the TCP header less TCP's (relative) one */
    gboolean seq_base_known;
} dir_t;

/* A TCP connection: the two directions' first pipes and bookkeeping, [0] the direction of the
 * first side to send bytes (whether it dialed is its pipe's dir). */
typedef struct {
    address first_addr;
    guint32 first_port;
    l2p_pipe_t *root[2];
    dir_t dir[2];
} conn_t;

/* What the first pass fed in a frame, replayed on later passes: this frame's own bytes
 * [skip, skip + len), then the held segments the frame completed the sequence for (of this
 * direction, and of the other when this frame showed a hole in it). */
typedef struct {
    guint skip;
    guint len;
    held_t *fed_held;           /* a list of copies (their `next` is this list's) */
    held_t *fed_other;          /* the same for the other direction */
    guint32 held;               /* this frame's segment was held: the bytes missing before it */
    guint32 gap;                /* bytes missing from the capture in a direction, found here */
    guint32 gap_before;         /* ... before this frame */
    gboolean gap_other;         /* ... the other direction's (its receiver acknowledged past the hole) */
} frame_t;

/* A segment TCP handed to no subdissector, fed by the postdissector (file scope, per frame). */
typedef struct {
    guint32 at;                 /* its payload in the frame */
    guint32 len;
    guint32 seq;                /* its sequence number as TCP gives them */
} withheld_t;

/* Whether this frame's sender dialed, from the TCP handshake: 1 yes, 0 no, -1 the handshake is
 * not in the capture.  TCP keeps the port its SYN (or SYN-ACK) named as the server's; when both
 * ports are alike (Prysm dials from the port it listens on), the conversation TCP made at the
 * SYN is keyed from the SYN's sender. */
static int
sender_dialed(packet_info *pinfo, conversation_t *conv)
{
    struct tcp_analysis *tcpd = get_tcp_conversation_data(conv, pinfo);
    if (!tcpd || !tcpd->server_port)
        return -1;
    if (pinfo->srcport != pinfo->destport)
        return pinfo->destport == tcpd->server_port;
    if (nstime_is_zero(&tcpd->ts_mru_syn) || !conv->key_ptr)
        return -1;          /* a SYN-ACK alone: it does not say which address sent it */
    return addresses_equal(conversation_key_addr1(conv->key_ptr), &pinfo->src);
}

/* root: where each direction starts (multistream-select; Noise for a connection captured
 * after its start, with Decode As "libp2p.tcp.noise"). */
static conn_t *
get_conn(packet_info *pinfo, dissector_handle_t root)
{
    conversation_t *conv = find_or_create_conversation(pinfo);
    conn_t *c = (conn_t *)conversation_get_proto_data(conv, proto_libp2p);
    if (!c) {
        int dialed = sender_dialed(pinfo, conv);
        c = wmem_new0(wmem_file_scope(), conn_t);
        copy_address_wmem(wmem_file_scope(), &c->first_addr, &pinfo->src);
        c->first_port = pinfo->srcport;
        c->root[0] = l2p_pipe_new(root, 0);
        c->root[1] = l2p_pipe_new(root, 1);
        c->root[0]->peer = c->root[1];
        c->root[1]->peer = c->root[0];
        /* Until a fact says otherwise (engine.h, l2p_role_t), the first side to send stands in
         * for the dialer. */
        if (dialed >= 0)
            l2p_learn_role(c->root[0], pinfo, dialed, L2P_ROLE_SYN);
        conversation_add_proto_data(conv, proto_libp2p, c);
        p2pc_retrans_watch(pinfo);
        have_conns = TRUE;
    }
    return c;
}

static void
hold(dir_t *d, guint32 seq, const guint8 *p, guint32 len, guint32 frame)
{
    held_t *h = (held_t *)wmem_alloc(wmem_file_scope(), sizeof(held_t) + len), **at = &d->held;
    h->seq = seq;
    h->len = len;
    h->frame = frame;
    h->data = (guint8 *)(h + 1);
    memcpy(h->data, p, len);
    while (*at && (gint32)((*at)->seq - seq) < 0)
        at = &(*at)->next;
    h->next = *at;
    *at = h;
    d->held_bytes += len;
}

/* Feed the held segments that now follow the bytes fed, in order, onto the list at *tail;
 * returns the new tail. */
static held_t **
drain_held(dir_t *d, held_t **tail)
{
    while (d->held && (gint32)(d->held->seq - d->next_seq) <= 0) {
        held_t *h = d->held;
        guint32 back = d->next_seq - h->seq;
        d->held = h->next;
        d->held_bytes -= h->len;
        if (back >= h->len) {   /* all of it was fed already */
            wmem_free(wmem_file_scope(), h);
            continue;
        }
        h->data += back;
        h->seq += back;
        h->len -= back;
        h->next = NULL;
        d->next_seq += h->len;
        *tail = h;
        tail = &h->next;
    }
    return tail;
}

/* The bytes before sequence number `resume` are missing from the capture: the direction goes
 * on from there (its pipe learns of the hole when the frame is dissected). */
static void
skip_hole(dir_t *d, frame_t *fr, guint32 resume, guint32 frame)
{
    if (!fr->gap)
        fr->gap_before = frame;
    fr->gap += resume - d->next_seq;
    d->next_seq = resume;
}

/* First pass: decide what this frame feeds to direction d (the other is o). */
static void
plan_frame(dir_t *d, dir_t *o, frame_t *fr, const struct tcpinfo *tcpi, tvbuff_t *tvb, packet_info *pinfo)
{
    guint len = tvb_captured_length(tvb);
    const guint8 *p = len ? tvb_get_ptr(tvb, 0, len) : NULL;

    if (tcpi && (tcpi->flags & TH_ACK)) {
        if (!d->ack_known || (gint32)(tcpi->lastackseq - d->acked) > 0)
            d->acked = tcpi->lastackseq;
        d->ack_known = TRUE;
        /* This side acknowledges bytes of the other direction that were never fed: its receiver
         * has what the capture is missing (whether p2pc or TCP's out-of-order reassembly holds
         * what came after the hole).  The other direction goes on after each hole. */
        if (o->seq_known) {
            held_t **tail = &fr->fed_other;
            while ((gint32)(d->acked - o->next_seq) > 0) {
                gboolean to_held = o->held && (gint32)(o->held->seq - d->acked) < 0;
                skip_hole(o, fr, to_held ? o->held->seq : d->acked, to_held ? o->held->frame : pinfo->num);
                fr->gap_other = TRUE;
                tail = drain_held(o, tail);
            }
        }
    }
    if (!len)
        return;
    if (!tcpi) {                        /* no sequence numbers: take the bytes as they come */
        fr->len = len;
        return;
    }
    if (!d->seq_known) {
        d->seq_known = TRUE;
        d->next_seq = tcpi->seq;
    }
    if (!d->seq_base_known)
        d->seq_base_known = p2pc_seq_base(tvb, pinfo, tcpi->seq, &d->seq_base);
    if ((gint32)(tcpi->seq - d->next_seq) > 0) {
        /* Ahead of the bytes expected: hold it.  Holding too much shows a hole: go on after it
         * with what is held (this segment among it). */
        hold(d, tcpi->seq, p, len, pinfo->num);
        if (d->held_bytes <= HOLD_MAX) {
            fr->held = tcpi->seq - d->next_seq;
        } else if (!fr->gap_other) {
            held_t **tail = &fr->fed_held;
            while (d->held) {
                skip_hole(d, fr, d->held->seq, d->held->frame);
                tail = drain_held(d, tail);
            }
        }
        return;
    }
    if ((gint32)(tcpi->seq - d->next_seq) < 0) {
        /* Repeats bytes already fed: feed only what is new. */
        guint32 back = d->next_seq - tcpi->seq;
        if (back >= len)
            return;
        fr->skip = back;
    }
    fr->len = len - fr->skip;
    d->next_seq += fr->len;
    drain_held(d, &fr->fed_held);      /* the held segments this completes, in order */
}

/* Feed a list of held segments (copies, back to back in sequence) to a direction's pipe in one
 * call, as one tab: after a hole they can be hundreds, and every dissector call adds a layer to
 * the frame, which Wireshark caps. */
static void
feed_held(l2p_pipe_t *root, const held_t *first, tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree)
{
    const held_t *h, *last = first;
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
    l2p_pipe_call(root, ht, pinfo, tree, FALSE);
}

static void
free_held(held_t *h)
{
    while (h) {
        held_t *next = h->next;
        wmem_free(wmem_file_scope(), h);
        h = next;
    }
}

/* What a list of held copies costs the frame that keeps it. */
static size_t
held_size(const held_t *h)
{
    size_t n = 0;
    for (; h; h = h->next)
        n += sizeof(held_t) + h->len;
    return n;
}

/* The other direction's held segments, fed in this frame because it showed the hole before
 * them: while they are dissected the endpoints are theirs, so their records name their own
 * sender. */
static void
feed_other_direction(l2p_pipe_t *root, const held_t *h, tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree)
{
    p2pc_swap_endpoints(pinfo);
    TRY {
        feed_held(root, h, tvb, pinfo, tree);
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
    int d = (addresses_equal(&c->first_addr, &pinfo->src) && c->first_port == pinfo->srcport) ? 0 : 1;
    guint len = tvb_captured_length(tvb);
    guint32 key = 100 + tvb_raw_offset(tvb);
    frame_t *fr = (frame_t *)p_get_proto_data(wmem_file_scope(), pinfo, proto_libp2p, key);
    gboolean forget = FALSE;    /* nothing is kept for replay: the held copies go once fed */

    col_set_str(pinfo->cinfo, COL_PROTOCOL, "libp2p");
    col_clear(pinfo->cinfo, COL_INFO);
    p_add_proto_data(pinfo->pool, pinfo, proto_libp2p, KEY_SEEN, GUINT_TO_POINTER(1));
    if (!fr && !PINFO_FD_VISITED(pinfo)) {
        fr = wmem_new0(p2pc_replay_scope(pinfo), frame_t);
        forget = !p2pc_keep_replay(pinfo);
        if (!forget)
            p_add_proto_data(wmem_file_scope(), pinfo, proto_libp2p, key, fr);
        plan_frame(&c->dir[d], &c->dir[1 - d], fr, tcpi, tvb, pinfo);
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
        proto_tree_add_expert_format(tree, pinfo, &ei_libp2p_gap, tvb, 0, 0,
            "%u bytes of %s direction are missing from the capture (before frame %u): that "
            "direction goes on after them where its framing allows", fr->gap,
            fr->gap_other ? "the other" : "this", fr->gap_before);
        if (!PINFO_FD_VISITED(pinfo))
            l2p_pipe_gap(c->root[hd], fr->gap);
    }
    if (fr->fed_other)
        feed_other_direction(c->root[1 - d], fr->fed_other, tvb, pinfo, tree);
    if (fr->len)
        l2p_pipe_call(c->root[d], tvb_new_subset_length(tvb, fr->skip, fr->len), pinfo, tree, FALSE);
    feed_held(c->root[d], fr->fed_held, tvb, pinfo, tree);
    l2p_draw_roles(tvb, pinfo, tree);
    if (forget) {
        free_held(fr->fed_other);
        free_held(fr->fed_held);
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

/* First pass: the segment of a libp2p connection in a frame TCP handed to no subdissector, when
 * it carries bytes its direction has not had. */
static withheld_t *
find_withheld(tvbuff_t *frame, packet_info *pinfo)
{
    conversation_t *conv;
    conn_t *c;
    p2pc_segment_t seg;
    withheld_t *w;
    dir_t *d;
    guint32 s;

    /* Most frames p2pc did not get carry no bytes (acknowledgements): the cheaper test first. */
    if (!p2pc_frame_segment(pinfo, &seg) || !seg.len)
        return NULL;
    conv = find_conversation_pinfo(pinfo, 0);
    c = conv ? (conn_t *)conversation_get_proto_data(conv, proto_libp2p) : NULL;
    if (!c)
        return NULL;
    d = &c->dir[(addresses_equal(&c->first_addr, &pinfo->src) && c->first_port == pinfo->srcport) ? 0 : 1];
    s = seg.seq - d->seq_base;
    if (!d->seq_base_known || (gint32)(s + seg.len - d->next_seq) <= 0)
        return NULL;
    w = wmem_new(wmem_file_scope(), withheld_t);
    w->at = seg.at;
    w->len = seg.len;
    w->seq = s;
    return w;
}

/* The postdissector: a segment TCP kept from p2pc, fed to its direction as TCP would have
 * handed it over (less the acknowledgement: later frames carry it).  No protocol tree needed. */
static int
dissect_libp2p_withheld(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data _U_)
{
    withheld_t *w = NULL;
    struct tcpinfo tcpi = { 0 };

    if (!have_conns || pinfo->ptype != PT_TCP)
        return 0;
    if (PINFO_FD_VISITED(pinfo))
        w = (withheld_t *)p_get_proto_data(wmem_file_scope(), pinfo, proto_libp2p, KEY_WITHHELD);
    else if (!p_get_proto_data(pinfo->pool, pinfo, proto_libp2p, KEY_SEEN) && (w = find_withheld(tvb, pinfo)))
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
        { &ei_libp2p_gap, { "libp2p.gap", PI_SEQUENCE, PI_WARN,
            "Bytes missing from the capture: decoding of this direction stops", EXPFILL } },
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
    register_postdissector(create_dissector_handle(dissect_libp2p_withheld, proto_libp2p));
}

void
proto_reg_handoff_libp2p_tcp(void)
{
    heur_dissector_add("tcp", dissect_libp2p_heur, "libp2p over TCP (multistream-select)", "libp2p_tcp",
                       proto_libp2p, HEURISTIC_ENABLE);
    dissector_add_for_decode_as("tcp.port", libp2p_tcp_handle);
    dissector_add_for_decode_as("tcp.port", libp2p_tcp_noise_handle);
}
