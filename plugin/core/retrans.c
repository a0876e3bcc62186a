/* retrans.c
 * Retransmissions whose bytes differ from those first sent, in the TCP connections p2pc
 * protocols watch (p2pc_retrans_watch()).  Stock TCP flags a retransmission
 * (tcp.analysis.retransmission) whatever its bytes, and, while it analyses sequence numbers (its
 * default), hands it to no subdissector; a protocol using tcp_dissect_pdus() is not handed the
 * middle segments of a message that spans several either.  So the segments are read from the
 * frame itself, in the TCP layer's postdissector (post.h; p2pc.check_retransmissions, on by default): in a TCP frame of
 * a watched connection it finds the IP and TCP headers that carry the frame's addresses and
 * ports, whatever the link layer and without a protocol tree.  Each direction keeps the
 * CRC-32C (ISA-L's crc32_iscsi) of its last SENT_KEPT segments of bytes not seen before, and a
 * segment that covers one of them whole and whose bytes there differ gets
 * p2pc.retransmission_differs over those bytes (docs/libp2p-eth2.md, "Retransmissions").  The
 * first pass decides; each frame keeps what it found for later passes.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/retrans.h"
#include "core/conn.h"
#include "core/frame-data.h"
#include "core/post.h"
#include "core/segment.h"

#include <epan/conversation.h>
#include <epan/expert.h>
#include <epan/proto_data.h>
#include <isa-l/crc.h>

#define SENT_KEPT   64              /* segments per direction a retransmission is checked
                                       against: 768 bytes a direction */

static int proto_p2pc = -1;
static expert_field ei_retrans_differs = EI_INIT;
static p2pc_bool_t pref_check_retransmissions = TRUE;
/* A connection of this capture is watched: until one is, the postdissector returns at once (a
 * capture without p2pc's TCP protocols pays a call and a test a frame). */
static gboolean watching;

/* A segment of bytes not seen before: its sequence number (as in the TCP header), length and
 * CRC-32C. */
typedef struct {
    guint32 seq;
    guint32 len;
    guint32 crc;
} sent_t;

/* One direction (first pass only).  The segments kept are disjoint. */
typedef struct {
    guint32 next_seq;           /* one past the highest byte seen */
    gboolean seq_known;
    guint sent_next;            /* where the next goes in the ring */
    sent_t sent[SENT_KEPT];
} dir_t;

/* A watched TCP connection: direction 0 is from the side whose segment was watched first. */
typedef struct {
    address addr0;
    guint32 port0;
    dir_t dir[2];
} conn_t;

/* The bytes of a frame that differ from those first sent (file scope, per frame). */
typedef struct {
    guint32 at;
    guint32 len;
} differs_t;

static guint32
crc(const guint8 *p, guint32 len)
{
    return crc32_iscsi((unsigned char *)p, (int)len, 0xffffffffU);
}

void
p2pc_retrans_watch(packet_info *pinfo)
{
    conversation_t *conv;
    conn_t *c;

    if (!pref_check_retransmissions || PINFO_FD_VISITED(pinfo) || pinfo->ptype != PT_TCP)
        return;
    conv = find_or_create_conversation(pinfo);
    if (conversation_get_proto_data(conv, proto_p2pc))
        return;
    c = wmem_new0(wmem_file_scope(), conn_t);
    copy_address_wmem(wmem_file_scope(), &c->addr0, &pinfo->src);
    c->port0 = pinfo->srcport;
    conversation_add_proto_data(conv, proto_p2pc, c);
    watching = TRUE;
}

/* The first segment kept that p[0, len) (at sequence number seq) covers whole and whose bytes
 * differ there: its offset in p (*dlen its length), or -1.  The segments kept are disjoint, so
 * the CRCs computed cover at most len bytes. */
static gint32
first_difference(const dir_t *d, guint32 seq, const guint8 *p, guint32 len, guint32 *dlen)
{
    gint32 at = -1;
    for (guint i = 0; i < SENT_KEPT; i++) {
        const sent_t *s = &d->sent[i];
        gint32 rel = (gint32)(s->seq - seq);
        if (!s->len || rel < 0 || (guint32)rel + s->len > len || (at >= 0 && rel > at))
            continue;
        if (crc(p + rel, s->len) != s->crc) {
            at = rel;
            *dlen = s->len;
        }
    }
    return at;
}

static gboolean
overlaps_kept(const dir_t *d, guint32 seq, guint32 len)
{
    for (guint i = 0; i < SENT_KEPT; i++) {
        const sent_t *s = &d->sent[i];
        if (s->len && (gint32)(seq - (s->seq + s->len)) < 0 && (gint32)(s->seq - (seq + len)) < 0)
            return TRUE;
    }
    return FALSE;
}

static void
keep(dir_t *d, guint32 seq, const guint8 *p, guint32 len)
{
    sent_t *s = &d->sent[d->sent_next++ % SENT_KEPT];
    s->seq = seq;
    s->len = len;
    s->crc = crc(p, len);
}

/* A segment of direction d: compared with the segments kept when it starts before the highest
 * byte seen (the offset of the bytes that differ, or -1), and kept: the bytes past the highest
 * seen, or all of it when it fills a hole (it overlaps nothing kept). */
static gint32
check_segment(dir_t *d, guint32 seq, const guint8 *p, guint32 len, guint32 *dlen)
{
    gint32 at = -1;
    guint32 skip = 0;

    if (!d->seq_known) {
        d->next_seq = seq;
        d->seq_known = TRUE;
    }
    if ((gint32)(seq - d->next_seq) < 0) {
        at = first_difference(d, seq, p, len, dlen);
        if ((gint32)(seq + len - d->next_seq) <= 0) {
            if (!overlaps_kept(d, seq, len))
                keep(d, seq, p, len);
            return at;
        }
        skip = d->next_seq - seq;
    }
    keep(d, seq + skip, p + skip, len - skip);
    d->next_seq = seq + len;
    return at;
}

/* First pass: this frame's segment, if it belongs to a watched connection. */
static differs_t *
check_frame(tvbuff_t *frame, packet_info *pinfo)
{
    conversation_t *conv;
    conn_t *c;
    p2pc_segment_t seg;
    differs_t *r;
    guint32 dlen = 0;
    gint32 at;

    /* Most frames carry no bytes (acknowledgements): the cheaper test first. */
    if (!p2pc_frame_segment(pinfo, &seg) || !seg.len)
        return NULL;
    conv = find_conversation_pinfo(pinfo, 0);
    c = conv ? (conn_t *)conversation_get_proto_data(conv, proto_p2pc) : NULL;
    if (!c)
        return NULL;
    at = check_segment(&c->dir[p2pc_conn_dir(&c->addr0, c->port0, pinfo)],
                       seg.seq, tvb_get_ptr(frame, seg.at, seg.len), seg.len, &dlen);
    if (at < 0)
        return NULL;
    r = wmem_new(wmem_file_scope(), differs_t);
    r->at = seg.at + (guint32)at;
    r->len = dlen;
    p_add_proto_data(wmem_file_scope(), pinfo, proto_p2pc, P2PC_KEY_DIFFERS, r);
    return r;
}

static int
dissect_retransmission(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data _U_)
{
    differs_t *r;
    proto_item *ti;

    if (!watching || pinfo->ptype != PT_TCP)
        return 0;
    if (PINFO_FD_VISITED(pinfo))
        r = (differs_t *)p_get_proto_data(wmem_file_scope(), pinfo, proto_p2pc, P2PC_KEY_DIFFERS);
    else
        r = check_frame(tvb, pinfo);
    if (!r)
        return 0;
    ti = proto_tree_add_item(tree, proto_p2pc, tvb, r->at, r->len, ENC_NA);
    proto_item_append_text(ti, ", retransmitted bytes that differ");
    expert_add_info_format(pinfo, ti, &ei_retrans_differs,
        "This retransmission carries bytes that differ from those first sent: the first copy is decoded");
    return tvb_captured_length(tvb);
}

static void
retrans_reset(void)
{
    watching = FALSE;
}

void
p2pc_retrans_register(int proto, module_t *module)
{
    static ei_register_info ei[] = {
        { &ei_retrans_differs, { "p2pc.retransmission_differs", PI_SEQUENCE, PI_WARN,
            "A retransmission carries different bytes than first sent", EXPFILL } },
    };

    proto_p2pc = proto;
    expert_register_field_array(expert_register_protocol(proto), ei, array_length(ei));
    prefs_register_bool_preference(module, "check_retransmissions", "Check retransmitted bytes",
        "Compare the bytes of retransmitted TCP segments of the connections p2pc decodes (Bitcoin, "
        "FISCO, libp2p) with those first sent, and flag those that differ "
        "(p2pc.retransmission_differs). TCP hands retransmissions to no subdissector while it "
        "analyses sequence numbers: p2pc finds them in the frame, behind the IP and TCP headers",
        &pref_check_retransmissions);
    register_init_routine(retrans_reset);
    p2pc_post_add(create_dissector_handle(dissect_retransmission, proto));
}
