/* peer-id.c
 * A libp2p peer ID from its public key (peer-ids spec): the key's multihash in base58btc.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/peer-id.h"
#include "core/base58.h"
#include "core/cid.h"

#include <string.h>
#include <wsutil/wsgcrypt.h>

/* The longest key kept whole: the identity multihash (code 0x00) of up to 42 bytes. */
#define PEER_ID_IDENTITY_MAX 42

char *
p2pc_peer_id_from_key(wmem_allocator_t *scope, const guint8 *key, size_t len)
{
    guint8 mh[2 + PEER_ID_IDENTITY_MAX];
    size_t mh_len;

    if (len <= PEER_ID_IDENTITY_MAX) {
        mh[0] = 0x00;
        mh[1] = (guint8)len;
        memcpy(mh + 2, key, len);
        mh_len = len + 2;
    } else {
        mh[0] = P2PC_MH_SHA2_256;
        mh[1] = 32;
        gcry_md_hash_buffer(GCRY_MD_SHA256, mh + 2, key, len);
        mh_len = 2 + 32;
    }
    return p2pc_base58_encode(scope, mh, mh_len);
}
