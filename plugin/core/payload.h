/* payload.h
 * A message's compressed payload decoded for its protocol's dissector, the one way for every
 * protocol that compresses message by message: the output bounded (prefs.h), shown in a tab of
 * its own, its length (and ratio) in the protocol's tree, and an expert item when the codec
 * fails, a bound stops it, or what was sent is larger than what it decodes to.  FISCO 2.x
 * (Snappy), FISCO 3.x (zstd) and Bitcoin's BUIP017 (LZO1X, or zlib with LZO1X as fallback)
 * decode through it.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef P2PC_PAYLOAD_H
#define P2PC_PAYLOAD_H

#include "core/p2pc-compat.h"
#include "core/codecs.h"

#include <epan/expert.h>

/* How a protocol's payloads are compressed, and the fields it shows them with. */
typedef struct {
    p2pc_codec_t codec;
    size_t max;                 /* the protocol's own limit on one payload's output */
    const char *tab;            /* the output's data source */
    int *hf_len;                /* the uncompressed length (FT_UINT32) */
    int *hf_ratio;              /* the ratio sent / uncompressed (FT_DOUBLE), or NULL */
    expert_field *ei_failed;    /* the payload does not decode */
    /* Optional (zero: none; the fields above are positional in every caller's initializer). */
    p2pc_codec_t fallback;      /* tried when `codec` does not decode and no ratio or capture
                                   bound stopped it, under the same bound: a format whose
                                   sniffed header can lie (BUIP017's zlib test on LZO1X bytes) */
    expert_field *ei_bound;     /* the protocol's own bound (or p2pc.max_decompressed_mib) stopped
                                   it, named in its own item; NULL: ei_failed says "bound" */
    gboolean spec_not_smaller;  /* the protocol's specification says a compressed payload is
                                   smaller than its raw form (BUIP017): the caller reports one
                                   that is not as that p2pc.spec.* check (a warning citing the
                                   rule), and p2pc.compressed_larger, the generic note for the
                                   same bytes, is left out so the frame names it once */
} p2pc_payload_codec_t;

/* The whole of `payload` decoded: the output, or NULL when it did not decode or a bound stopped
 * it; *bounded says the latter (a ratio or the capture's budget: its bytes are then undecoded,
 * p2pc_record_bound()).  *codec (when not NULL) is the codec that decoded it: `fallback` when
 * `codec` failed and it did not, `codec` otherwise (its error is the one reported).  Fields go
 * in `tree`, expert items on `ti`. */
tvbuff_t *p2pc_payload_decompress(const p2pc_payload_codec_t *how, tvbuff_t *payload,
                                  packet_info *pinfo, proto_tree *tree, proto_item *ti,
                                  gboolean *bounded, p2pc_codec_t *codec);

/* Its expert item on the p2pc protocol (p2pc.c). */
void p2pc_payload_register(int proto);

#endif
