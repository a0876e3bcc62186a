/* codecs.c
 * Bounded decompressors for the p2pc dissectors.
 *
 * LZO1X: liblzo2 lzo1x_decompress_safe (decodes lzo1x_1 and lzo1x_999 output alike).
 * zlib/deflate/gzip: zlib inflate.  Snappy block: libsnappy's C API (snappy-c.h); the framing
 * format (google/snappy framing_format.txt) is parsed here, with its masked CRC-32C checked by
 * ISA-L's crc32_iscsi (Intel's storage library: SSE4.2/PCLMUL CRC-32C, chosen at run time; about
 * 8x Wireshark's table-driven crc32c_calculate, which cost twice the Snappy decode itself).
 * brotli: libbrotlidec.  zstd: libzstd streaming API.
 *
 * Every decoder writes into a buffer that grows by doubling up to `bound` and no further, so a
 * decompression bomb costs at most `bound` bytes and is reported as P2PC_DC_BOUND.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/codecs.h"

#include <string.h>
#include <lzo/lzo1x.h>
#include <snappy-c.h>
#include <zlib.h>
#include <brotli/decode.h>
#include <zstd.h>
#include <isa-l/crc.h>

const char *
p2pc_codec_name(p2pc_codec_t codec)
{
    switch (codec) {
    case P2PC_CODEC_NONE:           return "none";
    case P2PC_CODEC_LZO1X:          return "lzo1x";
    case P2PC_CODEC_ZLIB:           return "zlib";
    case P2PC_CODEC_DEFLATE:        return "deflate";
    case P2PC_CODEC_GZIP:           return "gzip";
    case P2PC_CODEC_SNAPPY:         return "snappy";
    case P2PC_CODEC_SNAPPY_FRAMED:  return "snappy-framed";
    case P2PC_CODEC_BROTLI:         return "brotli";
    case P2PC_CODEC_ZSTD:           return "zstd";
    case P2PC_CODEC_GZIP_STREAM:    return "gzip-stream";
    case P2PC_CODEC_DEFLATE_STREAM: return "deflate-stream";
    case P2PC_CODEC_BROTLI_STREAM:  return "brotli-stream";
    }
    return "unknown";
}

const char *
p2pc_dc_status_name(p2pc_dc_status_t status)
{
    switch (status) {
    case P2PC_DC_OK:        return "ok";
    case P2PC_DC_CORRUPT:   return "corrupt input";
    case P2PC_DC_TRUNCATED: return "truncated input";
    case P2PC_DC_BOUND:     return "output bound exceeded";
    case P2PC_DC_CRC:       return "checksum mismatch";
    case P2PC_DC_LENGTH:    return "length mismatch";
    }
    return "unknown";
}

gboolean
p2pc_is_zlib_header(guint8 cmf, guint8 flg)
{
    return (cmf & 0x0f) == 8 && (cmf >> 4) <= 7 && ((cmf << 8) | flg) % 31 == 0;
}

/* A growable output buffer, never larger than its bound. */
typedef struct {
    wmem_allocator_t *scope;
    guint8 *data;
    size_t len;
    size_t cap;
    size_t bound;
} outbuf_t;

static void
outbuf_init(outbuf_t *ob, wmem_allocator_t *scope, size_t hint, size_t bound)
{
    ob->scope = scope;
    ob->bound = bound;
    ob->cap = hint < 4096 ? 4096 : hint;
    if (ob->cap > bound)
        ob->cap = bound;
    ob->data = (guint8 *)wmem_alloc(scope, ob->cap ? ob->cap : 1);   /* a bound of 0 holds nothing */
    ob->len = 0;
}

/* Make room: returns FALSE when the buffer is already at its bound. */
static gboolean
outbuf_grow(outbuf_t *ob)
{
    size_t ncap;
    if (ob->cap >= ob->bound)
        return FALSE;
    ncap = ob->cap * 2;
    if (ncap > ob->bound || ncap < ob->cap)
        ncap = ob->bound;
    ob->data = (guint8 *)wmem_realloc(ob->scope, ob->data, ncap);
    ob->cap = ncap;
    return TRUE;
}

/* Give back what the output did not use: the buffer started at a guess (4x the input), and
 * what is kept for re-dissection (file scope) should cost what it holds, no more. */
static void
outbuf_fit(outbuf_t *ob)
{
    if (ob->cap > ob->len && ob->cap > 64) {
        ob->data = (guint8 *)wmem_realloc(ob->scope, ob->data, ob->len ? ob->len : 1);
        ob->cap = ob->len;
    }
}

static p2pc_dc_status_t
decompress_lzo1x(outbuf_t *ob, const guint8 *in, size_t in_len, const char **detail)
{
    static gboolean initialised;
    if (!initialised) {
        if (lzo_init() != LZO_E_OK) {
            *detail = "lzo_init failed";
            return P2PC_DC_CORRUPT;
        }
        initialised = TRUE;
    }
    /* LZO1X carries no length: decode, and retry with a larger buffer on overrun. */
    for (;;) {
        lzo_uint out_len = ob->cap;
        int r = lzo1x_decompress_safe(in, (lzo_uint)in_len, ob->data, &out_len, NULL);
        switch (r) {
        case LZO_E_OK:
            ob->len = out_len;
            return P2PC_DC_OK;
        case LZO_E_OUTPUT_OVERRUN:
            if (!outbuf_grow(ob)) {
                *detail = "LZO1X output exceeds the bound";
                return P2PC_DC_BOUND;
            }
            break;
        case LZO_E_INPUT_OVERRUN:
            *detail = "LZO1X input ends inside the stream";
            return P2PC_DC_TRUNCATED;
        case LZO_E_INPUT_NOT_CONSUMED:
            ob->len = out_len;
            *detail = "bytes follow the LZO1X end-of-stream marker";
            return P2PC_DC_CORRUPT;
        case LZO_E_LOOKBEHIND_OVERRUN:
            *detail = "LZO1X match refers before the start of the output";
            return P2PC_DC_CORRUPT;
        default:
            *detail = "LZO1X stream is corrupt";
            return P2PC_DC_CORRUPT;
        }
    }
}

static p2pc_dc_status_t
inflate_into(z_stream *zs, outbuf_t *ob, const guint8 *in, size_t in_len, gboolean need_end,
             gboolean *ended, const char **detail)
{
    int r;
    zs->next_in = (Bytef *)in;
    zs->avail_in = (uInt)in_len;
    for (;;) {
        if (ob->len == ob->cap && !outbuf_grow(ob)) {
            *detail = "inflated output exceeds the bound";
            return P2PC_DC_BOUND;
        }
        zs->next_out = ob->data + ob->len;
        zs->avail_out = (uInt)(ob->cap - ob->len);
        r = inflate(zs, Z_SYNC_FLUSH);
        ob->len = ob->cap - zs->avail_out;
        if (r == Z_STREAM_END && ended)
            *ended = TRUE;
        if (r == Z_STREAM_END)
            return zs->avail_in == 0 ? P2PC_DC_OK :
                (*detail = "bytes follow the end of the deflate stream", P2PC_DC_CORRUPT);
        if (r == Z_BUF_ERROR || (r == Z_OK && zs->avail_in == 0 && zs->avail_out != 0)) {
            if (zs->avail_in == 0 && zs->avail_out != 0) {
                if (need_end) {
                    *detail = "deflate stream ends early";
                    return P2PC_DC_TRUNCATED;
                }
                return P2PC_DC_OK;
            }
            continue;
        }
        if (r != Z_OK) {
            *detail = zs->msg ? zs->msg : "inflate failed";
            return r == Z_MEM_ERROR ? P2PC_DC_BOUND : P2PC_DC_CORRUPT;
        }
    }
}

static p2pc_dc_status_t
decompress_zlib(outbuf_t *ob, int window_bits, const guint8 *in, size_t in_len, const char **detail)
{
    z_stream zs;
    p2pc_dc_status_t st;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, window_bits) != Z_OK) {
        *detail = "inflateInit2 failed";
        return P2PC_DC_CORRUPT;
    }
    st = inflate_into(&zs, ob, in, in_len, TRUE, NULL, detail);
    inflateEnd(&zs);
    return st;
}

static p2pc_dc_status_t
decompress_snappy(outbuf_t *ob, const guint8 *in, size_t in_len, const char **detail)
{
    size_t n;
    if (snappy_uncompressed_length((const char *)in, in_len, &n) != SNAPPY_OK) {
        *detail = "Snappy length preamble is invalid";
        return P2PC_DC_CORRUPT;
    }
    if (n > ob->bound) {
        *detail = "Snappy declared length exceeds the bound";
        return P2PC_DC_BOUND;
    }
    if (snappy_validate_compressed_buffer((const char *)in, in_len) != SNAPPY_OK) {
        *detail = "Snappy block is corrupt";
        return P2PC_DC_CORRUPT;
    }
    if (n > ob->cap) {
        ob->data = (guint8 *)wmem_realloc(ob->scope, ob->data, n ? n : 1);
        ob->cap = n ? n : 1;
    }
    if (snappy_uncompress((const char *)in, in_len, (char *)ob->data, &n) != SNAPPY_OK) {
        *detail = "Snappy block is corrupt";
        return P2PC_DC_CORRUPT;
    }
    ob->len = n;
    return P2PC_DC_OK;
}

static p2pc_dc_status_t
decompress_brotli(outbuf_t *ob, const guint8 *in, size_t in_len, const char **detail)
{
    BrotliDecoderState *s = BrotliDecoderCreateInstance(NULL, NULL, NULL);
    const uint8_t *next_in = in;
    size_t avail_in = in_len;
    p2pc_dc_status_t st = P2PC_DC_OK;
    if (!s) {
        *detail = "brotli decoder could not be created";
        return P2PC_DC_CORRUPT;
    }
    for (;;) {
        uint8_t *next_out;
        size_t avail_out;
        BrotliDecoderResult r;
        if (ob->len == ob->cap && !outbuf_grow(ob)) {
            *detail = "brotli output exceeds the bound";
            st = P2PC_DC_BOUND;
            break;
        }
        next_out = ob->data + ob->len;
        avail_out = ob->cap - ob->len;
        r = BrotliDecoderDecompressStream(s, &avail_in, &next_in, &avail_out, &next_out, NULL);
        ob->len = ob->cap - avail_out;
        if (r == BROTLI_DECODER_RESULT_SUCCESS) {
            if (avail_in) {
                *detail = "bytes follow the end of the brotli stream";
                st = P2PC_DC_CORRUPT;
            }
            break;
        }
        if (r == BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT) {
            *detail = "brotli stream ends early";
            st = P2PC_DC_TRUNCATED;
            break;
        }
        if (r == BROTLI_DECODER_RESULT_ERROR) {
            *detail = BrotliDecoderErrorString(BrotliDecoderGetErrorCode(s));
            st = P2PC_DC_CORRUPT;
            break;
        }
        /* NEEDS_MORE_OUTPUT: loop and grow. */
    }
    BrotliDecoderDestroyInstance(s);
    return st;
}

static p2pc_dc_status_t
decompress_zstd(outbuf_t *ob, const guint8 *in, size_t in_len, const char **detail)
{
    ZSTD_DStream *ds = ZSTD_createDStream();
    ZSTD_inBuffer ib = { in, in_len, 0 };
    p2pc_dc_status_t st = P2PC_DC_OK;
    size_t r = 1;
    if (!ds) {
        *detail = "zstd decoder could not be created";
        return P2PC_DC_CORRUPT;
    }
    ZSTD_initDStream(ds);
    while (ib.pos < ib.size || r != 0) {
        ZSTD_outBuffer obuf;
        if (ob->len == ob->cap && !outbuf_grow(ob)) {
            *detail = "zstd output exceeds the bound";
            st = P2PC_DC_BOUND;
            break;
        }
        obuf.dst = ob->data;
        obuf.size = ob->cap;
        obuf.pos = ob->len;
        r = ZSTD_decompressStream(ds, &obuf, &ib);
        ob->len = obuf.pos;
        if (ZSTD_isError(r)) {
            *detail = ZSTD_getErrorName(r);
            st = P2PC_DC_CORRUPT;
            break;
        }
        if (r != 0 && ib.pos == ib.size && obuf.pos < obuf.size) {
            *detail = "zstd frame ends early";
            st = P2PC_DC_TRUNCATED;
            break;
        }
    }
    ZSTD_freeDStream(ds);
    return st;
}

guint32
p2pc_snappy_masked_crc32c(const guint8 *data, size_t len)
{
    /* crc32_iscsi takes the preset and leaves the final inversion to the caller. */
    guint32 crc = crc32_iscsi((unsigned char *)data, (int)len, 0xffffffffU) ^ 0xffffffffU;
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8U;
}

/* Over 80 lines: one loop over the chunks that follows framing_format.txt §4 type by type
 * (§4.1 stream identifier, §4.2 compressed, §4.3 uncompressed, §4.5 reserved unskippable,
 * §4.4/§4.6 skippable and padding); each break is the error the spec names for that chunk. */
p2pc_dc_status_t
p2pc_snappy_framed_decode(wmem_allocator_t *scope, const guint8 *in, size_t in_len,
                          size_t stop_after, size_t bound, guint8 **out, size_t *out_len,
                          size_t *consumed, wmem_array_t *chunks, const char **detail)
{
    outbuf_t ob;
    size_t off = 0;
    p2pc_dc_status_t st = P2PC_DC_OK;

    outbuf_init(&ob, scope, stop_after ? stop_after : in_len * 2, bound);
    while (off < in_len) {
        p2pc_snappy_chunk_t c;
        const guint8 *data;
        if (in_len - off < 4) {
            *detail = "framed Snappy chunk header is cut short";
            st = P2PC_DC_TRUNCATED;
            break;
        }
        memset(&c, 0, sizeof c);
        c.type = in[off];
        c.offset = (guint32)off;
        c.length = in[off + 1] | (in[off + 2] << 8) | ((guint32)in[off + 3] << 16);
        if (in_len - off - 4 < c.length) {
            *detail = "framed Snappy chunk is cut short";
            st = P2PC_DC_TRUNCATED;
            break;
        }
        data = in + off + 4;
        if (c.type == P2PC_SNAPPY_CHUNK_COMPRESSED || c.type == P2PC_SNAPPY_CHUNK_UNCOMPRESSED) {
            size_t n;
            if (c.length < 4) {
                *detail = "framed Snappy data chunk shorter than its CRC";
                st = P2PC_DC_CORRUPT;
                break;
            }
            c.crc_stored = data[0] | (data[1] << 8) | (data[2] << 16) | ((guint32)data[3] << 24);
            if (c.type == P2PC_SNAPPY_CHUNK_UNCOMPRESSED) {
                n = c.length - 4;
            } else if (snappy_uncompressed_length((const char *)data + 4, c.length - 4, &n) != SNAPPY_OK) {
                *detail = "Snappy length preamble is invalid";
                st = P2PC_DC_CORRUPT;
                break;
            }
            /* framing_format.txt §4.2: at most 65536 uncompressed bytes per chunk. */
            if (n > 65536) {
                *detail = "framed Snappy chunk decodes to more than 65536 bytes";
                st = P2PC_DC_CORRUPT;
                c.out_len = (guint32)MIN(n, G_MAXUINT32);  /* listed, for its conformance check */
                if (chunks)
                    wmem_array_append_one(chunks, c);
                off += 4 + c.length;
                break;
            }
            if (ob.len + n > bound) {
                *detail = "framed Snappy output exceeds the bound";
                st = P2PC_DC_BOUND;
                break;
            }
            while (ob.cap - ob.len < n)
                outbuf_grow(&ob);
            if (c.type == P2PC_SNAPPY_CHUNK_UNCOMPRESSED) {
                memcpy(ob.data + ob.len, data + 4, n);
            } else if (snappy_uncompress((const char *)data + 4, c.length - 4,
                                         (char *)ob.data + ob.len, &n) != SNAPPY_OK) {
                *detail = "Snappy block inside a framed chunk is corrupt";
                st = P2PC_DC_CORRUPT;
                break;
            }
            c.out_len = (guint32)n;
            c.crc_computed = p2pc_snappy_masked_crc32c(ob.data + ob.len, n);
            if (c.crc_computed != c.crc_stored && st == P2PC_DC_OK) {
                *detail = "framed Snappy chunk CRC-32C mismatch";
                st = P2PC_DC_CRC;
            }
            ob.len += n;
        } else if (c.type == P2PC_SNAPPY_CHUNK_STREAM_ID) {
            if (c.length != 6 || memcmp(data, "sNaPpY", 6) != 0) {
                *detail = "framed Snappy stream identifier is not sNaPpY";
                st = P2PC_DC_CORRUPT;
                break;
            }
        } else if (c.type >= 0x02 && c.type <= 0x7f) {
            /* framing_format.txt §4.5: reserved unskippable chunks are an error. */
            *detail = "reserved unskippable framed Snappy chunk";
            st = P2PC_DC_CORRUPT;
            if (chunks)
                wmem_array_append_one(chunks, c);
            off += 4 + c.length;
            break;
        }
        /* 0x80-0xfd reserved skippable and 0xfe padding: skipped. */
        if (chunks)
            wmem_array_append_one(chunks, c);
        off += 4 + c.length;
        if (stop_after && ob.len >= stop_after)
            break;
    }
    *out = ob.data;
    *out_len = ob.len;
    if (consumed)
        *consumed = off;
    return st;
}

p2pc_dc_status_t
p2pc_decompress(wmem_allocator_t *scope, p2pc_codec_t codec, const guint8 *in, size_t in_len,
                size_t bound, guint8 **out, size_t *out_len, const char **detail)
{
    outbuf_t ob;
    p2pc_dc_status_t st;
    const char *dummy = NULL;

    if (!detail)
        detail = &dummy;
    *detail = NULL;
    if (codec == P2PC_CODEC_SNAPPY_FRAMED)
        return p2pc_snappy_framed_decode(scope, in, in_len, 0, bound, out, out_len, NULL, NULL, detail);

    outbuf_init(&ob, scope, in_len * 4, bound);
    switch (codec) {
    case P2PC_CODEC_LZO1X:
        st = decompress_lzo1x(&ob, in, in_len, detail);
        break;
    case P2PC_CODEC_ZLIB:
        st = decompress_zlib(&ob, MAX_WBITS, in, in_len, detail);
        break;
    case P2PC_CODEC_DEFLATE:
        st = decompress_zlib(&ob, -MAX_WBITS, in, in_len, detail);
        break;
    case P2PC_CODEC_GZIP:
        st = decompress_zlib(&ob, MAX_WBITS + 16, in, in_len, detail);
        break;
    case P2PC_CODEC_SNAPPY:
        st = decompress_snappy(&ob, in, in_len, detail);
        break;
    case P2PC_CODEC_BROTLI:
        st = decompress_brotli(&ob, in, in_len, detail);
        break;
    case P2PC_CODEC_ZSTD:
        st = decompress_zstd(&ob, in, in_len, detail);
        break;
    case P2PC_CODEC_NONE:
        if (in_len > bound) {
            *detail = "payload exceeds the bound";
            st = P2PC_DC_BOUND;
            break;
        }
        memcpy(ob.data, in, in_len);    /* the buffer holds min(4 x in_len, bound) >= in_len */
        ob.len = in_len;
        st = P2PC_DC_OK;
        break;
    default:
        *detail = "codec needs a stream decoder";
        st = P2PC_DC_CORRUPT;
        break;
    }
    outbuf_fit(&ob);
    *out = ob.data;
    *out_len = ob.len;
    return st;
}

tvbuff_t *
p2pc_decompress_tvb(tvbuff_t *tvb, int offset, int len, packet_info *pinfo, p2pc_codec_t codec,
                    size_t bound, const char *tab, p2pc_dc_status_t *status, const char **detail)
{
    guint8 *out = NULL;
    size_t out_len = 0;
    const guint8 *in;
    tvbuff_t *child;
    p2pc_dc_status_t st;

    *detail = NULL;
    if (len < 0)
        len = tvb_captured_length_remaining(tvb, offset);
    in = tvb_get_ptr(tvb, offset, len);
    st = p2pc_decompress(pinfo->pool, codec, in, (size_t)len, bound, &out, &out_len, detail);
    *status = st;
    if (st != P2PC_DC_OK && st != P2PC_DC_CRC && st != P2PC_DC_LENGTH)
        return NULL;
    if (out_len > G_MAXINT) {
        *status = P2PC_DC_BOUND;
        *detail = "output does not fit a tvb";
        return NULL;
    }
    child = tvb_new_child_real_data(tvb, out, (guint)out_len, (gint)out_len);
    if (tab)
        add_new_data_source(pinfo, child, tab);
    return child;
}

/* ---- stateful streams ---- */

enum { RESYNC_NONE, RESYNC_SEEK, RESYNC_DUAL };

struct p2pc_stream {
    p2pc_codec_t codec;
    gboolean failed;
    gboolean ended;             /* the compressed stream is complete: its state is released */
    z_stream zs;
    BrotliDecoderState *br;
    /* After a hole (p2pc_stream_gap): */
    int resync;                 /* looking for a sync-flush point, or decoding with two windows */
    guint marker;               /* bytes of 00 00 ff ff the last input ended with */
    z_stream *alt;              /* the inflater whose lost window is all 0xff (zs: all 0x00) */
    size_t known;               /* determined output bytes since the last undetermined one */
    guint trailer;              /* bytes that may follow the end: a gzip stream decoded raw
                                   since a gap ends with its 8-byte trailer */
};

/* Release the decoder's state (its window: 32 KiB for deflate, up to 16 MiB for brotli) once
 * the stream has ended or failed: a capture holds thousands of finished connections. */
static void
stream_release(p2pc_stream_t *s)
{
    if (s->br) {
        BrotliDecoderDestroyInstance(s->br);
        s->br = NULL;
    } else if (s->zs.state) {
        inflateEnd(&s->zs);     /* clears zs.state */
    }
    if (s->alt) {
        inflateEnd(s->alt);
        g_free(s->alt);
        s->alt = NULL;
    }
}

/* inflate_into() for a stream: a gzip stream decoded raw since a gap may end with its trailer,
 * unchecked (the bytes its CRC and length sum are gone). */
static p2pc_dc_status_t
stream_inflate(z_stream *zs, outbuf_t *ob, const guint8 *in, size_t in_len, guint *trailer,
               gboolean *ended, const char **detail)
{
    p2pc_dc_status_t st = inflate_into(zs, ob, in, in_len, FALSE, ended, detail);
    if (st == P2PC_DC_CORRUPT && *ended && zs->avail_in <= *trailer) {
        *trailer -= zs->avail_in;
        st = P2PC_DC_OK;
    }
    return st;
}

gboolean
p2pc_stream_at_flush(const p2pc_stream_t *s)
{
    /* zlib.h: data_type is the unused bits of the last input byte, +64 in the last block, +128
     * when inflate() stopped before a block's type bits, +256 inside a stored block's bytes. */
    if (s->codec == P2PC_CODEC_BROTLI_STREAM || s->failed || s->ended || !s->zs.state)
        return FALSE;
    return (s->zs.data_type & ~64) == 128;
}

p2pc_stream_t *
p2pc_stream_new(p2pc_codec_t codec)
{
    p2pc_stream_t *s = g_new0(p2pc_stream_t, 1);
    s->codec = codec;
    switch (codec) {
    case P2PC_CODEC_GZIP_STREAM:
        if (inflateInit2(&s->zs, MAX_WBITS + 16) != Z_OK)
            s->failed = TRUE;
        break;
    case P2PC_CODEC_DEFLATE_STREAM:
        if (inflateInit2(&s->zs, -MAX_WBITS) != Z_OK)
            s->failed = TRUE;
        break;
    case P2PC_CODEC_BROTLI_STREAM:
        s->br = BrotliDecoderCreateInstance(NULL, NULL, NULL);
        if (!s->br)
            s->failed = TRUE;
        break;
    default:
        s->failed = TRUE;
        break;
    }
    return s;
}

p2pc_dc_status_t
p2pc_stream_feed(p2pc_stream_t *s, const guint8 *in, size_t in_len, size_t bound,
                 wmem_allocator_t *scope, guint8 **out, size_t *out_len, const char **detail)
{
    outbuf_t ob;
    p2pc_dc_status_t st = P2PC_DC_OK;

    *out = NULL;
    *out_len = 0;
    if (s->failed) {
        *detail = "stream decoder stopped after an earlier error";
        return P2PC_DC_CORRUPT;
    }
    if (s->ended) {
        if (in_len <= s->trailer) {
            s->trailer -= (guint)in_len;
            return P2PC_DC_OK;
        }
        s->failed = TRUE;
        *detail = "bytes follow the end of the compressed stream";
        return P2PC_DC_CORRUPT;
    }
    outbuf_init(&ob, scope, in_len * 4, bound);
    if (s->codec == P2PC_CODEC_BROTLI_STREAM) {
        const uint8_t *next_in = in;
        size_t avail_in = in_len;
        for (;;) {
            uint8_t *next_out;
            size_t avail_out;
            BrotliDecoderResult r;
            if (ob.len == ob.cap && !outbuf_grow(&ob)) {
                *detail = "brotli stream output exceeds the bound";
                st = P2PC_DC_BOUND;
                break;
            }
            next_out = ob.data + ob.len;
            avail_out = ob.cap - ob.len;
            r = BrotliDecoderDecompressStream(s->br, &avail_in, &next_in, &avail_out, &next_out, NULL);
            ob.len = ob.cap - avail_out;
            /* The output buffer can fill just as the input runs out: brotli then asks for input
             * while it still holds output.  Take that output before waiting for the next bytes. */
            if ((r == BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT || r == BROTLI_DECODER_RESULT_SUCCESS) &&
                !BrotliDecoderHasMoreOutput(s->br))
                break;
            if (r == BROTLI_DECODER_RESULT_ERROR) {
                *detail = BrotliDecoderErrorString(BrotliDecoderGetErrorCode(s->br));
                st = P2PC_DC_CORRUPT;
                break;
            }
        }
    } else {
        st = stream_inflate(&s->zs, &ob, in, in_len, &s->trailer, &s->ended, detail);
    }
    if (s->codec == P2PC_CODEC_BROTLI_STREAM && st == P2PC_DC_OK && BrotliDecoderIsFinished(s->br))
        s->ended = TRUE;
    if (st != P2PC_DC_OK)
        s->failed = TRUE;
    if (s->failed || s->ended)
        stream_release(s);
    outbuf_fit(&ob);
    *out = ob.data;
    *out_len = ob.len;
    return st;
}

gboolean
p2pc_stream_gap(p2pc_stream_t *s)
{
    if (s->codec == P2PC_CODEC_BROTLI_STREAM || s->failed || s->ended)
        return FALSE;
    stream_release(s);
    s->resync = RESYNC_SEEK;
    s->marker = 0;
    /* Decoded raw from here on: the gzip header is behind, its trailer may come. */
    s->trailer = s->codec == P2PC_CODEC_GZIP_STREAM ? 8 : 0;
    return TRUE;
}

/* Look for the end of a sync-flush marker (00 00 ff ff) in p[0, len), continuing the match of
 * *matched bytes the previous input ended with.  *used: the bytes up to and including the
 * marker, or all of them when there is none. */
static gboolean
find_sync_flush(const guint8 *p, size_t len, guint *matched, size_t *used)
{
    static const guint8 marker[4] = { 0x00, 0x00, 0xff, 0xff };
    guint m = *matched;
    for (size_t i = 0; i < len; i++) {
        if (p[i] == marker[m])
            m++;
        else if (p[i] == 0x00)
            m = m == 2 ? 2 : 1;     /* 00 00 00: still two; 00 00 ff 00: one */
        else
            m = 0;
        if (m == 4) {
            *matched = 0;
            *used = i + 1;
            return TRUE;
        }
    }
    *matched = m;
    *used = len;
    return FALSE;
}

/* Two raw inflaters from a sync-flush point on, one with a lost window of 0x00, one of 0xff. */
static gboolean
dual_start(p2pc_stream_t *s)
{
    static const guint8 zeros[32768];
    static guint8 ones[32768];

    if (!ones[0])
        memset(ones, 0xff, sizeof ones);
    memset(&s->zs, 0, sizeof s->zs);
    s->alt = g_new0(z_stream, 1);
    s->known = 0;
    s->resync = RESYNC_DUAL;
    return inflateInit2(&s->zs, -MAX_WBITS) == Z_OK &&
           inflateSetDictionary(&s->zs, zeros, sizeof zeros) == Z_OK &&
           inflateInit2(s->alt, -MAX_WBITS) == Z_OK &&
           inflateSetDictionary(s->alt, ones, sizeof ones) == Z_OK;
}

/* Keep the bytes both inflaters agree on, back to back in ob, and note the runs. */
static void
keep_determined(p2pc_stream_t *s, outbuf_t *ob, const guint8 *alt, p2pc_stream_gap_t *gap)
{
    size_t i = 0, j, k, w = 0;
    guint32 n;

    while (i < ob->len) {
        for (j = i; j < ob->len && ob->data[j] == alt[j]; j++)
            ;
        for (k = j; k < ob->len && ob->data[k] != alt[k]; k++)
            ;
        if (k > j && !gap->runs)
            gap->runs = wmem_array_new(NULL, sizeof(guint32));
        if (gap->runs) {
            n = (guint32)(j - i);
            wmem_array_append_one(gap->runs, n);
            if (k > j) {
                n = (guint32)(k - j);
                wmem_array_append_one(gap->runs, n);
            }
        }
        memmove(ob->data + w, ob->data + i, j - i);
        w += j - i;
        gap->undetermined += k - j;
        s->known = k > j ? 0 : s->known + (j - i);
        i = k;
    }
    ob->len = w;
}

/* A marker that was no sync-flush point: the stream seeks the next one, as after the gap. */
static void
seek_again(p2pc_stream_t *s)
{
    stream_release(s);
    s->ended = FALSE;
    s->resync = RESYNC_SEEK;
    s->marker = 0;
    s->trailer = s->codec == P2PC_CODEC_GZIP_STREAM ? 8 : 0;
}

/* The last 32 KiB of output are known (or the stream ended): so is the window, and one inflater
 * goes on alone.  TRUE. */
static gboolean
back_in_sync(p2pc_stream_t *s)
{
    if (s->alt) {
        inflateEnd(s->alt);
        g_free(s->alt);
        s->alt = NULL;
    }
    s->resync = RESYNC_NONE;
    return TRUE;
}

p2pc_dc_status_t
p2pc_stream_feed_gap(p2pc_stream_t *s, const guint8 *in, size_t in_len, size_t bound,
                     wmem_allocator_t *scope, guint8 **out, size_t *out_len, p2pc_stream_gap_t *gap,
                     const char **detail)
{
    outbuf_t ob, alt;
    size_t pos = 0, used, retry = 0;
    p2pc_dc_status_t st = P2PC_DC_OK, alt_st;
    gboolean alt_ended;
    guint alt_trailer;

    memset(gap, 0, sizeof *gap);
    if (s->resync == RESYNC_NONE || s->ended) {
        gap->in_sync = TRUE;
        return p2pc_stream_feed(s, in, in_len, bound, scope, out, out_len, detail);
    }
    *out = NULL;
    *out_len = 0;
    outbuf_init(&ob, scope, s->resync == RESYNC_DUAL ? in_len * 4 : 0, bound);
    while (pos < in_len) {
        if (s->resync == RESYNC_SEEK) {
            gboolean found = find_sync_flush(in + pos, in_len - pos, &s->marker, &used);
            gap->skipped += used;
            pos += used;
            if (!found)
                break;
            if (!dual_start(s)) {
                *detail = "inflateInit2 failed";
                st = P2PC_DC_CORRUPT;
                break;
            }
            gap->resumed = TRUE;
            retry = pos;    /* a false marker: look again from here */
        }
        /* Both inflaters read the same bits, so they produce as many bytes. */
        outbuf_init(&alt, NULL, in_len * 4, bound);
        alt_ended = FALSE;
        alt_trailer = s->trailer;
        st = stream_inflate(&s->zs, &ob, in + pos, in_len - pos, &s->trailer, &s->ended, detail);
        alt_st = stream_inflate(s->alt, &alt, in + pos, in_len - pos, &alt_trailer, &alt_ended, detail);
        if (st == P2PC_DC_OK && alt_st == P2PC_DC_OK && alt.len == ob.len) {
            keep_determined(s, &ob, alt.data, gap);
            wmem_free(NULL, alt.data);
            break;
        }
        wmem_free(NULL, alt.data);
        if (st == P2PC_DC_BOUND || alt_st == P2PC_DC_BOUND) {
            st = P2PC_DC_BOUND;
            break;
        }
        /* 00 00 ff ff inside compressed data, not a sync-flush point: what it decoded in this
         * input is dropped, and the search goes on after it (the bytes it read count as
         * skipped as the search passes over them again). */
        seek_again(s);
        ob.len = 0;
        gap->resumed = FALSE;
        pos = retry;
        st = P2PC_DC_OK;
    }
    if (st != P2PC_DC_OK)
        s->failed = TRUE;
    else if (s->ended || (s->resync == RESYNC_DUAL && s->known >= 32768))
        gap->in_sync = back_in_sync(s);
    if (s->failed || s->ended)
        stream_release(s);
    outbuf_fit(&ob);
    *out = ob.data;
    *out_len = ob.len;
    return st;
}

void
p2pc_stream_free(p2pc_stream_t *s)
{
    if (!s)
        return;
    stream_release(s);
    g_free(s);
}
