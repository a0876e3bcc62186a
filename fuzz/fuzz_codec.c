/* fuzz_codec.c — libFuzzer harness for plugin/core/codecs.c, built once per codec (-DFUZZ_CODEC).
 *
 * One-shot codecs (lzo1x, zlib, deflate, gzip, snappy, snappy-framed, brotli, zstd): the input
 * is the compressed payload, decoded under a large and a small bound.  Stream codecs
 * (gzip-stream, deflate-stream, brotli-stream): the input is fed in chunks whose sizes follow
 * a fixed pseudo-random sequence, and again in one piece: both runs must give the same bytes;
 * then across a hole, resuming at a sync-flush point (p2pc_stream_feed_gap).
 * Every call aborts when a decoder returns more than its bound (or a NULL buffer with bytes).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/codecs.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FUZZ_CODEC
#error "build with -DFUZZ_CODEC=P2PC_CODEC_..."
#endif

#define BIG_BOUND   (1u << 20)
#define SMALL_BOUND 257u

static wmem_allocator_t *pool;

#define CHECK(cond, ...) do { if (!(cond)) { fprintf(stderr, "fuzz_codec: " __VA_ARGS__); \
                                             fputc('\n', stderr); abort(); } } while (0)

/* Read every output byte, so ASan sees a buffer shorter than out_len. */
static volatile unsigned sink;
static void
touch(const guint8 *out, size_t out_len)
{
    unsigned acc = 0;
    for (size_t i = 0; i < out_len; i++)
        acc += out[i];
    sink += acc;
}

static void
check_result(p2pc_dc_status_t st, const guint8 *out, size_t out_len, size_t bound, const char *detail)
{
    CHECK(st <= P2PC_DC_LENGTH, "status %d out of range", (int)st);
    CHECK(out_len <= bound, "%s: out_len %zu > bound %zu (status %s)", p2pc_codec_name(FUZZ_CODEC),
          out_len, bound, p2pc_dc_status_name(st));
    CHECK(out_len == 0 || out != NULL, "out_len %zu with a NULL buffer", out_len);
    if (st != P2PC_DC_OK)
        CHECK(detail != NULL, "status %s without a detail", p2pc_dc_status_name(st));
    if (detail)
        sink += (unsigned)strlen(detail);
    touch(out, out_len);
}

#if FUZZ_CODEC == P2PC_CODEC_GZIP_STREAM || FUZZ_CODEC == P2PC_CODEC_DEFLATE_STREAM || \
    FUZZ_CODEC == P2PC_CODEC_BROTLI_STREAM
#define FUZZ_STREAM 1
#endif

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc; (void)argv;
    /* The simple allocator mallocs each block: ASan sees every buffer's own bounds. */
    pool = wmem_allocator_new(WMEM_ALLOCATOR_SIMPLE);
    return 0;
}

#ifdef FUZZ_STREAM
/* Feed `data` in chunks; return the concatenated output (g_malloc) and the first failure. */
static guint8 *
feed_all(const uint8_t *data, size_t size, gboolean chunked, size_t bound, size_t *total,
         p2pc_dc_status_t *first_bad)
{
    p2pc_stream_t *s = p2pc_stream_new(FUZZ_CODEC);
    GByteArray *acc = g_byte_array_new();
    guint32 rng = 0x9e3779b9u ^ (guint32)size;
    size_t off = 0;
    *first_bad = P2PC_DC_OK;
    CHECK(s != NULL, "p2pc_stream_new returned NULL");
    do {
        size_t n = size - off;
        guint8 *out = NULL;
        size_t out_len = 0;
        const char *detail = NULL;
        p2pc_dc_status_t st;
        if (chunked) {
            rng = rng * 1103515245u + 12345u;
            size_t want = 1 + (rng >> 16) % 97;   /* TCP-segment-like pieces, some tiny */
            if (want < n)
                n = want;
        }
        st = p2pc_stream_feed(s, data + off, n, bound, pool, &out, &out_len, &detail);
        check_result(st, out, out_len, bound, detail);
        if (st != P2PC_DC_OK && *first_bad == P2PC_DC_OK)
            *first_bad = st;
        if (*first_bad == P2PC_DC_OK && out_len)
            g_byte_array_append(acc, out, (guint)out_len);
        off += n;
    } while (off < size);
    p2pc_stream_free(s);
    *total = acc->len;
    return g_byte_array_free(acc, FALSE);
}
#endif

#ifdef FUZZ_STREAM
/* A hole after the first data[0]/256 of the input, of data[1] % 64 bytes: the stream is told
 * (p2pc_stream_gap) and the rest goes through p2pc_stream_feed_gap() in chunks until it is back
 * in sync.  Every call stays within its bound, and its runs add up to the bytes it gave and the
 * bytes it withheld.  Brotli cannot resume. */
static void
feed_across_a_hole(const uint8_t *data, size_t size, size_t bound)
{
    p2pc_stream_t *s = p2pc_stream_new(FUZZ_CODEC);
    size_t off = size < 2 ? size : (size_t)data[0] * size / 256, hole = size < 2 ? 0 : data[1] % 64u;
    guint32 rng = 0x7f4a7c15u ^ (guint32)size;
    guint8 *out = NULL;
    size_t out_len = 0;
    const char *detail = NULL;
    p2pc_dc_status_t st = p2pc_stream_feed(s, data, off, bound, pool, &out, &out_len, &detail);
    gboolean in_sync = FALSE;

    check_result(st, out, out_len, bound, detail);
    if (st == P2PC_DC_OK && p2pc_stream_gap(s)) {
        CHECK(FUZZ_CODEC != P2PC_CODEC_BROTLI_STREAM, "a brotli stream cannot resume after a hole");
        for (off += hole; off < size && st == P2PC_DC_OK; ) {
            p2pc_stream_gap_t gap;
            size_t n = size - off, given = 0, withheld = 0;
            rng = rng * 1103515245u + 12345u;
            if (1 + (rng >> 16) % 97 < n)
                n = 1 + (rng >> 16) % 97;
            detail = NULL;
            if (in_sync) {
                st = p2pc_stream_feed(s, data + off, n, bound, pool, &out, &out_len, &detail);
            } else {
                st = p2pc_stream_feed_gap(s, data + off, n, bound, pool, &out, &out_len, &gap, &detail);
                CHECK(gap.skipped <= n, "skipped %zu of %zu input bytes", gap.skipped, n);
                if (gap.runs) {
                    for (guint i = 0; i < wmem_array_get_count(gap.runs); i++)
                        *(i % 2 ? &withheld : &given) += *(guint32 *)wmem_array_index(gap.runs, i);
                    wmem_destroy_array(gap.runs);
                    CHECK(given == out_len && withheld == gap.undetermined,
                          "runs: %zu given, %zu withheld; out_len %zu, undetermined %zu",
                          given, withheld, out_len, gap.undetermined);
                } else {
                    CHECK(gap.undetermined == 0, "%zu bytes undetermined without runs", gap.undetermined);
                }
                in_sync = gap.in_sync;
            }
            check_result(st, out, out_len, bound, detail);
            off += n;
        }
    }
    p2pc_stream_free(s);
}
#endif

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
#ifdef FUZZ_STREAM
    size_t n_chunked, n_whole;
    p2pc_dc_status_t st_chunked, st_whole;
    guint8 *chunked = feed_all(data, size, TRUE, BIG_BOUND, &n_chunked, &st_chunked);
    guint8 *whole = feed_all(data, size, FALSE, BIG_BOUND, &n_whole, &st_whole);
    /* Same stream, different segmentation: the same bytes when both decode cleanly. */
    if (st_chunked == P2PC_DC_OK && st_whole == P2PC_DC_OK)
        CHECK(n_chunked == n_whole && (n_whole == 0 || memcmp(chunked, whole, n_whole) == 0),
              "%s: chunked feeding gave %zu bytes, one feed %zu", p2pc_codec_name(FUZZ_CODEC),
              n_chunked, n_whole);
    g_free(chunked);
    g_free(whole);
    {
        size_t n_small;
        p2pc_dc_status_t st_small;
        g_free(feed_all(data, size, TRUE, SMALL_BOUND, &n_small, &st_small));
    }
    feed_across_a_hole(data, size, BIG_BOUND);
    feed_across_a_hole(data, size, SMALL_BOUND);
#else
    static const size_t bounds[] = { BIG_BOUND, SMALL_BOUND, 0 };
    for (size_t i = 0; i < sizeof bounds / sizeof bounds[0]; i++) {
        guint8 *out = NULL;
        size_t out_len = 0;
        const char *detail = NULL;
        p2pc_dc_status_t st = p2pc_decompress(pool, FUZZ_CODEC, data, size, bounds[i], &out,
                                              &out_len, &detail);
        check_result(st, out, out_len, bounds[i], detail);
    }
#if FUZZ_CODEC == P2PC_CODEC_SNAPPY_FRAMED
    {
        /* The chunk walk the eth2 req/resp dissector uses: stop after N bytes, list the chunks. */
        wmem_array_t *chunks = wmem_array_new(pool, sizeof(p2pc_snappy_chunk_t));
        guint8 *out = NULL;
        size_t out_len = 0, consumed = 0, stop = size ? (size_t)data[0] * 61 : 0;
        const char *detail = NULL;
        p2pc_dc_status_t st = p2pc_snappy_framed_decode(pool, data, size, stop, BIG_BOUND, &out,
                                                        &out_len, &consumed, chunks, &detail);
        check_result(st, out, out_len, BIG_BOUND, detail);
        CHECK(consumed <= size, "consumed %zu > input %zu", consumed, size);
        size_t sum = 0;
        for (guint i = 0; i < wmem_array_get_count(chunks); i++) {
            const p2pc_snappy_chunk_t *c = (const p2pc_snappy_chunk_t *)wmem_array_index(chunks, i);
            CHECK((size_t)c->offset + 4 + c->length <= size, "chunk %u past the input", i);
            CHECK(c->out_len <= 65536, "chunk %u out_len %u > 65536", i, c->out_len);
            sum += c->out_len;
        }
        CHECK(sum == out_len, "chunks say %zu bytes, output has %zu", sum, out_len);
    }
#endif
#endif
    wmem_free_all(pool);
    return 0;
}
