/* protobuf.c
 * Multiformats unsigned-varints on raw bytes and protobuf fields in a tvb (protobuf.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/protobuf.h"

gboolean
p2pc_uvarint(const guint8 *p, gsize avail, guint64 *value, guint *used)
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

gint64
p2pc_uvarint_prefixed(const guint8 *p, guint avail, guint64 max)
{
    guint64 n;
    guint used;
    if (!p2pc_uvarint(p, avail, &n, &used))
        return avail >= 9 ? -1 : 0;
    if (n > max)
        return -1;
    return used + n <= avail ? (gint64)(used + n) : 0;
}

gboolean
p2pc_pb_next(tvbuff_t *tvb, int *off, int end, p2pc_pb_field_t *field)
{
    guint64 tag, len;
    guint used;

    if (*off >= end)
        return FALSE;
    used = tvb_get_varint(tvb, *off, MIN(FT_VARINT_MAX_LEN, end - *off), &tag, ENC_VARINT_PROTOBUF);
    if (!used)
        return FALSE;
    *off += used;
    field->number = tag >> 3;
    field->wire_type = (guint)(tag & 7);
    switch (field->wire_type) {
    case 0:
        if (*off >= end)
            return FALSE;
        used = tvb_get_varint(tvb, *off, MIN(FT_VARINT_MAX_LEN, end - *off), &field->value,
                              ENC_VARINT_PROTOBUF);
        if (!used)
            return FALSE;
        *off += used;
        return TRUE;
    case 2:
        if (*off >= end)
            return FALSE;
        used = tvb_get_varint(tvb, *off, MIN(FT_VARINT_MAX_LEN, end - *off), &len, ENC_VARINT_PROTOBUF);
        if (!used || len > (guint64)(end - *off - (int)used))
            return FALSE;
        field->start = *off + used;
        field->len = (int)len;
        *off = field->start + field->len;
        return TRUE;
    case 1:
    case 5: {
        int size = field->wire_type == 1 ? 8 : 4;
        if (end - *off < size)
            return FALSE;
        *off += size;
        return TRUE;
    }
    default:
        return FALSE;
    }
}

guint
p2pc_pb_count(tvbuff_t *tvb, int start, int len, guint64 number, int wire_type)
{
    int off = start;
    guint n = 0;
    p2pc_pb_field_t f;
    while (p2pc_pb_next(tvb, &off, start + len, &f))
        if (f.number == number && (wire_type == P2PC_PB_ANY_WIRE_TYPE || f.wire_type == (guint)wire_type))
            n++;
    return n;
}
