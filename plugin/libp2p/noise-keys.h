/* noise-keys.h
 * The Noise key log (noise-keys.c): the X25519 private keys of libp2p Noise sessions, read
 * from a text file in the format of Wireshark's WireGuard key log, one key a line:
 *   LOCAL_STATIC_PRIVATE_KEY = <base64 of 32 bytes>
 *   LOCAL_EPHEMERAL_PRIVATE_KEY = <base64 of 32 bytes>
 * Any other line (NSS TLS secrets, comments, WireGuard's other keys) is skipped.  Each key is
 * found by its public key: a connection's ephemeral keys are sent in clear in handshake
 * messages 1 and 2, its static keys encrypted in messages 2 and 3.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef P2PC_LIBP2P_NOISE_KEYS_H
#define P2PC_LIBP2P_NOISE_KEYS_H

#include "core/p2pc-compat.h"

#define NOISE_KEY_LEN 32

typedef struct noise_keys noise_keys_t;

noise_keys_t *noise_keys_new(void);

/* Read `path` (NULL or "": no keys) if it is not the file read last, or it changed since. */
void noise_keys_load(noise_keys_t *keys, const char *path);

/* The private key (static or ephemeral) whose public key is `pub`: FALSE when the key log has
 * none (it is read again first if the file grew, as during a live capture). */
gboolean noise_keys_find(noise_keys_t *keys, gboolean ephemeral, const guint8 *pub, guint8 *priv);

/* X25519: out = DH(priv, pub) (libgcrypt through wsutil). FALSE on failure. */
gboolean noise_dh(guint8 *out, const guint8 *priv, const guint8 *pub);

#endif /* P2PC_LIBP2P_NOISE_KEYS_H */
