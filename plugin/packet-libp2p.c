/* packet-libp2p.c
 * A libp2p TCP connection: follows it through multistream-select, /plaintext/2.0.0 (or /noise),
 * the compression transport, the /yamux/1.0.0 or /mplex/6.7.0 muxer and each stream's own
 * multistream negotiation, and hands every application message to the dissector registered
 * for its protocol ID in the "multistream.protocol" table (Ethereum's in packet-eth2.c).  Each
 * layer's tree is drawn by its own dissector file (packet-multistream.c,
 * packet-libp2p-plaintext.c, packet-yamux.c, packet-mplex.c); this file is the byte-stream
 * engine that finds their messages.
 *
 * Sources: libp2p/specs (connections, plaintext/2.0.0, yamux, mplex, noise), go-libp2p.
 *
 * Upgrade order on the wire: multistream(/plaintext/2.0.0) -> Exchange -> multistream(muxer)
 * -> muxer frames -> per stream: multistream(protocol) -> application messages.  None of these
 * layers aligns with TCP segments, muxer frames split application messages and hold parts of
 * two, so each connection direction and each muxed stream direction is reassembled by a small
 * byte-stream engine here.  As in packet-websocket.c's stateful decompression, the engines run
 * on the first pass only and each frame keeps what completed in it (file scope), so the GUI's
 * random-order re-dissection and `tshark -2` show the same trees.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "p2pc-compat.h"
#include "p2pc-codecs.h"
#include "p2pc-libp2p.h"
#include "p2pc-record.h"

#include <epan/conversation.h>
#include <epan/expert.h>
#include <epan/prefs.h>
#include <epan/proto_data.h>
#include <epan/dissectors/packet-tcp.h>
#include <wsutil/pint.h>

void proto_register_libp2p(void);
void proto_reg_handoff_libp2p(void);

#define MSS_HEADER "/multistream/1.0.0"
#define MAX_PDU (16 * 1024 * 1024)
/* Compression transport bounds: decompressed bytes per frame and per connection direction. */
#define COMP_FRAME_BOUND (64 * 1024 * 1024)
#define COMP_DIR_BOUND   (G_GUINT64_CONSTANT(4) * 1024 * 1024 * 1024)

static int proto_libp2p = -1;
static int proto_compression = -1;
static int hf_comp_codec = -1;
static int hf_comp_in = -1;
static int hf_comp_out = -1;
static gint ett_comp = -1;
static expert_field ei_comp_failed = EI_INIT;
static expert_field ei_libp2p_gap = EI_INIT;

static int hf_libp2p_protocol = -1;
static int hf_libp2p_app_data = -1;
static int hf_libp2p_stream = -1;

static gint ett_libp2p = -1;
static gint ett_app = -1;

static expert_field ei_libp2p_bad_frame = EI_INIT;

static dissector_handle_t libp2p_handle;
static dissector_table_t ms_protocol_table;


gboolean
p2pc_uvarint(const guint8 *p, guint avail, guint64 *value, guint *used)
{
    guint64 v = 0;
    for (guint i = 0; i < avail && i < 9; i++) {
        v |= (guint64)(p[i] & 0x7f) << (7 * i);
        if (!(p[i] & 0x80)) {
            *value = v;
            *used = i + 1;
            return TRUE;
        }
    }
    return FALSE;
}

gboolean
p2pc_pb_next(const guint8 *p, guint end, guint *off, guint64 *num, guint *wt, guint *dstart, guint *dlen, guint64 *ival)
{
    guint64 tag, l;
    guint u;
    if (*off >= end || !p2pc_uvarint(p + *off, end - *off, &tag, &u))
        return FALSE;
    *off += u;
    *num = tag >> 3;
    *wt = (guint)(tag & 7);
    if (*wt == 0) {
        if (!p2pc_uvarint(p + *off, end - *off, ival, &u))
            return FALSE;
        *off += u;
    } else if (*wt == 2) {
        if (!p2pc_uvarint(p + *off, end - *off, &l, &u) || l > end - *off - u)
            return FALSE;
        *dstart = *off + u;
        *dlen = (guint)l;
        *off = *dstart + (guint)l;
    } else if (*wt == 5) {
        if (end - *off < 4) return FALSE;
        *off += 4;
    } else if (*wt == 1) {
        if (end - *off < 8) return FALSE;
        *off += 8;
    } else {
        return FALSE;
    }
    return TRUE;
}

/* ---- layers of a connection direction ---- */
typedef enum {
    L_MSS_SECURITY, L_PLAINTEXT, L_NOISE, L_MSS_MUXER, L_YAMUX, L_MPLEX, L_OPAQUE,
    L_COMPRESSED,   /* a compression transport stream (its decompressed bytes go one layer in) */
    L_DECOMP,       /* display only: the decompressed bytes a frame produced */
    L_GAP,          /* display only: a gap stopped decoding this direction */
} layer_t;

/* A completed connection-level PDU, or an application message of a muxed stream. */
typedef struct pdu {
    layer_t layer;
    guint8 *data;
    guint len;
    /* application messages */
    gboolean is_app;
    const char *protocol;
    const char *muxer;
    guint32 stream_id;
    gboolean from_opener;
    guint32 index;
    guint32 muxer_overhead;
    const char *codec;          /* compression transport codec, if any */
    guint64 comp_bytes;         /* compressed bytes attributed to this message */
    guint32 comp_in;            /* L_DECOMP: compressed bytes fed */
    const char *detail;         /* L_GAP / L_DECOMP: what went wrong */
    struct pdu *next;
} pdu_t;

/* One direction of a byte stream being reassembled. */
typedef struct dir_state {
    GByteArray *buf;
    layer_t layer;              /* connection directions */
    const char *protocol;       /* stream directions: the negotiated protocol once known */
    gboolean negotiating;
    guint32 index;
    guint32 overhead;           /* muxer header bytes not yet attributed to a message */
    guint32 next_seq;
    gboolean seq_known;
    /* compression transport (connection directions) */
    p2pc_stream_t *dec;
    p2pc_codec_t codec;
    struct dir_state *inner;    /* the decompressed byte stream's own layers */
    guint64 consumed;           /* bytes removed from buf so far (position of buf[0]) */
    guint64 comp_total;         /* compressed bytes fed */
    guint64 decomp_total;       /* decompressed bytes produced */
    guint64 last_attr;          /* compressed position attributed to messages so far */
    guint64 seg_c0, seg_c1, seg_d0, seg_d1;    /* the chunk being fed: compressed and decompressed spans */
    gboolean stopped;
} dir_state_t;

typedef struct {
    guint32 id;
    gboolean opener_is_dialer;
    dir_state_t dir[2];         /* [0]: opener -> other, [1]: other -> opener */
    const char *protocol;
} mux_stream_t;

typedef struct {
    gboolean active;
    const char *codec;
    guint64 c_at_end;           /* compressed position of the end of the muxer frame being fed */
    guint64 *last;
} attr_t;

typedef struct {
    address dialer_addr;
    guint32 dialer_port;
    dir_state_t dir[2];         /* [0]: dialer -> listener */
    const char *muxer;
    wmem_map_t *streams;        /* key: id*2 + opener_is_listener */
    attr_t attr;                /* compression attribution for messages completing now */
} conn_state_t;

typedef struct {
    pdu_t *first;
    pdu_t *last;
} frame_pdus_t;

static void
frame_add(frame_pdus_t *fp, pdu_t *p)
{
    if (fp->last)
        fp->last->next = p;
    else
        fp->first = p;
    fp->last = p;
}

static dir_state_t *
dir_init(dir_state_t *d)
{
    if (!d->buf)
        d->buf = g_byte_array_new();
    return d;
}

/* Length of a uvarint-prefixed message at the start of buf, 0 if incomplete, -1 if bad. */
static gint64
uvarint_msg_len(const guint8 *p, guint avail)
{
    guint64 n;
    guint used;
    if (!p2pc_uvarint(p, avail, &n, &used))
        return avail >= 9 ? -1 : 0;
    if (n > MAX_PDU)
        return -1;
    return used + n <= avail ? (gint64)(used + n) : 0;
}

/* Eth2 req/resp (consensus-specs p2p-interface.md): which methods' success chunks carry the
 * 4-byte fork-digest context. */
static gboolean
eth2_has_context(const char *protocol)
{
    static const char *const with_ctx[] = {
        "/beacon_blocks_by_range/2/", "/beacon_blocks_by_root/2/", "/blob_sidecars_by_range/",
        "/blob_sidecars_by_root/", "/data_column_sidecars_by_range/", "/data_column_sidecars_by_root/",
        "/light_client_bootstrap/", "/light_client_updates_by_range/", "/light_client_finality_update/",
        "/light_client_optimistic_update/",
    };
    for (size_t i = 0; i < G_N_ELEMENTS(with_ctx); i++)
        if (strstr(protocol, with_ctx[i]))
            return TRUE;
    return FALSE;
}

/* Bytes of a framed Snappy stream that produce `want` uncompressed bytes; 0 if incomplete. */
static gint64
snappy_framed_len(const guint8 *p, guint avail, guint64 want)
{
    guint off = 0;
    guint64 out = 0;
    if (want == 0)
        return 0;   /* an empty SSZ still needs its stream identifier: handled by the caller */
    while (out < want) {
        guint8 type;
        guint32 clen;
        if (avail - off < 4)
            return 0;
        type = p[off];
        clen = p[off + 1] | (p[off + 2] << 8) | ((guint32)p[off + 3] << 16);
        if (avail - off - 4 < clen)
            return 0;
        if (type == 0x00 && clen >= 4) {
            guint64 n;
            guint used;
            if (!p2pc_uvarint(p + off + 8, clen - 4, &n, &used))
                return -1;
            out += n;
        } else if (type == 0x01 && clen >= 4) {
            out += clen - 4;
        } else if (type >= 0x02 && type <= 0x7f) {
            return off + 4 + clen;      /* reserved unskippable: the decoder flags it */
        }
        off += 4 + clen;
    }
    return off;
}

/* Length of the next application message of `protocol` at the start of p. */
static gint64
app_msg_len(const char *protocol, gboolean from_opener, guint index, const guint8 *p, guint avail)
{
    if (g_str_has_prefix(protocol, "/eth2/beacon_chain/req/")) {
        guint off = 0;
        guint64 n;
        guint used;
        gint64 f;
        if (!from_opener) {
            guint8 result;
            if (avail < 1)
                return 0;
            result = p[0];
            off = 1;
            if (result == 0 && eth2_has_context(protocol))
                off += 4;
        }
        if (avail < off)
            return 0;
        if (!p2pc_uvarint(p + off, avail - off, &n, &used))
            return avail - off >= 9 ? -1 : 0;
        off += used;
        if (n > MAX_PDU)
            return -1;
        f = snappy_framed_len(p + off, avail - off, n);
        if (f < 0)
            return -1;
        if (f == 0 && n != 0)
            return 0;
        return off + f;
    }
    if (g_str_has_prefix(protocol, "/meshsub/") || g_str_has_prefix(protocol, "/ipfs/id/") ||
        g_str_has_prefix(protocol, "/floodsub/"))
        return uvarint_msg_len(p, avail);
    if (!strcmp(protocol, "/ipfs/ping/1.0.0"))
        return avail >= 32 ? 32 : 0;
    return avail;   /* unknown framing: whatever arrived */
}

static pdu_t *
new_pdu(layer_t layer, const guint8 *data, guint len)
{
    pdu_t *p = wmem_new0(wmem_file_scope(), pdu_t);
    p->layer = layer;
    p->data = (guint8 *)wmem_memdup(wmem_file_scope(), data, len);
    p->len = len;
    return p;
}

/* Multistream message text without its trailing newline. */
static const char *
ms_text(const guint8 *msg, guint len)
{
    guint64 n;
    guint used;
    if (!p2pc_uvarint(msg, len, &n, &used) || used + n > len || n == 0)
        return "";
    return wmem_strndup(wmem_file_scope(), (const char *)msg + used,
                        (gsize)(msg[used + n - 1] == '\n' ? n - 1 : n));
}

/* Feed one muxed stream direction; complete application messages go to fp. */
static void
stream_feed(conn_state_t *cs, mux_stream_t *ms, int d, const guint8 *data, guint len,
            guint32 overhead, frame_pdus_t *fp)
{
    dir_state_t *ds = dir_init(&ms->dir[d]);
    g_byte_array_append(ds->buf, data, len);
    ds->overhead += overhead;
    for (;;) {
        gint64 n;
        pdu_t *p;
        if (ds->buf->len == 0)
            break;
        if (!ds->protocol) {
            /* Per-stream multistream-select: the opener proposes, the other side echoes. */
            const char *text;
            n = uvarint_msg_len(ds->buf->data, ds->buf->len);
            if (n <= 0)
                break;
            text = ms_text(ds->buf->data, (guint)n);
            p = new_pdu(L_MSS_MUXER, ds->buf->data, (guint)n);
            p->is_app = FALSE;
            p->stream_id = ms->id;
            p->muxer = cs->muxer;
            frame_add(fp, p);
            if (strcmp(text, MSS_HEADER) && strcmp(text, "na") && strcmp(text, "ls") && text[0] == '/') {
                ds->protocol = text;
                if (!ms->protocol)
                    ms->protocol = text;
            }
        } else {
            n = app_msg_len(ds->protocol, d == 0, ds->index, ds->buf->data, ds->buf->len);
            if (n == 0)
                break;
            if (n < 0)
                n = ds->buf->len;   /* unparseable: hand over what is there */
            p = new_pdu(L_OPAQUE, ds->buf->data, (guint)n);
            p->is_app = TRUE;
            p->protocol = ds->protocol;
            p->muxer = cs->muxer;
            p->stream_id = ms->id;
            p->from_opener = d == 0;
            p->index = ds->index++;
            p->muxer_overhead = ds->overhead;
            ds->overhead = 0;
            if (cs->attr.active) {
                /* Compressed bytes up to the end of the muxer frame that completed this
                 * message, minus what earlier messages got: the sums add up. */
                p->codec = cs->attr.codec;
                p->comp_bytes = cs->attr.c_at_end - *cs->attr.last;
                *cs->attr.last = cs->attr.c_at_end;
            }
            frame_add(fp, p);
        }
        g_byte_array_remove_range(ds->buf, 0, (guint)n);
    }
}

static mux_stream_t *
get_stream(conn_state_t *cs, guint32 id, gboolean opener_is_dialer)
{
    guint key = id * 2 + (opener_is_dialer ? 0 : 1);
    mux_stream_t *ms = (mux_stream_t *)wmem_map_lookup(cs->streams, GUINT_TO_POINTER(key));
    if (!ms) {
        ms = wmem_new0(wmem_file_scope(), mux_stream_t);
        ms->id = id;
        ms->opener_is_dialer = opener_is_dialer;
        wmem_map_insert(cs->streams, GUINT_TO_POINTER(key), ms);
    }
    return ms;
}

/* A complete muxer frame from the direction `from_dialer`: feed its data to its stream. */
static void
muxer_frame(conn_state_t *cs, layer_t layer, const guint8 *f, guint len, gboolean from_dialer,
            frame_pdus_t *fp)
{
    if (layer == L_YAMUX) {
        guint8 type = f[1];
        guint32 id = pntoh32(f + 4);
        guint32 dlen = pntoh32(f + 8);
        gboolean opener_is_dialer;
        mux_stream_t *ms;
        if (type != 0 || id == 0)
            return;
        /* yamux: the dialer (client) opens odd stream ids, the listener even ones. */
        opener_is_dialer = (id & 1) == 1;
        ms = get_stream(cs, id, opener_is_dialer);
        stream_feed(cs, ms, from_dialer == opener_is_dialer ? 0 : 1, f + 12, MIN(dlen, len - 12), 12, fp);
    } else {
        guint64 hdr, dlen;
        guint u1, u2;
        guint flag;
        gboolean opener_is_dialer;
        mux_stream_t *ms;
        if (!p2pc_uvarint(f, len, &hdr, &u1) || !p2pc_uvarint(f + u1, len - u1, &dlen, &u2))
            return;
        flag = (guint)(hdr & 7);
        if (flag > 2 || dlen == 0)
            return;
        /* mplex: both sides number streams independently; NewStream and MessageInitiator come
         * from the opener, MessageReceiver from the other side. */
        opener_is_dialer = (flag == 1) ? !from_dialer : from_dialer;
        ms = get_stream(cs, (guint32)(hdr >> 3), opener_is_dialer);
        if (flag == 0) {
            /* NewStream carries the stream's name, not data. */
            return;
        }
        stream_feed(cs, ms, flag == 2 ? 0 : 1, f + u1 + u2, (guint)MIN(dlen, len - u1 - u2), u1 + u2, fp);
    }
}

/* Length of the next PDU of a connection direction in `layer`. */
static gint64
conn_pdu_len(layer_t layer, const guint8 *p, guint avail)
{
    switch (layer) {
    case L_MSS_SECURITY:
    case L_MSS_MUXER:
    case L_PLAINTEXT:
        return uvarint_msg_len(p, avail);
    case L_NOISE:
        return avail < 2 ? 0 : (2 + (guint)pntoh16(p) <= avail ? 2 + (gint64)pntoh16(p) : 0);
    case L_YAMUX:
        if (avail < 12)
            return 0;
        if (p[1] == 0) {
            guint32 l = pntoh32(p + 8);
            if (l > MAX_PDU)
                return -1;
            return 12 + l <= avail ? 12 + (gint64)l : 0;
        }
        return 12;
    case L_MPLEX: {
        guint64 h, l;
        guint u1, u2;
        if (!p2pc_uvarint(p, avail, &h, &u1))
            return avail >= 9 ? -1 : 0;
        if (!p2pc_uvarint(p + u1, avail - u1, &l, &u2))
            return avail - u1 >= 9 ? -1 : 0;
        if (l > MAX_PDU)
            return -1;
        return u1 + u2 + l <= avail ? (gint64)(u1 + u2 + l) : 0;
    }
    default:
        return avail;
    }
}

static void conn_feed(conn_state_t *cs, int d, dir_state_t *ds, const guint8 *data, guint len, frame_pdus_t *fp);

/* Compressed position of decompressed position x of the inner stream, read off the chunk
 * being fed (proportionally within it). */
static guint64
comp_position(const dir_state_t *outer, guint64 x)
{
    if (x <= outer->seg_d0 || outer->seg_d1 <= outer->seg_d0)
        return outer->seg_c0;
    if (x >= outer->seg_d1)
        return outer->seg_c1;
    return outer->seg_c0 + (x - outer->seg_d0) * (outer->seg_c1 - outer->seg_c0) / (outer->seg_d1 - outer->seg_d0);
}

/* A compression transport direction: decompress with the direction's persistent decoder and
 * feed the output to the inner layers. */
static void
compressed_feed(conn_state_t *cs, int d, dir_state_t *ds, const guint8 *data, guint len, frame_pdus_t *fp)
{
    guint8 *out = NULL;
    size_t out_len = 0;
    const char *detail = NULL;
    p2pc_dc_status_t st;
    pdu_t *p;
    size_t bound = p2pc_bound(COMP_FRAME_BOUND);

    if (ds->stopped || len == 0)
        return;
    if (ds->decomp_total + bound > COMP_DIR_BOUND)
        bound = (size_t)(COMP_DIR_BOUND - ds->decomp_total);
    st = p2pc_stream_feed(ds->dec, data, len, bound, wmem_file_scope(), &out, &out_len, &detail);
    p = new_pdu(L_DECOMP, out ? out : (const guint8 *)"", (guint)out_len);
    p->codec = p2pc_codec_name(ds->codec);
    p->comp_in = len;
    if (st != P2PC_DC_OK) {
        p->detail = detail ? detail : p2pc_dc_status_name(st);
        ds->stopped = TRUE;
    }
    frame_add(fp, p);
    ds->seg_c0 = ds->comp_total;
    ds->seg_c1 = ds->comp_total + len;
    ds->seg_d0 = ds->decomp_total;
    ds->seg_d1 = ds->decomp_total + out_len;
    ds->comp_total += len;
    ds->decomp_total += out_len;
    if (!ds->inner) {
        ds->inner = wmem_new0(wmem_file_scope(), dir_state_t);
        ds->inner->layer = L_MSS_MUXER;
    }
    if (out_len)
        conn_feed(cs, d, ds->inner, out, (guint)out_len, fp);
}

static void
conn_feed(conn_state_t *cs, int d, dir_state_t *ds, const guint8 *data, guint len, frame_pdus_t *fp)
{
    dir_init(ds);
    if (ds->layer == L_COMPRESSED) {
        compressed_feed(cs, d, ds, data, len, fp);
        return;
    }
    g_byte_array_append(ds->buf, data, len);
    for (;;) {
        gint64 n;
        pdu_t *p;
        layer_t layer = ds->layer;
        if (ds->buf->len == 0)
            break;
        if (layer == L_COMPRESSED) {
            /* The rest of this direction is one compressed stream. */
            GByteArray *rest = ds->buf;
            ds->buf = g_byte_array_new();
            compressed_feed(cs, d, ds, rest->data, rest->len, fp);
            g_byte_array_free(rest, TRUE);
            break;
        }
        n = conn_pdu_len(layer, ds->buf->data, ds->buf->len);
        if (n == 0)
            break;
        if (n < 0) {
            n = ds->buf->len;
            ds->layer = L_OPAQUE;
            layer = L_OPAQUE;
        }
        p = new_pdu(layer, ds->buf->data, (guint)n);
        frame_add(fp, p);
        if (layer == L_MSS_SECURITY || layer == L_MSS_MUXER) {
            const char *text = ms_text(p->data, p->len);
            if (!strcmp(text, "/plaintext/2.0.0"))
                ds->layer = L_PLAINTEXT;
            else if (g_str_has_prefix(text, "/noise"))
                ds->layer = L_NOISE;
            else if (!strcmp(text, "/yamux/1.0.0"))
                ds->layer = L_YAMUX, cs->muxer = "yamux";
            else if (!strcmp(text, "/mplex/6.7.0"))
                ds->layer = L_MPLEX, cs->muxer = "mplex";
            else if (!strcmp(text, "/compression/gzip") || !strcmp(text, "/compression/cbrotli") ||
                     !strcmp(text, "/deflate/1.0.0")) {
                /* Compression sits between security and the muxer (adlrocha's go-libp2p forks;
                 * rust-libp2p's deprecated /deflate/1.0.0): everything after it is one stream. */
                ds->codec = !strcmp(text, "/compression/gzip") ? P2PC_CODEC_GZIP_STREAM :
                            !strcmp(text, "/deflate/1.0.0") ? P2PC_CODEC_DEFLATE_STREAM : P2PC_CODEC_BROTLI_STREAM;
                ds->dec = p2pc_stream_new(ds->codec);
                ds->layer = L_COMPRESSED;
            } else if (!strcmp(text, "/compression/none"))
                ds->layer = L_MSS_MUXER;
            else if (text[0] == '/' && strcmp(text, MSS_HEADER))
                ds->layer = L_OPAQUE;   /* a layer p2pc does not decode */
        } else if (layer == L_PLAINTEXT) {
            ds->layer = L_MSS_MUXER;
        } else if (layer == L_YAMUX || layer == L_MPLEX) {
            dir_state_t *outer = &cs->dir[d];
            if (outer->dec) {
                cs->attr.active = TRUE;
                cs->attr.codec = p2pc_codec_name(outer->codec);
                cs->attr.c_at_end = comp_position(outer, ds->consumed + (guint64)n);
                cs->attr.last = &outer->last_attr;
            }
            muxer_frame(cs, layer, p->data, p->len, d == 0, fp);
            cs->attr.active = FALSE;
        }
        g_byte_array_remove_range(ds->buf, 0, (guint)n);
        ds->consumed += (guint64)n;
    }
}

/* ---- display ---- */

static void
show_app(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, const pdu_t *p)
{
    libp2p_app_info_t info;
    dissector_handle_t h = dissector_get_string_handle(ms_protocol_table, p->protocol);
    info.protocol = p->protocol;
    info.muxer = p->muxer;
    info.stream_id = p->stream_id;
    info.from_opener = p->from_opener;
    info.index = p->index;
    info.muxer_overhead = p->muxer_overhead;
    if (h) {
        call_dissector_with_data(h, tvb, pinfo, tree, &info);
        return;
    }
    {
        proto_item *ti = proto_tree_add_subtree_format(tree, tvb, 0, -1, ett_app, NULL,
                                                       "Application data: %s (stream %u)", p->protocol, p->stream_id);
        proto_tree *t = proto_item_add_subtree(ti, ett_app);
        p2pc_record_t rec;
        proto_tree_add_string(t, hf_libp2p_protocol, tvb, 0, 0, p->protocol);
        proto_tree_add_uint(t, hf_libp2p_stream, tvb, 0, 0, p->stream_id);
        proto_tree_add_item(t, hf_libp2p_app_data, tvb, 0, -1, ENC_NA);
        col_append_sep_fstr(pinfo->cinfo, COL_INFO, ", ", "%s", p->protocol);
        /* A protocol without a dissector of its own still gets its record: its bytes as they
         * left the muxer, or inside a compressed connection, the compressed bytes attributed
         * to it (docs/libp2p-compression.md). */
        p2pc_record_init(&rec, "libp2p", p->protocol);
        rec.raw_len = p->len;
        rec.raw_tvb = tvb;
        if (p->codec) {
            rec.codec = p->codec;
            rec.payload_len = p->comp_bytes;
            rec.header_len = 0;
        } else {
            rec.payload_len = p->len;
            rec.header_len = p->muxer_overhead;
        }
        rec.wire_len = rec.header_len + rec.payload_len;
        p2pc_record_add(tvb, 0, -1, pinfo, t, &rec);
    }
}

static conn_state_t *
get_conn(packet_info *pinfo, gboolean create)
{
    conversation_t *conv = find_or_create_conversation(pinfo);
    conn_state_t *cs = (conn_state_t *)conversation_get_proto_data(conv, proto_libp2p);
    if (!cs && create) {
        cs = wmem_new0(wmem_file_scope(), conn_state_t);
        /* The side that sends the first multistream header is the dialer. */
        copy_address_wmem(wmem_file_scope(), &cs->dialer_addr, &pinfo->src);
        cs->dialer_port = pinfo->srcport;
        cs->streams = wmem_map_new(wmem_file_scope(), g_direct_hash, g_direct_equal);
        cs->dir[0].layer = cs->dir[1].layer = L_MSS_SECURITY;
        conversation_add_proto_data(conv, proto_libp2p, cs);
    }
    return cs;
}

static int
dissect_libp2p(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    struct tcpinfo *tcpi = (struct tcpinfo *)data;
    conn_state_t *cs = get_conn(pinfo, TRUE);
    frame_pdus_t *fp;
    proto_item *ti;
    proto_tree *lt;
    guint len = tvb_captured_length(tvb);
    guint32 key = tvb_raw_offset(tvb);

    col_set_str(pinfo->cinfo, COL_PROTOCOL, "libp2p");
    col_clear(pinfo->cinfo, COL_INFO);
    fp = (frame_pdus_t *)p_get_proto_data(wmem_file_scope(), pinfo, proto_libp2p, key);
    if (!PINFO_FD_VISITED(pinfo) && !fp) {
        int d = (addresses_equal(&cs->dialer_addr, &pinfo->src) && cs->dialer_port == pinfo->srcport) ? 0 : 1;
        dir_state_t *ds = &cs->dir[d];
        fp = wmem_new0(wmem_file_scope(), frame_pdus_t);
        p_add_proto_data(wmem_file_scope(), pinfo, proto_libp2p, key, fp);
        /* Feed each byte of the direction once, in order (retransmissions repeat bytes).  A
         * hole (a segment missing from the capture) cannot be bridged by a stream decoder or
         * by any length-prefixed framing: decoding of this direction stops there. */
        if (ds->stopped) {
            len = 0;
        } else if (tcpi && ds->seq_known && (gint32)(tcpi->seq - ds->next_seq) > 0) {
            pdu_t *g = new_pdu(L_GAP, (const guint8 *)"", 0);
            g->comp_in = tcpi->seq - ds->next_seq;
            frame_add(fp, g);
            ds->stopped = TRUE;
        } else if (tcpi && ds->seq_known && (gint32)(tcpi->nxtseq - ds->next_seq) <= 0) {
            len = 0;
        } else if (tcpi && ds->seq_known && (gint32)(tcpi->seq - ds->next_seq) < 0) {
            guint skip = ds->next_seq - tcpi->seq;
            conn_feed(cs, d, ds, tvb_get_ptr(tvb, skip, len - skip), len - skip, fp);
        } else if (len) {
            conn_feed(cs, d, ds, tvb_get_ptr(tvb, 0, len), len, fp);
        }
        if (tcpi && !ds->stopped && (!ds->seq_known || (gint32)(tcpi->nxtseq - ds->next_seq) > 0)) {
            ds->next_seq = tcpi->nxtseq;
            ds->seq_known = TRUE;
        }
    }
    ti = proto_tree_add_item(tree, proto_libp2p, tvb, 0, -1, ENC_NA);
    lt = proto_item_add_subtree(ti, ett_libp2p);
    if (!fp)
        return tvb_captured_length(tvb);
    for (pdu_t *p = fp->first; p; p = p->next) {
        tvbuff_t *ptvb = tvb_new_child_real_data(tvb, p->data, p->len, p->len);
        if (p->is_app) {
            add_new_data_source(pinfo, ptvb, wmem_strdup_printf(pinfo->pool, "%s stream %u", p->muxer, p->stream_id));
            show_app(ptvb, pinfo, tree, p);
            continue;
        }
        switch (p->layer) {
        case L_MSS_SECURITY:
        case L_MSS_MUXER:
            libp2p_show_multistream(ptvb, pinfo, lt, p->muxer != NULL, p->stream_id);
            break;
        case L_PLAINTEXT:
            libp2p_show_plaintext(ptvb, pinfo, lt);
            break;
        case L_NOISE:
            libp2p_show_noise(ptvb, pinfo, lt);
            break;
        case L_YAMUX:
            libp2p_show_yamux(ptvb, pinfo, lt);
            break;
        case L_MPLEX:
            libp2p_show_mplex(ptvb, pinfo, lt);
            break;
        case L_DECOMP: {
            proto_item *ci = proto_tree_add_item(lt, proto_compression, tvb, 0, -1, ENC_NA);
            proto_tree *ctr = proto_item_add_subtree(ci, ett_comp);
            proto_item_append_text(ci, ": %s, %u bytes in, %u bytes out", p->codec, p->comp_in, p->len);
            proto_tree_add_string(ctr, hf_comp_codec, tvb, 0, 0, p->codec);
            proto_tree_add_uint(ctr, hf_comp_in, tvb, 0, 0, p->comp_in);
            proto_tree_add_uint(ctr, hf_comp_out, tvb, 0, 0, p->len);
            if (p->len)
                add_new_data_source(pinfo, ptvb, wmem_strdup_printf(pinfo->pool, "Decompressed %s", p->codec));
            if (p->detail)
                expert_add_info_format(pinfo, ci, &ei_comp_failed, "%s: %s; decoding of this direction stops",
                                       p->codec, p->detail);
            break;
        }
        case L_GAP:
            proto_tree_add_expert_format(lt, pinfo, &ei_libp2p_gap, tvb, 0, 0,
                "%u bytes of this direction are missing from the capture: decoding of this direction stops here",
                p->comp_in);
            break;
        default:
            proto_tree_add_expert_format(lt, pinfo, &ei_libp2p_bad_frame, ptvb, 0, -1,
                                         "Bytes of a layer p2pc does not decode");
            break;
        }
    }
    /* Most segments of a large message complete nothing: say so rather than leave Info empty. */
    {
        const gchar *info = col_get_text(pinfo->cinfo, COL_INFO);
        if (info && !*info)
            col_set_str(pinfo->cinfo, COL_INFO, "[part of a libp2p message]");
    }
    return tvb_captured_length(tvb);
}

static p2pc_bool_t
dissect_libp2p_heur(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    /* uvarint(19) "/multistream/1.0.0\n" */
    if (tvb_captured_length(tvb) < 20 || tvb_get_uint8(tvb, 0) != 19 ||
        tvb_memeql(tvb, 1, (const guint8 *)MSS_HEADER "\n", 19) != 0)
        return FALSE;
    conversation_set_dissector(find_or_create_conversation(pinfo), libp2p_handle);
    dissect_libp2p(tvb, pinfo, tree, data);
    return TRUE;
}

void
proto_register_libp2p(void)
{
    static hf_register_info hf[] = {
        { &hf_libp2p_protocol, { "Protocol", "libp2p.protocol", FT_STRING, BASE_NONE, NULL, 0x0,
            "The stream's protocol ID from multistream-select", HFILL } },
        { &hf_libp2p_stream, { "Stream", "libp2p.stream", FT_UINT32, BASE_DEC, NULL, 0x0, NULL, HFILL } },
        { &hf_libp2p_app_data, { "Data", "libp2p.data", FT_BYTES, BASE_NONE, NULL, 0x0, NULL, HFILL } },
        { &hf_comp_codec, { "Codec", "libp2p_compression.codec", FT_STRING, BASE_NONE, NULL, 0x0, NULL, HFILL } },
        { &hf_comp_in, { "Compressed bytes in", "libp2p_compression.in", FT_UINT32, BASE_DEC, NULL, 0x0,
            "Bytes of the compressed stream in this frame", HFILL } },
        { &hf_comp_out, { "Decompressed bytes out", "libp2p_compression.out", FT_UINT32, BASE_DEC, NULL, 0x0,
            "Bytes the persistent decoder produced from them", HFILL } },
    };
    static gint *ett[] = { &ett_libp2p, &ett_app, &ett_comp };
    static ei_register_info ei[] = {
        { &ei_libp2p_bad_frame, { "libp2p.undecoded", PI_UNDECODED, PI_NOTE, "Undecoded layer", EXPFILL } },
        { &ei_comp_failed, { "libp2p_compression.failed", PI_MALFORMED, PI_ERROR,
            "The compressed stream does not decode", EXPFILL } },
        { &ei_libp2p_gap, { "libp2p.gap", PI_SEQUENCE, PI_WARN,
            "Bytes missing from the capture: decoding of this direction stops", EXPFILL } },
    };
    expert_module_t *expert;

    proto_libp2p = proto_register_protocol("libp2p connection", "libp2p", "libp2p");
    proto_compression = proto_register_protocol("libp2p compression transport", "libp2p compression",
                                                "libp2p_compression");
    proto_register_field_array(proto_libp2p, hf, array_length(hf));
    proto_register_subtree_array(ett, array_length(ett));
    expert = expert_register_protocol(proto_libp2p);
    expert_register_field_array(expert, ei, array_length(ei));
    libp2p_handle = register_dissector("libp2p", dissect_libp2p, proto_libp2p);
}

void
proto_reg_handoff_libp2p(void)
{
    ms_protocol_table = find_dissector_table("multistream.protocol");
    heur_dissector_add("tcp", dissect_libp2p_heur, "libp2p over TCP (multistream-select)", "libp2p_tcp",
                       proto_libp2p, HEURISTIC_ENABLE);
    dissector_add_for_decode_as("tcp.port", libp2p_handle);
}
