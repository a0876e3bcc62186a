/* holes.c
 * What becomes of the bytes after a segment the capture missed, for the protocols framed with
 * tcp_dissect_pdus() (Bitcoin, FISCO 2.x plain TCP and 3.x).  Wireshark's TCP (4.0,
 * packet-tcp.c desegment_tcp) keeps the message the hole cut waiting for the missing bytes,
 * with every later segment that falls inside it; it hands over the segment that runs past the
 * message's end from there on.  With tcp.reassemble_out_of_order (which p2pc analyze and
 * p2pc live set) it keeps every segment after the hole, queued for bytes that never come.
 * Either way the bytes vanish from the protocol, so this file keeps a ledger per direction, in
 * TCP's sequence numbers:
 *   - at the protocol's entry (p2pc_holes_enter/leave around tcp_dissect_pdus) the bytes TCP
 *     hands over, and of those the bytes its records cover (all but what it asks TCP to
 *     reassemble further);
 *   - in a postdissector, every segment of the connection from the frame's own IP and TCP
 *     headers (p2pc_frame_segment): the highest byte captured, and the holes before it.
 * A hole is in the capture, not in the network, once the receiver acknowledges bytes past it
 * (or TCP itself hands over bytes after it, or HOLD_MAX bytes were captured after it: a capture
 * of one direction has no acknowledgements).  There it gets p2pc.hole, and the bytes TCP will
 * never hand over are counted in an "undecoded" record of their direction: the message the
 * hole cut, and the segments after it TCP keeps (those already captured in that frame, each
 * later one in its own).  Bytes TCP skips before the ones it hands over are counted the same
 * way in the frame where it does.  What a direction still holds when the capture ends (the
 * message the capture cut short, segments behind a hole nothing confirmed) is its tail record
 * (record.h, p2pc_tail_register).  So the records of a direction add up to the TCP payload the
 * capture holds.  The first pass decides; each frame keeps what it added for later passes.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/holes.h"
#include "core/record.h"
#include "core/segment.h"

#include <epan/conversation.h>
#include <epan/expert.h>
#include <epan/prefs.h>
#include <epan/prefs-int.h>
#include <epan/proto_data.h>
#include <epan/dissectors/packet-tcp.h>

#define KEY_EVENTS  2               /* file-scope frame data: the frame's event_t list */
#define KEY_FRAME   3               /* packet-scope frame data: a frame_t */

#define HOLD_MAX    (1024 * 1024)   /* bytes captured past a hole that confirm it without an
                                       acknowledgement (as packet-libp2p-tcp.c's) */

#define SEQ_LT(a, b) ((gint32)((a) - (b)) < 0)
#define SEQ_GT(a, b) ((gint32)((a) - (b)) > 0)

static int proto_p2pc = -1;
static expert_field ei_hole = EI_INIT;
/* conversation_t * -> ledger_t, for the connections a protocol entered (first pass). */
static wmem_map_t *ledgers;

/* Bytes of a direction the capture does not hold, [start, end) in TCP's sequence numbers. */
typedef struct hole {
    guint32 start;
    guint32 end;
    gboolean confirmed;         /* the receiver has them, or TCP went on after them */
    struct hole *next;          /* by start */
} hole_t;

/* One direction (first pass only), in TCP's sequence numbers. */
typedef struct {
    gboolean started;           /* the protocol was handed bytes of it */
    guint32 base;               /* a sequence number in the TCP header less TCP's */
    guint32 done;               /* the bytes before it are in records */
    guint32 cap_end;            /* one past the highest byte captured */
    guint32 pdu_end;            /* where the message TCP reassembles ends (done: none) */
    gboolean dead;              /* a hole was confirmed: TCP never hands over [done, dead_end) */
    gboolean dead_all;          /* ... nor any byte after the hole (out-of-order reassembly) */
    guint32 dead_end;
    hole_t *holes;
    p2pc_record_t last;         /* where and when its last segment was captured */
} side_t;

/* A TCP connection: side 0 sends the first segment the protocol was handed. */
typedef struct {
    address addr0;
    guint32 port0;
    const char *proto;          /* the proto of its undecoded records */
    side_t side[2];
} ledger_t;

/* What a frame adds (file scope, per frame): an undecoded record and/or p2pc.hole, shown by
 * the postdissector (TCP may not call the protocol in that frame on a later pass). */
typedef struct event {
    const char *proto;
    gboolean other;             /* of the direction the frame's sender receives */
    guint32 undecoded;
    guint32 missing;            /* > 0: holes of so many bytes confirmed here */
    struct event *next;
} event_t;

/* This dissection of a frame (packet scope). */
typedef struct {
    ledger_t *ledger;           /* the protocol's entry ran in this frame */
    guint seen;                 /* bit d: the protocol was handed bytes of side d */
    gboolean noted;             /* the frame's segment is in the ledger */
} frame_t;

static frame_t *
frame_of(packet_info *pinfo)
{
    frame_t *f = (frame_t *)p_get_proto_data(pinfo->pool, pinfo, proto_p2pc, KEY_FRAME);
    if (!f) {
        f = wmem_new0(pinfo->pool, frame_t);
        p_add_proto_data(pinfo->pool, pinfo, proto_p2pc, KEY_FRAME, f);
    }
    return f;
}

static int
side_of(const ledger_t *l, const packet_info *pinfo)
{
    return (addresses_equal(&l->addr0, &pinfo->src) && l->port0 == pinfo->srcport) ? 0 : 1;
}

/* Whether TCP keeps every segment after a hole (packet-tcp.c: reassemble_ooo). */
static gboolean
tcp_keeps_all_after_holes(void)
{
    static const char *names[] = { "analyze_sequence_numbers", "desegment_tcp_streams", "reassemble_out_of_order" };
    module_t *tcp = prefs_find_module("tcp");
    for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
        pref_t *p = tcp ? prefs_find_preference(tcp, names[i]) : NULL;
        if (!p || !prefs_get_bool_value(p, pref_current))
            return FALSE;
    }
    return TRUE;
}

/* The bytes of [a, b) the capture holds: all but the holes. */
static guint32
captured_in(const side_t *s, guint32 a, guint32 b)
{
    guint32 n = b - a;
    for (const hole_t *h = s->holes; h; h = h->next) {
        guint32 lo = SEQ_GT(h->start, a) ? h->start : a;
        guint32 hi = SEQ_LT(h->end, b) ? h->end : b;
        if (SEQ_GT(hi, lo))
            n -= hi - lo;
    }
    return n;
}

/* A segment of side s, [a, b): a hole before it, or bytes that fill one (reordered). */
static void
note_segment(side_t *s, guint32 a, guint32 b)
{
    hole_t **at = &s->holes;

    if (SEQ_GT(a, s->cap_end)) {
        hole_t *h = wmem_new0(wmem_file_scope(), hole_t);
        h->start = s->cap_end;
        h->end = a;
        while (*at)
            at = &(*at)->next;
        *at = h;
        s->cap_end = b;
        return;
    }
    if (SEQ_GT(b, s->cap_end))
        s->cap_end = b;
    while (*at) {
        hole_t *h = *at;
        if (h->confirmed || !SEQ_LT(a, h->end) || !SEQ_GT(b, h->start)) {
            at = &h->next;
        } else if (!SEQ_GT(a, h->start) && !SEQ_LT(b, h->end)) {
            *at = h->next;
        } else if (!SEQ_GT(a, h->start)) {
            h->start = b;
        } else if (!SEQ_LT(b, h->end)) {
            h->end = a;
        } else {                        /* in the middle: two holes */
            hole_t *t = wmem_new0(wmem_file_scope(), hole_t);
            t->start = b;
            t->end = h->end;
            t->next = h->next;
            h->end = a;
            h->next = t;
            at = &t->next;
        }
    }
}

/* The frame's segment goes into the ledger, once per dissection of a frame. */
static void
note_frame(ledger_t *l, packet_info *pinfo, frame_t *f)
{
    side_t *s;
    p2pc_segment_t seg;

    if (f->noted)
        return;
    f->noted = TRUE;
    s = &l->side[side_of(l, pinfo)];
    if (p2pc_frame_segment(pinfo, &seg) && seg.len && s->started) {
        note_segment(s, seg.seq - s->base, seg.seq - s->base + seg.len);
        p2pc_where_keep(pinfo, &s->last);
    }
}

/* The holes of side s before `upto` are in the capture: the bytes they missed, 0 if none
 * was confirmed now.  TCP never hands over the message the first cut, nor, with out-of-order
 * reassembly, anything after it. */
static guint32
confirm_holes(side_t *s, guint32 upto)
{
    guint32 missing = 0;
    for (hole_t *h = s->holes; h && SEQ_LT(h->start, upto); h = h->next) {
        if (h->confirmed)
            continue;
        if (!missing) {
            s->dead = TRUE;
            s->dead_all = tcp_keeps_all_after_holes();
            s->dead_end = SEQ_GT(s->pdu_end, h->start) ? s->pdu_end : h->start;
        }
        h->confirmed = TRUE;
        missing += h->end - h->start;
    }
    return missing;
}

/* The bytes of side s captured up to `to` that are in no record: counted now, and the holes
 * wholly before them forgotten. */
static guint32
count_through(side_t *s, guint32 to)
{
    guint32 n;
    if (!SEQ_GT(to, s->done))
        return 0;
    n = captured_in(s, s->done, to);
    s->done = to;
    while (s->holes && s->holes->confirmed && !SEQ_GT(s->holes->end, s->done))
        s->holes = s->holes->next;
    return n;
}

/* A capture without the acknowledgements (of one direction only): HOLD_MAX bytes captured
 * past a hole confirm it too, and those before it.  The bytes missed, or 0. */
static guint32
confirm_holes_held_past(side_t *s)
{
    for (const hole_t *h = s->holes; h; h = h->next)
        if (!h->confirmed)
            return SEQ_GT(s->cap_end - HOLD_MAX, h->end) ? confirm_holes(s, s->cap_end) : 0;
    return 0;
}

/* What TCP holds back for good once a hole of side s is confirmed. */
static guint32
count_held_back(side_t *s)
{
    if (!s->dead)
        return 0;
    return count_through(s, s->dead_all || SEQ_LT(s->cap_end, s->dead_end) ? s->cap_end : s->dead_end);
}

static void
show_event(const event_t *ev, tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree)
{
    if (ev->missing)
        proto_tree_add_expert_format(tree, pinfo, &ei_hole, tvb, 0, 0,
            "%u bytes of %s direction are missing from the capture: the %u bytes captured that TCP "
            "keeps for them are counted as undecoded (and later ones it keeps, in their frames)",
            ev->missing, ev->other ? "the other" : "this", ev->undecoded);
    if (!ev->undecoded)
        return;
    /* The record names its own direction's endpoints. */
    if (ev->other)
        p2pc_swap_endpoints(pinfo);
    p2pc_record_undecoded(tvb, 0, 0, pinfo, tree, ev->proto, ev->undecoded);
    if (ev->other)
        p2pc_swap_endpoints(pinfo);
}

/* First pass: keep the event for the postdissector, on this pass and later ones. */
static void
add_event(packet_info *pinfo, const event_t *e)
{
    event_t *ev, **at;

    if (!e->undecoded && !e->missing)
        return;
    ev = wmem_new(wmem_file_scope(), event_t);
    *ev = *e;
    ev->next = NULL;
    at = (event_t **)p_get_proto_data(wmem_file_scope(), pinfo, proto_p2pc, KEY_EVENTS);
    if (!at) {
        p_add_proto_data(wmem_file_scope(), pinfo, proto_p2pc, KEY_EVENTS, ev);
    } else {
        event_t *last = (event_t *)at;
        while (last->next)
            last = last->next;
        last->next = ev;
    }
}

static void
show_events(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree)
{
    const event_t *ev = (const event_t *)p_get_proto_data(wmem_file_scope(), pinfo, proto_p2pc, KEY_EVENTS);
    for (; ev; ev = ev->next)
        show_event(ev, tvb, pinfo, tree);
}

/* The first bytes the protocol is handed in a direction: they tell the difference between the
 * sequence numbers in the TCP headers and TCP's own (relative by default). */
static gboolean
start_side(side_t *s, tvbuff_t *tvb, packet_info *pinfo, guint32 seq)
{
    if (!p2pc_seq_base(tvb, pinfo, seq, &s->base))
        return FALSE;
    s->started = TRUE;
    s->done = s->cap_end = s->pdu_end = seq;
    return TRUE;
}

void
p2pc_holes_enter(tvbuff_t *tvb, packet_info *pinfo, void *data, const char *proto)
{
    const struct tcpinfo *tcpi = (const struct tcpinfo *)data;
    conversation_t *conv;
    ledger_t *l;
    side_t *s;
    frame_t *f;
    int d;
    event_t ev = { 0 };

    if (!tcpi || pinfo->ptype != PT_TCP || PINFO_FD_VISITED(pinfo))
        return;
    conv = find_or_create_conversation(pinfo);
    l = (ledger_t *)wmem_map_lookup(ledgers, conv);
    if (!l) {
        l = wmem_new0(wmem_file_scope(), ledger_t);
        copy_address_wmem(wmem_file_scope(), &l->addr0, &pinfo->src);
        l->port0 = pinfo->srcport;
        wmem_map_insert(ledgers, conv, l);
    }
    l->proto = proto;
    d = side_of(l, pinfo);
    s = &l->side[d];
    f = frame_of(pinfo);
    f->ledger = l;
    f->seen |= 1u << d;
    if (!s->started && !start_side(s, tvb, pinfo, tcpi->seq))
        return;
    note_frame(l, pinfo, f);
    if (!SEQ_GT(tcpi->seq, s->done))
        return;
    /* TCP went on after bytes it will not hand over: those captured are undecoded. */
    ev.proto = proto;
    ev.missing = confirm_holes(s, tcpi->seq);
    ev.undecoded = count_through(s, tcpi->seq);
    add_event(pinfo, &ev);
}

void
p2pc_holes_leave(tvbuff_t *tvb, packet_info *pinfo, void *data)
{
    const struct tcpinfo *tcpi = (const struct tcpinfo *)data;
    const frame_t *f;
    side_t *s;
    guint32 end, used;

    if (!tcpi || pinfo->ptype != PT_TCP || PINFO_FD_VISITED(pinfo))
        return;
    f = (const frame_t *)p_get_proto_data(pinfo->pool, pinfo, proto_p2pc, KEY_FRAME);
    if (!f || !f->ledger)
        return;
    s = &f->ledger->side[side_of(f->ledger, pinfo)];
    if (!s->started)
        return;
    end = tcpi->seq + tvb_captured_length(tvb);
    used = pinfo->desegment_len ? tcpi->seq + (guint32)pinfo->desegment_offset : end;
    if (SEQ_GT(used, s->done))
        s->done = used;
    /* tcp_dissect_pdus asks for the rest of a message whose length it knows, or for one more
     * segment (TCP then ends the message with that segment). */
    s->pdu_end = !pinfo->desegment_len ? s->done :
                 pinfo->desegment_len == DESEGMENT_ONE_MORE_SEGMENT ? end : end + pinfo->desegment_len;
}

/* Every frame of a connection in the ledger: its segment, and its acknowledgement of the
 * other direction's bytes. */
static int
dissect_holes(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data _U_)
{
    conversation_t *conv;
    ledger_t *l;
    frame_t *f;
    int d;
    p2pc_segment_t seg;
    gboolean have_seg;
    event_t ev = { 0 };

    if (pinfo->ptype != PT_TCP || !wmem_map_size(ledgers))
        return 0;
    if (PINFO_FD_VISITED(pinfo)) {
        show_events(tvb, pinfo, tree);
        return 0;
    }
    f = (frame_t *)p_get_proto_data(pinfo->pool, pinfo, proto_p2pc, KEY_FRAME);
    l = f ? f->ledger : NULL;
    if (!l) {
        conv = find_conversation_pinfo(pinfo, 0);
        l = conv ? (ledger_t *)wmem_map_lookup(ledgers, conv) : NULL;
        if (!l)
            return 0;
        f = frame_of(pinfo);
    }
    note_frame(l, pinfo, f);
    have_seg = p2pc_frame_segment(pinfo, &seg);
    d = side_of(l, pinfo);
    ev.proto = l->proto;
    /* The sender has the other direction's bytes up to its acknowledgement. */
    if (have_seg && (seg.flags & TH_ACK) && l->side[1 - d].started) {
        side_t *o = &l->side[1 - d];
        ev.other = TRUE;
        ev.missing = confirm_holes(o, seg.ack - o->base);
        if (ev.missing)
            ev.undecoded = count_held_back(o);
        add_event(pinfo, &ev);
    }
    /* A segment of a direction TCP holds back for good, which the protocol did not get. */
    if (have_seg && seg.len && !(f->seen & (1u << d)) && l->side[d].started) {
        ev.other = FALSE;
        ev.missing = confirm_holes_held_past(&l->side[d]);
        ev.undecoded = count_held_back(&l->side[d]);
        add_event(pinfo, &ev);
    }
    show_events(tvb, pinfo, tree);
    return 0;
}

typedef struct {
    p2pc_tail_emit_fn emit;
    void *ud;
} tail_ctx_t;

/* At the end of the capture: what each direction sent after its last record, captured and
 * never handed over (the message the capture cut short, segments behind an unconfirmed hole). */
static void
ledger_tails(gpointer key _U_, gpointer value, gpointer ud)
{
    const ledger_t *l = (const ledger_t *)value;
    const tail_ctx_t *c = (const tail_ctx_t *)ud;

    for (int d = 0; d < 2; d++) {
        const side_t *s = &l->side[d];
        if (s->started && SEQ_GT(s->cap_end, s->done))
            p2pc_tail_undecoded(c->emit, c->ud, &s->last, l->proto, "none",
                                captured_in(s, s->done, s->cap_end));
    }
}

static void
holes_tails(p2pc_tail_emit_fn emit, void *ud)
{
    tail_ctx_t c = { emit, ud };
    wmem_map_foreach(ledgers, ledger_tails, &c);
}

void
p2pc_holes_register(int proto)
{
    static ei_register_info ei[] = {
        { &ei_hole, { "p2pc.hole", PI_SEQUENCE, PI_WARN,
            "Bytes missing from the capture: what TCP keeps for them is counted as undecoded", EXPFILL } },
    };

    proto_p2pc = proto;
    expert_register_field_array(expert_register_protocol(proto), ei, array_length(ei));
    ledgers = wmem_map_new_autoreset(wmem_epan_scope(), wmem_file_scope(), g_direct_hash, g_direct_equal);
    register_postdissector(create_dissector_handle(dissect_holes, proto));
    p2pc_tail_register(holes_tails);
}
