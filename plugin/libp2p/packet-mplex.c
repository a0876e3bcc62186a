/* packet-mplex.c
 * /mplex/6.7.0 frames (libp2p/specs mplex): uvarint(stream_id << 3 | flag) || uvarint(len) ||
 * data; flags 0 NewStream, 1 MessageReceiver, 2 MessageInitiator, 3 CloseReceiver,
 * 4 CloseInitiator, 5 ResetReceiver, 6 ResetInitiator.  Both sides number their streams
 * independently, so a stream is its id plus the side that opened it: the even flags are sent
 * by the stream's initiator, the odd ones by its receiver.
 *
 * A layer under multistream-select ("/mplex/6.7.0" in "multistream.protocol"): called with a
 * connection direction's pipe, it cuts frames out of it and feeds each message frame's data to
 * its stream's pipe (per direction), where multistream-select negotiates the stream's protocol
 * and that protocol's dissector reassembles its messages.  Close ends the sender's direction,
 * Reset both; a stream both have ended leaves the connection's table and is freed (engine.h,
 * l2p_stream_free), and a connection holds at most L2P_MAX_STREAMS open ones.
 *
 * Conformance checks (core/spec.h, p2pc.spec.mplex.*): flag 7, where the framing breaks (the
 * engine raises it on the undecoded bytes); NewStream for a stream that is open; a message on a
 * stream its opener never opened (an id above every one it opened: a stream reset, then
 * written to by the other side before it saw the Reset, is not one) or on a direction its sender
 * closed; Close or Reset with data.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/p2pc-compat.h"
#include "core/spec.h"
#include "libp2p/engine.h"

void proto_register_mplex(void);
void proto_reg_handoff_mplex(void);

#define MPLEX_MAX_MSG (1024 * 1024)     /* go-mplex and the spec: 1 MiB per frame */

static int proto_mplex = -1;
static int hf_mplex_stream = -1;
static int hf_mplex_flag = -1;
static int hf_mplex_length = -1;
static int hf_mplex_data = -1;
static gint ett_mplex = -1;
static dissector_handle_t mplex_handle;

typedef struct {
    wmem_map_t *streams;    /* &key -> mplex_stream_t, while open (first pass) */
    guint64 next_id[2];     /* above every id the dialer (0) / listener (1) opened (NewStream) */
} mplex_conn_t;

typedef struct {
    l2p_stream_t s;
    guint64 key;            /* id * 2 + opener_is_listener */
} mplex_stream_t;

static const value_string mplex_flag_vals[] = {
    { 0, "NewStream" }, { 1, "MessageReceiver" }, { 2, "MessageInitiator" },
    { 3, "CloseReceiver" }, { 4, "CloseInitiator" }, { 5, "ResetReceiver" }, { 6, "ResetInitiator" },
    { 0, NULL }
};

static proto_item *draw_mplex(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree);

/* A frame's header: uvarint(stream id << 3 | flag), uvarint(data length), u1 and u2 bytes long.
 * FALSE when the tvb does not hold both. */
static gboolean
read_header(tvbuff_t *tvb, guint64 *hdr, guint64 *dlen, guint *u1, guint *u2)
{
    guint len = tvb_captured_length(tvb);
    *u1 = tvb_get_varint(tvb, 0, MIN(FT_VARINT_MAX_LEN, len), hdr, ENC_VARINT_PROTOBUF);
    if (!*u1)
        return FALSE;
    *u2 = tvb_get_varint(tvb, *u1, MIN(FT_VARINT_MAX_LEN, len - *u1), dlen, ENC_VARINT_PROTOBUF);
    return *u2 != 0;
}

static mplex_conn_t *
mplex_conn(l2p_pipe_t *pipe)
{
    mplex_conn_t *mc = (mplex_conn_t *)pipe->state;
    if (!mc && pipe->peer && pipe->peer->state)
        mc = (mplex_conn_t *)pipe->peer->state;
    if (!mc) {
        mc = wmem_new0(l2p_pipe_pool(pipe), mplex_conn_t);
        mc->streams = wmem_map_new(l2p_pipe_pool(pipe), g_int64_hash, g_int64_equal);
    }
    pipe->state = mc;
    return mc;
}

/* First pass: the stream a frame belongs to, opened by NewStream or by a message of a stream
 * whose opening was not captured (Close and Reset open none: they may come after it ended).
 * Remembered in the PDU (l2p_stream_mark()) when the frame feeds or closes it, or would open
 * one past L2P_MAX_STREAMS. */
static void
find_pdu_stream(l2p_pipe_t *conn, packet_info *pinfo, mplex_conn_t *mc, l2p_pdu_t *pdu, guint64 id,
                gboolean opener_is_dialer, guint flag, guint64 dlen)
{
    guint64 key = id * 2 + (opener_is_dialer ? 0 : 1);
    mplex_stream_t *ms = (mplex_stream_t *)wmem_map_lookup(mc->streams, &key);
    if (!ms && flag <= 2) {
        if (wmem_map_size(mc->streams) >= L2P_MAX_STREAMS) {
            l2p_stream_mark(pinfo, pdu, NULL);
            return;
        }
        ms = (mplex_stream_t *)l2p_stream_new(conn, "mplex", id, sizeof(mplex_stream_t));
        ms->key = key;
        wmem_map_insert(mc->streams, &ms->key, ms);
    }
    if (ms && (flag > 2 || (flag > 0 && dlen)))
        l2p_stream_mark(pinfo, pdu, &ms->s);
}

static gint64
mplex_len(l2p_pipe_t *pipe, const guint8 *p, guint avail)
{
    guint64 hdr, dlen;
    guint u1, u2;
    if (!p2pc_uvarint(p, avail, &hdr, &u1))
        return avail >= 9 ? -1 : 0;
    if (!p2pc_uvarint(p + u1, avail - u1, &dlen, &u2))
        return avail - u1 >= 9 ? -1 : 0;
    if ((hdr & 7) == 7)
        pipe->broke = P2PC_SPEC_BIT(P2PC_SPEC_MPLEX_FLAG);
    if ((hdr & 7) == 7 || dlen > MPLEX_MAX_MSG)
        return -1;
    return u1 + u2 + (gint64)dlen;
}

/* First pass, before the frame's effect on its stream: the rules it breaks (P2PC_SPEC_BIT()s). */
static guint64
frame_checks(mplex_conn_t *mc, guint64 id, gboolean opener_is_dialer, gboolean from_opener, guint flag,
             guint64 dlen)
{
    guint64 key = id * 2 + (opener_is_dialer ? 0 : 1), *next = &mc->next_id[opener_is_dialer ? 0 : 1];
    const mplex_stream_t *ms = (const mplex_stream_t *)wmem_map_lookup(mc->streams, &key);
    guint64 broke = 0;

    if (flag == 0) {
        if (ms)
            broke |= P2PC_SPEC_BIT(P2PC_SPEC_MPLEX_NEW_STREAM);
        *next = MAX(*next, id + 1);
    } else if (flag <= 2 && (ms ? ms->s.fin[from_opener ? 0 : 1] : id >= *next)) {
        broke |= P2PC_SPEC_BIT(P2PC_SPEC_MPLEX_STREAM);
    } else if (flag > 2 && dlen) {
        broke |= P2PC_SPEC_BIT(P2PC_SPEC_MPLEX_CLOSE_BODY);
    }
    return broke;
}

static void
mplex_pdu(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, l2p_pipe_t *pipe, l2p_pdu_t *pdu)
{
    mplex_conn_t *mc = mplex_conn(pipe);
    guint u1, u2;
    guint64 hdr, dlen, id;
    guint flag;
    gboolean from_dialer = pipe->dir == 0, opener_is_dialer, from_opener, refused;
    l2p_stream_t *s;
    proto_item *ti;
    gboolean first = !PINFO_FD_VISITED(pinfo);

    col_set_str(pinfo->cinfo, COL_PROTOCOL, "mplex");
    ti = draw_mplex(tvb, pinfo, tree);
    if (pdu->truncated || !read_header(tvb, &hdr, &dlen, &u1, &u2)) {
        p2pc_budget_add(pinfo, "libp2p", P2PC_LAYER_MUXER, "truncated", tvb_captured_length(tvb));
        return;
    }
    flag = (guint)(hdr & 7);
    id = hdr >> 3;
    /* Even flags come from the stream's initiator, odd ones from its receiver. */
    from_opener = (flag & 1) == 0;
    opener_is_dialer = from_opener ? from_dialer : !from_dialer;
    if (first) {
        pdu->spec = frame_checks(mc, id, opener_is_dialer, from_opener, flag, dlen);
        find_pdu_stream(pipe, pinfo, mc, pdu, id, opener_is_dialer, flag, dlen);
    }
    if (pdu->spec & P2PC_SPEC_BIT(P2PC_SPEC_MPLEX_NEW_STREAM))
        p2pc_spec(pinfo, ti, P2PC_SPEC_MPLEX_NEW_STREAM, "NewStream for stream %" G_GUINT64_FORMAT
                  ", open since an earlier NewStream", id);
    if (pdu->spec & P2PC_SPEC_BIT(P2PC_SPEC_MPLEX_STREAM))
        p2pc_spec(pinfo, ti, P2PC_SPEC_MPLEX_STREAM, "A message on stream %" G_GUINT64_FORMAT
                  " that its sender never opened or already closed", id);
    if (pdu->spec & P2PC_SPEC_BIT(P2PC_SPEC_MPLEX_CLOSE_BODY))
        p2pc_spec(pinfo, ti, P2PC_SPEC_MPLEX_CLOSE_BODY, "%s with %" G_GUINT64_FORMAT " bytes of data",
                  val_to_str_const(flag, mplex_flag_vals, "?"), dlen);
    s = l2p_stream_of(pdu, &refused);
    if (refused)
        l2p_stream_refused(tvb, pinfo, tree);
    /* The budget (core/budget.h): a Message's header goes with its data to the stream (its
     * overhead); any other frame is the muxer's own, all its bytes. */
    if (!refused)
        p2pc_budget_add(pinfo, "libp2p", P2PC_LAYER_MUXER,
                        s && flag <= 2 ? L2P_KIND_DATA_HEADER : flag == 0 ? "open" : flag <= 2 ? "no_stream" : "close",
                        s && flag <= 2 ? u1 + u2 : tvb_captured_length(tvb));
    if (!s)
        return;     /* NewStream (the data is the stream's name), or an empty message */
    switch (flag) {
    case 1:
    case 2:     /* Message */
        if (first)
            s->pipe[from_opener ? 0 : 1]->overhead += u1 + u2;
        l2p_pipe_call(s->pipe[from_opener ? 0 : 1], tvb_new_subset_remaining(tvb, u1 + u2), pinfo, tree, FALSE);
        break;
    case 3:
    case 4:     /* Close: the sender will send no more */
        l2p_pipe_call(s->pipe[from_opener ? 0 : 1], tvb_new_subset_length(tvb, u1 + u2, 0), pinfo, tree, TRUE);
        break;
    default:    /* Reset: both directions end */
        l2p_pipe_call(s->pipe[0], tvb_new_subset_length(tvb, u1 + u2, 0), pinfo, tree, TRUE);
        l2p_pipe_call(s->pipe[1], tvb_new_subset_length(tvb, u1 + u2, 0), pinfo, tree, TRUE);
        break;
    }
    /* A stream both directions have ended leaves the table. */
    if (first && flag > 2 && l2p_stream_close(s, flag > 4 ? -1 : from_opener ? 0 : 1)) {
        wmem_map_remove(mc->streams, &((mplex_stream_t *)s)->key);
        l2p_stream_free(s);
    }
}

static int
dissect_mplex(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    l2p_pipe_t *pipe = (l2p_pipe_t *)data;
    if (!pipe) {
        draw_mplex(tvb, pinfo, tree);
        return tvb_captured_length(tvb);
    }
    l2p_dissect_pdus(tvb, pinfo, tree, pipe, mplex_len, mplex_pdu);
    return tvb_captured_length(tvb);
}

/* The frame's tree item (NULL without a tree). */
static proto_item *
draw_mplex(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree)
{
    proto_item *ti = proto_tree_add_item(tree, proto_mplex, tvb, 0, -1, ENC_NA);
    proto_tree *t = proto_item_add_subtree(ti, ett_mplex);
    guint u1, u2;
    guint64 hdr, dlen;

    if (!read_header(tvb, &hdr, &dlen, &u1, &u2))
        return ti;
    p2pc_spec_varint(tvb, 0, u1, pinfo, proto_tree_add_uint64(t, hf_mplex_stream, tvb, 0, u1, hdr >> 3));
    proto_tree_add_uint(t, hf_mplex_flag, tvb, 0, u1, (guint32)(hdr & 7));
    p2pc_spec_varint(tvb, u1, u2, pinfo, proto_tree_add_uint64(t, hf_mplex_length, tvb, u1, u2, dlen));
    if (dlen)
        proto_tree_add_item(t, hf_mplex_data, tvb, u1 + u2, -1, ENC_NA);
    proto_item_append_text(ti, ": %s, stream %" G_GUINT64_FORMAT,
                           val_to_str_const((guint32)(hdr & 7), mplex_flag_vals, "?"), hdr >> 3);
    if ((hdr & 7) == 0 || (hdr & 7) > 2)    /* messages are named by the application data */
        col_append_sep_fstr(pinfo->cinfo, COL_INFO, ", ", "mplex %s stream %" G_GUINT64_FORMAT,
                            val_to_str_const((guint32)(hdr & 7), mplex_flag_vals, "?"), hdr >> 3);
    return ti;
}

void
proto_register_mplex(void)
{
    static hf_register_info hf[] = {
        { &hf_mplex_stream, { "Stream ID", "mplex.stream", FT_UINT64, BASE_DEC, NULL, 0x0,
            "The stream this frame belongs to (with the opener, from the flag, it names the stream)", HFILL } },
        { &hf_mplex_flag, { "Flag", "mplex.flag", FT_UINT32, BASE_DEC, VALS(mplex_flag_vals), 0x0,
            "Frame type; even flags come from the stream's initiator, odd ones from its receiver", HFILL } },
        { &hf_mplex_length, { "Length", "mplex.length", FT_UINT64, BASE_DEC, NULL, 0x0,
            "Length of the frame's data", HFILL } },
        { &hf_mplex_data, { "Data", "mplex.data", FT_BYTES, BASE_NONE, NULL, 0x0,
            "The frame's data: the stream name (NewStream) or the stream's bytes (Message)", HFILL } },
    };
    static gint *ett[] = { &ett_mplex };

    proto_mplex = proto_register_protocol("mplex 6.7.0", "mplex", "mplex");
    proto_register_field_array(proto_mplex, hf, array_length(hf));
    proto_register_subtree_array(ett, array_length(ett));
    mplex_handle = register_dissector("mplex", dissect_mplex, proto_mplex);
}

void
proto_reg_handoff_mplex(void)
{
    dissector_add_string("multistream.protocol", "/mplex/6.7.0", mplex_handle);
    dissector_add_for_decode_as("multistream.protocol", mplex_handle);
}
