/* peer-id.h
 * A libp2p peer ID from its public key, in the form libp2p prints it (base58btc), as the
 * security handshakes (Noise's payload, TLS's certificate extension) state it.
 * https://github.com/libp2p/specs/blob/master/peer-ids/peer-ids.md
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef P2PC_PEER_ID_H
#define P2PC_PEER_ID_H

#include "core/p2pc-compat.h"

/* The peer ID of key[0, len), a protobuf-encoded PublicKey, in base58btc in `scope`: the
 * multihash of the key, identity when it is 42 bytes or less, sha2-256 beyond (peer-ids spec,
 * "Peer Ids"). */
char *p2pc_peer_id_from_key(wmem_allocator_t *scope, const guint8 *key, size_t len);

#endif /* P2PC_PEER_ID_H */
