/* engine.c
 * The pieces every libp2p layer dissector uses (see engine.h): l2p_dissect_pdus(), the
 * per-pipe reassembly engine and its per-frame replay cache.
 *
 * Why not Wireshark's reassembly_table: a muxed stream is not TCP (no sequence numbers of its
 * own, and its bytes arrive inside PDUs of the layer below, which is itself reassembled), and
 * multistream-select switches the framing in the middle of a pipe.  So, as packet-websocket.c
 * does for its stateful decompression, each pipe keeps a byte buffer that only the first pass
 * feeds, and each frame records what every pipe cut out of it (PDUs as offsets into that
 * frame's data where they lie in it, copies where they were reassembled); later passes replay
 * the record and never touch the buffers.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "libp2p/engine.h"
#include "core/prefs.h"
#include "core/record.h"
#include "core/tree-room.h"
#include "core/unit.h"

#include <epan/exceptions.h>
#include <epan/expert.h>
#include <epan/proto_data.h>
#include <epan/show_exception.h>

static int l2p_proto = -1;
static guint32 next_pipe_id = 1;
/* Where pipes of no connection (QUIC's, whose connection Wireshark's QUIC keeps) and the state
 * of the layers above them live for the file: a pool of the engine's own, not wmem_file_scope().
 * Wireshark's QUIC keeps a sorted list of each connection's stream ids in file scope and walks
 * it for every STREAM frame (quic_streams_add(), 4.0 to 4.6); the libp2p streams' state
 * allocated in between its nodes spread the list over far more memory, and the same walks took
 * about twice as long (tools/bench.py --quic: 20,000 streams, 1.9x stock's CPU time). */
static wmem_allocator_t *file_pool;
/* The pipes' buffers holding bytes between frames (GByteArray * -> its l2p_pipe_t *; each freed
 * when removed): those of a connection go with it (drop_conn_bufs()), the ones of file-scope
 * pipes when the session ends (bufs_cleanup()). */
static GHashTable *held_bufs;
/* The tails of connections a new one on their endpoints retired (record.h, p2pc_tail_keep()). */
static GArray *kept_tails;

dissector_handle_t
l2p_multistream_handle(void)
{
    static dissector_handle_t h;
    if (!h)
        h = find_dissector("multistream");
    return h;
}

wmem_allocator_t *
l2p_pipe_pool(const l2p_pipe_t *pipe)
{
    return pipe->conn ? p2pc_conn_pool(pipe->conn) : file_pool;
}

l2p_pipe_t *
l2p_pipe_new(p2pc_conn_t *conn, dissector_handle_t handle, int dir)
{
    l2p_pipe_t *p = wmem_new0(conn ? p2pc_conn_pool(conn) : file_pool, l2p_pipe_t);
    p->id = next_pipe_id++;
    p->conn = conn;
    p->handle = handle;
    p->dir = dir;
    p->protocol = "";
    return p;
}

/* The items a PDU draws besides its lists (header fields, expert items, its record). */
#define PDU_ITEMS 64

static expert_field ei_role_unknown = EI_INIT;
static expert_field ei_depth = EI_INIT;
static expert_field ei_not_drawn = EI_INIT;
static expert_field ei_role_conflict = EI_INIT;

/* Per frame (file scope): what l2p_draw_roles() shows. */
typedef enum { ROLE_NOTE_NONE, ROLE_NOTE_UNKNOWN, ROLE_NOTE_CONFLICT } role_note_t;

static void
note_role(packet_info *pinfo, role_note_t note)
{
    if (!p_get_proto_data(wmem_file_scope(), pinfo, l2p_proto, L2P_KEY_ROLE_NOTE))
        p_add_proto_data(wmem_file_scope(), pinfo, l2p_proto, L2P_KEY_ROLE_NOTE, GINT_TO_POINTER(note));
}

void
l2p_learn_role(l2p_pipe_t *pipe, packet_info *pinfo, gboolean dialer, l2p_role_t how)
{
    int dir = dialer ? 0 : 1;
    if (pipe->role != L2P_ROLE_GUESSED && pipe->dir != dir && how <= pipe->role) {
        note_role(pinfo, ROLE_NOTE_CONFLICT);
        return;
    }
    if (how < pipe->role)
        return;
    pipe->dir = dir;
    pipe->role = how;
    if (pipe->peer) {
        pipe->peer->dir = 1 - dir;
        pipe->peer->role = how;
    }
}

void
l2p_role_needed(l2p_pipe_t *pipe, packet_info *pinfo)
{
    if (pipe->role == L2P_ROLE_GUESSED)
        note_role(pinfo, ROLE_NOTE_UNKNOWN);
}

void
l2p_draw_roles(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree)
{
    role_note_t note = (role_note_t)GPOINTER_TO_INT(p_get_proto_data(wmem_file_scope(), pinfo, l2p_proto, L2P_KEY_ROLE_NOTE));
    if (note == ROLE_NOTE_UNKNOWN)
        proto_tree_add_expert(tree, pinfo, &ei_role_unknown, tvb, 0, 0);
    else if (note == ROLE_NOTE_CONFLICT)
        proto_tree_add_expert(tree, pinfo, &ei_role_conflict, tvb, 0, 0);
}

l2p_pipe_t *
l2p_pipe_inside(dissector_handle_t handle, int dir, const l2p_pipe_t *below)
{
    l2p_pipe_t *p = l2p_pipe_new(below->conn, handle, dir);
    p->depth = below->depth + 1;
    p->reencoded = below->reencoded;
    p->undecodable = p->depth > L2P_MAX_DEPTH;
    return p;
}

l2p_stream_t *
l2p_stream_new(const l2p_pipe_t *conn, const char *muxer, guint64 id, size_t size)
{
    l2p_stream_t *s = (l2p_stream_t *)wmem_alloc0(l2p_pipe_pool(conn), size);
    for (int d = 0; d < 2; d++) {
        s->pipe[d] = l2p_pipe_inside(l2p_multistream_handle(), d, conn);
        s->pipe[d]->muxer = muxer;
        s->pipe[d]->stream_id = id;
        s->pipe[d]->role = L2P_ROLE_MUXER;  /* the muxer says who opened the stream */
    }
    s->pipe[0]->peer = s->pipe[1];
    s->pipe[1]->peer = s->pipe[0];
    return s;
}

/* What pdu->info holds for a PDU that would have opened a stream past L2P_MAX_STREAMS. */
static l2p_stream_t refused_stream;

void
l2p_stream_mark(packet_info *pinfo, l2p_pdu_t *pdu, l2p_stream_t *s)
{
    pdu->info = s ? s : &refused_stream;
    if (s && p2pc_keep_replay(pinfo))
        s->kept = TRUE;
}

l2p_stream_t *
l2p_stream_of(const l2p_pdu_t *pdu, gboolean *refused)
{
    *refused = pdu->info == &refused_stream;
    return *refused ? NULL : (l2p_stream_t *)pdu->info;
}

gboolean
l2p_stream_close(l2p_stream_t *s, int dir)
{
    if (dir < 0)
        s->fin[0] = s->fin[1] = TRUE;
    else
        s->fin[dir] = TRUE;
    return s->fin[0] && s->fin[1];
}

/* What the pipe's buffer holds, charged to its connection. */
static void
buf_charge(l2p_pipe_t *pipe)
{
    guint now = pipe->buf ? pipe->buf->len : 0;
    if (pipe->conn)
        p2pc_conn_charge(pipe->conn, (gint64)now - pipe->buf_charged);
    pipe->buf_charged = now;
}

static void
buf_drop(l2p_pipe_t *pipe)
{
    if (pipe->buf)
        g_hash_table_remove(held_bufs, pipe->buf);
    pipe->buf = NULL;
    buf_charge(pipe);
}

void
l2p_stream_free(l2p_stream_t *s)
{
    wmem_allocator_t *pool = l2p_pipe_pool(s->pipe[0]);
    for (int d = 0; d < 2; d++) {
        buf_drop(s->pipe[d]);
        if (!s->kept)
            wmem_free(pool, s->pipe[d]);
    }
    if (!s->kept)
        wmem_free(pool, s);
}

void
l2p_pipe_gap(l2p_pipe_t *pipe, guint64 missing)
{
    /* Holes before the pipe's next call add up; one of unknown size makes the sum unknown. */
    pipe->gap_bytes = !missing ? 0 : !pipe->gap ? missing : pipe->gap_bytes ? pipe->gap_bytes + missing : 0;
    pipe->gap = TRUE;
}

dissector_handle_t
l2p_handle_for(const char *protocol)
{
    dissector_table_t table = find_dissector_table("multistream.protocol");
    dissector_handle_t h;

    /* Exact entries first: a dissector's, or the user's through Decode As or Lua (which
     * replace the dissector's). */
    if ((h = dissector_get_string_handle(table, protocol)) != NULL)
        return h;
    /* Families registered by their first path element ("/noise" for every Noise variant). */
    if (protocol[0] == '/') {
        const char *slash = strchr(protocol + 1, '/');
        if (slash) {
            char *first = g_strndup(protocol, slash - protocol);
            h = dissector_get_string_handle(table, first);
            g_free(first);
            if (h)
                return h;
        }
    }
    return find_dissector("libp2p_app");
}

gboolean
l2p_protocol_named(const char *protocol)
{
    return dissector_get_string_handle(find_dissector_table("multistream.protocol"), protocol) != NULL;
}

l2p_pipe_t *
l2p_handoff(l2p_pipe_t *pipe, const char *protocol, dissector_handle_t handle)
{
    l2p_pipe_t *n = l2p_pipe_new(pipe->conn, handle ? handle : l2p_handle_for(protocol), pipe->dir);
    n->role = pipe->role;
    n->depth = pipe->depth;
    n->reencoded = pipe->reencoded;
    n->protocol = wmem_strdup(l2p_pipe_pool(pipe), protocol);
    n->muxer = pipe->muxer;
    n->stream_id = pipe->stream_id;
    /* Both directions of a stream hand off to the same protocol: link the new pipes so each
     * layer can see its other direction. */
    if (pipe->peer && pipe->peer->next && !strcmp(pipe->peer->next->protocol, n->protocol)) {
        n->peer = pipe->peer->next;
        n->peer->peer = n;
    }
    pipe->next = n;
    return n;
}

void
l2p_pipe_call(l2p_pipe_t *pipe, tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, gboolean fin)
{
    guint layers = wmem_list_count(pinfo->layers);
    guint8 layer_num = pinfo->curr_layer_num;

    pipe->fin = fin;
    call_dissector_with_data(pipe->handle, tvb, pinfo, tree, pipe);
    pipe->fin = FALSE;
    /* Wireshark lists every protocol each call reaches in the frame (frame.protocols), and
     * calls it a dissector bug past gui.max_tree_depth of them: one segment of a decrypted or
     * decompressed stream can carry the frames of hundreds of muxed streams.  Past
     * L2P_LAYERS_LISTED, the layers a call added go again when it returns. */
    if (wmem_list_count(pinfo->layers) > L2P_LAYERS_LISTED) {
        while (wmem_list_count(pinfo->layers) > layers)
            wmem_list_remove_frame(pinfo->layers, wmem_list_tail(pinfo->layers));
        pinfo->curr_layer_num = layer_num;
    }
}

typedef struct {
    l2p_pipe_t *pipe;
    tvbuff_t *tvb;
    packet_info *pinfo;
    proto_tree *tree;
    gboolean fin;
    p2pc_record_adjust_fn adjust;   /* NULL: records not held */
    void *adjust_ctx;
} pipe_call_t;

static void
pipe_call(void *ctx)
{
    const pipe_call_t *c = (const pipe_call_t *)ctx;
    l2p_pipe_call(c->pipe, c->tvb, c->pinfo, c->tree, c->fin);
}

void
l2p_pipe_call_held(l2p_pipe_t *pipe, tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree,
                   gboolean fin, p2pc_record_adjust_fn adjust, void *ctx)
{
    pipe_call_t c = { pipe, tvb, pinfo, tree, fin, NULL, NULL };
    p2pc_record_call_held(pinfo, pipe_call, &c, adjust, ctx);
}

static void
pipe_call_maybe_held(void *ctx)
{
    const pipe_call_t *c = (const pipe_call_t *)ctx;
    if (c->adjust)
        l2p_pipe_call_held(c->pipe, c->tvb, c->pinfo, c->tree, c->fin, c->adjust, c->adjust_ctx);
    else
        l2p_pipe_call(c->pipe, c->tvb, c->pinfo, c->tree, c->fin);
}

void
l2p_pipe_call_unit(l2p_pipe_t *pipe, tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree,
                   gboolean fin, p2pc_unit_t unit, p2pc_record_adjust_fn adjust, void *ctx)
{
    pipe_call_t c = { pipe, tvb, pinfo, tree, fin, adjust, ctx };
    p2pc_unit_call(pinfo, unit, pipe_call_maybe_held, &c);
}

/* ---- the per-frame record of what a pipe cut ---- */

typedef enum { IT_PDU, IT_FORWARD, IT_UNDECODED } item_kind_t;

typedef struct item {
    item_kind_t kind;
    gint off;                   /* in this frame's tvb, or -1: reassembled, see data */
    guint len;
    guint shown;                /* bytes of it in this frame's tvb from off (IT_UNDECODED: may
                                   be fewer than len, which counts them all) */
    guint8 *data;
    l2p_pdu_t pdu;
    guint32 count;              /* IT_PDU: 1, or a run of this many PDUs of len bytes each,
                                   back to back, the later ones without overhead or info */
    gboolean fin;               /* IT_FORWARD */
    l2p_pipe_t *to;             /* IT_FORWARD */
    guint32 end;                /* IT_PDU: where its first PDU ends in the call's tvb (the unit
                                   the layers above get, p2pc_unit_t) */
    struct item *next;
} item_t;

typedef struct {
    item_t *first;
    item_t *last;
    item_t *spare;              /* not kept: the one item each PDU reuses, run at once */
} feed_t;

static expert_field ei_undecoded = EI_INIT;
static expert_field ei_streams = EI_INIT;
static int hf_undecoded = -1;

/* The replay cache: per frame (file scope) a list of the slots each pipe's calls made, in the
 * order of the calls; per dissection (packet scope) how many calls each pipe has had. */
typedef struct {
    guint32 pipe_id;
    guint32 call;               /* n-th call of that pipe in the frame */
    void *state;
} frame_slot_t;

/* This dissection's calls so far: per pipe, and in all.  A frame's calls come in the same
 * order each time it is dissected, so the n-th call's slot is the n-th slot made: looked up
 * where it should be first, so a frame of a million calls is not a million scans. */
typedef struct {
    wmem_map_t *per_pipe;       /* pipe id -> calls so far */
    guint all;
} calls_t;

static frame_slot_t *
find_slot(wmem_array_t *slots, guint hint, guint32 pipe_id, guint32 call)
{
    guint n = slots ? wmem_array_get_count(slots) : 0;
    frame_slot_t *s = hint < n ? (frame_slot_t *)wmem_array_index(slots, hint) : NULL;

    if (s && s->pipe_id == pipe_id && s->call == call)
        return s;
    for (guint i = 0; i < n; i++) {
        s = (frame_slot_t *)wmem_array_index(slots, i);
        if (s->pipe_id == pipe_id && s->call == call)
            return s;
    }
    return NULL;
}

void *
l2p_frame_slot(packet_info *pinfo, l2p_pipe_t *pipe, size_t size, gboolean *replay)
{
    wmem_array_t *slots = (wmem_array_t *)p_get_proto_data(wmem_file_scope(), pinfo, l2p_proto, L2P_KEY_FRAME_SLOTS);
    calls_t *calls = (calls_t *)p_get_proto_data(pinfo->pool, pinfo, l2p_proto, L2P_KEY_CALLS);
    frame_slot_t slot, *found;
    guint32 call;

    if (!calls) {
        calls = wmem_new0(pinfo->pool, calls_t);
        calls->per_pipe = wmem_map_new(pinfo->pool, g_direct_hash, g_direct_equal);
        p_add_proto_data(pinfo->pool, pinfo, l2p_proto, L2P_KEY_CALLS, calls);
    }
    call = GPOINTER_TO_UINT(wmem_map_lookup(calls->per_pipe, GUINT_TO_POINTER(pipe->id)));
    wmem_map_insert(calls->per_pipe, GUINT_TO_POINTER(pipe->id), GUINT_TO_POINTER(call + 1));
    /* On the first dissection there is no slot past those this one made. */
    found = slots && calls->all < wmem_array_get_count(slots) ?
            find_slot(slots, calls->all, pipe->id, call) : NULL;
    calls->all++;
    if (found) {
        *replay = TRUE;
        return found->state;
    }
    *replay = PINFO_FD_VISITED(pinfo);
    if (*replay)
        return NULL;
    if (!p2pc_keep_replay(pinfo))
        return wmem_alloc0(pinfo->pool, size);     /* nothing kept for a later pass */
    if (!slots) {
        slots = wmem_array_sized_new(wmem_file_scope(), sizeof(frame_slot_t), 2);
        p_add_proto_data(wmem_file_scope(), pinfo, l2p_proto, L2P_KEY_FRAME_SLOTS, slots);
    }
    slot.pipe_id = pipe->id;
    slot.call = call;
    slot.state = wmem_alloc0(wmem_file_scope(), size);
    wmem_array_append_one(slots, slot);
    p2pc_replay_charge(pinfo, sizeof(slot) + size);
    return slot.state;
}

static void
free_byte_array(gpointer arr)
{
    g_byte_array_free((GByteArray *)arr, TRUE);
}

static gboolean
of_conn(gpointer buf, gpointer pipe, gpointer conn)
{
    return ((l2p_pipe_t *)pipe)->conn == conn;
}

/* A connection is freed: its pipes' buffers too. */
static void
drop_conn_bufs(p2pc_conn_t *c)
{
    if (p2pc_conn_slot(c, P2PC_SLOT_ENGINE))
        g_hash_table_foreach_remove(held_bufs, of_conn, c);
}

static gboolean
in_file_scope(gpointer buf, gpointer pipe, gpointer unused)
{
    return l2p_pipe_pool((l2p_pipe_t *)pipe) == wmem_file_scope() || !((l2p_pipe_t *)pipe)->conn;
}

static void
add_pipe(gpointer buf _U_, gpointer pipe, gpointer pipes)
{
    g_ptr_array_add((GPtrArray *)pipes, pipe);
}

static gint
by_pipe_id(gconstpointer a, gconstpointer b)
{
    guint32 x = (*(const l2p_pipe_t * const *)a)->id, y = (*(const l2p_pipe_t * const *)b)->id;
    return x < y ? -1 : x > y;
}

/* The pipes whose buffers hold bytes, in the order they were made. */
static GPtrArray *
held_pipes(void)
{
    GPtrArray *pipes = g_ptr_array_new();
    g_hash_table_foreach(held_bufs, add_pipe, pipes);
    g_ptr_array_sort(pipes, by_pipe_id);
    return pipes;
}

/* The bytes a pipe holds, the start of a PDU the capture (or a reset) cut short: one undecoded
 * record, where they were last kept.  Every layer below reported its own framing of them;
 * above a layer that re-encodes them, that layer's own tail counts them. */
static void
pipe_tail(const l2p_pipe_t *pipe, p2pc_tail_emit_fn emit, void *ud, const char *why)
{
    if (pipe->held_at && pipe->buf && !pipe->reencoded)
        p2pc_tail_undecoded(emit, ud, pipe->held_at, "libp2p", "none", pipe->buf->len, why);
}

/* A new connection retires c: what its pipes hold is the capture's tail, kept for its end. */
static void
keep_conn_tails(p2pc_conn_t *c)
{
    GPtrArray *pipes;

    if (!p2pc_conn_slot(c, P2PC_SLOT_ENGINE))
        return;
    pipes = held_pipes();
    for (guint i = 0; i < pipes->len; i++) {
        const l2p_pipe_t *pipe = (const l2p_pipe_t *)g_ptr_array_index(pipes, i);
        if (pipe->conn == c)
            pipe_tail(pipe, p2pc_tail_keep, kept_tails, NULL);
    }
    g_ptr_array_free(pipes, TRUE);
}

/* At the end of the capture, or of a session whose reset drops the connection: each pipe's
 * tail, in the order the pipes were made; at the end, first those of the connections retired
 * (made before any on their endpoints still open). */
static void
engine_tails(p2pc_tail_emit_fn emit, void *ud, gboolean at_reset)
{
    GPtrArray *pipes = held_pipes();

    p2pc_tail_kept_emit(kept_tails, FALSE, emit, ud, at_reset);
    for (guint i = 0; i < pipes->len; i++) {
        const l2p_pipe_t *pipe = (const l2p_pipe_t *)g_ptr_array_index(pipes, i);
        const char *why;
        if (p2pc_conn_tail_now(pipe->conn, at_reset, &why))
            pipe_tail(pipe, emit, ud, why);
    }
    g_ptr_array_free(pipes, TRUE);
}

static void
pool_init(void)
{
    file_pool = wmem_allocator_new(WMEM_ALLOCATOR_BLOCK);
}

/* The session ends: the buffers of pipes in file scope go with it, and the pipes of no
 * connection; those of connections with pools of their own go when their connection does. */
static void
bufs_cleanup(void)
{
    g_hash_table_foreach_remove(held_bufs, in_file_scope, NULL);
    wmem_destroy_allocator(file_pool);
    file_pool = NULL;
}

/* Undecoded bytes, `len` of them (tvb shows those of this frame): shown, and counted, not
 * lost: they get a record of their own.  Returns the item for the expert item saying why. */
static proto_item *
undecoded(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, guint len, const char *reason)
{
    proto_item *ti = proto_tree_add_item(tree, hf_undecoded, tvb, 0, -1, ENC_NA);
    p2pc_record_undecoded(tvb, 0, -1, pinfo, tree, "libp2p", len, reason);
    return ti;
}

/* The tvb of item `it` (its first PDU), a child of `tvb`; reassembled bytes are a data source
 * of their own. */
static tvbuff_t *
item_tvb(tvbuff_t *tvb, packet_info *pinfo, l2p_pipe_t *pipe, item_t *it)
{
    tvbuff_t *t;
    if (it->off >= 0)
        return tvb_new_subset_length(tvb, it->off, it->shown);
    t = tvb_new_child_real_data(tvb, it->data, it->len, it->len);
    if (it->kind == IT_PDU && it->len)
        add_new_data_source(pinfo, t, pipe->muxer ?
            wmem_strdup_printf(pinfo->pool, "Reassembled %s stream %" G_GUINT64_FORMAT " (%u bytes)", pipe->muxer, pipe->stream_id, it->len) :
            wmem_strdup_printf(pinfo->pool, "Reassembled libp2p PDU (%u bytes)", it->len));
    return t;
}

/* This dissection of the frame: the PDUs begun so far (kept()), and the frame's last data
 * source as the engine last saw it (sources_tail()).  One lookup serves both: a
 * p_add_proto_data() per PDU would lengthen every later lookup. */
typedef struct {
    guint begun;
    GSList *tail;       /* a node of pinfo->data_src no later than its last; NULL: its first */
} drawn_t;

static drawn_t *
frame_drawn(packet_info *pinfo)
{
    drawn_t *d = (drawn_t *)p_get_proto_data(pinfo->pool, pinfo, l2p_proto, L2P_KEY_DRAWN);
    if (!d) {
        d = wmem_new0(pinfo->pool, drawn_t);
        p_add_proto_data(pinfo->pool, pinfo, l2p_proto, L2P_KEY_DRAWN, d);
    }
    return d;
}

/* Whether the PDU now starting is one of the first L2P_PDUS_DRAWN of this dissection of the
 * frame: those are drawn (when there is a tree) in a tvb that lives as long as the frame.  A
 * decompressed stream can put a million muxer frames in one segment: Wireshark calls more than
 * gui.max_tree_items items a dissector bug, and a few tvbs each would live until the frame
 * ends.  The PDUs past the bound are decoded and counted all the same, each in a tvb of its own
 * that is freed once it is done; the frame says they were not drawn.  Counted with a tree or
 * without, so a PDU gets the same kind of tvb on every pass: Wireshark's TLS finds its records
 * again on a later pass by their offset in the data source. */
static gboolean
kept(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, drawn_t *d)
{
    guint n = d->begun++;
    if (n == L2P_PDUS_DRAWN && tree)
        proto_tree_add_expert(tree, pinfo, &ei_not_drawn, tvb, 0, 0);
    return n < L2P_PDUS_DRAWN;
}

/* The frame's last data source now (NULL: it has none), found from where the engine last saw
 * the end rather than from the first: Wireshark keeps the sources in a singly linked list, and
 * a g_slist_last() per PDU not kept, after the thousands of tabs the kept ones added, made a
 * frame of a million PDUs quadratic.  The walk covers only what was added since, so it is
 * O(1) a PDU over the frame.  d->tail stays valid because a node is only ever removed after
 * it was added past d->tail: run_pdu() removes only what its PDU added and then points d->tail
 * at what it left last; l2p_dissect_pdus() gives d->tail back on return as it found it, so
 * the sources a caller outside the engine (TCP, TLS) adds and takes away again between two of
 * its calls are never where d->tail points. */
static GSList *
sources_tail(packet_info *pinfo, drawn_t *d)
{
    GSList *l = d->tail ? d->tail : pinfo->data_src;
    if (l)
        while (l->next)
            l = l->next;
    return d->tail = l;
}

/* The tvb of PDU i of item `it`: a child of `tvb` when `kept`, else a tvb of its own over the
 * same bytes (no copy), which run_pdu() frees with every tvb made from it. */
static tvbuff_t *
pdu_tvb(tvbuff_t *tvb, packet_info *pinfo, l2p_pipe_t *pipe, item_t *it, guint32 i, gboolean keep)
{
    guint len = i == 0 && it->off >= 0 ? it->shown : it->len;
    const guint8 *p;

    if (keep)
        return i == 0 ? item_tvb(tvb, pinfo, pipe, it) :
               tvb_new_subset_length(tvb, it->off + (gint)(i * it->len), it->len);
    p = it->off < 0 ? it->data : tvb_get_ptr(tvb, it->off + (gint)(i * it->len), len);
    return tvb_new_real_data(p, len, len);
}

/* One call of l2p_dissect_pdus(): what its steps share.  The frame's drawing state and the unit
 * below are looked up once per call, not per PDU: between its PDUs the unit is the one the call
 * found (each PDU's own is put back after it, p2pc_unit_call()). */
typedef struct {
    tvbuff_t *tvb;              /* the bytes the pipe got in this call */
    packet_info *pinfo;
    proto_tree *tree;
    l2p_pipe_t *pipe;
    l2p_len_fn len_fn;
    l2p_pdu_fn pdu_fn;
    drawn_t *drawn;             /* frame_drawn() */
    p2pc_unit_t below;          /* the unit of the call's bytes */
    feed_t *f;                  /* where the call's items go: the frame's slot, or once */
    wmem_allocator_t *scope;
    const guint8 *in;           /* the call's bytes, inlen of them */
    guint inlen;
    /* First pass, once begin_work() ran: the bytes being cut, the pipe's buffer with the call's
     * appended (or, `direct`, the call's own when nothing was buffered); the call's begin at
     * fresh_at in them, and pos is where cutting has got to. */
    const guint8 *work;
    guint worklen;
    guint fresh_at;
    guint pos;
    gboolean direct;
} cut_t;

typedef struct {
    l2p_pdu_fn pdu_fn;
    tvbuff_t *tvb;
    packet_info *pinfo;
    proto_tree *tree;
    l2p_pipe_t *pipe;
    l2p_pdu_t *pdu;
} pdu_call_t;

static void
pdu_call(void *ctx)
{
    const pdu_call_t *p = (const pdu_call_t *)ctx;
    p->pdu_fn(p->tvb, p->pinfo, p->tree, p->pipe, p->pdu);
}

/* PDU i of item `it`.  One not kept (kept()) leaves nothing that points into its tvbs: its
 * records keep no tvb (core/record.h), and the data sources its dissection added, never
 * shown, go with them. */
static void
run_pdu(const cut_t *c, item_t *it, guint32 i)
{
    l2p_pdu_t later = { it->pdu.index + i, 0, 1, FALSE, 0, NULL };
    drawn_t *d = c->drawn;
    volatile gboolean keep = kept(c->tvb, c->pinfo, c->tree, d);
    /* A PDU's own items (its header, its record) fit, or it is not drawn: its lists ask
     * p2pc_tree_room() item by item. */
    proto_tree *volatile pt_tree = keep ? p2pc_tree_room(c->tree, c->pinfo, c->tvb, PDU_ITEMS) : NULL;
    GSList *volatile sources = keep ? NULL : sources_tail(c->pinfo, d);
    tvbuff_t *volatile pt = pdu_tvb(c->tvb, c->pinfo, c->pipe, it, i, keep);
    /* The PDU's bytes end k bytes before the call's: so does its unit (p2pc_unit_before()). */
    guint end = MIN(c->inlen, it->end + i * it->len);
    pdu_call_t call = { c->pdu_fn, pt, c->pinfo, pt_tree, c->pipe, i == 0 ? &it->pdu : &later };

    /* One PDU's exception must not stop the PDUs after it, nor the pipe's bookkeeping: a
     * DissectorError too (the one Wireshark throws past gui.max_tree_items, among others),
     * which left uncaught kept the PDU in the pipe to throw again in every later frame. */
    TRY {
        p2pc_unit_call(c->pinfo, p2pc_unit_before(c->below, c->inlen - end), pdu_call, &call);
    }
    CATCH_BOUNDS_AND_DISSECTOR_ERRORS {
        show_exception(keep ? pt : c->tvb, c->pinfo, pt_tree, EXCEPT_CODE, GET_MESSAGE);
    }
    FINALLY {
        if (!keep) {
            while (sources ? sources->next : c->pinfo->data_src)
                remove_last_data_source(c->pinfo);
            d->tail = sources;
            tvb_free_chain(pt);
        }
    }
    ENDTRY;
    /* The muxer framing the PDU got is in its messages' header bytes (what a layer must call,
     * plugin/README.md), or was handed on (multistream's, zeroed): taken back from the muxer's. */
    if (call.pdu->overhead)
        p2pc_budget_add(c->pinfo, "libp2p", P2PC_LAYER_MUXER, L2P_KIND_DATA_HEADER, -(gint64)call.pdu->overhead);
}

static void
run_item(const cut_t *c, item_t *it)
{
    tvbuff_t *tvb = c->tvb;
    packet_info *pinfo = c->pinfo;
    l2p_pipe_t *pipe = c->pipe;

    switch (it->kind) {
    case IT_PDU:
        for (guint32 i = 0; i < it->count; i++)
            run_pdu(c, it, i);
        break;
    case IT_FORWARD:
        l2p_pipe_call(it->to, item_tvb(tvb, pinfo, pipe, it), pinfo, c->tree, it->fin);
        break;
    case IT_UNDECODED: {
        proto_item *ti = undecoded(item_tvb(tvb, pinfo, pipe, it), pinfo, c->tree, it->len, pipe->undecoded_reason);
        if (pipe->depth > L2P_MAX_DEPTH)
            expert_add_info_format(pinfo, ti, &ei_depth, "%u bytes of a layer nested %u deep (p2pc "
                                   "decodes %u): counted as undecoded", it->len, pipe->depth, L2P_MAX_DEPTH);
        else
            expert_add_info_format(pinfo, ti, &ei_undecoded, "%u bytes p2pc cannot frame%s%s", it->len,
                                   *pipe->protocol ? " on " : "", pipe->protocol);
        for (int k = 0; k < P2PC_SPEC_N; k++)
            if (it->pdu.spec & P2PC_SPEC_BIT(k))
                p2pc_spec(pinfo, ti, (p2pc_spec_t)k, NULL);
        break;
    }
    }
}

void
l2p_stream_refused(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree)
{
    guint len = tvb_reported_length(tvb);
    expert_add_info_format(pinfo, undecoded(tvb, pinfo, tree, len, NULL), &ei_streams, "A frame of a new "
                           "stream while %u are open on this connection (L2P_MAX_STREAMS): its %u bytes "
                           "are counted as undecoded", L2P_MAX_STREAMS, len);
}

/* Record p[0, len) as an item (in `scope`, counted against the replay budget when kept);
 * `fresh` is this frame's tvb data (fresh_len bytes). */
static item_t *
add_item(packet_info *pinfo, wmem_allocator_t *scope, feed_t *f, item_kind_t kind,
         const guint8 *fresh, guint fresh_len, const guint8 *p, guint len)
{
    item_t *it = f->spare ? f->spare : wmem_new(scope, item_t);
    memset(it, 0, sizeof *it);
    it->kind = kind;
    it->len = len;
    it->count = 1;
    it->off = -1;
    it->shown = len;
    /* Bytes that all came in this frame's tvb are recorded as an offset into it.  Undecoded
     * bytes are only counted: what of them this frame brought is shown, nothing is copied. */
    if (fresh && p >= fresh && p + len <= fresh + fresh_len)
        it->off = (gint)(p - fresh);
    else if (len == 0)
        it->off = 0;
    else if (kind == IT_UNDECODED) {
        it->off = 0;
        it->shown = fresh && p + len > fresh ? (guint)(p + len - fresh) : 0;
    } else
        it->data = (guint8 *)wmem_memdup(scope, p, len);
    if (f->spare)
        return it;  /* run at once and forgotten: a list of a million muxer frames would be */
    p2pc_replay_charge(pinfo, sizeof(item_t) + (it->data ? len : 0));
    if (f->last)
        f->last->next = it;
    else
        f->first = it;
    f->last = it;
    return it;
}

/* Replay keeps one record per PDU; a run of equal PDUs back to back in the frame (a muxer's
 * many small frames) is kept as one: `last`, just run, joins the run `prev` (the item before
 * it) when nothing tells it apart (no overhead, no per-PDU info, not truncated). */
static void
merge_into_run(packet_info *pinfo, wmem_allocator_t *scope, feed_t *f, item_t *prev, item_t *last)
{
    if (!prev || prev->kind != IT_PDU || prev->off < 0 || last->off < 0 || prev->len != last->len ||
        prev->off + (gint)(prev->count * prev->len) != last->off || prev->pdu.info || last->pdu.info ||
        prev->pdu.spec || last->pdu.spec ||
        last->pdu.overhead || prev->pdu.truncated || last->pdu.truncated ||
        prev->pdu.index + prev->count != last->pdu.index || last->pdu.calls != 1)
        return;
    prev->count++;
    prev->next = NULL;
    f->last = prev;
    wmem_free(scope, last);
    p2pc_replay_release(pinfo, sizeof(item_t));
}

/* First pass, the first bytes after a hole: the PDU the hole cut is undecoded (counted, none
 * of it shown: it came in earlier frames), and the framing resynchronises or gives up. */
static void
after_hole(const cut_t *c)
{
    l2p_pipe_t *pipe = c->pipe;
    guint held_len = pipe->buf ? pipe->buf->len : 0;
    gboolean resumes = !pipe->undecodable && pipe->gap_fn &&
                       pipe->gap_fn(pipe, held_len ? pipe->buf->data : NULL, held_len);

    pipe->gap = FALSE;
    pipe->gap_bytes = 0;
    if (held_len) {
        run_item(c, add_item(c->pinfo, c->scope, c->f, IT_UNDECODED, NULL, 0, pipe->buf->data, held_len));
        buf_drop(pipe);
    }
    pipe->skip = 0;
    if (resumes)
        pipe->resync = TRUE;
    else
        pipe->undecodable = TRUE;
}

/* The pipe handed off before this call: all of the call's bytes go to the next layer, with the
 * framing that carried them and the hole before them. */
static void
forward_call(const cut_t *c)
{
    l2p_pipe_t *pipe = c->pipe;
    item_t *it;

    pipe->next->overhead += pipe->overhead;
    pipe->overhead = 0;
    if (pipe->gap)
        l2p_pipe_gap(pipe->next, pipe->gap_bytes);
    pipe->gap = FALSE;
    pipe->gap_bytes = 0;
    it = add_item(c->pinfo, c->scope, c->f, IT_FORWARD, c->in, c->inlen, c->in, c->inlen);
    it->to = pipe->next;
    it->fin = pipe->fin;
    run_item(c, it);
}

/* The bytes to cut: the call's own when the pipe held none, else the pipe's buffer with the
 * call's appended. */
static void
begin_work(cut_t *c)
{
    l2p_pipe_t *pipe = c->pipe;

    c->direct = !pipe->buf;
    if (c->direct) {
        pipe->buf = g_byte_array_new();
        g_hash_table_insert(held_bufs, pipe->buf, pipe);
        if (pipe->conn)
            p2pc_conn_set_slot(pipe->conn, P2PC_SLOT_ENGINE, held_bufs);
        c->work = c->in;
        c->worklen = c->inlen;
    } else {
        if (c->inlen)
            g_byte_array_append(pipe->buf, c->in, c->inlen);
        c->work = pipe->buf->data;
        c->worklen = pipe->buf->len;
    }
    c->fresh_at = c->worklen - c->inlen;
    c->pos = 0;
}

/* Record work[pos, pos + len) as an item. */
static item_t *
add_work(const cut_t *c, item_kind_t kind, guint len)
{
    return add_item(c->pinfo, c->scope, c->f, kind, c->work + c->fresh_at, c->inlen, c->work + c->pos, len);
}

/* The pipe's calls whose bytes work[start, end) holds: those its buffer held before, and this one. */
static guint32
calls_of(const cut_t *c, guint start, guint end)
{
    return (start < c->fresh_at ? c->pipe->held_calls : 0) + (end > c->fresh_at ? 1u : 0u);
}

/* The next n bytes are a PDU (truncated: the rest, which the pipe closed on): its item, run. */
static item_t *
cut_pdu(cut_t *c, guint n, gboolean truncated)
{
    l2p_pipe_t *pipe = c->pipe;
    guint start = c->pos;
    item_t *it = add_work(c, IT_PDU, n);

    it->end = truncated ? c->inlen : start + n > c->fresh_at ? start + n - c->fresh_at : 0;
    it->pdu.index = pipe->pdus++;
    it->pdu.overhead = pipe->overhead;
    it->pdu.calls = calls_of(c, start, start + n);
    it->pdu.truncated = truncated;
    pipe->overhead = 0;
    c->pos += n;
    run_item(c, it);
    return it;
}

/* The layer's framing broke at pos (its len_fn returned < 0): the bytes up to its next frame
 * boundary (pipe->skip) are undecoded and cutting goes on after them (TRUE), or, with no
 * boundary in reach, the rest of the pipe is undecoded (FALSE). */
static gboolean
cut_broken(cut_t *c)
{
    l2p_pipe_t *pipe = c->pipe;
    guint rest = c->worklen - c->pos;
    gboolean resumes = pipe->skip && pipe->skip <= rest;
    guint n = resumes ? pipe->skip : rest;
    item_t *it;

    pipe->skip = 0;
    if (!resumes)
        pipe->undecodable = TRUE;
    it = add_work(c, IT_UNDECODED, n);
    it->pdu.spec = pipe->broke;
    pipe->broke = 0;
    c->pos += n;
    run_item(c, it);
    return resumes;
}

/* Cut the PDUs the layer's len_fn finds, until it needs more bytes or hands the pipe off. */
static void
cut_work(cut_t *c)
{
    l2p_pipe_t *pipe = c->pipe;

    while (c->pos < c->worklen) {
        gint64 n = c->len_fn(pipe, c->work + c->pos, c->worklen - c->pos);
        item_t *prev;
        if (pipe->next || n == 0)
            break;
        if (n > 0 && (guint64)n > c->worklen - c->pos)
            break;      /* a len_fn asking for bytes it has not seen: wait for them */
        if (n < 0) {
            if (!cut_broken(c))
                break;
            continue;
        }
        prev = c->f->last;
        merge_into_run(c->pinfo, c->scope, c->f, prev, cut_pdu(c, (guint)n, FALSE));
        if (pipe->next)
            break;
    }
}

/* What cutting left: the next layer's (a close too), a PDU the pipe closed inside (handed over
 * truncated), or bytes waiting past the pipe's budget: no framing waits for more than that
 * (framed Snappy padded without end, say), so they are undecodable, and counted. */
static void
end_work(cut_t *c)
{
    l2p_pipe_t *pipe = c->pipe;
    item_t *it;

    if (pipe->next) {
        if (c->pos < c->worklen || pipe->fin) {
            pipe->next->overhead += pipe->overhead;
            pipe->overhead = 0;
            it = add_work(c, IT_FORWARD, c->worklen - c->pos);
            it->to = pipe->next;
            it->fin = pipe->fin;
            c->pos = c->worklen;
            run_item(c, it);
        }
    } else if (pipe->fin && c->pos < c->worklen && !pipe->undecodable) {
        cut_pdu(c, c->worklen - c->pos, TRUE);
    }
    if (!pipe->next && !pipe->undecodable && c->worklen - c->pos > L2P_PIPE_BUDGET) {
        pipe->undecodable = TRUE;
        it = add_work(c, IT_UNDECODED, c->worklen - c->pos);
        c->pos = c->worklen;
        run_item(c, it);
    }
    pipe->held_calls = c->pos < c->worklen ? calls_of(c, c->pos, c->worklen) : 0;
    if (pipe->fin)
        pipe->closed = TRUE;
}

/* Keep what is left for the next call.  An empty buffer goes too: it keeps the capacity of the
 * largest PDU it ever held, and a capture has thousands of idle pipes. */
static void
keep_rest(const cut_t *c)
{
    l2p_pipe_t *pipe = c->pipe;

    if (c->direct) {
        if (c->pos < c->worklen)
            g_byte_array_append(pipe->buf, c->work + c->pos, c->worklen - c->pos);
    } else if (c->pos) {
        g_byte_array_remove_range(pipe->buf, 0, c->pos);
    }
    if (pipe->closed || pipe->next || pipe->buf->len == 0) {
        buf_drop(pipe);
        return;
    }
    buf_charge(pipe);
    if (!pipe->held_at)
        pipe->held_at = wmem_new0(l2p_pipe_pool(pipe), p2pc_record_t);
    p2pc_where_keep(l2p_pipe_pool(pipe), c->pinfo, pipe->held_at);
}

/* The first pass of a call: its items made and run, in order. */
static void
dissect_pdus(cut_t *c)
{
    l2p_pipe_t *pipe = c->pipe;

    if (pipe->next) {
        forward_call(c);
        return;
    }
    if (pipe->closed)
        return;
    if (pipe->gap)
        after_hole(c);
    if (pipe->undecodable) {
        if (c->inlen)
            run_item(c, add_item(c->pinfo, c->scope, c->f, IT_UNDECODED, c->in, c->inlen, c->in, c->inlen));
        return;
    }
    begin_work(c);
    cut_work(c);
    end_work(c);
    keep_rest(c);
}

/* A call's items made (first pass) or replayed.  c->drawn->tail, which may point at a source
 * the call's callers outside the engine remove once it returns, is given back as the call
 * found it (sources_tail()), exception or not.  (Its own function: the exception frame's
 * setjmp stays away from the caller's locals.) */
static void
run_call(cut_t *c, gboolean replay)
{
    GSList *volatile tail = c->drawn->tail;

    TRY {
        if (!replay)
            dissect_pdus(c);
        else
            for (item_t *it = c->f ? c->f->first : NULL; it; it = it->next)
                run_item(c, it);
    }
    FINALLY {
        c->drawn->tail = tail;
    }
    ENDTRY;
}

/* The engine's one way in for cutting PDUs: a later pass replays the items the first made. */
void
l2p_dissect_pdus(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, l2p_pipe_t *pipe,
                 l2p_len_fn len_fn, l2p_pdu_fn pdu_fn)
{
    gboolean replay = FALSE;
    item_t spare;
    /* Kept for no later pass: the feed, and the one item each PDU reuses, are this call's (a
     * pool allocation per muxer frame would last as long as the frame). */
    feed_t once = { NULL, NULL, &spare };
    cut_t c;

    memset(&c, 0, sizeof c);
    c.tvb = tvb;
    c.pinfo = pinfo;
    c.tree = tree;
    c.pipe = pipe;
    c.len_fn = len_fn;
    c.pdu_fn = pdu_fn;
    c.drawn = frame_drawn(pinfo);
    c.below = p2pc_unit_get(pinfo);
    c.f = PINFO_FD_VISITED(pinfo) || p2pc_keep_replay(pinfo) ?
          (feed_t *)l2p_frame_slot(pinfo, pipe, sizeof(feed_t), &replay) : &once;
    c.scope = p2pc_replay_scope(pinfo);
    c.inlen = tvb_captured_length(tvb);
    c.in = c.inlen ? tvb_get_ptr(tvb, 0, c.inlen) : NULL;
    run_call(&c, replay);
}

void
l2p_record_framing(p2pc_record_t *rec, const l2p_pipe_t *pipe, const l2p_pdu_t *pdu)
{
    if (!pipe->muxer)
        return;
    rec->mux_stream = (gint64)pipe->stream_id;
    rec->mux_frames = pdu ? pdu->calls : 0;
}

void
l2p_register_engine(int proto)
{
    l2p_proto = proto;
    static hf_register_info hf[] = {
        { &hf_undecoded, { "Undecoded bytes", "multistream.undecoded", FT_BYTES, BASE_NONE, NULL, 0x0,
            "Bytes of a pipe whose framing broke", HFILL } },
    };
    static ei_register_info ei[] = {
        { &ei_undecoded, { "multistream.undecoded.expert", PI_MALFORMED, PI_WARN, "Bytes p2pc cannot frame", EXPFILL } },
        { &ei_not_drawn, { "libp2p.not_drawn", PI_UNDECODED, PI_NOTE,
            "This frame completes more PDUs than p2pc draws (L2P_PDUS_DRAWN): the later ones are "
            "decoded and counted, not drawn", EXPFILL } },
        { &ei_depth, { "libp2p.depth", PI_MALFORMED, PI_WARN,
            "libp2p layers nest deeper than p2pc decodes (L2P_MAX_DEPTH, a muxer inside a muxed "
            "stream and so on): the deeper layer's bytes are counted as undecoded", EXPFILL } },
        { &ei_streams, { "libp2p.streams", PI_UNDECODED, PI_WARN,
            "A frame of a new muxed stream while L2P_MAX_STREAMS streams are open on its "
            "connection (a flood of streams never closed): its bytes are counted as undecoded",
            EXPFILL } },
        { &ei_role_unknown, { "libp2p.role.unknown", PI_ASSUMPTION, PI_WARN,
            "Which side dialed is not in the capture (no TCP SYN, multistream-select proposal, "
            "Noise initiator, TLS ClientHello or yamux stream opening): this stream's direction "
            "(request or response) takes the first side to send bytes as the dialer", EXPFILL } },
        { &ei_role_conflict, { "libp2p.role.conflict", PI_PROTOCOL, PI_WARN,
            "This fact about which side dialed contradicts an earlier, stronger one (the TCP SYN, "
            "the security handshake or the multistream-select proposal): the earlier one is kept",
            EXPFILL } },
    };
    expert_module_t *expert;
    proto_register_field_array(proto, hf, array_length(hf));
    expert = expert_register_protocol(proto);
    expert_register_field_array(expert, ei, array_length(ei));
    held_bufs = g_hash_table_new_full(g_direct_hash, g_direct_equal, free_byte_array, NULL);
    kept_tails = p2pc_tail_kept_new();
    register_init_routine(pool_init);
    register_cleanup_routine(bufs_cleanup);
    p2pc_conn_on_free(drop_conn_bufs);
    p2pc_conn_on_retire(keep_conn_tails);
    p2pc_tail_register(engine_tails);
}
