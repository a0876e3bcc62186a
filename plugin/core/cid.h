/* cid.h
 * IPFS content identifiers (multiformats/cid): the binary CID as Bitswap and the rest of IPFS
 * send it, read into its parts and printed in its canonical string form.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef P2PC_CID_H
#define P2PC_CID_H

#include "core/p2pc-compat.h"

#define P2PC_MH_SHA2_256 0x12
#define P2PC_CODEC_DAG_PB 0x70

/* A CID's parts: version, content codec (multicodec), multihash function code and digest. */
typedef struct {
    guint64 version;
    guint64 codec;
    guint64 mh_code;
    const guint8 *digest;
    guint64 digest_len;
} p2pc_cid_t;

/* Reads the binary CID p[0, len), which must be exactly one CID: a CIDv0 (the bare 34-byte
 * sha2-256 multihash 12 20 ...) or a CIDv1 (uvarint 1, uvarint codec, multihash).  FALSE when
 * it is neither. */
gboolean p2pc_cid_parse(const guint8 *p, size_t len, p2pc_cid_t *cid);

/* The canonical string of a CID read by p2pc_cid_parse(): a CIDv0 in base58btc ("Qm..."), a
 * CIDv1 in lower-case base32 multibase ("b" then RFC 4648 base32 without padding: "bafy...",
 * "bafk..."), in `scope`. */
char *p2pc_cid_string(wmem_allocator_t *scope, const p2pc_cid_t *cid);

#endif /* P2PC_CID_H */
