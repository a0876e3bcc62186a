/* codecs.h
 * Decompressors every p2pc dissector shares: LZO1X, zlib/deflate/gzip, Snappy (block and
 * framing format), brotli and zstd, one-shot and (gzip/deflate/brotli) stateful per stream.
 * Every call takes an output bound: no input can make a decoder allocate past it.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef P2PC_CODECS_H
#define P2PC_CODECS_H

#include "core/p2pc-compat.h"

typedef enum {
    P2PC_CODEC_NONE = 0,
    P2PC_CODEC_LZO1X,
    P2PC_CODEC_ZLIB,            /* RFC 1950 (zlib header) */
    P2PC_CODEC_DEFLATE,         /* RFC 1951 raw */
    P2PC_CODEC_GZIP,            /* RFC 1952 */
    P2PC_CODEC_SNAPPY,          /* Snappy block format */
    P2PC_CODEC_SNAPPY_FRAMED,   /* Snappy framing format (framing_format.txt) */
    P2PC_CODEC_BROTLI,
    P2PC_CODEC_ZSTD,
    P2PC_CODEC_GZIP_STREAM,     /* one gzip stream per direction, sync-flushed */
    P2PC_CODEC_DEFLATE_STREAM,  /* one raw deflate stream per direction (rust-libp2p /deflate) */
    P2PC_CODEC_BROTLI_STREAM,   /* one brotli stream per direction */
} p2pc_codec_t;

/* The name used in p2pc.codec ("none", "lzo1x", "snappy-framed", "gzip-stream", ...). */
const char *p2pc_codec_name(p2pc_codec_t codec);

typedef enum {
    P2PC_DC_OK = 0,
    P2PC_DC_CORRUPT,      /* the decoder rejected the input */
    P2PC_DC_TRUNCATED,    /* input ended inside a compressed unit */
    P2PC_DC_BOUND,        /* output would exceed the bound */
    P2PC_DC_CRC,          /* decoded, but a checksum did not match (output is still returned) */
    P2PC_DC_LENGTH,       /* decoded, but the declared length differs from the output */
} p2pc_dc_status_t;

const char *p2pc_dc_status_name(p2pc_dc_status_t status);

/* One-shot decompression of in[0..in_len) into memory from `scope`.  On P2PC_DC_OK (and
 * P2PC_DC_CRC/P2PC_DC_LENGTH) *out and *out_len hold the output; *detail says what went wrong. */
p2pc_dc_status_t p2pc_decompress(wmem_allocator_t *scope, p2pc_codec_t codec,
                                 const guint8 *in, size_t in_len, size_t bound,
                                 guint8 **out, size_t *out_len, const char **detail);

/* Decompress tvb[offset, offset+len) and, on success, return a child tvb holding the output,
 * added as a data source named `tab` (the "Decompressed ..." tab in the GUI).  NULL on failure,
 * with *status and *detail set. */
tvbuff_t *p2pc_decompress_tvb(tvbuff_t *tvb, int offset, int len, packet_info *pinfo,
                              p2pc_codec_t codec, size_t bound, const char *tab,
                              p2pc_dc_status_t *status, const char **detail);

/* True when the two bytes start a valid zlib stream (RFC 1950 §2.2: CM 8, CINFO <= 7,
 * (CMF*256 + FLG) % 31 == 0).  Raw LZO1X output has no such header. */
gboolean p2pc_is_zlib_header(guint8 cmf, guint8 flg);

/* Snappy framing format. */
#define P2PC_SNAPPY_CHUNK_COMPRESSED   0x00
#define P2PC_SNAPPY_CHUNK_UNCOMPRESSED 0x01
#define P2PC_SNAPPY_CHUNK_PADDING      0xfe
#define P2PC_SNAPPY_CHUNK_STREAM_ID    0xff

typedef struct {
    guint8  type;
    guint32 offset;         /* of the chunk header in the input */
    guint32 length;         /* chunk data length (the u24) */
    guint32 crc_stored;     /* masked CRC-32C from the chunk (data chunks) */
    guint32 crc_computed;   /* masked CRC-32C of the chunk's uncompressed data */
    guint32 out_len;        /* uncompressed bytes this chunk produced */
} p2pc_snappy_chunk_t;

/* Decode a framed Snappy stream.  Stops at the end of input or, when stop_after > 0, after the
 * chunk that brings the output to stop_after bytes; *consumed says how much input was used.
 * `chunks` (may be NULL) receives one p2pc_snappy_chunk_t per chunk read.  A CRC mismatch
 * does not stop decoding: the result is P2PC_DC_CRC with the output filled in. */
p2pc_dc_status_t p2pc_snappy_framed_decode(wmem_allocator_t *scope, const guint8 *in,
                                           size_t in_len, size_t stop_after, size_t bound,
                                           guint8 **out, size_t *out_len, size_t *consumed,
                                           wmem_array_t *chunks, const char **detail);

/* The framing format's CRC: masked CRC-32C (Castagnoli) of the uncompressed data. */
guint32 p2pc_snappy_masked_crc32c(const guint8 *data, size_t len);

/* Stateful decoders (gzip/deflate/brotli streams): feed each direction's bytes in order. */
typedef struct p2pc_stream p2pc_stream_t;
p2pc_stream_t *p2pc_stream_new(p2pc_codec_t codec);
p2pc_dc_status_t p2pc_stream_feed(p2pc_stream_t *stream, const guint8 *in, size_t in_len,
                                  size_t bound, wmem_allocator_t *scope,
                                  guint8 **out, size_t *out_len, const char **detail);
void p2pc_stream_free(p2pc_stream_t *stream);

/* After a hole in a stream's input.  A gzip or deflate stream sync-flushed after every write
 * (an empty stored block ending 00 00 ff ff) resumes at the next sync-flush point: from there
 * two raw inflaters decode it, their lost 32 KiB window taken as all 0x00 in one and all 0xff
 * in the other.  Literals come out equal in both; a copy from the lost window, or from a byte
 * that came from it, differs: the bytes equal in both are exactly the ones the stream
 * determines.  Once the last 32 KiB of output are all determined the window is known again
 * and the stream is back in sync.  A 00 00 ff ff inside compressed data that fails to inflate
 * is passed over for the next one.  Returns FALSE for a stream that cannot resume: brotli
 * (its state, the distance ring and context, carries across meta-blocks, flushed or not), or
 * one that has ended or failed. */
gboolean p2pc_stream_gap(p2pc_stream_t *stream);

/* A deflate stream (gzip, deflate) fed up to here stands at a block boundary, byte-aligned, with
 * nothing of the next block read: after a sync-flush marker (00 00 ff ff), the end of one
 * flush unit.  FALSE for brotli (its stream marks no flush point) and a stream that ended. */
gboolean p2pc_stream_at_flush(const p2pc_stream_t *stream);

/* What p2pc_stream_feed_gap() did with one input. */
typedef struct {
    size_t skipped;             /* input bytes passed over before the sync-flush point */
    gboolean resumed;           /* decoding resumed at a sync-flush point in this input */
    wmem_array_t *runs;         /* guint32 output run lengths, alternately determined and not,
                                   starting with determined (NULL when all are determined;
                                   the caller frees it with wmem_destroy_array()) */
    size_t undetermined;        /* output bytes the stream does not determine (not in *out) */
    gboolean in_sync;           /* the window is known again: p2pc_stream_feed() from here on */
} p2pc_stream_gap_t;

/* p2pc_stream_feed() after p2pc_stream_gap(), until in_sync: *out holds the determined bytes
 * only, back to back; `gap` says where the others were.  Each inflater's output stays within
 * `bound`. */
p2pc_dc_status_t p2pc_stream_feed_gap(p2pc_stream_t *stream, const guint8 *in, size_t in_len,
                                      size_t bound, wmem_allocator_t *scope, guint8 **out,
                                      size_t *out_len, p2pc_stream_gap_t *gap, const char **detail);

#endif /* P2PC_CODECS_H */
