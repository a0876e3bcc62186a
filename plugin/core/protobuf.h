/* protobuf.h
 * The varints and protobuf fields several protocols carry (libp2p's framing and messages,
 * IPFS CIDs, FISCO BCOS 3.x module payloads): multiformats unsigned-varints on raw bytes, and
 * protobuf fields in a tvb.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef P2PC_PROTOBUF_H
#define P2PC_PROTOBUF_H

#include "core/p2pc-compat.h"

/* uvarint (multiformats unsigned-varint, at most 9 bytes) at p, for code that sees bytes, not a
 * tvb (a pipe's length function, a CID's binary form); FALSE when incomplete or too long.  In a
 * tvb, use tvb_get_varint(..., ENC_VARINT_PROTOBUF). */
gboolean p2pc_uvarint(const guint8 *p, gsize avail, guint64 *value, guint *used);

/* A message behind a uvarint length prefix at p: its length with the prefix, 0 while it is
 * incomplete, -1 when the prefix is no uvarint or claims more than `max` (an l2p_len_fn's
 * answer). */
gint64 p2pc_uvarint_prefixed(const guint8 *p, guint avail, guint64 max);

/* One protobuf field, as p2pc_pb_next() reads it. */
typedef struct {
    guint64 number;
    guint wire_type;            /* 0 varint, 1 64-bit, 2 length-delimited, 5 32-bit */
    guint64 value;              /* wire type 0 */
    int start;                  /* wire type 2: its bytes are tvb[start, start + len) */
    int len;
} p2pc_pb_field_t;

/* The next protobuf field in tvb[*off, end), with tvb_get_varint: FALSE at the end or on a
 * malformed field (it never reads past end, and never throws). */
gboolean p2pc_pb_next(tvbuff_t *tvb, int *off, int end, p2pc_pb_field_t *field);

/* Any wire type, for p2pc_pb_count(). */
#define P2PC_PB_ANY_WIRE_TYPE (-1)

/* How many fields numbered `number` of wire type `wire_type` (or P2PC_PB_ANY_WIRE_TYPE) the
 * message tvb[start, start + len) has, up to its end or its first malformed field. */
guint p2pc_pb_count(tvbuff_t *tvb, int start, int len, guint64 number, int wire_type);

#endif
