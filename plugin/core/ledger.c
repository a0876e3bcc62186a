/* ledger.c
 * The TCP ledger (ledger.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/ledger.h"
#include "core/frame-data.h"
#include "core/segment.h"

#include <epan/conversation.h>
#include <epan/expert.h>
#include <epan/proto_data.h>
#include <epan/dissectors/packet-tcp.h>


static int proto_p2pc = -1;
static expert_field ei_hole = EI_INIT;
/* A ledger was made in this session: until one is (or one is carried into it), finding one
 * costs a frame a test (a capture without p2pc's TCP protocols). */
static gboolean made;

int
p2pc_ledger_dir(const p2pc_tcp_t *l, const packet_info *pinfo)
{
    return p2pc_conn_dir(&l->addr0, l->port0, pinfo);
}

/* A hole of `d` from `start` to `end`, after the others. */
static void
add_hole(wmem_allocator_t *pool, p2pc_tcp_dir_t *d, guint32 start, guint32 end)
{
    p2pc_hole_t *h = wmem_new0(pool, p2pc_hole_t), **at = &d->holes;
    h->start = start;
    h->end = end;
    while (*at)
        at = &(*at)->next;
    *at = h;
}

/* The bytes of [a, b) in [start, end) that are at or past `from`. */
static guint32
overlap(guint32 a, guint32 b, guint32 start, guint32 end, guint32 from)
{
    guint32 lo = P2PC_SEQ_GT(a, start) ? a : start, hi = P2PC_SEQ_LT(b, end) ? b : end;
    if (P2PC_SEQ_GT(from, lo))
        lo = from;
    return P2PC_SEQ_GT(hi, lo) ? hi - lo : 0;
}

/* A segment of `d`, [a, b): a hole before it, or bytes that fill one (reordered).  Its bytes
 * the claimant has still to account: the capture did not hold them before (past the highest
 * captured, or in a hole not confirmed) and the cursor is not past them. */
static guint32
note_segment(wmem_allocator_t *pool, p2pc_tcp_dir_t *d, guint32 a, guint32 b)
{
    p2pc_hole_t **at = &d->holes;
    guint32 from = d->handing ? d->handed : a;
    guint32 fresh = overlap(a, b, d->cap_end, b, from);

    if (P2PC_SEQ_GT(a, d->cap_end)) {
        add_hole(pool, d, d->cap_end, a);
        d->cap_end = b;
        return fresh;
    }
    if (P2PC_SEQ_GT(b, d->cap_end))
        d->cap_end = b;
    while (*at) {
        p2pc_hole_t *h = *at;
        if (!h->confirmed)
            fresh += overlap(a, b, h->start, h->end, from);
        if (h->confirmed || !P2PC_SEQ_LT(a, h->end) || !P2PC_SEQ_GT(b, h->start)) {
            at = &h->next;
        } else if (!P2PC_SEQ_GT(a, h->start) && !P2PC_SEQ_LT(b, h->end)) {
            *at = h->next;
        } else if (!P2PC_SEQ_GT(a, h->start)) {
            h->start = b;
        } else if (!P2PC_SEQ_LT(b, h->end)) {
            h->end = a;
        } else {                        /* in the middle: two holes */
            p2pc_hole_t *t = wmem_new0(pool, p2pc_hole_t);
            t->start = b;
            t->end = h->end;
            t->next = h->next;
            h->end = a;
            h->next = t;
            at = &t->next;
        }
    }
    return fresh;
}

/* The receiver acknowledges `d` up to `ack`: bytes past the highest captured are a hole. */
static void
note_ack(wmem_allocator_t *pool, p2pc_tcp_dir_t *d, guint32 ack)
{
    if (!d->ack_known || P2PC_SEQ_GT(ack, d->acked))
        d->acked = ack;
    d->ack_known = TRUE;
    /* A FIN takes a sequence number of its own, which the receiver acknowledges. */
    if (d->fin && d->fin_at == d->cap_end && ack == d->cap_end + 1)
        return;
    if (P2PC_SEQ_GT(ack, d->cap_end)) {
        add_hole(pool, d, d->cap_end, ack);
        d->cap_end = ack;
    }
}

/* The ledger that noted this dissection's frame, the bytes its segment brought, and where its
 * direction's captured bytes ended before it. */
typedef struct {
    const p2pc_tcp_t *l;
    guint32 fresh;
    gboolean seg;               /* a segment with bytes was noted: `seen` is set */
    guint32 seen;
} noted_t;

/* Direction `d` starts at `from` (the ledger's number), `base` below the headers' numbers. */
static void
start_dir(p2pc_tcp_dir_t *d, guint32 base, guint32 from)
{
    d->started = TRUE;
    d->base = base;
    d->cap_end = from;
}

/* The frame's segment and acknowledgement go into the ledger, once per dissection of a frame. */
static void
note_frame(p2pc_tcp_t *l, packet_info *pinfo)
{
    p2pc_segment_t seg;
    p2pc_tcp_dir_t *d, *o;
    wmem_allocator_t *pool = p2pc_conn_pool(l->conn);
    noted_t *n = (noted_t *)p2pc_frame_data(pinfo->pool, pinfo, proto_p2pc, P2PC_KEY_NOTED, sizeof(noted_t), NULL);

    if (n->l == l)
        return;
    n->l = l;
    if (!p2pc_frame_segment(pinfo, &seg))
        return;
    d = &l->dir[p2pc_ledger_dir(l, pinfo)];
    o = &l->dir[1 - p2pc_ledger_dir(l, pinfo)];
    if (seg.len && !d->started && l->watched)
        start_dir(d, 0, seg.seq);
    if (seg.len && d->started) {
        n->seg = TRUE;
        n->seen = d->cap_end;
        n->fresh = note_segment(pool, d, seg.seq - d->base, seg.seq - d->base + seg.len);
        p2pc_where_keep(pool, pinfo, &d->last);
    }
    if ((seg.flags & TH_FIN) && d->started) {
        d->fin = TRUE;
        d->fin_at = seg.seq - d->base + seg.len;
    }
    if ((seg.flags & TH_ACK) && o->started)
        note_ack(pool, o, seg.ack - o->base);
    if ((seg.flags & TH_RST) || (d->fin && o->fin))
        p2pc_conn_ended(l->conn);
}

/* This frame's connection's ledger, made at the first call. */
static p2pc_tcp_t *
ledger_get(packet_info *pinfo)
{
    p2pc_conn_t *c = p2pc_conn_get(pinfo);
    p2pc_tcp_t *l = (p2pc_tcp_t *)p2pc_conn_slot(c, P2PC_SLOT_LEDGER);

    if (!l) {
        l = wmem_new0(p2pc_conn_pool(c), p2pc_tcp_t);
        l->conn = c;
        copy_address_wmem(p2pc_conn_pool(c), &l->addr0, &pinfo->src);
        l->port0 = pinfo->srcport;
        p2pc_conn_set_slot(c, P2PC_SLOT_LEDGER, l);
        made = TRUE;
    }
    return l;
}

p2pc_tcp_t *
p2pc_ledger_enter(tvbuff_t *tvb, packet_info *pinfo, guint32 seq, p2pc_claim_t who, const char *proto)
{
    p2pc_tcp_t *l;
    p2pc_tcp_dir_t *d;
    guint32 base;

    if (pinfo->ptype != PT_TCP)
        return NULL;
    l = ledger_get(pinfo);
    if (l->claim == P2PC_CLAIM_NONE)
        l->claim = who;
    if (!l->proto)
        l->proto = proto;
    /* A protocol of the other kind starts a direction too: the capture holds its bytes. */
    d = &l->dir[p2pc_ledger_dir(l, pinfo)];
    if ((!d->shifted || d->session != p2pc_conn_session()) && p2pc_seq_base(tvb, pinfo, seq, &base)) {
        if (!d->started)
            start_dir(d, base, seq);
        /* TCP's numbers of this session: hdr = seq + base (TCP's) = ledger's + d->base. */
        d->shift = base - d->base;
        d->session = p2pc_conn_session();
        d->shifted = TRUE;
    }
    /* Bytes TCP reassembled come before the frame's own (a later call in the frame). */
    if (d->started)
        note_frame(l, pinfo);
    return l->claim == who ? l : NULL;
}

void
p2pc_ledger_watch(packet_info *pinfo)
{
    if (pinfo->ptype != PT_TCP || PINFO_FD_VISITED(pinfo))
        return;
    ledger_get(pinfo)->watched = TRUE;
}

void
p2pc_ledger_let_go(p2pc_tcp_t *l)
{
    l->claim = P2PC_CLAIM_NONE;
    l->dir[0].handing = l->dir[1].handing = FALSE;
}

p2pc_tcp_t *
p2pc_ledger_find(packet_info *pinfo)
{
    p2pc_conn_t *c = pinfo->ptype == PT_TCP && (made || p2pc_conn_carried_any(P2PC_SLOT_LEDGER)) ?
                     p2pc_conn_find(pinfo) : NULL;
    p2pc_tcp_t *l = c ? (p2pc_tcp_t *)p2pc_conn_slot(c, P2PC_SLOT_LEDGER) : NULL;

    if (l)
        note_frame(l, pinfo);
    return l;
}

const char *
p2pc_ledger_claimant(packet_info *pinfo)
{
    p2pc_conn_t *c = pinfo->ptype == PT_TCP ? p2pc_conn_find(pinfo) : NULL;
    const p2pc_tcp_t *l = c ? (const p2pc_tcp_t *)p2pc_conn_slot(c, P2PC_SLOT_LEDGER) : NULL;

    return l ? l->proto : NULL;
}

guint32
p2pc_ledger_frame_fresh(packet_info *pinfo)
{
    const noted_t *n = (const noted_t *)p_get_proto_data(pinfo->pool, pinfo, proto_p2pc, P2PC_KEY_NOTED);
    return n ? n->fresh : 0;
}

gboolean
p2pc_ledger_frame_seen(packet_info *pinfo, guint32 *seen)
{
    const noted_t *n = (const noted_t *)p_get_proto_data(pinfo->pool, pinfo, proto_p2pc, P2PC_KEY_NOTED);
    if (!n || !n->seg)
        return FALSE;
    *seen = n->seen;
    return TRUE;
}

gboolean
p2pc_ledger_frame_bytes(const p2pc_tcp_t *l, packet_info *pinfo, guint32 *at, guint32 *len, guint32 *seq)
{
    p2pc_segment_t seg;

    if (!p2pc_frame_segment(pinfo, &seg))
        return FALSE;
    *at = seg.at;
    *len = seg.len;
    *seq = seg.seq - l->dir[p2pc_ledger_dir(l, pinfo)].base;
    return TRUE;
}

guint32
p2pc_ledger_seq(const p2pc_tcp_dir_t *d, guint32 seq)
{
    return seq + d->shift;
}

/* TCP keeps the port its SYN (or SYN-ACK) named as the server's; when both ports are alike
 * (Prysm dials from the port it listens on), the conversation TCP made at the SYN is keyed from
 * the SYN's sender. */
int
p2pc_tcp_sender_dialed(packet_info *pinfo)
{
    conversation_t *conv = find_or_create_conversation(pinfo);
    struct tcp_analysis *tcpd = get_tcp_conversation_data(conv, pinfo);
    if (!tcpd || !tcpd->server_port)
        return -1;
    if (pinfo->srcport != pinfo->destport)
        return pinfo->destport == tcpd->server_port;
    if (nstime_is_zero(&tcpd->ts_mru_syn) || !conv->key_ptr)
        return -1;          /* a SYN-ACK alone: it does not say which address sent it */
    return addresses_equal(conversation_key_addr1(conv->key_ptr), &pinfo->src);
}

gboolean
p2pc_tcp_at_start(packet_info *pinfo, guint32 seq)
{
    conversation_t *conv = pinfo->ptype == PT_TCP ? find_conversation_pinfo(pinfo, 0) : NULL;
    struct tcp_analysis *tcpd = conv ? get_tcp_conversation_data(conv, pinfo) : NULL;
    /* Each direction's base_seq is its initial sequence number once the handshake is seen. */
    return tcpd && !nstime_is_zero(&tcpd->ts_mru_syn) && (seq == 1 || seq == tcpd->fwd->base_seq + 1);
}

guint32
p2pc_ledger_confirm(p2pc_tcp_dir_t *d, guint32 upto, guint32 *first)
{
    guint32 missing = 0;
    for (p2pc_hole_t *h = d->holes; h && P2PC_SEQ_LT(h->start, upto); h = h->next) {
        if (h->confirmed)
            continue;
        if (!missing && first)
            *first = h->start;
        h->confirmed = TRUE;
        missing += h->end - h->start;
    }
    return missing;
}

gboolean
p2pc_ledger_held_past(const p2pc_tcp_dir_t *d)
{
    for (const p2pc_hole_t *h = d->holes; h; h = h->next)
        if (!h->confirmed)
            return P2PC_SEQ_GT(d->cap_end - P2PC_HOLD_MAX, h->end);
    return FALSE;
}

guint32
p2pc_ledger_skip(p2pc_tcp_dir_t *d, guint32 seq)
{
    while (d->holes && d->holes->confirmed && !P2PC_SEQ_GT(d->holes->end, seq))
        d->holes = d->holes->next;
    for (const p2pc_hole_t *h = d->holes; h && !P2PC_SEQ_GT(h->start, seq); h = h->next)
        if (h->confirmed && P2PC_SEQ_GT(h->end, seq))
            return h->end;
    return seq;
}

guint32
p2pc_ledger_captured(const p2pc_tcp_dir_t *d, guint32 a, guint32 b)
{
    guint32 n = b - a;
    for (const p2pc_hole_t *h = d->holes; h; h = h->next) {
        guint32 lo = P2PC_SEQ_GT(h->start, a) ? h->start : a;
        guint32 hi = P2PC_SEQ_LT(h->end, b) ? h->end : b;
        if (P2PC_SEQ_GT(hi, lo))
            n -= hi - lo;
    }
    return n;
}

void
p2pc_ledger_hold(const p2pc_tcp_t *l, p2pc_tcp_dir_t *d, guint32 seq, const guint8 *p, guint32 len, guint32 frame)
{
    p2pc_held_t *h = (p2pc_held_t *)wmem_alloc(p2pc_conn_pool(l->conn), sizeof(p2pc_held_t) + len), **at = &d->held;
    h->seq = seq;
    h->len = len;
    h->frame = frame;
    h->data = (guint8 *)(h + 1);
    memcpy(h->data, p, len);
    while (*at && P2PC_SEQ_LT((*at)->seq, seq))
        at = &(*at)->next;
    h->next = *at;
    *at = h;
    d->held_bytes += len;
    p2pc_conn_charge(l->conn, sizeof(p2pc_held_t) + len);
}

p2pc_held_t **
p2pc_ledger_drain(const p2pc_tcp_t *l, p2pc_tcp_dir_t *d, guint32 *next, p2pc_held_t **tail)
{
    while (d->held && !P2PC_SEQ_GT(d->held->seq, *next)) {
        p2pc_held_t *h = d->held;
        guint32 back = *next - h->seq;
        d->held = h->next;
        d->held_bytes -= h->len;
        p2pc_conn_charge(l->conn, -(gint64)(sizeof(p2pc_held_t) + h->len));
        if (back >= h->len) {   /* all of it was fed already */
            wmem_free(p2pc_conn_pool(l->conn), h);
            continue;
        }
        h->data += back;
        h->seq += back;
        h->len -= back;
        h->next = NULL;
        *next += h->len;
        *tail = h;
        tail = &h->next;
    }
    return tail;
}

void
p2pc_ledger_free(const p2pc_tcp_t *l, p2pc_held_t *h)
{
    while (h) {
        p2pc_held_t *next = h->next;
        wmem_free(p2pc_conn_pool(l->conn), h);
        h = next;
    }
}

void
p2pc_ledger_show_hole(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, const char *format, ...)
{
    va_list ap;
    char *text;

    va_start(ap, format);
    text = wmem_strdup_vprintf(pinfo->pool, format, ap);
    va_end(ap);
    proto_tree_add_expert_format(tree, pinfo, &ei_hole, tvb, 0, 0, "%s", text);
}

static void
ledger_init(void)
{
    made = FALSE;
}

void
p2pc_ledger_register(int proto)
{
    static ei_register_info ei[] = {
        { &ei_hole, { "p2pc.hole", PI_SEQUENCE, PI_WARN,
            "Bytes missing from the capture", EXPFILL } },
    };

    proto_p2pc = proto;
    expert_register_field_array(expert_register_protocol(proto), ei, array_length(ei));
    register_init_routine(ledger_init);
}
