/* base58.h
 * base58btc (the Bitcoin alphabet), as libp2p prints peer IDs ("12D3KooW..." for an Ed25519 key).
 * Wireshark 4.0's public API has no base58 encoder, so p2pc carries this small one.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef P2PC_BASE58_H
#define P2PC_BASE58_H

#include "core/p2pc-compat.h"

/* The base58btc encoding of data[0..len) as a NUL-terminated string in `scope`: one '1' per
 * leading zero byte, then the digits of the rest read as a big-endian number. */
char *p2pc_base58_encode(wmem_allocator_t *scope, const guint8 *data, size_t len);

#endif
