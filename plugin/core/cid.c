/* cid.c
 * CIDs (multiformats/cid, https://github.com/multiformats/cid): binary form to string.
 *
 * A CIDv1's string is multibase base32: Wireshark's wsutil has a base32 decoder only
 * (wsutil/base32.h, ws_base32_decode) and GLib has base64 only, so the encoder is here
 * (RFC 4648 section 6, the lower-case alphabet, no padding, as multibase's "b" prefix says).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/cid.h"
#include "core/base58.h"
#include "core/protobuf.h"

/* The uvarint at p[*off, len), *off moved past it. */
static gboolean
read_uvarint(const guint8 *p, size_t len, size_t *off, guint64 *value)
{
    guint used;
    if (*off >= len || !p2pc_uvarint(p + *off, len - *off, value, &used))
        return FALSE;
    *off += used;
    return TRUE;
}

gboolean
p2pc_cid_parse(const guint8 *p, size_t len, p2pc_cid_t *cid)
{
    size_t off = 0;
    if (len == 34 && p[0] == P2PC_MH_SHA2_256 && p[1] == 32) {
        cid->version = 0;
        cid->codec = P2PC_CODEC_DAG_PB;
        cid->mh_code = P2PC_MH_SHA2_256;
        cid->digest = p + 2;
        cid->digest_len = 32;
        return TRUE;
    }
    if (!read_uvarint(p, len, &off, &cid->version) || cid->version != 1 ||
        !read_uvarint(p, len, &off, &cid->codec) || !read_uvarint(p, len, &off, &cid->mh_code) ||
        !read_uvarint(p, len, &off, &cid->digest_len) || cid->digest_len != len - off)
        return FALSE;
    cid->digest = p + off;
    return TRUE;
}

static void
put_uvarint(GByteArray *out, guint64 v)
{
    do {
        guint8 b = (guint8)(v & 0x7f);
        v >>= 7;
        if (v)
            b |= 0x80;
        g_byte_array_append(out, &b, 1);
    } while (v);
}

char *
p2pc_cid_string(wmem_allocator_t *scope, const p2pc_cid_t *cid)
{
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz234567";
    GByteArray *bin = g_byte_array_new();
    wmem_strbuf_t *s;
    guint32 acc = 0;
    guint bits = 0;
    char *out;

    if (cid->version != 1)
        put_uvarint(bin, cid->mh_code);
    else {
        put_uvarint(bin, 1);
        put_uvarint(bin, cid->codec);
        put_uvarint(bin, cid->mh_code);
    }
    put_uvarint(bin, cid->digest_len);
    g_byte_array_append(bin, cid->digest, (guint)cid->digest_len);
    if (cid->version != 1) {
        out = p2pc_base58_encode(scope, bin->data, bin->len);
        g_byte_array_free(bin, TRUE);
        return out;
    }
    s = wmem_strbuf_new(scope, "b");
    for (guint i = 0; i < bin->len; i++) {
        acc = (acc << 8) | bin->data[i];
        bits += 8;
        while (bits >= 5) {
            bits -= 5;
            wmem_strbuf_append_c(s, alphabet[(acc >> bits) & 31]);
        }
    }
    if (bits)
        wmem_strbuf_append_c(s, alphabet[(acc << (5 - bits)) & 31]);
    g_byte_array_free(bin, TRUE);
    return wmem_strbuf_finalize(s);
}
