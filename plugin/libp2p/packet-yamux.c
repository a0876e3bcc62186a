/* packet-yamux.c
 * /yamux/1.0.0 frames (libp2p/specs yamux, hashicorp/yamux spec.md): a 12-byte big-endian
 * header version u8 (0) | type u8 (0 data, 1 window update, 2 ping, 3 go away) | flags u16
 * (SYN 1, ACK 2, FIN 4, RST 8) | stream id u32 | length u32, then `length` bytes for data
 * frames.  The dialer opens odd stream ids, the listener even ones.
 *
 * A layer under multistream-select ("/yamux/1.0.0" in "multistream.protocol"): called with a
 * connection direction's pipe, it cuts frames out of it and feeds each data frame's bytes to
 * its stream's pipe (per direction; keyed by stream id, whose parity says who opened it), where
 * multistream-select negotiates the stream's protocol and that protocol's dissector
 * reassembles its messages.  FIN closes the sender's direction of the stream, RST both; a stream
 * both have ended leaves the connection's table and is freed (engine.h, l2p_stream_free), and
 * a connection holds at most L2P_MAX_STREAMS open ones.
 *
 * Flow control bounds what a frame may claim: a stream starts with a 256 KiB window each way,
 * the receiver's Window Update frames widen it, and a sender's Data frames use it up.  A Data
 * frame longer than its stream's window (of a stream whose opening was captured) cannot be
 * real: the direction's framing is broken there (shown as undecoded bytes, with an expert
 * item and a p2pc record, where the length was claimed) rather than waiting for megabytes that
 * never come; decoding resumes at the next plausible frame header.  So it does after a hole
 * in the capture (engine.h, l2p_pipe_gap): the stream whose frame the hole cut gives up, the
 * others go on.
 *
 * Conformance checks (core/spec.h, p2pc.spec.yamux.*): a header of another version, or a Data
 * frame over its stream's window, where the framing breaks (the engine raises them on the
 * undecoded bytes); and, on frames it cuts (none from a boundary it guessed, after a hole or
 * bytes it could not frame, until a frame of an open stream confirms it), undefined flags, stream 0 misused, a SYN of the
 * other side's parity (when a fact stronger than the muxer says who dialed), a second SYN, an
 * ACK from the opener, data after the sender's own FIN, an undefined Go Away code.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/p2pc-compat.h"
#include "core/spec.h"
#include "libp2p/engine.h"

#include <wsutil/pint.h>

void proto_register_yamux(void);
void proto_reg_handoff_yamux(void);

#define YAMUX_FLAG_SYN 0x1
#define YAMUX_FLAG_ACK 0x2
#define YAMUX_FLAG_FIN 0x4
#define YAMUX_FLAG_RST 0x8
#define YAMUX_FLAGS    0xf
#define YAMUX_TYPE_DATA   0
#define YAMUX_TYPE_WINDOW 1
#define YAMUX_TYPE_GO_AWAY 3
#define YAMUX_GO_AWAY_MAX 2     /* internal error */
#define YAMUX_INITIAL_WINDOW (256 * 1024)

static int proto_yamux = -1;
static int hf_yamux_version = -1;
static int hf_yamux_type = -1;
static int hf_yamux_flags = -1;
static int hf_yamux_flag_syn = -1;
static int hf_yamux_flag_ack = -1;
static int hf_yamux_flag_fin = -1;
static int hf_yamux_flag_rst = -1;
static int hf_yamux_stream = -1;
static int hf_yamux_length = -1;
static int hf_yamux_data = -1;
static gint ett_yamux = -1;
static gint ett_yamux_flags = -1;
static dissector_handle_t yamux_handle;

/* Both directions of a connection share the stream table. */
typedef struct {
    wmem_map_t *streams;        /* stream id -> yamux_stream_t, while open (first pass) */
    /* Per direction: framing resumed at a boundary it guessed (after bytes it could not frame,
     * or a hole), so the frames cut may be bytes of a frame; no conformance check until a frame
     * of a stream already open (no SYN) confirms the boundary. */
    gboolean guessing[2];
} yamux_conn_t;

typedef struct {
    l2p_stream_t s;
    gboolean windowed;          /* its SYN was captured (since the last hole): window holds */
    guint64 window[2];          /* what the dialer (0) / listener (1) may still send */
    int opener;                 /* the connection direction whose SYN opened it; -1: not captured */
} yamux_stream_t;

static const value_string yamux_type_vals[] = {
    { 0, "Data" }, { 1, "Window Update" }, { 2, "Ping" }, { 3, "Go Away" }, { 0, NULL }
};

static proto_item *draw_yamux(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree);
static gboolean yamux_gap(l2p_pipe_t *pipe, const guint8 *held, guint held_len);

static yamux_conn_t *
yamux_conn(l2p_pipe_t *pipe)
{
    yamux_conn_t *yc = (yamux_conn_t *)pipe->state;
    if (!yc && pipe->peer && pipe->peer->state)
        yc = (yamux_conn_t *)pipe->peer->state;
    if (!yc) {
        yc = wmem_new0(l2p_pipe_pool(pipe), yamux_conn_t);
        yc->streams = wmem_map_new(l2p_pipe_pool(pipe), g_direct_hash, g_direct_equal);
    }
    pipe->state = yc;
    pipe->gap_fn = yamux_gap;
    return yc;
}

static yamux_stream_t *
find_stream(yamux_conn_t *yc, guint32 id)
{
    return (yamux_stream_t *)wmem_map_lookup(yc->streams, GUINT_TO_POINTER(id));
}

/* Which of stream `id`'s pipes a frame the dialer (or listener) sent goes to: the dialer opens
 * odd stream ids, the listener even ones. */
static int
stream_dir(guint32 id, gboolean from_dialer)
{
    return from_dialer == ((id & 1) == 1) ? 0 : 1;
}

/* Whether a frame header at p could be real: what resynchronisation looks for after bytes that
 * cannot be (a stream already seen, or being opened; a length within its window). */
static gboolean
plausible_header(yamux_conn_t *yc, int dir, const guint8 *p)
{
    guint8 type = p[1];
    guint16 flags = pntohu16(p + 2);
    guint32 id = pntohu32(p + 4), len = pntohu32(p + 8);
    const yamux_stream_t *ys;

    if (p[0] != 0 || type > 3 || (flags & ~0xf))
        return FALSE;
    if (type > YAMUX_TYPE_WINDOW)
        return id == 0;
    ys = find_stream(yc, id);
    if (id == 0 || (!ys && !(flags & YAMUX_FLAG_SYN)))
        return FALSE;
    return type != YAMUX_TYPE_DATA || len <= (ys && ys->windowed ? ys->window[dir] : YAMUX_INITIAL_WINDOW);
}

/* After a header that cannot be real: skip to the next plausible one (or to the last 11 bytes,
 * which may start one). */
static gint64
resync(l2p_pipe_t *pipe, yamux_conn_t *yc, const guint8 *p, guint avail)
{
    guint k;
    for (k = 1; k + 12 <= avail; k++)
        if (plausible_header(yc, pipe->dir, p + k))
            break;
    pipe->skip = k + 12 <= avail ? k : avail - 11;
    yc->guessing[pipe->dir] = TRUE;
    return -1;
}

/* `all`: a hole took frames of any stream in direction `dir`. */
typedef struct {
    int dir;
    gboolean all;
} gap_t;

static void
gap_stream(gpointer key, gpointer value, gpointer user_data)
{
    yamux_stream_t *ys = (yamux_stream_t *)value;
    const gap_t *g = (const gap_t *)user_data;
    if (g->all)
        l2p_pipe_gap(ys->s.pipe[stream_dir(GPOINTER_TO_UINT(key), g->dir == 0)], 0);
    ys->windowed = FALSE;
}

/* A hole in the capture took bytes of this direction (engine.h): the stream of the frame it
 * cut lost bytes, and gives up where its framing does not resume; so does every stream of this
 * direction when the hole may have taken more than the rest of that frame (its size unknown,
 * or larger, or the frame's header not held: whole frames of any stream may be in it).  Window
 * updates may be in the hole, so flow-control bounds start afresh.  Framing resumes at the
 * next plausible header. */
static gboolean
yamux_gap(l2p_pipe_t *pipe, const guint8 *held, guint held_len)
{
    yamux_conn_t *yc = yamux_conn(pipe);
    gap_t g = { pipe->dir, TRUE };
    if (held_len >= 12 && pipe->gap_bytes && pipe->gap_bytes <= 12 + (guint64)pntohu32(held + 8) - held_len) {
        yamux_stream_t *ys = find_stream(yc, pntohu32(held + 4));
        if (ys)
            l2p_pipe_gap(ys->s.pipe[stream_dir(pntohu32(held + 4), pipe->dir == 0)], 0);
        g.all = FALSE;
    }
    wmem_map_foreach(yc->streams, gap_stream, &g);
    return TRUE;
}

static gint64
yamux_len(l2p_pipe_t *pipe, const guint8 *p, guint avail)
{
    yamux_conn_t *yc = yamux_conn(pipe);
    guint32 len;
    const yamux_stream_t *ys;
    if (avail < 12)
        return 0;
    if (pipe->resync) {
        if (!plausible_header(yc, pipe->dir, p))
            return resync(pipe, yc, p, avail);
        pipe->resync = FALSE;
        yc->guessing[pipe->dir] = TRUE;
    }
    if (p[0] != 0 || p[1] > 3) {
        if (p[0] != 0 && !yc->guessing[pipe->dir])
            pipe->broke = P2PC_SPEC_BIT(P2PC_SPEC_YAMUX_VERSION);
        return resync(pipe, yc, p, avail);
    }
    len = pntohu32(p + 8);
    if (p[1] != YAMUX_TYPE_DATA)
        return 12;
    ys = find_stream(yc, pntohu32(p + 4));
    if (ys && ys->windowed && len > ys->window[pipe->dir]) {
        if (!yc->guessing[pipe->dir])
            pipe->broke = P2PC_SPEC_BIT(P2PC_SPEC_YAMUX_WINDOW);
        return resync(pipe, yc, p, avail);  /* more than flow control lets the sender send */
    }
    if (len > L2P_MAX_PDU)
        return resync(pipe, yc, p, avail);
    return 12 + (gint64)len;
}

/* First pass: a frame's effect on its stream's windows. */
static void
track_window(yamux_stream_t *ys, int dir, guint8 type, guint16 flags, guint32 len)
{
    if (!ys->windowed && (flags & YAMUX_FLAG_SYN)) {
        ys->windowed = TRUE;
        ys->window[0] = ys->window[1] = YAMUX_INITIAL_WINDOW;
    }
    if (!ys->windowed)
        return;
    if (type == YAMUX_TYPE_WINDOW)
        ys->window[1 - dir] += len;     /* the receiver lets the other side send more */
    else if (type == YAMUX_TYPE_DATA)
        ys->window[dir] -= MIN(len, ys->window[dir]);
}

/* First pass: the stream a frame belongs to, opened by a SYN or by data of a stream whose
 * opening was not captured (a frame that carries nothing opens none: a stream's last window
 * update may come after it ended).  Remembered in the PDU (l2p_stream_mark()) when the frame
 * feeds or closes it, or would open one past L2P_MAX_STREAMS. */
static void
find_pdu_stream(l2p_pipe_t *pipe, packet_info *pinfo, yamux_conn_t *yc, l2p_pdu_t *pdu, guint8 type,
                guint16 flags, guint32 id, guint32 len)
{
    yamux_stream_t *ys = find_stream(yc, id);
    gboolean data = type == YAMUX_TYPE_DATA && len > 0;

    /* The client (the dialer) opens odd stream ids: a SYN says who sent it. */
    if (flags & YAMUX_FLAG_SYN)
        l2p_learn_role(pipe, pinfo, (id & 1) == 1, L2P_ROLE_MUXER);
    else if (!ys && data)
        l2p_role_needed(pipe, pinfo);
    if (!ys && ((flags & YAMUX_FLAG_SYN) || data)) {
        if (wmem_map_size(yc->streams) >= L2P_MAX_STREAMS) {
            l2p_stream_mark(pinfo, pdu, NULL);
            return;
        }
        ys = (yamux_stream_t *)l2p_stream_new(pipe, "yamux", id, sizeof(yamux_stream_t));
        ys->opener = (flags & YAMUX_FLAG_SYN) ? pipe->dir : -1;
        wmem_map_insert(yc->streams, GUINT_TO_POINTER(id), ys);
    }
    if (!ys)
        return;
    track_window(ys, pipe->dir, type, flags, len);
    if (data || (flags & (YAMUX_FLAG_FIN | YAMUX_FLAG_RST)))
        l2p_stream_mark(pinfo, pdu, &ys->s);
}

/* First pass, before the frame's effect on its stream: the rules it breaks (P2PC_SPEC_BIT()s). */
static guint64
frame_checks(const l2p_pipe_t *pipe, yamux_conn_t *yc, guint8 type, guint16 flags, guint32 id, guint32 len)
{
    const yamux_stream_t *ys = find_stream(yc, id);
    guint64 broke = 0;

    if (yc->guessing[pipe->dir]) {
        if (!ys || id == 0 || type > YAMUX_TYPE_WINDOW || (flags & YAMUX_FLAG_SYN))
            return 0;
        yc->guessing[pipe->dir] = FALSE;
    }
    if (flags & ~YAMUX_FLAGS)
        broke |= P2PC_SPEC_BIT(P2PC_SPEC_YAMUX_FLAGS);
    if ((type <= YAMUX_TYPE_WINDOW) == (id == 0))
        broke |= P2PC_SPEC_BIT(P2PC_SPEC_YAMUX_SESSION_ID);
    if (type == YAMUX_TYPE_GO_AWAY && len > YAMUX_GO_AWAY_MAX)
        broke |= P2PC_SPEC_BIT(P2PC_SPEC_YAMUX_GO_AWAY);
    if (type > YAMUX_TYPE_WINDOW || id == 0)
        return broke;
    /* Who is the client only a fact other than this very SYN says (the muxer's own is its
     * parity): then the dialer's ids are odd. */
    if ((flags & YAMUX_FLAG_SYN) && pipe->role > L2P_ROLE_MUXER && ((id & 1) == 1) != (pipe->dir == 0))
        broke |= P2PC_SPEC_BIT(P2PC_SPEC_YAMUX_STREAM_ID);
    if ((flags & YAMUX_FLAG_SYN) && ys && ys->opener >= 0)
        broke |= P2PC_SPEC_BIT(P2PC_SPEC_YAMUX_SYN);
    if ((flags & YAMUX_FLAG_ACK) && ((flags & YAMUX_FLAG_SYN) || (ys && ys->opener == pipe->dir)))
        broke |= P2PC_SPEC_BIT(P2PC_SPEC_YAMUX_ACK);
    /* A stream still open after the sender's FIN (a RST ends it for both: data the other side
     * sent before it saw the RST is not late, and opens no stream either). */
    if (type == YAMUX_TYPE_DATA && len && ys && ys->s.fin[stream_dir(id, pipe->dir == 0)])
        broke |= P2PC_SPEC_BIT(P2PC_SPEC_YAMUX_AFTER_FIN);
    return broke;
}

/* Every pass: the rules frame_checks() found this frame breaks, on its item. */
static void
raise_checks(tvbuff_t *tvb, packet_info *pinfo, proto_item *ti, guint64 broke)
{
    guint8 type = tvb_get_uint8(tvb, 1);
    guint16 flags = tvb_get_ntohs(tvb, 2);
    guint32 id = tvb_get_ntohl(tvb, 4), len = tvb_get_ntohl(tvb, 8);
    const char *name = val_to_str_const(type, yamux_type_vals, "?");

    if (broke & P2PC_SPEC_BIT(P2PC_SPEC_YAMUX_FLAGS))
        p2pc_spec(pinfo, ti, P2PC_SPEC_YAMUX_FLAGS, "Flags 0x%04x: 0x%04x are no yamux flags", flags,
                  flags & ~YAMUX_FLAGS);
    if (broke & P2PC_SPEC_BIT(P2PC_SPEC_YAMUX_SESSION_ID))
        p2pc_spec(pinfo, ti, P2PC_SPEC_YAMUX_SESSION_ID, "%s frame on stream %u", name, id);
    if (broke & P2PC_SPEC_BIT(P2PC_SPEC_YAMUX_GO_AWAY))
        p2pc_spec(pinfo, ti, P2PC_SPEC_YAMUX_GO_AWAY, "Go Away code %u", len);
    if (broke & P2PC_SPEC_BIT(P2PC_SPEC_YAMUX_STREAM_ID))
        p2pc_spec(pinfo, ti, P2PC_SPEC_YAMUX_STREAM_ID, "The %s opens stream %u: its ids are %s",
                  (id & 1) ? "listener" : "dialer", id, (id & 1) ? "even" : "odd");
    if (broke & P2PC_SPEC_BIT(P2PC_SPEC_YAMUX_SYN))
        p2pc_spec(pinfo, ti, P2PC_SPEC_YAMUX_SYN, "SYN on stream %u, open since an earlier SYN", id);
    if (broke & P2PC_SPEC_BIT(P2PC_SPEC_YAMUX_ACK))
        p2pc_spec(pinfo, ti, P2PC_SPEC_YAMUX_ACK, "ACK on stream %u from the side that opened it", id);
    if (broke & P2PC_SPEC_BIT(P2PC_SPEC_YAMUX_AFTER_FIN))
        p2pc_spec(pinfo, ti, P2PC_SPEC_YAMUX_AFTER_FIN, "%u data bytes on stream %u after the sender's "
                  "FIN", len, id);
}

/* The budget's kind of a frame that carries no stream data (core/budget.h): what it does. */
static const char *
frame_kind(guint8 type, guint16 flags)
{
    if (flags & YAMUX_FLAG_SYN)
        return "open";
    if (flags & (YAMUX_FLAG_FIN | YAMUX_FLAG_RST))
        return "close";
    switch (type) {
    case YAMUX_TYPE_DATA: return "empty_data";
    case YAMUX_TYPE_WINDOW: return "window_update";
    case YAMUX_TYPE_GO_AWAY: return "go_away";
    default: return "ping";
    }
}

/* Every pass: the frame's bytes in the budget.  A data frame's header goes with its data to
 * the stream (its overhead, L2P_KIND_DATA_HEADER); a frame of a stream refused is an undecoded
 * record; any other frame is the muxer's own, all its bytes (data of a stream no table holds). */
static void
budget_frame(tvbuff_t *tvb, packet_info *pinfo, const l2p_pdu_t *pdu, guint8 type, guint16 flags, guint32 id)
{
    gboolean refused, carried = id != 0 && type == YAMUX_TYPE_DATA && tvb_captured_length(tvb) > 12;
    const char *kind = frame_kind(type, flags);

    if (id != 0 && (type == YAMUX_TYPE_DATA || type == YAMUX_TYPE_WINDOW)) {
        if (!l2p_stream_of(pdu, &refused)) {
            if (refused)
                return;
            if (carried)
                kind = "no_stream";
            carried = FALSE;
        }
    }
    p2pc_budget_add(pinfo, "libp2p", P2PC_LAYER_MUXER, carried ? L2P_KIND_DATA_HEADER : kind,
                    carried ? 12 : tvb_captured_length(tvb));
}

static void
yamux_pdu(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, l2p_pipe_t *pipe, l2p_pdu_t *pdu)
{
    yamux_conn_t *yc = yamux_conn(pipe);
    guint8 type;
    guint16 flags;
    guint32 id;
    l2p_stream_t *s;
    l2p_pipe_t *sp;
    proto_item *ti;
    gboolean fin, refused;

    col_set_str(pinfo->cinfo, COL_PROTOCOL, "yamux");
    ti = draw_yamux(tvb, pinfo, tree);
    if (pdu->truncated || tvb_captured_length(tvb) < 12) {
        p2pc_budget_add(pinfo, "libp2p", P2PC_LAYER_MUXER, "truncated", tvb_captured_length(tvb));
        return;
    }
    type = tvb_get_uint8(tvb, 1);
    flags = tvb_get_ntohs(tvb, 2);
    id = tvb_get_ntohl(tvb, 4);
    fin = (flags & (YAMUX_FLAG_FIN | YAMUX_FLAG_RST)) != 0;
    if (!PINFO_FD_VISITED(pinfo))
        pdu->spec = frame_checks(pipe, yc, type, flags, id, tvb_get_ntohl(tvb, 8));
    raise_checks(tvb, pinfo, ti, pdu->spec);
    if (!PINFO_FD_VISITED(pinfo) && id != 0 && (type == YAMUX_TYPE_DATA || type == YAMUX_TYPE_WINDOW))
        find_pdu_stream(pipe, pinfo, yc, pdu, type, flags, id, tvb_get_ntohl(tvb, 8));
    budget_frame(tvb, pinfo, pdu, type, flags, id);
    if (id == 0 || (type != YAMUX_TYPE_DATA && type != YAMUX_TYPE_WINDOW))
        return;     /* session pings and go-away */
    s = l2p_stream_of(pdu, &refused);
    if (refused)
        l2p_stream_refused(tvb, pinfo, tree);
    if (!s)
        return;
    sp = s->pipe[stream_dir(id, pipe->dir == 0)];
    if (type == 0 && tvb_captured_length(tvb) > 12) {
        if (!PINFO_FD_VISITED(pinfo))
            sp->overhead += 12;
        l2p_pipe_call(sp, tvb_new_subset_remaining(tvb, 12), pinfo, tree, fin);
    } else if (fin) {
        l2p_pipe_call(sp, tvb_new_subset_length(tvb, 12, 0), pinfo, tree, TRUE);
    }
    /* FIN ends the sender's direction, RST both: a stream both have ended leaves the table. */
    if (!PINFO_FD_VISITED(pinfo) && fin &&
        l2p_stream_close(s, (flags & YAMUX_FLAG_RST) ? -1 : sp == s->pipe[0] ? 0 : 1)) {
        wmem_map_remove(yc->streams, GUINT_TO_POINTER(id));
        l2p_stream_free(s);
    }
}

static int
dissect_yamux(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    l2p_pipe_t *pipe = (l2p_pipe_t *)data;
    if (!pipe) {
        draw_yamux(tvb, pinfo, tree);
        return tvb_captured_length(tvb);
    }
    l2p_dissect_pdus(tvb, pinfo, tree, pipe, yamux_len, yamux_pdu);
    return tvb_captured_length(tvb);
}

/* The frame's tree item (NULL without a tree, or under 12 bytes). */
static proto_item *
draw_yamux(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree)
{
    static int *const flags[] = { &hf_yamux_flag_syn, &hf_yamux_flag_ack, &hf_yamux_flag_fin, &hf_yamux_flag_rst, NULL };
    proto_item *ti;
    proto_tree *t;
    guint8 type;

    if (tvb_captured_length(tvb) < 12)
        return NULL;
    ti = proto_tree_add_item(tree, proto_yamux, tvb, 0, -1, ENC_NA);
    t = proto_item_add_subtree(ti, ett_yamux);
    type = tvb_get_uint8(tvb, 1);
    proto_tree_add_item(t, hf_yamux_version, tvb, 0, 1, ENC_BIG_ENDIAN);
    proto_tree_add_item(t, hf_yamux_type, tvb, 1, 1, ENC_BIG_ENDIAN);
    proto_tree_add_bitmask(t, tvb, 2, hf_yamux_flags, ett_yamux_flags, flags, ENC_BIG_ENDIAN);
    proto_tree_add_item(t, hf_yamux_stream, tvb, 4, 4, ENC_BIG_ENDIAN);
    proto_tree_add_item(t, hf_yamux_length, tvb, 8, 4, ENC_BIG_ENDIAN);
    if (type == 0 && tvb_captured_length(tvb) > 12)
        proto_tree_add_item(t, hf_yamux_data, tvb, 12, -1, ENC_NA);
    proto_item_append_text(ti, ": %s, stream %u", val_to_str_const(type, yamux_type_vals, "?"), tvb_get_ntohl(tvb, 4));
    if (type != 0)  /* data frames are named by the messages they complete */
        col_append_sep_fstr(pinfo->cinfo, COL_INFO, ", ", "yamux %s stream %u",
                            val_to_str_const(type, yamux_type_vals, "?"), tvb_get_ntohl(tvb, 4));
    return ti;
}

void
proto_register_yamux(void)
{
    static hf_register_info hf[] = {
        { &hf_yamux_version, { "Version", "yamux.version", FT_UINT8, BASE_DEC, NULL, 0x0,
            "Protocol version (0)", HFILL } },
        { &hf_yamux_type, { "Type", "yamux.type", FT_UINT8, BASE_DEC, VALS(yamux_type_vals), 0x0,
            "Frame type", HFILL } },
        { &hf_yamux_flags, { "Flags", "yamux.flags", FT_UINT16, BASE_HEX, NULL, 0x0,
            "Stream open (SYN), accept (ACK), half-close (FIN) and reset (RST) flags", HFILL } },
        { &hf_yamux_flag_syn, { "SYN", "yamux.flags.syn", FT_BOOLEAN, 16, NULL, 0x1,
            "Opens a new stream", HFILL } },
        { &hf_yamux_flag_ack, { "ACK", "yamux.flags.ack", FT_BOOLEAN, 16, NULL, 0x2,
            "Accepts a new stream", HFILL } },
        { &hf_yamux_flag_fin, { "FIN", "yamux.flags.fin", FT_BOOLEAN, 16, NULL, 0x4,
            "The sender closes its direction of the stream", HFILL } },
        { &hf_yamux_flag_rst, { "RST", "yamux.flags.rst", FT_BOOLEAN, 16, NULL, 0x8,
            "Resets the stream (both directions end)", HFILL } },
        { &hf_yamux_stream, { "Stream ID", "yamux.stream", FT_UINT32, BASE_DEC, NULL, 0x0,
            "The stream (odd: opened by the dialer, even: by the listener; 0: the session)", HFILL } },
        { &hf_yamux_length, { "Length", "yamux.length", FT_UINT32, BASE_DEC, NULL, 0x0,
            "Data bytes (Data), window delta (Window Update), ping value or go-away code", HFILL } },
        { &hf_yamux_data, { "Data", "yamux.data", FT_BYTES, BASE_NONE, NULL, 0x0,
            "The stream's bytes this Data frame carries", HFILL } },
    };
    static gint *ett[] = { &ett_yamux, &ett_yamux_flags };

    proto_yamux = proto_register_protocol("yamux 1.0.0", "yamux", "yamux");
    proto_register_field_array(proto_yamux, hf, array_length(hf));
    proto_register_subtree_array(ett, array_length(ett));
    yamux_handle = register_dissector("yamux", dissect_yamux, proto_yamux);
}

void
proto_reg_handoff_yamux(void)
{
    dissector_add_string("multistream.protocol", "/yamux/1.0.0", yamux_handle);
    dissector_add_for_decode_as("multistream.protocol", yamux_handle);
}
