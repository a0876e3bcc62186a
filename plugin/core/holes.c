/* holes.c
 * The bytes TCP never hands to a protocol framed with tcp_dissect_pdus() (holes.h): a part of
 * the TCP layer's postdissector (post.h) that follows each such direction's TCP sequence, finds where the capture missed
 * a segment, and counts what TCP then keeps back in "undecoded" records with the p2pc.hole item.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/holes.h"
#include "core/frame-data.h"
#include "core/post.h"
#include "core/ledger.h"
#include "core/record.h"

#include <epan/exceptions.h>
#include <epan/prefs.h>
#include <epan/prefs-int.h>
#include <epan/proto_data.h>
#include <epan/show_exception.h>
#include <epan/dissectors/packet-tcp.h>


/* The most a direction keeps of a message TCP reassembles, for a session reset (Bitcoin's
 * MAX_SIZE; FISCO's bounds are lower): a longer one is cut by the reset. */
#define PART_MAX    (32u * 1024 * 1024)

static int proto_p2pc = -1;
/* p2pc_tcp_t * -> conn_t, the connections a protocol entered in this session (first pass). */
static wmem_map_t *conns;

/* One direction (first pass only), in the ledger's sequence numbers (p2pc_ledger_seq()).  How
 * far its bytes are in records is the ledger's cursor (p2pc_tcp_dir_t.handed, "handed" below). */
typedef struct {
    guint32 pdu_end;            /* where the message TCP reassembles ends (handed: none) */
    gboolean dead;              /* a hole was confirmed: TCP never hands over [handed, dead_end) */
    gboolean dead_all;          /* ... nor any byte after the hole (out-of-order reassembly) */
    guint32 dead_end;
    /* Carry mode: the bytes TCP reassembles, [handed, handed + part_len), copied as they are
     * captured, so that the message goes on after a session reset, which drops TCP's copy. */
    guint8 *part;
    guint32 part_len, part_size;
    guint session;              /* the session it was last handed bytes in */
    gboolean resuming;          /* this session finishes the message in `part` (resume()) */
} side_t;

/* A connection, its directions numbered as its ledger's, in the connection's pool. */
typedef struct {
    p2pc_tcp_t *tcp;
    const p2pc_framing_t *fr;   /* the protocol's: its undecoded records' proto */
    side_t side[2];
} conn_t;

/* A frame in which a message a reset cut was finished (or went on): for later passes. */
typedef struct {
    guint took;                 /* the bytes of the frame's tvb it took */
    guint8 *bytes;              /* the whole message (file scope); NULL: it goes on */
    guint len;
} resumed_t;

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
    guint resuming;             /* bit d: the bytes of direction d it was handed are all for a
                                   message a reset cut */
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
    p2pc_tcp_dir_t *td = &c->tcp->dir[d];
    guint32 n;
    if (!P2PC_SEQ_GT(to, td->handed))
        return 0;
    n = p2pc_ledger_captured(td, td->handed, to);
    td->handed = to;
    p2pc_ledger_skip(td, td->handed);
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
    at = (event_t **)p_get_proto_data(wmem_file_scope(), pinfo, proto_p2pc, P2PC_KEY_EVENTS);
    if (!at) {
        p_add_proto_data(wmem_file_scope(), pinfo, proto_p2pc, P2PC_KEY_EVENTS, ev);
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
    const event_t *ev = (const event_t *)p_get_proto_data(wmem_file_scope(), pinfo, proto_p2pc, P2PC_KEY_EVENTS);
    for (; ev; ev = ev->next)
        show_event(ev, tvb, pinfo, tree);
}

static conn_t *
conn_of(p2pc_tcp_t *tcp)
{
    conn_t *c = (conn_t *)p2pc_conn_slot(tcp->conn, P2PC_SLOT_HOLES);
    if (!c) {
        c = wmem_new0(p2pc_conn_pool(tcp->conn), conn_t);
        c->tcp = tcp;
        p2pc_conn_set_slot(tcp->conn, P2PC_SLOT_HOLES, c);
    }
    if (!wmem_map_contains(conns, tcp))
        wmem_map_insert(conns, tcp, c);
    return c;
}

/* ---- the message TCP reassembles, kept for a session reset (carry mode) ---- */

static void
part_drop(conn_t *c, int d)
{
    side_t *s = &c->side[d];
    if (s->part) {
        wmem_free(p2pc_conn_pool(c->tcp->conn), s->part);
        p2pc_conn_charge(c->tcp->conn, -(gint64)s->part_size);
    }
    s->part = NULL;
    s->part_len = s->part_size = 0;
    s->resuming = FALSE;
}

/* The part's buffer holds `size` bytes (no fewer than it has). */
static void
part_size(conn_t *c, int d, guint32 size)
{
    side_t *s = &c->side[d];
    s->part = (guint8 *)wmem_realloc(p2pc_conn_pool(c->tcp->conn), s->part, size);
    p2pc_conn_charge(c->tcp->conn, (gint64)size - s->part_size);
    s->part_size = size;
}

/* Bytes [offset, offset + n) of `tvb` follow the part; FALSE (and the part is dropped) when
 * they would make it longer than PART_MAX. */
static gboolean
part_add(conn_t *c, int d, tvbuff_t *tvb, guint offset, guint n)
{
    side_t *s = &c->side[d];

    if (n > PART_MAX - s->part_len) {
        part_drop(c, d);
        return FALSE;
    }
    if (s->part_len + n > s->part_size)
        part_size(c, d, MAX(s->part_len + n, MIN(2 * s->part_size, PART_MAX)));
    tvb_memcpy(tvb, s->part + s->part_len, offset, n);
    s->part_len += n;
    return TRUE;
}

/* The part's message length by the protocol's own rule; 0 when it cannot be carried. */
static guint
part_message_len(const conn_t *c, int d, packet_info *pinfo, void *data)
{
    const side_t *s = &c->side[d];
    tvbuff_t *t = tvb_new_real_data(s->part, s->part_len, s->part_len);
    guint len = 0;

    TRY {
        len = c->fr->pdu_len(pinfo, t, 0, data);
    }
    CATCH_ALL {
        len = 0;
    }
    ENDTRY;
    tvb_free(t);
    return len >= c->fr->fixed_len && len <= PART_MAX ? len : 0;
}

static void
dissect_whole(const p2pc_framing_t *fr, tvbuff_t *tvb, const resumed_t *r, packet_info *pinfo, proto_tree *tree,
              void *data)
{
    tvbuff_t *whole = tvb_new_child_real_data(tvb, r->bytes, r->len, r->len);
    add_new_data_source(pinfo, whole, "Message carried over a session reset");
    TRY {
        fr->dissect_pdu(whole, pinfo, tree, data);
    }
    CATCH_NONFATAL_ERRORS {
        show_exception(whole, pinfo, tree, EXCEPT_CODE, GET_MESSAGE);
    }
    ENDTRY;
}

/* The first bytes of direction d in a session after a reset, at ledger sequence number `seq`,
 * while it finishes the message in the part: the bytes of `tvb` it takes. */
static guint
resume(conn_t *c, int d, tvbuff_t *tvb, guint32 seq, packet_info *pinfo, proto_tree *tree, void *data)
{
    side_t *s = &c->side[d];
    p2pc_tcp_dir_t *td = &c->tcp->dir[d];
    guint len = tvb_captured_length(tvb), off, whole, need;
    guint32 next = td->handed + s->part_len;
    resumed_t *r;

    if (P2PC_SEQ_GT(seq, next)) {       /* bytes between are missing: it cannot be finished */
        part_drop(c, d);
        return 0;
    }
    off = next - seq;
    if (off >= len)                     /* bytes it has (a retransmission) */
        return len;
    r = wmem_new0(wmem_file_scope(), resumed_t);
    p_add_proto_data(wmem_file_scope(), pinfo, proto_p2pc, P2PC_KEY_RESUMED, r);
    r->took = len;
    if (s->part_len < c->fr->fixed_len) {
        guint n = MIN(c->fr->fixed_len - s->part_len, len - off);
        part_add(c, d, tvb, off, n);
        off += n;
        if (s->part_len < c->fr->fixed_len)
            return len;
    }
    if (!(whole = part_message_len(c, d, pinfo, data))) {
        part_drop(c, d);
        r->took = 0;
        return 0;
    }
    need = whole - s->part_len;
    if (len - off < need) {
        if (!part_add(c, d, tvb, off, len - off))
            r->took = 0;
        return r->took;
    }
    part_add(c, d, tvb, off, need);
    r->took = off + need;
    r->len = whole;
    r->bytes = (guint8 *)wmem_memdup(wmem_file_scope(), s->part, whole);
    td->handed += whole;
    s->pdu_end = td->handed;
    part_drop(c, d);
    dissect_whole(c->fr, tvb, r, pinfo, tree, data);
    return r->took;
}

/* A later pass over a frame whose first pass finished (or went on with) such a message. */
static guint
resumed_again(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data, const p2pc_framing_t *fr)
{
    const resumed_t *r = (const resumed_t *)p_get_proto_data(wmem_file_scope(), pinfo, proto_p2pc, P2PC_KEY_RESUMED);
    if (!r)
        return 0;
    if (r->bytes)
        dissect_whole(fr, tvb, r, pinfo, tree, data);
    return MIN(r->took, tvb_captured_length(tvb));
}

guint
p2pc_holes_enter(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data, const p2pc_framing_t *fr)
{
    const struct tcpinfo *tcpi = (const struct tcpinfo *)data;
    p2pc_tcp_t *tcp;
    p2pc_tcp_dir_t *td;
    conn_t *c;
    side_t *s;
    frame_t *f;
    int d;
    guint32 seq;
    guint took;
    event_t ev = { 0 };

    if (!tcpi)
        return 0;
    if (PINFO_FD_VISITED(pinfo))
        return resumed_again(tvb, pinfo, tree, data, fr);
    if (!(tcp = p2pc_ledger_enter(tvb, pinfo, tcpi->seq, P2PC_CLAIM_FRAMED, fr->proto)))
        return 0;
    p2pc_conn_carry(tcp->conn);
    c = conn_of(tcp);
    c->fr = fr;
    d = p2pc_ledger_dir(tcp, pinfo);
    s = &c->side[d];
    td = &tcp->dir[d];
    f = (frame_t *)p2pc_frame_data(pinfo->pool, pinfo, proto_p2pc, P2PC_KEY_HOLES_FRAME, sizeof(frame_t), NULL);
    f->conn = c;
    p2pc_post_handed(pinfo);
    if (!td->shifted)
        return 0;
    seq = p2pc_ledger_seq(td, tcpi->seq);
    if (!td->handing) {
        td->handing = TRUE;
        td->handed = s->pdu_end = seq;
        s->session = p2pc_conn_session();
    }
    if (s->session != p2pc_conn_session()) {    /* carried over a reset (holes_tails) */
        s->session = p2pc_conn_session();
        s->resuming = s->part_len > 0;
    }
    if (s->resuming) {
        took = resume(c, d, tvb, seq, pinfo, tree, data);
        if (s->resuming)
            f->resuming |= 1u << d;
        if (took || s->resuming)
            return took;
    }
    if (!P2PC_SEQ_GT(seq, td->handed))
        return 0;
    /* TCP went on after bytes it will not hand over: those captured are undecoded. */
    ev.proto = fr->proto;
    ev.missing = confirm_holes(c, d, seq);
    ev.undecoded = count_through(c, d, seq);
    add_event(pinfo, &ev);
    return 0;
}

void
p2pc_holes_dissect_pdus(tvbuff_t *tvb, guint offset, packet_info *pinfo, proto_tree *tree, void *data,
                        const p2pc_framing_t *fr)
{
    if (offset >= tvb_captured_length(tvb))
        return;
    tcp_dissect_pdus(offset ? tvb_new_subset_remaining(tvb, offset) : tvb, pinfo, tree, TRUE, fr->fixed_len,
                     fr->pdu_len, fr->dissect_pdu, data);
    if (pinfo->desegment_len)           /* it counts from `offset` */
        pinfo->desegment_offset += offset;
}

void
p2pc_holes_leave(tvbuff_t *tvb, packet_info *pinfo, void *data)
{
    const struct tcpinfo *tcpi = (const struct tcpinfo *)data;
    const frame_t *f;
    conn_t *c;
    side_t *s;
    p2pc_tcp_dir_t *td;
    int d;
    guint32 seq, end, used;

    if (!tcpi || pinfo->ptype != PT_TCP || PINFO_FD_VISITED(pinfo))
        return;
    f = (const frame_t *)p_get_proto_data(pinfo->pool, pinfo, proto_p2pc, P2PC_KEY_HOLES_FRAME);
    if (!f || !(c = f->conn))
        return;
    d = p2pc_ledger_dir(c->tcp, pinfo);
    s = &c->side[d];
    td = &c->tcp->dir[d];
    if (!td->handing || (f->resuming & (1u << d)))
        return;
    seq = p2pc_ledger_seq(td, tcpi->seq);
    end = seq + tvb_captured_length(tvb);
    used = pinfo->desegment_len ? seq + (guint32)pinfo->desegment_offset : end;
    if (P2PC_SEQ_GT(used, td->handed))
        td->handed = used;
    /* tcp_dissect_pdus asks for the rest of a message whose length it knows, or for one more
     * segment (TCP then ends the message with that segment). */
    s->pdu_end = !pinfo->desegment_len ? td->handed :
                 pinfo->desegment_len == DESEGMENT_ONE_MORE_SEGMENT ? end : end + pinfo->desegment_len;
    /* Carry mode: the part is the message TCP reassembles now (its buffer reused), or nothing. */
    if (p2pc_conn_carry_mode() && pinfo->desegment_len && td->handed == used) {
        /* Its whole length when TCP knows it: the buffer grows once. */
        guint32 whole = s->pdu_end - td->handed;
        s->part_len = 0;
        if (pinfo->desegment_len != DESEGMENT_ONE_MORE_SEGMENT && whole <= PART_MAX && whole != s->part_size)
            part_size(c, d, whole);
        part_add(c, d, tvb, pinfo->desegment_offset, tvb_captured_length(tvb) - pinfo->desegment_offset);
    } else if (s->part) {
        part_drop(c, d);
    }
}

/* Carry mode: a segment of direction d that TCP keeps for the message it reassembles (it
 * hands it to nobody now), [a, a + len) at `at` in `tvb`, goes into the part. */
static void
part_follow(conn_t *c, int d, tvbuff_t *tvb, guint32 at, guint32 a, guint32 len)
{
    side_t *s = &c->side[d];
    guint32 handed = c->tcp->dir[d].handed, next = handed + s->part_len;

    if (s->pdu_end == handed || !s->part_len)      /* none, or not carried */
        return;
    if (P2PC_SEQ_GT(a, next))           /* a byte before it is missing: not carried */
        part_drop(c, d);
    else if (P2PC_SEQ_GT(a + len, next))
        part_add(c, d, tvb, at + (next - a), a + len - next);
}

void
p2pc_holes_let_go(packet_info *pinfo)
{
    p2pc_tcp_t *tcp = PINFO_FD_VISITED(pinfo) ? NULL : p2pc_ledger_find(pinfo);
    conn_t *c = tcp ? (conn_t *)p2pc_conn_slot(tcp->conn, P2PC_SLOT_HOLES) : NULL;
    if (!c)
        return;
    part_drop(c, 0);
    part_drop(c, 1);
    p2pc_ledger_let_go(tcp);
    wmem_map_remove(conns, tcp);
    p2pc_conn_set_slot(tcp->conn, P2PC_SLOT_HOLES, NULL);
}

const p2pc_framing_t *
p2pc_holes_carried(packet_info *pinfo)
{
    p2pc_conn_t *pc = pinfo->ptype == PT_TCP && p2pc_conn_carried_any(P2PC_SLOT_HOLES) ? p2pc_conn_find(pinfo) : NULL;
    const conn_t *c = pc ? (const conn_t *)p2pc_conn_slot(pc, P2PC_SLOT_HOLES) : NULL;
    return c ? c->fr : NULL;
}

/* Every frame of a connection the protocol entered: its acknowledgement of the other
 * direction's bytes, and its segment when TCP handed it to nobody. */
static int
dissect_holes(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    const p2pc_post_frame_t *pf = (const p2pc_post_frame_t *)data;
    p2pc_tcp_t *tcp;
    conn_t *c;
    int d;
    guint32 at, n, seq;
    event_t ev = { 0 };

    if (pinfo->ptype != PT_TCP || (!wmem_map_size(conns) && !p2pc_conn_carried_any(P2PC_SLOT_HOLES)))
        return 0;
    if (PINFO_FD_VISITED(pinfo)) {
        show_events(tvb, pinfo, tree);
        return 0;
    }
    if (!(tcp = p2pc_ledger_find(pinfo)) || !(c = (conn_t *)p2pc_conn_slot(tcp->conn, P2PC_SLOT_HOLES)))
        return 0;
    conn_of(tcp);
    d = p2pc_ledger_dir(tcp, pinfo);
    ev.proto = c->fr->proto;
    /* The sender has the other direction's bytes up to its acknowledgement. */
    if (tcp->dir[1 - d].ack_known && tcp->dir[1 - d].handing) {
        ev.other = TRUE;
        ev.missing = confirm_holes(c, 1 - d, tcp->dir[1 - d].acked);
        if (ev.missing)
            ev.undecoded = count_held_back(c, 1 - d);
        add_event(pinfo, &ev);
    }
    /* A segment of a direction TCP holds back for good, or keeps for the message it
     * reassembles, which the protocol did not get. */
    if (!pf->handed && tcp->dir[d].handing && p2pc_ledger_frame_bytes(tcp, pinfo, &at, &n, &seq) && n) {
        if (p2pc_conn_carry_mode())
            part_follow(c, d, tvb, at, seq, n);
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

/* The tails of connections a new one on their endpoints retired (record.h, p2pc_tail_keep()). */
static GArray *kept_tails;

/* Direction d's bytes after its last record, captured and never handed over, if any. */
static gboolean
has_tail(const conn_t *c, int d)
{
    const p2pc_tcp_dir_t *td = &c->tcp->dir[d];
    return td->handing && P2PC_SEQ_GT(td->cap_end, td->handed);
}

static void
dir_tail(const conn_t *c, int d, p2pc_tail_emit_fn emit, void *ud, const char *why)
{
    const p2pc_tcp_dir_t *td = &c->tcp->dir[d];
    p2pc_tail_undecoded(emit, ud, &td->last, c->fr->proto, "none",
                        p2pc_ledger_captured(td, td->handed, td->cap_end), why);
}

/* A new connection retires pc: what it holds is the capture's tail, kept for its end. */
static void
keep_conn_tails(p2pc_conn_t *pc)
{
    const conn_t *c = (const conn_t *)p2pc_conn_slot(pc, P2PC_SLOT_HOLES);
    for (int d = 0; c && d < 2; d++)
        if (has_tail(c, d))
            dir_tail(c, d, p2pc_tail_keep, kept_tails, NULL);
}

/* At the end of the capture, or of a session (a reset drops what TCP holds): what each
 * direction sent after its last record, captured and never handed over (the message the capture
 * or the reset cut short, segments behind an unconfirmed hole).  A connection that goes on
 * after a reset with all of the message TCP was reassembling in its part has no tail: the next
 * session finishes the message (resume()).  One that goes on without it starts the next session
 * after the bytes counted here.  A retired connection's tails were kept when it was. */
static void
conn_tails(gpointer key _U_, gpointer value, gpointer ud)
{
    conn_t *c = (conn_t *)value;
    const tail_ctx_t *t = (const tail_ctx_t *)ud;
    gboolean goes_on = t->at_reset && p2pc_conn_goes_on(c->tcp->conn);
    const char *why = goes_on ? "reset" : t->at_reset ? p2pc_conn_cut(c->tcp->conn) : NULL;

    if (p2pc_conn_retired(c->tcp->conn))
        return;
    for (int d = 0; d < 2; d++) {
        side_t *s = &c->side[d];
        p2pc_tcp_dir_t *td = &c->tcp->dir[d];
        if (!has_tail(c, d))
            continue;
        if (goes_on && !s->dead && td->handed + s->part_len == td->cap_end)
            continue;
        dir_tail(c, d, t->emit, t->ud, why);
        if (goes_on) {
            td->handed = s->pdu_end = td->cap_end;
            s->dead = FALSE;
            part_drop(c, d);
        }
    }
}

static void
holes_tails(p2pc_tail_emit_fn emit, void *ud, gboolean at_reset)
{
    tail_ctx_t t = { emit, ud, at_reset };
    wmem_map_foreach(conns, conn_tails, &t);
    p2pc_tail_kept_emit(kept_tails, FALSE, emit, ud, at_reset);
}

void
p2pc_holes_register(int proto)
{
    proto_p2pc = proto;
    conns = wmem_map_new_autoreset(wmem_epan_scope(), wmem_file_scope(), g_direct_hash, g_direct_equal);
    p2pc_post_add(create_dissector_handle(dissect_holes, proto));
    kept_tails = p2pc_tail_kept_new();
    p2pc_tail_register(holes_tails);
    p2pc_conn_on_retire(keep_conn_tails);
}
