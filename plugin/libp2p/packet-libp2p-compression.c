/* packet-libp2p-compression.c
 * The libp2p compression transport: a layer between security and the muxer, negotiated by
 * multistream-select like them, that turns each connection direction into one continuous
 * compressed stream (Protocol Labs ResNetLab, 2020; adlrocha's go-libp2p forks, never merged
 * into libp2p/specs; docs/libp2p-compression.md).
 *
 *   /compression/gzip     10-byte gzip header, then deflate, sync-flushed (00 00 ff ff) after
 *                         every write of the muxer; the gzip trailer only when the connection
 *                         closes (github.com/adlrocha/go-libp2p-gzip, compress/gzip).
 *   /compression/cbrotli  a raw brotli stream (no magic), flushed after every write
 *                         (github.com/adlrocha/go-libp2p-cbrotli, the C library via cgo).
 *   /compression/none     nothing: the muxer negotiation follows directly.
 *   /deflate/1.0.0        rust-libp2p's deprecated deflate transport: raw deflate, sync-flushed.
 *
 * No write is decodable on its own: every direction needs one persistent decoder fed every
 * byte in order.  As packet-websocket.c does for permessage-deflate, the decoder lives in the
 * direction's state, is fed on the first pass only, and each frame keeps what it produced
 * (file scope), so `tshark -2` and the GUI's random-order re-dissection show the same trees.
 * The decompressed bytes get their own tab and go to multistream-select on a pipe of their
 * own (engine.h), which negotiates the muxer and reassembles everything above exactly as
 * on an uncompressed connection.
 *
 * Accounting: the messages decoded above carry the stream codec ("gzip-stream",
 * "brotli-stream", "deflate-stream") and the compressed bytes attributed to them: the
 * compressed bytes a direction received since the end of the flush unit that completed the
 * previous group of messages, up to the end of the one that completes this group (the messages
 * one flush unit completes: feed_units(), comp_attribute()), are split among the group's
 * messages in proportion to their decompressed size, the rounding remainder to the last, and so
 * are the bytes they
 * decompressed to: a message's raw_len is its share of those (plus what a codec of its own, e.g.
 * eth2's snappy, saved), what it would have cost on the connection without the transport.  Per
 * direction the sums add up to the compressed and decompressed bytes up to the last message.
 *
 * A hole in a direction (a segment missing from the capture) stops only that direction, and a
 * deflate stream resumes where the format allows: gzip and /deflate/1.0.0 sync-flush after
 * every write (an empty stored block ending 00 00 ff ff), so the byte after a flush starts a
 * new deflate block.  Sync-flush points do not reset the window, so what follows a hole may
 * copy bytes that are gone; the decoder (codecs.h, p2pc_stream_gap) tells exactly which output
 * bytes do.  The compressed bytes before the first sync-flush point are skipped (counted as
 * undecoded); of the output, the determined runs go up, and each undetermined run is a hole
 * for the pipe above (l2p_pipe_gap), whose muxer resynchronises at its next frame header.
 * Once the last 32 KiB of output are determined the stream is whole again.  A brotli stream
 * cannot resume: its state (distance ring, context) carries across meta-blocks, flushed or
 * not; after a hole its direction stops.  A stream that does not decode stops its direction
 * here, with an expert item.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/p2pc-compat.h"
#include "core/codecs.h"
#include "core/prefs.h"
#include "libp2p/engine.h"
#include "core/record.h"
#include "core/shares.h"
#include "core/unit.h"

#include <epan/expert.h>
#include <epan/prefs.h>
#include <epan/proto_data.h>

void proto_register_libp2p_compression(void);
void proto_reg_handoff_libp2p_compression(void);

/* Output bounds: decompressed bytes from one frame, and from one connection direction in all;
 * p2pc_bound() adds the global ones (p2pc.max_decompressed_mib, the ratio of a direction's
 * output to its input, the capture's budget). */
#define COMP_FRAME_BOUND (64 * 1024 * 1024)
#define COMP_DIR_BOUND   (G_GUINT64_CONSTANT(4) * 1024 * 1024 * 1024)
/* After a hole, the determined runs of output that go up (choose_runs()): each is one call of
 * the layers above, and the layers of one frame are bounded (gui.max_tree_depth), so at most
 * COMP_MAX_RUNS per frame, the longest.  A shorter run than COMP_MIN_RUN between undetermined
 * bytes is withheld too: copies of the lost window stay scattered through compressible data
 * for as long as it goes on, and the short runs between them are fragments of the streams the
 * hole broke, in which a muxer looking for its next frame header finds false ones by chance. */
#define COMP_MAX_RUNS 32
#define COMP_MIN_RUN 512

static int proto_comp = -1;
static int hf_comp_protocol = -1;
static int hf_comp_codec = -1;
static int hf_comp_in = -1;
static int hf_comp_out = -1;
static int hf_comp_in_total = -1;
static int hf_comp_out_total = -1;
static int hf_comp_ratio = -1;
static int hf_comp_stopped_in = -1;
static int hf_comp_skipped = -1;
static int hf_comp_withheld = -1;
static int hf_comp_data = -1;
static gint ett_comp = -1;
static expert_field ei_comp_failed = EI_INIT;
static expert_field ei_comp_resync = EI_INIT;

static dissector_handle_t comp_handle;
static p2pc_bool_t pref_decompress = TRUE;

/* Protocol IDs and their stream codecs. */
static const struct {
    const char *id;
    p2pc_codec_t codec;
} comp_ids[] = {
    { "/compression/gzip", P2PC_CODEC_GZIP_STREAM },
    { "/compression/cbrotli", P2PC_CODEC_BROTLI_STREAM },
    { "/compression/none", P2PC_CODEC_NONE },
    { "/deflate/1.0.0", P2PC_CODEC_DEFLATE_STREAM },
};

/* One connection direction (the pipe's state, in its pool; first pass only). */
typedef struct comp_dir {
    p2pc_codec_t codec;
    const char *codec_name;
    p2pc_stream_t *dec;         /* NULL for none, or with decompression off */
    l2p_pipe_t *inner;          /* the decompressed bytes: multistream-select of the muxer */
    guint64 in_total;           /* compressed bytes fed */
    guint64 out_total;          /* decompressed bytes produced */
    guint64 unattributed;       /* compressed bytes fed and not yet attributed to a message */
    guint64 unattributed_out;   /* what they decompressed to */
    guint32 stopped_in;         /* the frame where decoding stopped (0: it goes on) */
    p2pc_limit_t stopped_by;    /* what stopped it, when a ratio or the capture's budget did */
    gboolean resyncing;         /* after a hole, until the decoder's window is known again */
    guint64 skipped;            /* compressed bytes skipped since the hole */
    p2pc_record_t last;         /* where and when it was last fed */
    guint32 window;             /* the last 4 bytes fed: a sync-flush marker across frames */
    p2pc_conn_t *conn;          /* its connection (NULL: none, file scope) */
    struct comp_dir *prev, *next;   /* every direction whose state is kept (dirs) */
} comp_dir_t;

/* Every direction whose state is kept, newest first, for what they hold when it goes
 * (comp_tails): each leaves the list when its pool frees it (dir_freed_cb). */
static comp_dir_t *dirs;
/* The tails of the directions of connections a new one on their endpoints retired (record.h,
 * p2pc_tail_keep()). */
static GArray *kept_tails;

/* What a decompressor's state costs its connection (core/conn.h: the budget of state carried
 * over session resets): zlib's inflate, 1 << 15 window bytes and about 7 KiB (zlib.h); brotli's
 * decoder, its ring buffer up to the window go's cbrotli writes with (lgwin 22, 4 MiB). */
#define COMP_ZLIB_STATE (39 * 1024)
#define COMP_BROTLI_STATE (4 * 1024 * 1024)

/* What one frame did to one direction (file scope; replayed on later passes). */
typedef struct {
    guint32 in_len;
    guint8 *out;
    guint32 out_len;
    guint64 in_total;           /* after this frame */
    guint64 out_total;
    const char *detail;         /* why decoding stopped in this frame */
    guint32 stopped_in;         /* decoding had stopped before this frame (in that frame) */
    p2pc_limit_t stopped_by;    /* P2PC_LIMIT_RATIO or _CAPTURE: a bound stopped it (here or before) */
    wmem_array_t *attributed;   /* guint64 per record the frame's inner layers added */
    wmem_array_t *attributed_out;   /* the same records' shares of what those bytes decompressed to */
    wmem_array_t *unit_ends;    /* the same records' unit ends in the TCP payload (G_MAXUINT64: none) */
    /* After a hole (see the top of this file): */
    guint32 skipped;            /* compressed bytes of this frame before the sync-flush point */
    guint64 resumed_after;      /* decoding resumed in this frame after this many skipped */
    guint32 withheld;           /* output bytes not handed up: they depend on the lost window */
    wmem_array_t *runs;         /* guint32 output runs, handed up (in out) and not, in turn */
} comp_frame_t;

/* Its pool frees a direction: its decompressor goes, and it leaves the list. */
static p2pc_bool_t
dir_freed_cb(wmem_allocator_t *allocator, wmem_cb_event_t event, void *user_data)
{
    comp_dir_t *cd = (comp_dir_t *)user_data;
    if (cd->dec)
        p2pc_stream_free(cd->dec);
    if (cd->prev)
        cd->prev->next = cd->next;
    else
        dirs = cd->next;
    if (cd->next)
        cd->next->prev = cd->prev;
    return FALSE;   /* once */
}

static comp_dir_t *
comp_dir(l2p_pipe_t *pipe)
{
    comp_dir_t *cd = (comp_dir_t *)pipe->state;
    if (cd)
        return cd;
    cd = wmem_new0(l2p_pipe_pool(pipe), comp_dir_t);
    cd->conn = pipe->conn;
    cd->codec = P2PC_CODEC_NONE;
    for (size_t i = 0; i < G_N_ELEMENTS(comp_ids); i++)
        if (!strcmp(pipe->protocol, comp_ids[i].id))
            cd->codec = comp_ids[i].codec;
    cd->codec_name = p2pc_codec_name(cd->codec);
    if (cd->codec != P2PC_CODEC_NONE && pref_decompress) {
        cd->dec = p2pc_stream_new(cd->codec);
        if (cd->conn)
            p2pc_conn_charge(cd->conn, cd->codec == P2PC_CODEC_BROTLI_STREAM ? COMP_BROTLI_STATE : COMP_ZLIB_STATE);
    }
    wmem_register_callback(l2p_pipe_pool(pipe), dir_freed_cb, cd);
    /* After the compression layer comes the muxer's multistream-select, on a pipe of its own
     * whose other direction is the peer pipe's decompressed stream. */
    cd->inner = l2p_pipe_inside(l2p_multistream_handle(), pipe->dir, pipe);
    cd->inner->reencoded = TRUE;        /* comp_tails() counts what it holds, compressed */
    cd->inner->role = pipe->role;
    cd->inner->muxer = pipe->muxer;
    cd->inner->stream_id = pipe->stream_id;
    if (pipe->peer && pipe->peer->state) {
        comp_dir_t *other = (comp_dir_t *)pipe->peer->state;
        cd->inner->peer = other->inner;
        other->inner->peer = cd->inner;
    }
    pipe->state = cd;
    cd->next = dirs;
    if (dirs)
        dirs->prev = cd;
    dirs = cd;
    return cd;
}

/* The compressed bytes a direction received after the frame of its last message (closing
 * window updates, the gzip trailer, or all a hole left undecodable), in its last frame; the
 * codec: bytes of that stream, which no message claimed. */
static void
dir_tail(const comp_dir_t *cd, p2pc_tail_emit_fn emit, void *ud, const char *why)
{
    p2pc_tail_undecoded(emit, ud, &cd->last, "libp2p", cd->codec_name, cd->unattributed, why);
}

/* A new connection retires c: its directions' tails are the capture's, kept for its end (the
 * oldest direction first: they are emitted the last kept first). */
static void
keep_conn_tails(p2pc_conn_t *c)
{
    const comp_dir_t *cd = dirs;
    while (cd && cd->next)
        cd = cd->next;
    for (; cd; cd = cd->prev)
        if (cd->conn == c)
            dir_tail(cd, p2pc_tail_keep, kept_tails, NULL);
}

/* At the end of the capture, or of a session whose reset drops the direction: each direction's
 * tail, the newest first; at the end, then those of the connections retired (older than any on
 * their endpoints still open). */
static void
comp_tails(p2pc_tail_emit_fn emit, void *ud, gboolean at_reset)
{
    for (const comp_dir_t *cd = dirs; cd; cd = cd->next) {
        const char *why;
        if (p2pc_conn_tail_now(cd->conn, at_reset, &why))
            dir_tail(cd, emit, ud, why);
    }
    p2pc_tail_kept_emit(kept_tails, TRUE, emit, ud, at_reset);
}

static int
cmp_desc(const void *a, const void *b)
{
    guint32 x = *(const guint32 *)a, y = *(const guint32 *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* First pass: the determined runs that go up (see COMP_MAX_RUNS), into fr->runs (in `scope`);
 * the others are withheld with the undetermined bytes around them, and out is compacted. */
static void
choose_runs(comp_frame_t *fr, wmem_array_t *runs, guint8 *out, size_t *out_len, wmem_allocator_t *scope)
{
    guint n = wmem_array_get_count(runs), det = (n + 1) / 2, ties = 0;
    const guint32 *r = (const guint32 *)wmem_array_get_raw(runs);
    guint32 *lens, cut, gap = 0, zero = 0, *last;
    size_t src = 0, dst = 0;
    wmem_array_t *kept;

    if (det <= COMP_MAX_RUNS) {
        cut = 0;
    } else {
        lens = g_new(guint32, det);
        for (guint i = 0; i < det; i++)
            lens[i] = r[2 * i];
        qsort(lens, det, sizeof(guint32), cmp_desc);
        cut = lens[COMP_MAX_RUNS - 1];
        for (guint i = 0; i < COMP_MAX_RUNS; i++)
            ties += lens[i] == cut; /* runs as long as the shortest kept one that still go up */
        g_free(lens);
    }
    kept = wmem_array_new(scope, sizeof(guint32));
    wmem_array_append_one(kept, zero);
    for (guint i = 0; i < n; i++) {
        gboolean up = i % 2 == 0 && r[i] >= COMP_MIN_RUN && (r[i] > cut || (r[i] == cut && ties && ties--));
        if (i % 2 == 0)
            src += r[i];
        if (!up) {
            gap += r[i];
            fr->withheld += i % 2 == 0 ? r[i] : 0;
            continue;
        }
        if (gap) {
            wmem_array_append_one(kept, gap);
            wmem_array_append_one(kept, zero);
            gap = 0;
        }
        last = (guint32 *)wmem_array_index(kept, wmem_array_get_count(kept) - 1);
        *last += r[i];
        memmove(out + dst, out + src - r[i], r[i]);
        dst += r[i];
    }
    if (gap)
        wmem_array_append_one(kept, gap);
    fr->runs = kept;
    *out_len = dst;
}

/* The end of one flush unit in a frame: the direction's compressed and decompressed bytes up to
 * there (first pass, in pinfo->pool). */
typedef struct {
    guint64 in;
    guint64 out;
} comp_unit_t;

/* Where the next flush unit of `in` may end after `at`: past the next sync-flush marker, which
 * may have begun in an earlier frame (cd->window), or at `len`.  brotli marks none. */
static guint
next_marker(comp_dir_t *cd, const guint8 *in, guint at, guint len)
{
    if (cd->codec == P2PC_CODEC_BROTLI_STREAM)
        return len;
    while (at < len) {
        cd->window = (cd->window << 8) | in[at++];
        if (cd->window == 0x0000ffffU)
            break;
    }
    return at;
}

typedef struct {
    guint8 *data;
    size_t len;
} comp_part_t;

/* First pass, a stream fed without a hole: feed `in` one flush unit at a time, so that each
 * unit's end is known (docs/libp2p-compression.md, rules 1-4).  gzip and deflate mark it: the
 * sync-flush marker 00 00 ff ff at a block boundary (p2pc_stream_at_flush(), which tells a
 * marker from the same bytes inside a block).  A brotli stream marks none that libbrotlidec
 * reports (its flush ends in an empty metadata block; 1.0.9 has no callback for those), and
 * feeding it a byte at a time to see where output grows made it several times slower: its
 * frame is one unit.  The frame's end ends the last.  A frame that is one unit (the usual: a
 * write flushed per segment) decodes straight into the kept scope; one of several units is
 * decoded unit by unit and copied once. */
static p2pc_dc_status_t
feed_units(comp_dir_t *cd, const guint8 *in, guint len, size_t bound, packet_info *pinfo,
           wmem_array_t *units, guint8 **out, size_t *out_len, const char **detail)
{
    wmem_allocator_t *scope = p2pc_replay_scope(pinfo);
    wmem_array_t *parts = wmem_array_new(pinfo->pool, sizeof(comp_part_t));
    p2pc_dc_status_t st = P2PC_DC_OK;
    size_t total = 0, at_out = 0;
    guint at = 0;

    while (at < len && st == P2PC_DC_OK) {
        guint next = next_marker(cd, in, at, len);
        comp_part_t part;
        comp_unit_t u;
        if (at == 0 && next == len)
            return p2pc_stream_feed(cd->dec, in, len, bound, scope, out, out_len, detail);
        st = p2pc_stream_feed(cd->dec, in + at, next - at, bound > total ? bound - total : 0, pinfo->pool,
                              &part.data, &part.len, detail);
        wmem_array_append_one(parts, part);
        total += part.len;
        at = next;
        if (st == P2PC_DC_OK && at < len && p2pc_stream_at_flush(cd->dec)) {
            u.in = cd->in_total + at;
            u.out = cd->out_total + total;
            wmem_array_append_one(units, u);
        }
    }
    *out_len = total;
    *out = (guint8 *)wmem_alloc(scope, total ? total : 1);
    for (guint i = 0; i < wmem_array_get_count(parts); i++) {
        const comp_part_t *part = (const comp_part_t *)wmem_array_index(parts, i);
        if (part->len)
            memcpy(*out + at_out, part->data, part->len);
        at_out += part->len;
    }
    return st;
}

/* First pass: a hole in the capture before this frame's bytes.  Uncompressed, the pipe above
 * gets the same hole; a stream that can resynchronise does so at its next sync-flush point;
 * any other stops decoding here. */
static void
comp_gap(l2p_pipe_t *pipe, comp_dir_t *cd, comp_frame_t *fr, packet_info *pinfo)
{
    pipe->gap = FALSE;
    if (cd->codec == P2PC_CODEC_NONE) {
        l2p_pipe_gap(cd->inner, pipe->gap_bytes);   /* the same bytes, uncompressed */
    } else if (cd->stopped_in) {
        /* Stopped already. */
    } else if (cd->dec && p2pc_stream_gap(cd->dec)) {
        /* Resumes at the next sync-flush point; the hole cut what the pipe above held. */
        cd->resyncing = TRUE;
        cd->skipped = 0;
        l2p_pipe_gap(cd->inner, 0);
    } else {
        fr->detail = cd->codec == P2PC_CODEC_BROTLI_STREAM ?
            "bytes before this frame are missing from the capture, and a brotli stream cannot "
            "resume after a hole" :
            "bytes before this frame are missing from the capture";
        cd->stopped_in = pinfo->num;
    }
}

/* First pass, after a hole: the frame's compressed bytes fed while the decoder looks for its
 * sync-flush point; what it skipped and could not place is counted, and the output's
 * determined runs kept (choose_runs()). */
static p2pc_dc_status_t
feed_resyncing(comp_dir_t *cd, comp_frame_t *fr, const guint8 *in, guint len, size_t bound, packet_info *pinfo,
               guint8 **out, size_t *out_len, const char **detail)
{
    p2pc_stream_gap_t gap;
    p2pc_dc_status_t st = p2pc_stream_feed_gap(cd->dec, in, len, bound, p2pc_replay_scope(pinfo), out, out_len,
                                               &gap, detail);
    cd->skipped += gap.skipped;
    fr->skipped = (guint32)gap.skipped;
    if (gap.resumed)
        fr->resumed_after = cd->skipped;
    fr->withheld = (guint32)gap.undetermined;
    if (gap.runs) {
        choose_runs(fr, gap.runs, *out, out_len, p2pc_replay_scope(pinfo));
        wmem_destroy_array(gap.runs);
        *out = (guint8 *)wmem_realloc(p2pc_replay_scope(pinfo), *out, *out_len ? *out_len : 1);
        p2pc_replay_charge(pinfo, wmem_array_get_count(fr->runs) * sizeof(guint32));
    }
    cd->out_total += gap.undetermined;
    cd->resyncing = !gap.in_sync;
    return st;
}

/* First pass: feed this frame's compressed bytes to the direction's decoder. */
static void
comp_feed(l2p_pipe_t *pipe, comp_dir_t *cd, comp_frame_t *fr, tvbuff_t *tvb, packet_info *pinfo,
          wmem_array_t *units)
{
    guint len = tvb_captured_length(tvb);
    guint8 *out = NULL;
    size_t out_len = 0, own;
    const char *detail = NULL;
    p2pc_dc_status_t st;
    p2pc_bound_t bound;

    fr->in_len = len;
    if (pipe->gap)
        comp_gap(pipe, cd, fr, pinfo);
    if (cd->stopped_in) {
        fr->stopped_in = cd->stopped_in;
        fr->stopped_by = cd->stopped_by;
    } else if (cd->codec == P2PC_CODEC_NONE) {
        out_len = len;  /* the bytes as they are: handed on in the frame's own tvb */
    } else if (!cd->dec) {
        /* Decompression switched off: the compressed bytes are shown, nothing above. */
    } else if (len) {
        size_t produced;
        own = COMP_FRAME_BOUND;
        if (cd->out_total + own > COMP_DIR_BOUND)
            own = (size_t)(COMP_DIR_BOUND - cd->out_total);
        bound = p2pc_bound(pinfo, own, cd->in_total + len, cd->out_total);
        if (bound.bound == 0) {
            st = P2PC_DC_BOUND;
            detail = "the decompressed output reached its bound";
        } else if (cd->resyncing) {
            st = feed_resyncing(cd, fr, tvb_get_ptr(tvb, 0, len), len, bound.bound, pinfo, &out, &out_len, &detail);
        } else {
            st = feed_units(cd, tvb_get_ptr(tvb, 0, len), len, bound.bound, pinfo, units, &out, &out_len, &detail);
        }
        produced = out_len + fr->withheld;
        if (p2pc_bound_charge(pinfo, &bound, produced, st == P2PC_DC_BOUND))
            cd->stopped_by = fr->stopped_by = bound.by;
        if (st != P2PC_DC_OK) {
            /* What decoded before the error is still good: it goes up; nothing after it. */
            fr->detail = detail ? detail : p2pc_dc_status_name(st);
            cd->stopped_in = pinfo->num;
        }
    }
    if (!fr->stopped_in && (cd->dec || cd->codec == P2PC_CODEC_NONE)) {
        cd->in_total += len;
        cd->out_total += out_len;
        cd->unattributed += len - fr->skipped;  /* the skipped bytes have a record of their own */
        cd->unattributed_out += out_len + fr->withheld;
        if (len)
            p2pc_where_keep(cd->conn ? p2pc_conn_pool(cd->conn) : wmem_file_scope(), pinfo, &cd->last);
    }
    p2pc_replay_charge(pinfo, out_len);
    fr->out = out;
    fr->out_len = (guint32)out_len;
    fr->in_total = cd->in_total;
    fr->out_total = cd->out_total;
    {
        comp_unit_t end = { cd->in_total, cd->out_total };  /* the frame's end ends the last unit */
        wmem_array_append_one(units, end);
    }
}

typedef struct {
    comp_dir_t *cd;
    comp_frame_t *fr;
    gboolean replay;
    wmem_array_t *units;        /* first pass: comp_unit_t, the frame's flush units' ends */
    p2pc_unit_t below;          /* the unit this frame's compressed bytes came in */
} attr_ctx_t;

static const char *
stacked_codec(packet_info *pinfo, const char *inner, const char *stream)
{
    if (!inner || !strcmp(inner, "none"))
        return stream;
    /* A message compressed on its own (eth2's snappy) inside the compressed stream. */
    return wmem_strdup_printf(pinfo->pool, "%s+%s", inner, stream);
}

/* The records the layers above added in this frame: group them by the flush unit that completed
 * each (the first unit whose output reaches its end), give each group the compressed bytes from
 * the previous group's unit to the end of its own, and the bytes they decompressed to, split
 * among its records in proportion to their decompressed size, the rounding remainder to the
 * last (see the top of this file); each record's unit end becomes that unit's in the TCP
 * payload.  First pass; later passes replay what it gave. */
static void
comp_attribute(packet_info *pinfo, p2pc_record_t **recs, guint n, void *ctx)
{
    attr_ctx_t *a = (attr_ctx_t *)ctx;
    comp_frame_t *fr = a->fr;
    if (n == 0)
        return;
    if (!a->replay) {
        comp_dir_t *cd = a->cd;
        wmem_allocator_t *scope = p2pc_replay_scope(pinfo);
        guint nu = wmem_array_get_count(a->units), i = 0, k = 0;
        fr->attributed = wmem_array_sized_new(scope, sizeof(guint64), n);
        fr->attributed_out = wmem_array_sized_new(scope, sizeof(guint64), n);
        fr->unit_ends = wmem_array_sized_new(scope, sizeof(guint64), n);
        p2pc_replay_charge(pinfo, 3 * n * sizeof(guint64));
        while (i < n) {
            const comp_unit_t *u;
            guint j = i;
            guint64 in_after, out_after, budget, budget_out, end;
            /* The unit of record i; the records after it that the same unit completed. */
            for (; k + 1 < nu; k++) {
                u = (const comp_unit_t *)wmem_array_index(a->units, k);
                if (!recs[i]->has_unit_end || u->out >= recs[i]->unit_end)
                    break;
            }
            u = (const comp_unit_t *)wmem_array_index(a->units, k);
            while (j < n && (j == i || (recs[j]->has_unit_end && recs[j]->unit_end <= u->out)))
                j++;
            in_after = fr->in_total - u->in;
            out_after = fr->out_total - u->out;
            budget = cd->unattributed > in_after ? cd->unattributed - in_after : 0;
            budget_out = cd->unattributed_out > out_after ? cd->unattributed_out - out_after : 0;
            cd->unattributed -= budget;
            cd->unattributed_out -= budget_out;
            end = a->below.set ? p2pc_unit_before(a->below, in_after).end : G_MAXUINT64;
            p2pc_record_shares_append(fr->attributed, recs + i, j - i, budget, P2PC_SHARE_BY_RAW);
            p2pc_record_shares_append(fr->attributed_out, recs + i, j - i, budget_out, P2PC_SHARE_BY_RAW);
            for (; i < j; i++)
                wmem_array_append_one(fr->unit_ends, end);
        }
    }
    for (guint i = 0; i < n; i++) {
        p2pc_record_t *r = recs[i];
        guint64 share = p2pc_record_share(fr->attributed, i);
        guint64 end = fr->unit_ends && i < wmem_array_get_count(fr->unit_ends) ?
                      *(guint64 *)wmem_array_index(fr->unit_ends, i) : G_MAXUINT64;
        r->codec = stacked_codec(pinfo, r->codec, a->cd->codec_name);
        /* Uncompressed, the message would cost what its share decompressed to (its framing and
         * the control bytes flushed with it included), larger by what a codec of its own saved. */
        r->raw_len = p2pc_record_share(fr->attributed_out, i) + r->raw_len - r->payload_len;
        /* The muxer and message headers were compressed with the payload: no byte on the
         * wire is header alone. */
        r->header_len = 0;
        r->payload_len = share;
        r->wire_len = share;
        r->has_unit_end = end != G_MAXUINT64;
        r->unit_end = end;
    }
}

static void
draw(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, l2p_pipe_t *pipe, comp_dir_t *cd,
     const comp_frame_t *fr)
{
    proto_item *ti = proto_tree_add_item(tree, proto_comp, tvb, 0, -1, ENC_NA);
    proto_tree *t = proto_item_add_subtree(ti, ett_comp);
    proto_item *pi;
    double ratio;

    proto_tree_add_string(t, hf_comp_protocol, tvb, 0, 0, pipe->protocol);
    pi = proto_tree_add_string(t, hf_comp_codec, tvb, 0, 0, cd->codec_name);
    proto_item_set_generated(pi);
    if (cd->codec != P2PC_CODEC_NONE)
        proto_tree_add_item(t, hf_comp_data, tvb, 0, -1, ENC_NA);
    if (fr->stopped_in) {
        proto_item_append_text(ti, ": %s, %u bytes not decoded", cd->codec_name, fr->in_len);
        pi = proto_tree_add_uint(t, hf_comp_stopped_in, tvb, 0, 0, fr->stopped_in);
        proto_item_set_generated(pi);
        if (fr->detail && fr->stopped_in == pinfo->num)
            expert_add_info_format(pinfo, ti, &ei_comp_failed, "%s: decoding of this direction stops here",
                                   fr->detail);
        /* Counted, not lost: the bytes get a record of their own. */
        p2pc_record_undecoded(tvb, 0, -1, pinfo, tree, "libp2p", fr->in_len,
                              fr->stopped_by != P2PC_LIMIT_OWN ? "bound" : NULL);
        return;
    }
    if (fr->skipped) {
        /* Compressed bytes after a hole, before the sync-flush point where decoding resumes:
         * counted, not lost. */
        proto_tree_add_uint(t, hf_comp_skipped, tvb, 0, fr->skipped, fr->skipped);
        p2pc_record_undecoded(tvb, 0, fr->skipped, pinfo, tree, "libp2p", fr->skipped, NULL);
    }
    if (fr->resumed_after)
        expert_add_info_format(pinfo, ti, &ei_comp_resync,
                               "%s resynchronised at a sync-flush point after %" G_GUINT64_FORMAT
                               " compressed bytes skipped", cd->codec_name, fr->resumed_after);
    if (fr->runs) {
        pi = proto_tree_add_uint(t, hf_comp_withheld, tvb, 0, 0, fr->withheld);
        proto_item_set_generated(pi);
    }
    proto_item_append_text(ti, ": %s, %u bytes in, %u bytes out", cd->codec_name, fr->in_len, fr->out_len);
    pi = proto_tree_add_uint(t, hf_comp_in, tvb, 0, 0, fr->in_len);
    proto_item_set_generated(pi);
    pi = proto_tree_add_uint(t, hf_comp_out, tvb, 0, 0, fr->out_len);
    proto_item_set_generated(pi);
    pi = proto_tree_add_uint64(t, hf_comp_in_total, tvb, 0, 0, fr->in_total);
    proto_item_set_generated(pi);
    pi = proto_tree_add_uint64(t, hf_comp_out_total, tvb, 0, 0, fr->out_total);
    proto_item_set_generated(pi);
    ratio = fr->in_total ? (double)fr->out_total / (double)fr->in_total : 1.0;
    pi = proto_tree_add_double(t, hf_comp_ratio, tvb, 0, 0, ratio);
    proto_item_set_generated(pi);
    if (fr->detail && fr->stopped_by != P2PC_LIMIT_OWN)
        p2pc_bound_expert(pinfo, ti, fr->stopped_by);
    else if (fr->detail)
        expert_add_info_format(pinfo, ti, &ei_comp_failed,
                               "%s does not decode (%s): decoding of this direction stops here",
                               cd->codec_name, fr->detail);
}

/* After a hole: the determined runs of the output go up, and each undetermined run is a hole
 * for the pipe above (recorded on the first pass, replayed as the runs it cut). */
static void
call_runs(tvbuff_t *dtvb, packet_info *pinfo, proto_tree *tree, gboolean fin, const attr_ctx_t *a)
{
    comp_dir_t *cd = a->cd;
    const comp_frame_t *fr = a->fr;
    guint n = wmem_array_get_count(fr->runs), off = 0;
    for (guint i = 0; i < n; i++) {
        guint32 len = *(guint32 *)wmem_array_index(fr->runs, i);
        gboolean last = i + 1 == n;
        if (i % 2 == 0) {
            if (len || (last && fin))
                l2p_pipe_call(cd->inner, tvb_new_subset_length(dtvb, off, len), pinfo, tree, last && fin);
            off += len;
        } else {
            if (!a->replay)
                l2p_pipe_gap(cd->inner, len);
            if (last && fin)
                l2p_pipe_call(cd->inner, tvb_new_subset_length(dtvb, off, 0), pinfo, tree, TRUE);
        }
    }
}

typedef struct {
    tvbuff_t *dtvb;
    packet_info *pinfo;
    proto_tree *tree;
    gboolean fin;
    attr_ctx_t *a;
    p2pc_unit_t inner;          /* the unit above: the decompressed bytes */
} above_call_t;

static void
runs_call(void *ctx)
{
    const above_call_t *c = (const above_call_t *)ctx;
    call_runs(c->dtvb, c->pinfo, c->tree, c->fin, c->a);
}

/* The output runs after a hole, their records held for comp_attribute(). */
static void
runs_call_held(void *ctx)
{
    above_call_t *c = (above_call_t *)ctx;
    p2pc_record_call_held(c->pinfo, runs_call, c, comp_attribute, c->a);
}

/* The layers above, on the decompressed bytes, their records held for comp_attribute(). */
static void
above_call(void *ctx)
{
    above_call_t *c = (above_call_t *)ctx;
    if (c->a->fr->runs)
        p2pc_unit_call(c->pinfo, c->inner, runs_call_held, c);
    else
        l2p_pipe_call_unit(c->a->cd->inner, c->dtvb, c->pinfo, c->tree, c->fin, c->inner, comp_attribute, c->a);
}

static int
dissect_libp2p_compression(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    l2p_pipe_t *pipe = (l2p_pipe_t *)data;
    comp_dir_t *cd;
    comp_frame_t *fr;
    gboolean replay;
    tvbuff_t *dtvb;
    attr_ctx_t actx;
    p2pc_unit_t inner;

    if (!pipe) {    /* not on a libp2p connection: nothing to decode against */
        proto_item *ti = proto_tree_add_item(tree, proto_comp, tvb, 0, -1, ENC_NA);
        proto_tree_add_item(proto_item_add_subtree(ti, ett_comp), hf_comp_data, tvb, 0, -1, ENC_NA);
        return tvb_captured_length(tvb);
    }
    fr = (comp_frame_t *)l2p_frame_slot(pinfo, pipe, sizeof(comp_frame_t), &replay);
    if (!fr)
        return tvb_captured_length(tvb);
    cd = comp_dir(pipe);
    actx.units = wmem_array_new(pinfo->pool, sizeof(comp_unit_t));
    if (!replay)
        comp_feed(pipe, cd, fr, tvb, pinfo, actx.units);
    draw(tvb, pinfo, tree, pipe, cd, fr);
    if (fr->stopped_in || (!fr->out_len && !fr->runs && !pipe->fin))
        return tvb_captured_length(tvb);

    if (cd->codec == P2PC_CODEC_NONE) {
        /* Uncompressed: the framing below carried these bytes; nothing to re-attribute. */
        if (!replay) {
            cd->inner->overhead += pipe->overhead;
            pipe->overhead = 0;
        }
        l2p_pipe_call(cd->inner, tvb, pinfo, tree, pipe->fin);
        return tvb_captured_length(tvb);
    }
    if (fr->out_len) {
        dtvb = tvb_new_child_real_data(tvb, fr->out, fr->out_len, fr->out_len);
        add_new_data_source(pinfo, dtvb, wmem_strdup_printf(pinfo->pool, "Decompressed %s",
                            cd->codec == P2PC_CODEC_GZIP_STREAM ? "gzip stream" :
                            cd->codec == P2PC_CODEC_BROTLI_STREAM ? "brotli stream" : "deflate stream"));
    } else {
        dtvb = tvb_new_subset_length(tvb, 0, 0);
    }
    if (!replay)
        pipe->overhead = 0;     /* compressed: no byte is framing alone */
    actx.cd = cd;
    actx.fr = fr;
    actx.replay = replay;
    actx.below = p2pc_unit_get(pinfo);
    /* Above, the unit is numbered in the decompressed bytes (the direction's, to the end of
     * this frame's); comp_attribute() maps each record's end back to its flush unit.  After a
     * hole the output runs are not contiguous: all of it is the frame's last unit.  The records
     * of the layers above are held for comp_attribute(). */
    inner.set = TRUE;
    inner.identity = !fr->runs;
    inner.end = fr->out_total;
    {
        above_call_t c = { dtvb, pinfo, tree, pipe->fin, &actx, inner };
        /* Every compressed byte is in a message's share or a tail: what the layers above count
         * of their own is decompressed bytes, in no wire budget (core/budget.h). */
        p2pc_budget_call_muted(pinfo, above_call, &c);
    }
    return tvb_captured_length(tvb);
}

void
proto_register_libp2p_compression(void)
{
    static hf_register_info hf[] = {
        { &hf_comp_protocol, { "Protocol ID", "libp2p_compression.protocol", FT_STRING, BASE_NONE, NULL, 0x0,
            "The compression transport multistream-select agreed on", HFILL } },
        { &hf_comp_codec, { "Codec", "libp2p_compression.codec", FT_STRING, BASE_NONE, NULL, 0x0,
            "gzip-stream, brotli-stream, deflate-stream or none", HFILL } },
        { &hf_comp_in, { "Compressed bytes in", "libp2p_compression.in", FT_UINT32, BASE_DEC, NULL, 0x0,
            "Bytes of the compressed stream in this frame", HFILL } },
        { &hf_comp_out, { "Decompressed bytes out", "libp2p_compression.out", FT_UINT32, BASE_DEC, NULL, 0x0,
            "Bytes the direction's persistent decoder produced from them", HFILL } },
        { &hf_comp_in_total, { "Compressed bytes so far", "libp2p_compression.in_total", FT_UINT64, BASE_DEC, NULL, 0x0,
            "Compressed bytes of this direction up to the end of this frame", HFILL } },
        { &hf_comp_out_total, { "Decompressed bytes so far", "libp2p_compression.out_total", FT_UINT64, BASE_DEC, NULL, 0x0,
            "Decompressed bytes of this direction up to the end of this frame", HFILL } },
        { &hf_comp_ratio, { "Ratio so far", "libp2p_compression.ratio", FT_DOUBLE, BASE_CUSTOM, CF_FUNC(p2pc_ratio_format), 0x0,
            "Decompressed / compressed bytes of this direction so far", HFILL } },
        { &hf_comp_stopped_in, { "Decoding stopped in", "libp2p_compression.stopped_in", FT_FRAMENUM, BASE_NONE, NULL, 0x0,
            "The frame where this direction's stream stopped decoding", HFILL } },
        { &hf_comp_skipped, { "Skipped bytes", "libp2p_compression.skipped", FT_UINT32, BASE_DEC, NULL, 0x0,
            "Compressed bytes after a hole in the capture, before the sync-flush point where decoding resumes", HFILL } },
        { &hf_comp_withheld, { "Withheld bytes out", "libp2p_compression.withheld", FT_UINT32, BASE_DEC, NULL, 0x0,
            "Decompressed bytes of this frame not handed up after a hole: they copy bytes the hole took, or lie "
            "between such bytes in a run too short to resume in; each run of them is a hole for the layer above", HFILL } },
        { &hf_comp_data, { "Compressed data", "libp2p_compression.data", FT_BYTES, BASE_NONE, NULL, 0x0, "Bytes of the compressed stream in this frame", HFILL } },
    };
    static gint *ett[] = { &ett_comp };
    static ei_register_info ei[] = {
        { &ei_comp_failed, { "libp2p_compression.failed", PI_MALFORMED, PI_ERROR,
            "The compressed stream does not decode: decoding of this direction stops", EXPFILL } },
        { &ei_comp_resync, { "libp2p_compression.resync", PI_SEQUENCE, PI_NOTE,
            "The compressed stream resumes at a sync-flush point after a hole", EXPFILL } },
    };
    module_t *module;
    expert_module_t *expert;

    proto_comp = proto_register_protocol("libp2p compression transport", "libp2p compression",
                                         "libp2p_compression");
    proto_register_field_array(proto_comp, hf, array_length(hf));
    proto_register_subtree_array(ett, array_length(ett));
    expert = expert_register_protocol(proto_comp);
    expert_register_field_array(expert, ei, array_length(ei));
    module = prefs_register_protocol(proto_comp, NULL);
    prefs_register_bool_preference(module, "decompress", "Decompress the stream",
        "Decode each direction's gzip/brotli/deflate stream and dissect what is inside "
        "(takes effect when the capture is read again)", &pref_decompress);
    /* Its own budget for kept output became p2pc.max_replay_mib, over every layer. */
    prefs_register_obsolete_preference(module, "max_kept_mib");
    comp_handle = register_dissector("libp2p_compression", dissect_libp2p_compression, proto_comp);
    kept_tails = p2pc_tail_kept_new();
    p2pc_tail_register(comp_tails);
    p2pc_conn_on_retire(keep_conn_tails);
}

void
proto_reg_handoff_libp2p_compression(void)
{
    for (size_t i = 0; i < G_N_ELEMENTS(comp_ids); i++)
        dissector_add_string("multistream.protocol", comp_ids[i].id, comp_handle);
}
