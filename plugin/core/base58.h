/* base58.h
 * base58btc (the Bitcoin alphabet), as libp2p prints peer IDs ("12D3KooW..." for an Ed25519 key).
 * Wireshark 4.0's public API has no base58 encoder, so p2pc carries this small one.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef P2PC_BASE58_H
#define P2PC_BASE58_H

#include "core/p2pc-compat.h"

/* The longest input encoded: a libp2p peer ID is at most 44 bytes (the identity multihash of a
 * key up to 42 bytes, peer-ids spec), a CIDv0 34.  The conversion is quadratic in the input, so
 * a peer-controlled length must never reach it unbounded. */
#define P2PC_BASE58_MAX 64

/* The base58btc encoding of data[0..len) as a NUL-terminated string in `scope`: one '1' per
 * leading zero byte, then the digits of the rest read as a big-endian number; NULL when len is
 * over P2PC_BASE58_MAX (the caller says why it is not shown). */
char *p2pc_base58_encode(wmem_allocator_t *scope, const guint8 *data, size_t len);

#endif
