/* retrans.c
 * Retransmissions whose bytes differ from those first sent, in every TCP connection the ledger
 * holds (ledger.h: a p2pc protocol was handed its bytes, or watches it).  Stock TCP flags a
 * retransmission (tcp.analysis.retransmission) whatever its bytes, and, while it analyses
 * sequence numbers (its default), hands it to no subdissector; a protocol using
 * tcp_dissect_pdus() is not handed the middle segments of a message that spans several either.
 * So each segment is taken from the frame itself, by the ledger (segment.h), in this part of the
 * TCP layer's postdissector (post.h; p2pc.check_retransmissions, on by default).  Each direction
 * keeps, in its connection's slot (conn.h) and the ledger's numbers, the CRC-32C (ISA-L's
 * crc32_iscsi) of its last SENT_KEPT segments of bytes not seen before: those past the highest
 * byte the ledger had captured before the segment (p2pc_ledger_frame_seen()), or all of one that
 * fills a hole.  A segment that starts before that mark, covers one of them whole and whose
 * bytes there differ gets p2pc.retransmission_differs over those bytes (docs/libp2p-eth2.md,
 * "Retransmissions").  The first pass decides; each frame keeps what it found for later passes.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/retrans.h"
#include "core/conn.h"
#include "core/frame-data.h"
#include "core/ledger.h"
#include "core/post.h"

#include <epan/expert.h>
#include <epan/proto_data.h>
#include <isa-l/crc.h>

#define SENT_KEPT   64              /* segments per direction a retransmission is checked
                                       against: 768 bytes a direction */

static int proto_p2pc = -1;
static expert_field ei_retrans_differs = EI_INIT;
static p2pc_bool_t pref_check_retransmissions = TRUE;

/* A segment of bytes not seen before: its sequence number (the ledger's), length and CRC-32C. */
typedef struct {
    guint32 seq;
    guint32 len;
    guint32 crc;
} sent_t;

/* One direction's segments kept, disjoint (first pass only). */
typedef struct {
    guint next;                 /* where the next goes in the ring */
    sent_t sent[SENT_KEPT];
} ring_t;

/* A connection's, its directions numbered as its ledger's (P2PC_SLOT_RETRANS). */
typedef struct {
    ring_t dir[2];
} rings_t;

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

/* The first segment kept that p[0, len) (at sequence number seq) covers whole and whose bytes
 * differ there: its offset in p (*dlen its length), or -1.  The segments kept are disjoint, so
 * the CRCs computed cover at most len bytes. */
static gint32
first_difference(const ring_t *r, guint32 seq, const guint8 *p, guint32 len, guint32 *dlen)
{
    gint32 at = -1;
    for (guint i = 0; i < SENT_KEPT; i++) {
        const sent_t *s = &r->sent[i];
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
overlaps_kept(const ring_t *r, guint32 seq, guint32 len)
{
    for (guint i = 0; i < SENT_KEPT; i++) {
        const sent_t *s = &r->sent[i];
        if (s->len && P2PC_SEQ_LT(seq, s->seq + s->len) && P2PC_SEQ_LT(s->seq, seq + len))
            return TRUE;
    }
    return FALSE;
}

static void
keep(ring_t *r, guint32 seq, const guint8 *p, guint32 len)
{
    sent_t *s = &r->sent[r->next++ % SENT_KEPT];
    s->seq = seq;
    s->len = len;
    s->crc = crc(p, len);
}

/* A segment of a direction whose captured bytes ended at `seen` before it: compared with the
 * segments kept when it starts before `seen` (the offset of the bytes that differ, or -1), and
 * kept: the bytes past `seen`, or all of it when it fills a hole (it overlaps nothing kept). */
static gint32
check_segment(ring_t *r, guint32 seen, guint32 seq, const guint8 *p, guint32 len, guint32 *dlen)
{
    gint32 at = -1;
    guint32 skip = 0;

    if (P2PC_SEQ_LT(seq, seen)) {
        at = first_difference(r, seq, p, len, dlen);
        if (!P2PC_SEQ_GT(seq + len, seen)) {
            if (!overlaps_kept(r, seq, len))
                keep(r, seq, p, len);
            return at;
        }
        skip = seen - seq;
    }
    keep(r, seq + skip, p + skip, len - skip);
    return at;
}

/* First pass: this frame's segment, if the ledger noted one. */
static differs_t *
check_frame(tvbuff_t *frame, packet_info *pinfo)
{
    /* The ledger notes the frame whatever the preference: what it holds is the same. */
    p2pc_tcp_t *l = p2pc_ledger_find(pinfo);
    rings_t *rings;
    differs_t *r;
    guint32 seen, at, len, seq, dlen = 0;
    gint32 diff;

    if (!l || !pref_check_retransmissions || !p2pc_ledger_frame_seen(pinfo, &seen) ||
        !p2pc_ledger_frame_bytes(l, pinfo, &at, &len, &seq))
        return NULL;
    rings = (rings_t *)p2pc_conn_slot(l->conn, P2PC_SLOT_RETRANS);
    if (!rings) {
        rings = wmem_new0(p2pc_conn_pool(l->conn), rings_t);
        p2pc_conn_set_slot(l->conn, P2PC_SLOT_RETRANS, rings);
    }
    diff = check_segment(&rings->dir[p2pc_ledger_dir(l, pinfo)], seen, seq, tvb_get_ptr(frame, at, len), len,
                         &dlen);
    if (diff < 0)
        return NULL;
    r = wmem_new(wmem_file_scope(), differs_t);
    r->at = at + (guint32)diff;
    r->len = dlen;
    p_add_proto_data(wmem_file_scope(), pinfo, proto_p2pc, P2PC_KEY_DIFFERS, r);
    return r;
}

static int
dissect_retransmission(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data _U_)
{
    differs_t *r;
    proto_item *ti;

    if (pinfo->ptype != PT_TCP)
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
    p2pc_post_add(create_dissector_handle(dissect_retransmission, proto));
}
