#include "core/holes.h"
#include "core/ledger.h"
#include "core/record.h"
#include "core/segment.h"

#include <epan/prefs.h>
#include <epan/prefs-int.h>
#include <epan/proto_data.h>
#include <epan/dissectors/packet-tcp.h>

#define KEY_EVENTS  2               /* file-scope frame data: the frame's event_t list */
#define KEY_FRAME   3               /* packet-scope frame data: a frame_t */

static int proto_p2pc = -1;
/* p2pc_tcp_t * -> conn_t, for the connections a protocol entered (first pass). */
static wmem_map_t *conns;

/* One direction (first pass only), in TCP's sequence numbers. */
typedef struct {
    gboolean started;           /* the protocol was handed bytes of it */
    guint32 done;               /* the bytes before it are in records */
    guint32 pdu_end;            /* where the message TCP reassembles ends (done: none) */
    gboolean dead;              /* a hole was confirmed: TCP never hands over [done, dead_end) */
    gboolean dead_all;          /* ... nor any byte after the hole (out-of-order reassembly) */
    guint32 dead_end;
} side_t;

/* A connection, its directions numbered as its ledger's. */
typedef struct {
    p2pc_tcp_t *tcp;
    const char *proto;          /* the proto of its undecoded records */
    side_t side[2];
} conn_t;

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
    conn_t *conn;               /* the protocol's entry ran in this frame */
    guint seen;                 /* bit d: the protocol was handed bytes of direction d */
} frame_t;

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

/* The holes of direction d before `upto` are in the capture: the bytes they missed, 0 if none
 * was confirmed now.  TCP never hands over the message the first cut, nor, with out-of-order
 * reassembly, anything after it. */
static guint32
confirm_holes(conn_t *c, int d, guint32 upto)
{
    side_t *s = &c->side[d];
    guint32 first = 0;
    guint32 missing = p2pc_ledger_confirm(&c->tcp->dir[d], upto, &first);
    if (missing) {
        s->dead = TRUE;
        s->dead_all = tcp_keeps_all_after_holes();
        s->dead_end = P2PC_SEQ_GT(s->pdu_end, first) ? s->pdu_end : first;
    }
    return missing;
}

/* The bytes of direction d captured up to `to` that are in no record: counted now. */
static guint32
count_through(conn_t *c, int d, guint32 to)
{
    side_t *s = &c->side[d];
    guint32 n;
    if (!P2PC_SEQ_GT(to, s->done))
        return 0;
    n = p2pc_ledger_captured(&c->tcp->dir[d], s->done, to);
    s->done = to;
    p2pc_ledger_skip(&c->tcp->dir[d], s->done);
    return n;
}

/* What TCP holds back for good once a hole of direction d is confirmed. */
static guint32
count_held_back(conn_t *c, int d)
{
    const side_t *s = &c->side[d];
    guint32 cap_end = c->tcp->dir[d].cap_end;
    if (!s->dead)
        return 0;
    return count_through(c, d, s->dead_all || P2PC_SEQ_LT(cap_end, s->dead_end) ? cap_end : s->dead_end);
}

static void
show_event(const event_t *ev, tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree)
{
    if (ev->missing)
        p2pc_ledger_show_hole(tvb, pinfo, tree,
            "%u bytes of %s direction are missing from the capture: the %u bytes captured that TCP "
            "keeps for them are counted as undecoded (and later ones it keeps, in their frames)",
            ev->missing, ev->other ? "the other" : "this", ev->undecoded);
    if (!ev->undecoded)
        return;
    /* The record names its own direction's endpoints. */
    if (ev->other)
        p2pc_swap_endpoints(pinfo);
    p2pc_record_undecoded(tvb, 0, 0, pinfo, tree, ev->proto, ev->undecoded, NULL);
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

static conn_t *
conn_of(p2pc_tcp_t *tcp)
{
    conn_t *c = (conn_t *)wmem_map_lookup(conns, tcp);
    if (!c) {
        c = wmem_new0(wmem_file_scope(), conn_t);
        c->tcp = tcp;
        wmem_map_insert(conns, tcp, c);
    }
    return c;
}

void
p2pc_holes_enter(tvbuff_t *tvb, packet_info *pinfo, void *data, const char *proto)
{
    const struct tcpinfo *tcpi = (const struct tcpinfo *)data;
    p2pc_tcp_t *tcp;
    conn_t *c;
    side_t *s;
    frame_t *f;
    int d;
    event_t ev = { 0 };

    if (!tcpi || PINFO_FD_VISITED(pinfo) || !(tcp = p2pc_ledger_enter(tvb, pinfo, tcpi->seq)))
        return;
    /* These protocols are framed by TCP's reassembly, which a session reset drops: only the
     * connection's endpoints go on, so that the bytes the next session cannot frame say why. */
    p2pc_conn_carry(tcp->conn);
    p2pc_conn_stay(tcp->conn);
    c = conn_of(tcp);
    c->proto = proto;
    d = p2pc_ledger_dir(tcp, pinfo);
    s = &c->side[d];
    f = (frame_t *)p_get_proto_data(pinfo->pool, pinfo, proto_p2pc, KEY_FRAME);
    if (!f) {
        f = wmem_new0(pinfo->pool, frame_t);
        p_add_proto_data(pinfo->pool, pinfo, proto_p2pc, KEY_FRAME, f);
    }
    f->conn = c;
    f->seen |= 1u << d;
    if (!tcp->dir[d].started)
        return;
    if (!s->started) {
        s->started = TRUE;
        s->done = s->pdu_end = tcpi->seq;
    }
    if (!P2PC_SEQ_GT(tcpi->seq, s->done))
        return;
    /* TCP went on after bytes it will not hand over: those captured are undecoded. */
    ev.proto = proto;
    ev.missing = confirm_holes(c, d, tcpi->seq);
    ev.undecoded = count_through(c, d, tcpi->seq);
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
    if (!f || !f->conn)
        return;
    s = &f->conn->side[p2pc_ledger_dir(f->conn->tcp, pinfo)];
    if (!s->started)
        return;
    end = tcpi->seq + tvb_captured_length(tvb);
    used = pinfo->desegment_len ? tcpi->seq + (guint32)pinfo->desegment_offset : end;
    if (P2PC_SEQ_GT(used, s->done))
        s->done = used;
    /* tcp_dissect_pdus asks for the rest of a message whose length it knows, or for one more
     * segment (TCP then ends the message with that segment). */
    s->pdu_end = !pinfo->desegment_len ? s->done :
                 pinfo->desegment_len == DESEGMENT_ONE_MORE_SEGMENT ? end : end + pinfo->desegment_len;
}

/* Every frame of a connection the protocol entered: its acknowledgement of the other
 * direction's bytes, and its segment when TCP handed it to nobody. */
static int
dissect_holes(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data _U_)
{
    p2pc_tcp_t *tcp;
    conn_t *c;
    const frame_t *f;
    int d;
    p2pc_segment_t seg;
    event_t ev = { 0 };

    if (pinfo->ptype != PT_TCP || !wmem_map_size(conns))
        return 0;
    if (PINFO_FD_VISITED(pinfo)) {
        show_events(tvb, pinfo, tree);
        return 0;
    }
    if (!(tcp = p2pc_ledger_find(pinfo)) || !(c = (conn_t *)wmem_map_lookup(conns, tcp)))
        return 0;
    f = (const frame_t *)p_get_proto_data(pinfo->pool, pinfo, proto_p2pc, KEY_FRAME);
    d = p2pc_ledger_dir(tcp, pinfo);
    ev.proto = c->proto;
    /* The sender has the other direction's bytes up to its acknowledgement. */
    if (tcp->dir[1 - d].ack_known && c->side[1 - d].started) {
        ev.other = TRUE;
        ev.missing = confirm_holes(c, 1 - d, tcp->dir[1 - d].acked);
        if (ev.missing)
            ev.undecoded = count_held_back(c, 1 - d);
        add_event(pinfo, &ev);
    }
    /* A segment of a direction TCP holds back for good, which the protocol did not get. */
    if (!(f && (f->seen & (1u << d))) && c->side[d].started && p2pc_frame_segment(pinfo, &seg) && seg.len) {
        ev.other = FALSE;
        ev.missing = p2pc_ledger_held_past(&tcp->dir[d]) ? confirm_holes(c, d, tcp->dir[d].cap_end) : 0;
        ev.undecoded = count_held_back(c, d);
        add_event(pinfo, &ev);
    }
    show_events(tvb, pinfo, tree);
    return 0;
}

typedef struct {
    p2pc_tail_emit_fn emit;
    void *ud;
    gboolean at_reset;
} tail_ctx_t;

/* At the end of the capture, or of a session (a reset drops what TCP holds): what each
 * direction sent after its last record, captured and never handed over (the message the capture
 * or the reset cut short, segments behind an unconfirmed hole). */
static void
conn_tails(gpointer key _U_, gpointer value, gpointer ud)
{
    const conn_t *c = (const conn_t *)value;
    const tail_ctx_t *t = (const tail_ctx_t *)ud;

    for (int d = 0; d < 2; d++) {
        const side_t *s = &c->side[d];
        const p2pc_tcp_dir_t *td = &c->tcp->dir[d];
        if (s->started && P2PC_SEQ_GT(td->cap_end, s->done))
            p2pc_tail_undecoded(t->emit, t->ud, &td->last, c->proto, "none",
                                p2pc_ledger_captured(td, s->done, td->cap_end),
                                t->at_reset && p2pc_conn_cut(c->tcp->conn));
    }
}

static void
holes_tails(p2pc_tail_emit_fn emit, void *ud, gboolean at_reset)
{
    tail_ctx_t t = { emit, ud, at_reset };
    wmem_map_foreach(conns, conn_tails, &t);
}

void
p2pc_holes_register(int proto)
{
    proto_p2pc = proto;
    conns = wmem_map_new_autoreset(wmem_epan_scope(), wmem_file_scope(), g_direct_hash, g_direct_equal);
    register_postdissector(create_dissector_handle(dissect_holes, proto));
    p2pc_tail_register(holes_tails);
}
