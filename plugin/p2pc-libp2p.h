/* p2pc-libp2p.h
 * What the libp2p layer dissectors share (p2pc-libp2p.c): uvarint and protobuf readers, and
 * the byte-stream "pipes" that chain them.
 *
 * A libp2p connection is a stack of byte streams, none aligned with the one below:
 *   TCP direction -> multistream-select -> /plaintext/2.0.0 Exchange -> multistream-select
 *   -> /yamux/1.0.0 or /mplex/6.7.0 frames -> per muxed stream direction: multistream-select
 *   -> the application protocol (Ethereum req/resp, gossipsub, ...).
 * Each layer is its own dissector.  One direction of one byte stream at one layer is a pipe
 * (l2p_pipe_t); a dissector called with a pipe as `data` gets the bytes that arrived on that
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
#ifndef P2PC_LIBP2P_H
#define P2PC_LIBP2P_H

#include "p2pc-compat.h"

/* uvarint (multiformats unsigned-varint, at most 9 bytes); FALSE when incomplete or too long. */
gboolean p2pc_uvarint(const guint8 *p, guint avail, guint64 *value, guint *used);

/* The next protobuf field in p[*off, end): its number and wire type; a varint's value in
 * *ival, a length-delimited field's bytes at p[*dstart, *dstart + *dlen).  FALSE at the end or
 * on a malformed field (never reads past end). */
gboolean p2pc_pb_next(const guint8 *p, guint end, guint *off, guint64 *num, guint *wt,
                      guint *dstart, guint *dlen, guint64 *ival);

#define L2P_MULTISTREAM_HEADER "/multistream/1.0.0"
#define L2P_MAX_PDU (16 * 1024 * 1024)

typedef struct l2p_pipe l2p_pipe_t;


/* One direction of one byte stream at one layer.  Allocated in file scope, never freed. */
#define L2P_PIPE_MAGIC 0x6c327070u   /* "l2pp" */

struct l2p_pipe {
    guint32 magic;              /* L2P_PIPE_MAGIC: tells a pipe from other `data` */
    guint32 id;                 /* unique in the capture: the per-frame cache key */
    int dir;                    /* 0: dialer -> listener (connection) or opener -> other (stream) */
    l2p_pipe_t *peer;           /* the other direction at the same layer, if known */
    dissector_handle_t handle;  /* the dissector this pipe's bytes go to */
    const char *protocol;       /* the protocol ID these bytes carry ("" while negotiating) */
    const char *muxer;          /* NULL on the connection; "yamux" / "mplex" in a muxed stream */
    guint64 stream_id;
    /* Set by the caller of l2p_pipe_call() for that one call: the lower layer closed this
     * direction after these bytes (yamux FIN/RST, mplex Close/Reset). */
    gboolean fin;
    /* The engine (first pass only). */
    GByteArray *buf;            /* bytes not yet cut into PDUs */
    guint32 pdus;               /* PDUs cut so far: the index of the next */
    guint32 overhead;           /* lower-layer framing bytes not yet attributed to a PDU */
    gboolean closed;
    gboolean buf_cb;            /* buf is freed with the capture file */
    gboolean undecodable;       /* framing broke: the rest of the pipe is shown as bytes */
    l2p_pipe_t *next;           /* after l2p_handoff(): the pipe the rest goes to */
    void *state;                /* the layer's own state */
};

/* A PDU as l2p_dissect_pdus() hands it to the layer's callback. */
typedef struct {
    guint32 index;              /* position in its pipe (0 = first) */
    guint32 overhead;           /* lower-layer framing bytes of the frames that carried it */
    gboolean truncated;         /* the pipe closed before the PDU was complete */
    void *info;                 /* the layer's per-PDU data, set on the first pass */
} l2p_pdu_t;

/* Length of the next PDU at p[0, avail): > 0 a complete PDU of that many bytes, 0 more bytes
 * needed, < 0 the framing is broken (the rest of the pipe is shown as undecoded bytes).
 * First pass only; may call l2p_handoff() (then return 0: the rest goes to the next layer). */
typedef gint64 (*l2p_len_fn)(l2p_pipe_t *pipe, const guint8 *p, guint avail);

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

/* `data` as a pipe, or NULL when the caller passed something else. */
static inline l2p_pipe_t *
l2p_pipe_from(void *data)
{
    l2p_pipe_t *p = (l2p_pipe_t *)data;
    return p && p->magic == L2P_PIPE_MAGIC ? p : NULL;
}

/* A new pipe (file scope). */
l2p_pipe_t *l2p_pipe_new(dissector_handle_t handle, int dir);


/* Call the pipe's dissector with tvb (may be empty when fin is set) and the pipe as data. */
void l2p_pipe_call(l2p_pipe_t *pipe, tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, gboolean fin);

/* The handle for a protocol ID: "multistream.protocol" (exact, then the user map preference,
 * then the prefix entries such as "/noise"), else the generic application-data dissector. */
dissector_handle_t l2p_handle_for(const char *protocol);

/* Set by packet-multistream.c at registration. */
void l2p_init(int proto, dissector_handle_t multistream, dissector_handle_t appdata);
dissector_handle_t l2p_multistream_handle(void);
extern const char *l2p_pref_protocol_map;

/* Registers the engine's own fields under `proto` (packet-multistream.c). */
void l2p_register_engine(int proto);

/* Transitional: what the old single-file engine (plugin/packet-libp2p.c) still calls.  Each
 * draws one complete message of its layer; the layered dissectors above do not use them. */
typedef struct {
    const char *protocol;
    const char *muxer;
    guint32 stream_id;
    gboolean from_opener;
    guint32 index;
    guint32 muxer_overhead;
} libp2p_app_info_t;
void libp2p_show_multistream(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, gboolean in_stream,
                             guint32 stream_id);
void libp2p_show_plaintext(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree);
void libp2p_show_noise(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree);
void libp2p_show_yamux(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree);
void libp2p_show_mplex(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree);

#endif /* P2PC_LIBP2P_H */
