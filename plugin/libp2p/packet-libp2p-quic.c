/* packet-libp2p-quic.c
 * libp2p over QUIC (/quic-v1; libp2p/specs quic, tls): TLS 1.3 inside QUIC with the ALPN
 * "libp2p" and the libp2p certificate extension, decrypted by Wireshark's own QUIC dissector
 * from tls.keylog_file (or secrets embedded in the pcapng).  QUIC has no muxer above it: each
 * bidirectional QUIC stream is one libp2p stream, multistream-select first, then identify, ping,
 * gossipsub or eth2 req/resp, as a muxed stream over TCP.
 *
 * QUIC hands each STREAM frame's data to the dissector its "quic.proto" table has for the ALPN
 * (this file's, for "libp2p"), with a quic_stream_info as data.  The two directions of a QUIC
 * stream are a stream's two pipes (engine.h l2p_stream_t, [0]: opener -> other), kept per QUIC connection
 * (the quic_info the QUIC dissector keeps for it) and stream id; the opener is the side the
 * stream id names (RFC 9000 2.1: bit 0 clear, the client).  Each direction is fed its bytes
 * once and in order, by stream offset: bytes already fed (a retransmission) are skipped, and
 * a jump ahead is a hole (l2p_pipe_gap).  Every decision is made on the first pass and kept
 * per frame (l2p_frame_slot), so later passes feed the same.
 *
 * Streams are bounded and freed as a muxer's are (engine.h L2P_MAX_STREAMS, l2p_stream_free):
 * a direction ends with the STREAM frame whose FIN bit is set (RFC 9000 19.8; quic_stream_info
 * carries no FIN in any version up to 4.6, so it is read from the frame's own quic.stream.fin
 * item, which QUIC adds just before it calls this dissector), or abruptly with a RESET_STREAM
 * frame from its sender (RFC 9000 19.4; also its answer to the other side's STOP_SENDING, 3.5),
 * and a stream whose two directions ended leaves the connection's table.  QUIC hands no
 * RESET_STREAM to a dissector: the postdissector reads its quic.rsts.stream_id items, finds the
 * connection by the packet's quic.connection.number (the same fields in 4.0, 4.4 and 4.6) and
 * ends the direction as a FIN does (bytes it held are one truncated message, as after a yamux
 * RST), remembering in the frame which pipes it ended, for later passes.  A frame of a stream
 * that ended (a retransmission that came late), or of a direction that ended, feeds nothing:
 * its bytes were all fed before, or come after the end.  A frame that would open a stream
 * while L2P_MAX_STREAMS are open is counted as undecoded (l2p_stream_refused()).
 *
 * The peer ID comes from the certificate's libp2p extension, which Wireshark's TLS handshake
 * dissector hands to packet-libp2p-tls.c inside QUIC's CRYPTO frames as it does over TCP.
 *
 * A postdissector looks at every QUIC packet of a libp2p connection (the client's ALPN says so:
 * Initial packets are decrypted with no key).  It counts each direction's packets for the
 * header/ACK model (p2pc_quic_packet_add(): the frame's bytes, the STREAM data it carried,
 * whether it held only ACK and PADDING frames), and the bytes of packets Wireshark could not
 * decrypt: with no key, every packet after the Initial ones.  Those bytes are one record per
 * direction at the end of the capture, msg_type `quic (encrypted)` (a tail, record.h), and each
 * such packet gets the expert note naming the key log preference (p2pc.tls_no_keys, as libp2p
 * TLS and FISCO over TLS).  It also reports each datagram's bytes but the STREAM data the
 * streams took to the byte budget (quic-bytes.h; STREAM data they did not take, which
 * dissect_l2p_quic() counts, as retransmitted), those of the datagrams before the ALPN told
 * in the one that showed it.  The fields it asks for make
 * tshark build a (hidden) tree for every frame, QUIC or not: tshark decides that once per file,
 * so it cannot wait for the first QUIC frame.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/p2pc-compat.h"
#include "core/conn.h"
#include "core/prefs.h"
#include "core/record.h"
#include "core/taps.h"
#include "libp2p/engine.h"
#include "libp2p/quic-bytes.h"

#include <epan/conversation.h>
#include <epan/proto_data.h>
#include <epan/expert.h>
#include <epan/dissectors/packet-quic.h>

void proto_register_libp2p_quic(void);
void proto_reg_handoff_libp2p_quic(void);

#define QUIC_FT_PADDING 0x00
#define QUIC_FT_ACK     0x02
#define QUIC_FT_ACK_ECN 0x03

static int proto_l2p_quic = -1;
static int hf_quic_stream = -1;
static int hf_quic_offset = -1;
static int hf_quic_from_opener = -1;
static int hf_quic_skipped = -1;
static gint ett_quic = -1;
static expert_field ei_quic_gap = EI_INIT;
static dissector_handle_t l2p_quic_handle;
/* Fields of Wireshark's QUIC and TLS the postdissector reads. */
static int hf_ws_udp_payload = -1;
static int hf_ws_frame_type = -1;
static int hf_ws_stream_data = -1;
static int hf_ws_undecrypted = -1;
static int hf_ws_alpn = -1;
static int hf_ws_stream_fin = -1;
static int hf_ws_conn_number = -1;
static int hf_ws_reset_stream = -1;

/* One QUIC connection, by the quic_info of Wireshark's QUIC dissector (file scope). */
typedef struct {
    l2p_pipe_t *conn;           /* below every stream: nothing is fed to it */
    wmem_map_t *streams;        /* stream id -> quic_stream_t, while open (first pass) */
    /* The streams that ended, so that a late frame of one opens none.  A peer opens the ids of
     * each type (RFC 9000 2.1: id & 3) in order and they mostly end in order: every stream of
     * type t below index ended_below[t] (index: id >> 2) ended, and `ended` holds the ids above
     * it that did. */
    guint64 ended_below[4];
    wmem_map_t *ended;          /* guint64 id -> itself */
} quic_conn_t;

typedef struct {
    l2p_stream_t s;             /* first (engine.h): its two pipes, [0]: opener -> other */
    guint64 id;
    guint64 next[2];            /* the stream offset each direction expects next */
} quic_stream_t;

/* The per-frame data keys under proto_l2p_quic: kept for later passes (file scope), and this
 * pass's STREAM bytes the streams took (pinfo's pool). */
enum { QUIC_KEY_PACKET, QUIC_KEY_RESETS, QUIC_KEY_TAKEN };

/* What one STREAM frame fed (file scope, per frame: replayed on later passes). */
typedef struct {
    l2p_pipe_t *to;             /* NULL: nothing fed (a retransmission, or refused) */
    guint32 skip;               /* bytes already fed before (a retransmission) */
    guint32 len;                /* bytes fed */
    guint64 gap;                /* bytes missing before these */
    gboolean fin;               /* the frame ends its direction */
    gboolean refused;           /* it would have opened a stream past L2P_MAX_STREAMS */
} quic_feed_t;

/* One UDP conversation carrying QUIC, for the postdissector (file scope). */
typedef struct quic_udp {
    gboolean libp2p;            /* the client offered the ALPN "libp2p" */
    /* Packets before the one whose ClientHello showed the ALPN (a ClientHello may span
     * several Initial packets): counted with it, and their bytes by budget part and direction
     * told in it (quic-bytes.h). */
    guint32 before_frames;
    guint64 before_bytes;
    gint64 before[2][QB_PARTS];
    guint32 claimed_at;         /* that packet's frame */
    address first_addr;         /* the sender of the first packet: direction 0 */
    guint32 first_port;
    guint64 hidden[2];          /* bytes of packets not decrypted, by direction */
    p2pc_record_t last[2];      /* where each direction's last such packet was */
    struct quic_udp *next;
} quic_udp_t;

static wmem_map_t *conns;       /* quic_info -> quic_conn_t */
static wmem_map_t *numbered;    /* quic.connection.number -> quic_conn_t, for the postdissector */
static quic_udp_t *udp_conns;   /* every libp2p one of the file, for the tails */

static void
quic_init(void)
{
    conns = wmem_map_new(wmem_file_scope(), g_direct_hash, g_direct_equal);
    numbered = wmem_map_new(wmem_file_scope(), g_direct_hash, g_direct_equal);
    udp_conns = NULL;
}

static gboolean
stream_ended(const quic_conn_t *c, guint64 id)
{
    return (id >> 2) < c->ended_below[id & 3] || wmem_map_contains(c->ended, &id);
}

/* First pass: stream `id` ended; the ids below the lowest that has not leave `ended`. */
static void
mark_ended(quic_conn_t *c, guint64 id)
{
    wmem_allocator_t *pool = l2p_pipe_pool(c->conn);
    guint t = (guint)(id & 3);
    guint64 *key = wmem_new(pool, guint64);
    *key = id;
    wmem_map_insert(c->ended, key, key);
    for (guint64 low = c->ended_below[t] << 2 | t; (key = (guint64 *)wmem_map_remove(c->ended, &low)) != NULL;
         low += 4) {
        wmem_free(pool, key);
        c->ended_below[t]++;
    }
}

/* Whether the STREAM frame QUIC is handing over ends its direction: the FIN bit of the last
 * quic.stream.fin item of the packet so far, the one of this frame (first pass, which has a
 * tree: the postdissector asks for the field).  Read from the frame type byte the item covers,
 * as ack_only() does (RFC 9000 19.8: bit 0x01). */
static gboolean
frame_fin(proto_tree *tree)
{
    GPtrArray *a = tree ? proto_get_finfo_ptr_array(tree, hf_ws_stream_fin) : NULL;
    field_info *fi;
    if (!a || !a->len)
        return FALSE;
    fi = (field_info *)g_ptr_array_index(a, a->len - 1);
    return (tvb_get_uint8(fi->ds_tvb, fi->start) & 0x01) != 0;
}

/* The QUIC connection of the datagram (the number QUIC gives it, which it adds before the
 * datagram's frames); FALSE without one (no tree). */
static gboolean
conn_number(proto_tree *tree, guint32 *number)
{
    GPtrArray *a = tree ? proto_get_finfo_ptr_array(tree, hf_ws_conn_number) : NULL;
    if (!a || !a->len)
        return FALSE;
    *number = p2pc_field_uint((field_info *)g_ptr_array_index(a, a->len - 1));
    return TRUE;
}

/* First pass: direction d of st ended (FIN or RESET_STREAM, after its pipe was called with
 * fin); a stream both directions have ended leaves the table. */
static void
end_direction(quic_conn_t *c, quic_stream_t *st, int d)
{
    if (!l2p_stream_close(&st->s, d))
        return;
    wmem_map_remove(c->streams, &st->id);
    mark_ended(c, st->id);
    l2p_stream_free(&st->s);
}

/* First pass: the stream a STREAM frame belongs to, opened when new; NULL for one that ended
 * (f says nothing is fed) or would open one past L2P_MAX_STREAMS (f->refused). */
static quic_stream_t *
find_stream(quic_conn_t *c, guint64 id, guint len, quic_feed_t *f)
{
    quic_stream_t *st = (quic_stream_t *)wmem_map_lookup(c->streams, &id);
    if (st)
        return st;
    if (stream_ended(c, id)) {
        f->skip = len;
        return NULL;
    }
    if (wmem_map_size(c->streams) >= L2P_MAX_STREAMS) {
        f->refused = TRUE;
        return NULL;
    }
    st = (quic_stream_t *)l2p_stream_new(c->conn, "quic", id, sizeof(quic_stream_t));
    st->id = id;
    wmem_map_insert(c->streams, &st->id, st);
    return st;
}

/* First pass: what this STREAM frame's data at stream offset `off` adds to its direction. */
static void
plan_feed(quic_stream_t *st, int d, guint64 off, guint len, quic_feed_t *f)
{
    guint64 next = st->next[d];
    f->to = st->s.pipe[d];
    if (off + len <= next || st->s.fin[d]) {
        f->skip = len;          /* all of it fed before, or after the direction's end */
        return;
    }
    if (off > next) {
        f->gap = off - next;
        l2p_pipe_gap(f->to, f->gap);
    } else {
        f->skip = (guint32)(next - off);
    }
    f->len = len - f->skip;
    st->next[d] = off + len;
}

/* Every pass: `n` more bytes of this frame's STREAM data the streams took (fed, or counted as
 * undecoded): the postdissector counts the rest as retransmitted (quic-bytes.h). */
static void
add_taken(packet_info *pinfo, guint n)
{
    guint64 *taken = (guint64 *)p_get_proto_data(pinfo->pool, pinfo, proto_l2p_quic, QUIC_KEY_TAKEN);
    if (!taken) {
        taken = wmem_new0(pinfo->pool, guint64);
        p_add_proto_data(pinfo->pool, pinfo, proto_l2p_quic, QUIC_KEY_TAKEN, taken);
    }
    *taken += n;
}

static int
dissect_l2p_quic(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    quic_stream_info *si = (quic_stream_info *)data;
    guint len = tvb_captured_length(tvb);
    quic_conn_t *c;
    quic_stream_t *st = NULL;
    quic_feed_t *f;
    gboolean replay;
    proto_item *ti;
    proto_tree *t;
    /* RFC 9000 2.1: the client opens the stream ids with bit 0 clear. */
    gboolean from_opener;
    int d;                      /* the stream direction: 0 from its opener */
    guint32 n;

    if (!si)        /* not from QUIC: one stream's bytes, from the start */
        return call_dissector_with_data(l2p_multistream_handle(), tvb, pinfo, tree, NULL);
    from_opener = (gboolean)si->from_server == ((si->stream_id & 1) == 1);
    d = from_opener ? 0 : 1;
    col_set_str(pinfo->cinfo, COL_PROTOCOL, "libp2p");
    c = (quic_conn_t *)wmem_map_lookup(conns, si->quic_info);
    if (!c && !PINFO_FD_VISITED(pinfo)) {
        c = wmem_new0(wmem_file_scope(), quic_conn_t);
        c->conn = l2p_pipe_new(NULL, l2p_multistream_handle(), 0);     /* for the file, as QUIC's */
        c->conn->role = L2P_ROLE_SECURITY;      /* the QUIC client dialed */
        /* In the pipes' pool (engine.c says why), as the streams. */
        c->streams = wmem_map_new(l2p_pipe_pool(c->conn), g_int64_hash, g_int64_equal);
        c->ended = wmem_map_new(l2p_pipe_pool(c->conn), g_int64_hash, g_int64_equal);
        wmem_map_insert(conns, si->quic_info, c);
        if (conn_number(tree, &n))
            wmem_map_insert(numbered, GUINT_TO_POINTER(n), c);
    }
    if (!c)
        return len;
    f = (quic_feed_t *)l2p_frame_slot(pinfo, c->conn, sizeof(quic_feed_t), &replay);
    if (!f) {
        p2pc_replay_missing(tvb, pinfo, tree);
        return len;
    }
    if (!replay) {
        st = find_stream(c, si->stream_id, len, f);
        /* si->offset: the stream offset of this tvb's first byte, which QUIC sets before each
         * call (stream_offset is the STREAM frame's, which differs for data QUIC reassembled).
         * 32 bits, as in Wireshark's QUIC. */
        if (st) {
            plan_feed(st, d, si->offset, len, f);
            f->fin = !st->s.fin[d] && frame_fin(tree);      /* a FIN sent again ends nothing */
            if (p2pc_keep_replay(pinfo))
                st->s.kept = TRUE;      /* this frame's slot points at its pipe */
        }
    }
    ti = proto_tree_add_item(tree, proto_l2p_quic, tvb, 0, -1, ENC_NA);
    proto_item_append_text(ti, ": stream %" G_GUINT64_FORMAT ", %s", si->stream_id,
                           from_opener ? "from its opener" : "to its opener");
    t = proto_item_add_subtree(ti, ett_quic);
    proto_item_set_generated(proto_tree_add_uint64(t, hf_quic_stream, tvb, 0, 0, si->stream_id));
    proto_item_set_generated(proto_tree_add_uint(t, hf_quic_offset, tvb, 0, 0, si->offset));
    proto_item_set_generated(proto_tree_add_boolean(t, hf_quic_from_opener, tvb, 0, 0, from_opener));
    if (f->skip)
        proto_item_set_generated(proto_tree_add_uint(t, hf_quic_skipped, tvb, 0, f->skip, f->skip));
    if (f->gap)
        proto_tree_add_expert_format(t, pinfo, &ei_quic_gap, tvb, 0, 0,
            "%" G_GUINT64_FORMAT " bytes of this stream direction are missing from the capture: "
            "it goes on after them where its framing allows", f->gap);
    if (f->refused)
        l2p_stream_refused(tvb, pinfo, tree);
    add_taken(pinfo, f->refused ? len : f->len);
    if (f->to && (f->len || f->fin))
        l2p_pipe_call(f->to, tvb_new_subset_length(tvb, f->skip, f->len), pinfo, tree, f->fin);
    if (st && f->fin)
        end_direction(c, st, d);
    return len;
}

/* Sum of the lengths of the items of field `hf` in the tree. */
static guint64
field_bytes(proto_tree *tree, int hf, guint *count)
{
    GPtrArray *a = proto_get_finfo_ptr_array(tree, hf);
    guint64 sum = 0;
    *count = a ? a->len : 0;
    for (guint i = 0; i < *count; i++)
        sum += (guint64)((field_info *)g_ptr_array_index(a, i))->length;
    return sum;
}

/* Whether every frame of the packet is ACK or PADDING, at least one an ACK: a QUIC ACK-only
 * packet.  Frame types are varints; the ones that matter here are one byte long. */
static gboolean
ack_only(proto_tree *tree)
{
    GPtrArray *a = proto_get_finfo_ptr_array(tree, hf_ws_frame_type);
    gboolean ack = FALSE;
    for (guint i = 0; a && i < a->len; i++) {
        field_info *fi = (field_info *)g_ptr_array_index(a, i);
        guint8 type = tvb_get_uint8(fi->ds_tvb, fi->start);
        if (type == QUIC_FT_ACK || type == QUIC_FT_ACK_ECN)
            ack = TRUE;
        else if (type != QUIC_FT_PADDING)
            return FALSE;
    }
    return ack;
}

static gboolean
offers_libp2p(proto_tree *tree)
{
    GPtrArray *a = proto_get_finfo_ptr_array(tree, hf_ws_alpn);
    for (guint i = 0; a && i < a->len; i++) {
        field_info *fi = (field_info *)g_ptr_array_index(a, i);
        if (fi->length == 6 && tvb_memeql(fi->ds_tvb, fi->start, (const guint8 *)"libp2p", 6) == 0)
            return TRUE;
    }
    return FALSE;
}

/* What the postdissector saw in one frame of a libp2p QUIC connection (first pass; kept for
 * later passes, which may have no tree: tshark -2 builds none for a postdissector then). */
typedef struct {
    p2pc_quic_packet_t pkt;
    guint64 undecrypted;        /* UDP payload bytes of the frame, when not decrypted */
    l2p_quic_bytes_t *bytes;    /* its bytes by budget part, but the STREAM data; NULL: none
                                   (an ICMP error quoting a datagram: not the connection's) */
} quic_pkt_slot_t;

/* The stream directions a frame's RESET_STREAM frames ended (first pass; kept for later passes
 * of the frames that have some). */
typedef struct {
    guint n;
    l2p_pipe_t *pipe[];
} quic_resets_t;

/* Every pass: each stream direction r names is called with fin, as a FIN would be (what its
 * pipe held is one truncated message). */
static void
call_resets(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, const quic_resets_t *r)
{
    for (guint i = 0; r && i < r->n; i++)
        l2p_pipe_call(r->pipe[i], tvb_new_subset_length(tvb, 0, 0), pinfo, tree, TRUE);
}

/* First pass: the stream directions the packet's RESET_STREAM frames end, sent by the client
 * (d 0) or the server: called as call_resets() does, ended, and kept for later passes.  A
 * stream not open (it ended, or the frame resets one that sent nothing yet) or a direction
 * already ended is left alone. */
static void
read_resets(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, int d)
{
    GPtrArray *a = proto_get_finfo_ptr_array(tree, hf_ws_reset_stream);
    quic_conn_t *c;
    quic_resets_t *r;
    size_t size;
    guint32 n;

    if (!a || !a->len || !conn_number(tree, &n))
        return;
    c = (quic_conn_t *)wmem_map_lookup(numbered, GUINT_TO_POINTER(n));
    if (!c)
        return;
    r = (quic_resets_t *)wmem_alloc0(pinfo->pool, sizeof(quic_resets_t) + a->len * sizeof(l2p_pipe_t *));
    for (guint i = 0; i < a->len; i++) {
        field_info *fi = (field_info *)g_ptr_array_index(a, i);
        guint64 id;
        quic_stream_t *st;
        int sd;
        if (!tvb_get_varint(fi->ds_tvb, fi->start, fi->length, &id, ENC_VARINT_QUIC) ||
            !(st = (quic_stream_t *)wmem_map_lookup(c->streams, &id)))
            continue;
        sd = (d == 1) == ((id & 1) == 1) ? 0 : 1;      /* from the opener, as dissect_l2p_quic() */
        if (st->s.fin[sd])
            continue;
        r->pipe[r->n++] = st->s.pipe[sd];
        if (p2pc_keep_replay(pinfo))
            st->s.kept = TRUE;
        l2p_pipe_call(st->s.pipe[sd], tvb_new_subset_length(tvb, 0, 0), pinfo, tree, TRUE);
        end_direction(c, st, sd);
    }
    size = sizeof(quic_resets_t) + r->n * sizeof(l2p_pipe_t *);
    if (r->n && p2pc_keep_replay(pinfo)) {
        p_add_proto_data(wmem_file_scope(), pinfo, proto_l2p_quic, QUIC_KEY_RESETS,
                         wmem_memdup(wmem_file_scope(), r, size));
        p2pc_replay_charge(pinfo, size);
    }
}

/* Whether the frame is an ICMP error quoting a datagram of the connection (sent by a router or
 * the other host, not by the connection's sender). */
static gboolean
quoted(packet_info *pinfo)
{
    return proto_is_frame_protocol(pinfo->layers, "icmp") || proto_is_frame_protocol(pinfo->layers, "icmpv6");
}

/* Whether a packet of the datagram was not decrypted. */
static gboolean
undecrypted(proto_tree *tree)
{
    GPtrArray *a = proto_get_finfo_ptr_array(tree, hf_ws_undecrypted);
    return a && a->len;
}

/* First pass: the frame's QUIC packets, read from the tree. */
static quic_pkt_slot_t *
read_packet(packet_info *pinfo, proto_tree *tree, quic_udp_t *u, int d)
{
    quic_pkt_slot_t *s = wmem_new0(p2pc_replay_scope(pinfo), quic_pkt_slot_t);
    guint n;
    guint64 udp_payload = field_bytes(tree, hf_ws_udp_payload, &n);
    gint64 parts[QB_PARTS] = { 0 };

    if (undecrypted(tree)) {
        s->undecrypted = udp_payload;
        u->hidden[d] += udp_payload;
        p2pc_where_keep(wmem_file_scope(), pinfo, &u->last[d]);
    }
    s->pkt.frame_len = pinfo->fd->pkt_len;
    s->pkt.before_frames = u->before_frames;
    s->pkt.before_bytes = u->before_bytes;
    u->before_frames = 0;
    u->before_bytes = 0;
    s->pkt.stream_bytes = (guint32)field_bytes(tree, hf_ws_stream_data, &n);
    s->pkt.ack_only = !s->pkt.stream_bytes && ack_only(tree);
    if (!quoted(pinfo)) {
        l2p_quic_bytes_read(pinfo, tree, !s->undecrypted, FALSE, parts);
        s->bytes = l2p_quic_bytes_keep(p2pc_replay_scope(pinfo), parts);
    }
    if (p2pc_keep_replay(pinfo)) {
        p_add_proto_data(wmem_file_scope(), pinfo, proto_l2p_quic, QUIC_KEY_PACKET, s);
        p2pc_replay_charge(pinfo, sizeof(*s) + (s->bytes ? sizeof(*s->bytes) + s->bytes->n * sizeof(s->bytes->item[0]) : 0));
    }
    return s;
}

/* Every pass: the frame's bytes but the STREAM data the streams took, to the budget (those of
 * the packets before it too, in the packet that showed the ALPN); STREAM data they did not
 * take, retransmitted. */
static void
report_bytes(packet_info *pinfo, const quic_udp_t *u, const quic_pkt_slot_t *s, int d)
{
    const guint64 *taken = (const guint64 *)p_get_proto_data(pinfo->pool, pinfo, proto_l2p_quic, QUIC_KEY_TAKEN);

    if (!s->bytes)
        return;
    l2p_quic_bytes_report_kept(pinfo, s->bytes);
    if (pinfo->num == u->claimed_at) {
        l2p_quic_bytes_report(pinfo, u->before[d], FALSE);
        l2p_quic_bytes_report(pinfo, u->before[1 - d], TRUE);
    }
    if (!s->undecrypted)
        l2p_quic_bytes_report_retransmitted(pinfo, (gint64)s->pkt.stream_bytes - (gint64)(taken ? *taken : 0));
}

static int
dissect_quic_packet(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data _U_)
{
    conversation_t *conv;
    quic_udp_t *u;
    quic_pkt_slot_t *s;
    int d;

    if (pinfo->ptype != PT_UDP || !proto_is_frame_protocol(pinfo->layers, "quic"))
        return 0;
    /* The UDP conversation itself: from 4.4 on, QUIC files its packets under a conversation of
     * its own connection (by connection ID), which find_conversation_pinfo() would give. */
    conv = find_conversation(pinfo->num, &pinfo->src, &pinfo->dst, CONVERSATION_UDP, pinfo->srcport,
                             pinfo->destport, 0);
    if (!conv)
        return 0;
    u = (quic_udp_t *)conversation_get_proto_data(conv, proto_l2p_quic);
    if (PINFO_FD_VISITED(pinfo)) {
        s = (quic_pkt_slot_t *)p_get_proto_data(wmem_file_scope(), pinfo, proto_l2p_quic, QUIC_KEY_PACKET);
        call_resets(tvb, pinfo, tree, (const quic_resets_t *)p_get_proto_data(wmem_file_scope(), pinfo,
                                                                              proto_l2p_quic, QUIC_KEY_RESETS));
    } else {
        if (!tree)
            return 0;
        if (!u) {
            u = wmem_new0(wmem_file_scope(), quic_udp_t);
            copy_address_wmem(wmem_file_scope(), &u->first_addr, &pinfo->src);
            u->first_port = pinfo->srcport;
            conversation_add_proto_data(conv, proto_l2p_quic, u);
        }
        d = p2pc_conn_dir(&u->first_addr, u->first_port, pinfo);
        if (!u->libp2p && !offers_libp2p(tree)) {
            u->before_frames++;
            u->before_bytes += pinfo->fd->pkt_len;
            if (!quoted(pinfo))
                l2p_quic_bytes_read(pinfo, tree, !undecrypted(tree), TRUE, u->before[d]);
            return 0;
        }
        if (!u->libp2p) {
            u->libp2p = TRUE;
            u->claimed_at = pinfo->num;
            u->next = udp_conns;
            udp_conns = u;
        }
        s = read_packet(pinfo, tree, u, d);
        read_resets(tvb, pinfo, tree, d);
    }
    if (!s)
        return 0;
    report_bytes(pinfo, u, s, p2pc_conn_dir(&u->first_addr, u->first_port, pinfo));
    if (s->undecrypted) {
        proto_item *ti = proto_tree_add_item(tree, proto_l2p_quic, tvb, 0, 0, ENC_NA);
        proto_item_append_text(ti, ": not decrypted, %" G_GUINT64_FORMAT " bytes", s->undecrypted);
        p2pc_tls_no_keys(pinfo, ti);
    }
    p2pc_quic_packet_add(pinfo, &s->pkt);
    return 0;
}

/* At the end of the capture: each direction's bytes that were not decrypted, one record. */
static void
quic_tails(p2pc_tail_emit_fn emit, void *ud, gboolean at_reset _U_)
{
    for (const quic_udp_t *u = udp_conns; u; u = u->next)
        for (int d = 0; d < 2; d++)
            p2pc_tail_record(emit, ud, &u->last[d], "libp2p", "quic (encrypted)", "none", u->hidden[d], NULL);
}

void
proto_register_libp2p_quic(void)
{
    static hf_register_info hf[] = {
        { &hf_quic_stream, { "QUIC stream", "libp2p_quic.stream", FT_UINT64, BASE_DEC, NULL, 0x0,
            "The QUIC stream id: one libp2p stream", HFILL } },
        { &hf_quic_offset, { "Stream offset", "libp2p_quic.offset", FT_UINT32, BASE_DEC, NULL, 0x0,
            "Offset in the stream of these bytes", HFILL } },
        { &hf_quic_from_opener, { "From the opener", "libp2p_quic.from_opener", FT_BOOLEAN, BASE_NONE, NULL, 0x0,
            "Sent by the side that opened the stream (the client for stream ids with bit 0 clear)", HFILL } },
        { &hf_quic_skipped, { "Bytes fed before", "libp2p_quic.skipped", FT_UINT32, BASE_DEC, NULL, 0x0,
            "Bytes of this STREAM frame the stream direction had already (a retransmission)", HFILL } },
    };
    static gint *ett[] = { &ett_quic };
    static ei_register_info ei[] = {
        { &ei_quic_gap, { "libp2p_quic.gap", PI_SEQUENCE, PI_WARN,
            "Bytes of the stream direction are missing from the capture", EXPFILL } },
    };
    expert_module_t *expert;

    proto_l2p_quic = proto_register_protocol("libp2p QUIC", "libp2p QUIC", "libp2p_quic");
    proto_register_field_array(proto_l2p_quic, hf, array_length(hf));
    proto_register_subtree_array(ett, array_length(ett));
    expert = expert_register_protocol(proto_l2p_quic);
    expert_register_field_array(expert, ei, array_length(ei));
    l2p_quic_handle = register_dissector("libp2p_quic", dissect_l2p_quic, proto_l2p_quic);
    register_init_routine(quic_init);
    p2pc_tail_register(quic_tails);
}

void
proto_reg_handoff_libp2p_quic(void)
{
    dissector_handle_t post = create_dissector_handle(dissect_quic_packet, proto_l2p_quic);
    GArray *wanted = g_array_new(FALSE, FALSE, (guint)sizeof(int));

    dissector_add_string("quic.proto", "libp2p", l2p_quic_handle);
    hf_ws_udp_payload = proto_registrar_get_id_byname("udp.payload");
    hf_ws_frame_type = proto_registrar_get_id_byname("quic.frame_type");
    hf_ws_stream_data = proto_registrar_get_id_byname("quic.stream_data");
    hf_ws_undecrypted = proto_registrar_get_id_byname("quic.remaining_payload");
    hf_ws_alpn = proto_registrar_get_id_byname("tls.handshake.extensions_alpn_str");
    hf_ws_stream_fin = proto_registrar_get_id_byname("quic.stream.fin");
    hf_ws_conn_number = proto_registrar_get_id_byname("quic.connection.number");
    hf_ws_reset_stream = proto_registrar_get_id_byname("quic.rsts.stream_id");
    g_array_append_val(wanted, hf_ws_udp_payload);
    g_array_append_val(wanted, hf_ws_frame_type);
    g_array_append_val(wanted, hf_ws_stream_data);
    g_array_append_val(wanted, hf_ws_undecrypted);
    g_array_append_val(wanted, hf_ws_alpn);
    g_array_append_val(wanted, hf_ws_stream_fin);
    g_array_append_val(wanted, hf_ws_conn_number);
    g_array_append_val(wanted, hf_ws_reset_stream);
    l2p_quic_bytes_handoff(wanted);
    register_postdissector(post);
    set_postdissector_wanted_hfids(post, wanted);
}
