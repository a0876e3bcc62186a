/* engine.h
 * What the libp2p layer dissectors share (engine.c): the byte-stream "pipes" that chain them,
 * the per-pipe PDU cutter with its per-frame replay cache.
 *
 * A libp2p connection is a stack of byte streams, none aligned with the one below:
 *   TCP direction -> multistream-select -> /plaintext/2.0.0 Exchange -> multistream-select
 *   -> /yamux/1.0.0 or /mplex/6.7.0 frames -> per muxed stream direction: multistream-select
 *   -> the application protocol (Ethereum req/resp, gossipsub, ...).
 * Each layer is its own dissector.  One direction of one byte stream at one layer is a pipe
 * (l2p_pipe_t).  The contract of the "multistream.protocol" table: its dissectors are called
 * with the pipe as `data` (or with NULL, from Lua or Decode As elsewhere: then the tvb is one
 * message to draw).  A dissector called with a pipe gets the bytes that arrived on that
 * pipe in this frame, cuts its own PDUs out of them with l2p_dissect_pdus() (tcp_dissect_pdus
 * for a stream that is not TCP: PDUs spanning many frames, frames holding parts of two) and
 * feeds its upper layers' pipes with l2p_pipe_call().  When multistream-select agrees on a
 * protocol ID, the rest of the pipe goes to the dissector registered for that ID in the string
 * table "multistream.protocol" (l2p_handoff()).
 *
 * Reassembly state is built on the first pass only; every frame keeps what each pipe cut out
 * of it (file scope) and replays that on later passes, so `tshark -2` and the GUI's random
 * re-dissection show the same trees as a single pass.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef P2PC_LIBP2P_ENGINE_H
#define P2PC_LIBP2P_ENGINE_H

#include "core/p2pc-compat.h"
#include "core/budget.h"
#include "core/conn.h"
#include "core/protobuf.h"
#include "core/record.h"
#include "core/spec.h"

#define L2P_MULTISTREAM_HEADER "/multistream/1.0.0"
#define L2P_MAX_PDU (16 * 1024 * 1024)
#define L2P_PIPE_BUDGET (2 * L2P_MAX_PDU)  /* bytes a pipe may hold waiting for one PDU */
/* Layers carried inside others (muxed streams, decrypted or decompressed streams) a connection
 * may stack: a relayed connection (circuit relay v2) inside a muxed stream is 3 or 4.  Past it
 * the bytes are counted as undecoded, before Wireshark's own depth check stops the dissection. */
#define L2P_MAX_DEPTH 8
/* Protocol layers a frame lists (frame.protocols) before the layers of each further pipe call
 * are dropped when it returns (l2p_pipe_call()): well below gui.max_tree_depth (500). */
#define L2P_LAYERS_LISTED 64
/* PDUs of one frame drawn in its tree (the rest are decoded and counted, not drawn): well below
 * gui.max_tree_items (1,000,000) at a few items each. */
#define L2P_PDUS_DRAWN 10000

typedef struct l2p_pipe l2p_pipe_t;

/* The budget's kind (core/budget.h, layer muxer) of the muxer framing a muxer hands the stream's
 * next PDU as its overhead: the muxer reports it when it cuts the frame, the engine takes it
 * back when the PDU's messages have it in their wire_len. */
#define L2P_KIND_DATA_HEADER "data_header"

/* The keys of the per-frame data (p_add_proto_data) under the engine's protocol, which is
 * multistream's (l2p_register_engine()): one list, so that no two parts take the same key. */
enum {
    L2P_KEY_FRAME_SLOTS,    /* engine: the per-frame replay cache (file scope) */
    L2P_KEY_CALLS,          /* engine: this dissection's calls so far (packet scope) */
    L2P_KEY_ROLE_NOTE,      /* engine: a role fact this frame broke or lacked (file scope) */
    L2P_KEY_NEGOTIATED,     /* multistream: the protocol ID this frame negotiated (Decode As) */
    L2P_KEY_DRAWN           /* engine: the PDUs this frame drew (packet scope) */
};

/* How a connection pipe's `dir` (which side dialed) was learnt, weakest first.  Never from who
 * spoke first: go-libp2p listeners send their multistream header as soon as they accept, and
 * whose bytes reach the wire first is a race. */
typedef enum {
    L2P_ROLE_GUESSED,   /* no fact yet: the first side to send bytes stands in for the dialer */
    L2P_ROLE_MUXER,     /* the muxer: a muxed stream's opener; yamux's client (the dialer) opens
                           odd stream ids */
    L2P_ROLE_PROPOSAL,  /* the side that proposed in multistream-select (the other echoes) */
    L2P_ROLE_SECURITY,  /* the Noise initiator (message 1 is e alone), the TLS client */
    L2P_ROLE_SYN,       /* the side that sent the TCP SYN */
    L2P_ROLE_SIMOPEN    /* simultaneous open: the side multistream's "initiator" message names */
} l2p_role_t;


/* One direction of one byte stream at one layer.  Allocated in its connection's pool
 * (core/conn.h: file scope, or the connection's own when it is carried over session resets;
 * with no connection, as QUIC's, the engine's own pool for the file: l2p_pipe_pool()), as is
 * every layer's state reachable from it; a muxed stream's two are freed when it ends
 * (l2p_stream_free()), the others with the connection. */
struct l2p_pipe {
    guint32 id;                 /* unique in the capture: the per-frame cache key */
    p2pc_conn_t *conn;          /* what it is part of (NULL: for the file, in the engine's own pool, as a QUIC one is) */
    int dir;                    /* 0: dialer -> listener (connection) or opener -> other (stream) */
    l2p_role_t role;            /* a connection pipe: how dir was learnt (l2p_learn_role()) */
    guint depth;                /* layers it is carried inside (l2p_pipe_inside()) */
    gboolean reencoded;         /* carried inside a layer that re-encodes the bytes above it (the
                                   compression transport): its bytes are not the wire's, that
                                   layer accounts them (inherited by the pipes inside it) */
    l2p_pipe_t *peer;           /* the other direction at the same layer, if known */
    dissector_handle_t handle;  /* the dissector this pipe's bytes go to */
    const char *protocol;       /* the protocol ID these bytes carry ("" while negotiating) */
    const char *muxer;          /* NULL on the connection; "yamux" / "mplex" in a muxed stream */
    guint64 stream_id;
    /* Set by the caller of l2p_pipe_call() for that one call: the lower layer closed this
     * direction after these bytes (yamux FIN/RST, mplex Close/Reset). */
    gboolean fin;
    /* The engine (first pass only). */
    GByteArray *buf;            /* bytes not yet cut into PDUs (NULL when none; outside wmem:
                                   it grows and shrinks; freed when emptied, or with the
                                   connection) */
    guint buf_charged;          /* what of it is charged to the connection (p2pc_conn_charge) */
    p2pc_record_t *held_at;     /* where buf last kept bytes (made the first time it does): a
                                   tail record's place for what it holds at the end */
    guint32 pdus;               /* PDUs cut so far: the index of the next */
    guint32 overhead;           /* lower-layer framing bytes not yet attributed to a PDU */
    guint32 held_calls;         /* the calls (a muxer's frames) whose bytes buf holds */
    gboolean closed;
    gboolean undecodable;       /* framing broke: the rest of the pipe is shown as bytes */
    const char *undecoded_reason;   /* why, when the record says (p2pc.undecoded_reason) */
    guint32 skip;               /* set by a len_fn returning < 0: the framing resumes after this
                                   many undecodable bytes (0: it never does) */
    guint64 broke;              /* set by a len_fn returning < 0: the conformance checks the
                                   bytes it cannot frame break (P2PC_SPEC_BIT()s), raised on them */
    l2p_pipe_t *next;           /* after l2p_handoff(): the pipe the rest goes to */
    void *state;                /* the layer's own state */
    /* A hole in the capture below (first pass): bytes before the next ones this pipe gets are
     * missing (l2p_pipe_gap()).  A layer whose framing can find its next boundary sets gap_fn;
     * l2p_dissect_pdus() calls it with the bytes the pipe held (the PDU the hole cut), and it
     * drops what the hole broke in the layer's own state (the muxed stream that lost bytes)
     * and returns TRUE: its len_fn then looks for the next boundary while `resync` is set, and
     * clears it there.  Without a gap_fn, or when it returns FALSE, the rest of the pipe is
     * undecoded bytes.  Layers that keep a stream state of their own (a decompressor) read
     * `gap` themselves.  Bytes the pipe held are shown as undecoded, with a record. */
    gboolean gap;
    guint64 gap_bytes;          /* how many bytes the hole took, when the layer below knows (TCP
                                   does; 0: unknown) */
    gboolean resync;
    gboolean (*gap_fn)(l2p_pipe_t *pipe, const guint8 *held, guint held_len);
};

/* A PDU as l2p_dissect_pdus() hands it to the layer's callback. */
typedef struct {
    guint32 index;              /* position in its pipe (0 = first) */
    guint32 overhead;           /* lower-layer framing bytes of the frames that carried it */
    guint32 calls;              /* the pipe's calls whose bytes it holds: in a muxed stream, the
                                   muxer frames that carried it */
    gboolean truncated;         /* the pipe closed before the PDU was complete */
    guint64 spec;               /* the conformance checks it breaks (P2PC_SPEC_BIT()s): set by the
                                   layer on the first pass, raised by it on every pass */
    void *info;                 /* the layer's per-PDU data, set on the first pass */
} l2p_pdu_t;

/* Length of the next PDU at p[0, avail): > 0 a complete PDU of that many bytes, 0 more bytes
 * needed, < 0 the framing is broken: the next pipe->skip bytes are shown as undecoded bytes and
 * framing resumes after them (a layer that can find its next frame boundary sets skip), or with
 * skip 0 the rest of the pipe is.  Undecoded bytes get an expert item and a p2pc record, and
 * the conformance checks the layer set in pipe->broke (a header that breaks its spec).
 * First pass only; may call l2p_handoff() (then return 0: the rest goes to the next layer). */
typedef gint64 (*l2p_len_fn)(l2p_pipe_t *pipe, const guint8 *p, guint avail);

/* A record of a PDU of `pipe` says how the muxer cut it: its stream id and the muxer frames that
 * carried it (pdu NULL: none counted); nothing when the pipe is not in a muxed stream. */
void l2p_record_framing(p2pc_record_t *rec, const l2p_pipe_t *pipe, const l2p_pdu_t *pdu);

/* Draw one PDU (tvb holds exactly it).  Called in every dissection of the frame that completed
 * it; on the first pass (!PINFO_FD_VISITED) it may update layer state, set pdu->info, call
 * l2p_handoff(), and feed upper pipes with l2p_pipe_call() (which it must do on every pass). */
typedef void (*l2p_pdu_fn)(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, l2p_pipe_t *pipe,
                           l2p_pdu_t *pdu);

/* The per-pipe tcp_dissect_pdus: add tvb (the bytes the pipe got in this frame) to the pipe,
 * and call pdu_fn for every PDU completed in this frame.  With pipe->fin, bytes left over are
 * handed to pdu_fn as one truncated PDU. */
void l2p_dissect_pdus(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, l2p_pipe_t *pipe,
                      l2p_len_fn len_fn, l2p_pdu_fn pdu_fn);

/* Hand the pipe's remaining bytes to `handle` (NULL: the one "multistream.protocol" has for
 * `protocol`, or the generic application-data dissector).  First pass only.  Returns the new
 * pipe, which keeps dir, peer link, muxer and stream id. */
l2p_pipe_t *l2p_handoff(l2p_pipe_t *pipe, const char *protocol, dissector_handle_t handle);

/* A new pipe of connection `conn` (NULL: for the file, in the engine's own pool: engine.c says why). */
l2p_pipe_t *l2p_pipe_new(p2pc_conn_t *conn, dissector_handle_t handle, int dir);

/* Where the pipe's state, and that of the layer it feeds, is allocated: its connection's pool. */
wmem_allocator_t *l2p_pipe_pool(const l2p_pipe_t *pipe);

/* A new pipe carried inside `below`'s bytes (a decrypted or decompressed stream): one layer
 * deeper.  Past L2P_MAX_DEPTH its bytes are undecoded, with the expert item libp2p.depth. */
l2p_pipe_t *l2p_pipe_inside(dissector_handle_t handle, int dir, const l2p_pipe_t *below);

/* Streams a muxed connection may have open at once, both sides' together.  Each costs about
 * 500 bytes until it ends, so a peer that opens streams and never uses or closes them (a flood)
 * would grow the capture's state without bound: past this, a frame that would open another is
 * counted as undecoded bytes, with the expert item libp2p.streams (l2p_stream_refused()).
 * Generously above what implementations accept by default: go-yamux 1,000 incoming, js-libp2p
 * 1,000 (yamux) and 1,024 (mplex) each way, rust-yamux 8,192 (512 since 0.13), rust mplex 128. */
#define L2P_MAX_STREAMS 16384

/* A muxed stream: its two directions inside one connection (in its pool).  A muxer keeps its
 * streams in a table while they are open and may extend this struct (it comes first in the
 * muxer's own, whose size l2p_stream_new() takes).
 *
 * Later passes never look a stream up in the muxer's table (which forgets a stream when it
 * ends, and may meet its id again): the first pass remembers, in the PDU that feeds or closes a
 * stream, which one it was (l2p_stream_mark()), and later passes take it from there. */
typedef struct {
    l2p_pipe_t *pipe[2];        /* [0]: opener -> other, starting in multistream-select */
    gboolean fin[2];            /* that direction has closed (first pass) */
    gboolean kept;              /* a frame kept for re-dissection points at it */
} l2p_stream_t;

/* A new stream `id` inside the connection pipe `conn`: `size` bytes (at least
 * sizeof(l2p_stream_t)), zeroed but for its two linked pipes. */
l2p_stream_t *l2p_stream_new(const l2p_pipe_t *conn, const char *muxer, guint64 id, size_t size);

/* First pass: this PDU feeds or closes `s` (remembered in pdu->info, see above); NULL: the PDU
 * would have opened a stream past L2P_MAX_STREAMS. */
void l2p_stream_mark(packet_info *pinfo, l2p_pdu_t *pdu, l2p_stream_t *s);

/* The stream l2p_stream_mark() gave this PDU, on any pass; NULL when none (a session frame) or
 * refused (*refused set: draw it with l2p_stream_refused()). */
l2p_stream_t *l2p_stream_of(const l2p_pdu_t *pdu, gboolean *refused);

/* A frame that would open a stream past L2P_MAX_STREAMS (every pass): its bytes (tvb) are shown
 * and counted as undecoded, with the expert item libp2p.streams. */
void l2p_stream_refused(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree);

/* First pass, after the muxer called the pipes with fin: direction `dir` of `s` has closed
 * (yamux FIN, mplex Close), or both have (dir < 0: yamux RST, mplex Reset).  TRUE once both
 * have: the muxer then drops the stream from its table and calls l2p_stream_free(). */
gboolean l2p_stream_close(l2p_stream_t *s, int dir);

/* First pass: a stream the muxer's table no longer holds.  When no frame kept for
 * re-dissection points at it (one pass keeps none), it and its two pipes are freed; else only
 * what replay does not need (its pipes' buffers) is.  What the layers above it keep is theirs
 * (the pipes it handed off to, and their state). */
void l2p_stream_free(l2p_stream_t *s);

/* A fact (`how`) shows whether `pipe`'s sender is the dialer: dir of the pipe and of its peer
 * follow it when no stronger fact was learnt before.  A fact that contradicts one as strong or
 * stronger changes nothing and marks this frame (shown by l2p_draw_roles()): a peer broke the
 * rule the fact rests on.  First pass only; before the pipe hands off, so the pipes above
 * inherit the roles. */
void l2p_learn_role(l2p_pipe_t *pipe, packet_info *pinfo, gboolean dialer, l2p_role_t how);

/* First pass: the sender of this frame's bytes on `pipe` opened a stream whose direction
 * depends on which side dialed, while no fact said so (pipe->role is L2P_ROLE_GUESSED): the
 * frame is marked, and l2p_draw_roles() says so instead of guessing silently. */
void l2p_role_needed(l2p_pipe_t *pipe, packet_info *pinfo);

/* The expert items of this frame's role facts (every pass): unknown, or contradicted. */
void l2p_draw_roles(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree);


/* `missing` bytes (0: an unknown number) went missing before the next ones `pipe` gets (a hole
 * in the capture): the pipe, or the pipe its rest was handed to, resynchronises where its
 * framing allows (gap_fn above).  First pass only. */
void l2p_pipe_gap(l2p_pipe_t *pipe, guint64 missing);

/* Call the pipe's dissector with tvb (may be empty when fin is set) and the pipe as data. */
void l2p_pipe_call(l2p_pipe_t *pipe, tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, gboolean fin);

/* l2p_pipe_call() for a layer that learns what the messages above it cost only once all that
 * this call completes are known: their records are held back (p2pc_record_hold()) and passed to
 * `adjust` when the call returns, or throws. */
void l2p_pipe_call_held(l2p_pipe_t *pipe, tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree,
                        gboolean fin, p2pc_record_adjust_fn adjust, void *ctx);

/* l2p_pipe_call() (adjust NULL) or l2p_pipe_call_held() with `unit` as the attribution unit of
 * the bytes handed up (core/record.h, p2pc_unit_t), the one before put back after: how a layer
 * whose bytes are not those of the unit below (a TCP direction's start, a decrypted record, a
 * decompressed stream) calls the layer above.  The engine narrows the unit to each PDU itself. */
void l2p_pipe_call_unit(l2p_pipe_t *pipe, tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree,
                        gboolean fin, p2pc_unit_t unit, p2pc_record_adjust_fn adjust, void *ctx);

/* The handle for a protocol ID: its "multistream.protocol" entry (exact, which Decode As and
 * Lua set, then the prefix entries such as "/noise"), else the generic application-data
 * dissector ("libp2p_app"). */
dissector_handle_t l2p_handle_for(const char *protocol);

/* Whether the user or a dissector named this protocol ID: an exact entry of
 * "multistream.protocol" (a dissector's, Decode As, Lua). */
gboolean l2p_protocol_named(const char *protocol);

/* The multistream-select dissector: where every connection direction starts, and where a
 * layer hands the rest of its pipe to negotiate the next protocol. */
dissector_handle_t l2p_multistream_handle(void);

/* The state a layer keeps for this (frame, pipe, n-th call of the pipe in this dissection of
 * the frame), `size` bytes in file scope, zeroed when new: the per-frame replay cache of every
 * stateful layer.  *replay says whether an earlier pass made it; NULL on a later pass that
 * finds nothing (the first pass did not get this far). */
void *l2p_frame_slot(packet_info *pinfo, l2p_pipe_t *pipe, size_t size, gboolean *replay);

/* Registers the engine's own fields and replay cache under `proto` (packet-multistream.c). */
void l2p_register_engine(int proto);

#endif /* P2PC_LIBP2P_ENGINE_H */
