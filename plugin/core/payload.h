/* payload.h
 * A message's compressed payload decoded for its protocol's dissector, the one way for every
 * protocol that compresses message by message: the output bounded (prefs.h), shown in a tab of
 * its own, its length (and ratio) in the protocol's tree, and an expert item when the codec
 * fails, a bound stops it, or what was sent is larger than what it decodes to.
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
} p2pc_payload_codec_t;

/* The whole of `payload` decoded: the output, or NULL when it did not decode or a bound stopped
 * it; *bounded says the latter (a ratio or the capture's budget: its bytes are then undecoded,
 * p2pc_record_bound()).  Fields go in `tree`, expert items on `ti`. */
tvbuff_t *p2pc_payload_decompress(const p2pc_payload_codec_t *how, tvbuff_t *payload,
                                  packet_info *pinfo, proto_tree *tree, proto_item *ti,
                                  gboolean *bounded);

/* Its expert item on the p2pc protocol (p2pc.c). */
void p2pc_payload_register(int proto);

#endif
