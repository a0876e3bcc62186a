/* noise-keys.h
 * The Noise key log (noise-keys.c): the X25519 private keys of libp2p Noise sessions, read
 * from a text file in the format of Wireshark's WireGuard key log, one key a line:
 *   LOCAL_STATIC_PRIVATE_KEY = <base64 of 32 bytes>
 *   LOCAL_EPHEMERAL_PRIVATE_KEY = <base64 of 32 bytes>
 * Other text lines (NSS TLS secrets, comments, WireGuard's other keys) are skipped.  A line
 * that is not text (a NUL or another control byte), longer than NOISE_LINE_MAX, or a Noise key
 * that is not base64 of 32 bytes is a bad line: skipped and counted (noise_keys_stats()).
 * Each key is found by its public key: a connection's ephemeral keys are sent in clear in
 * handshake messages 1 and 2, its static keys encrypted in messages 2 and 3.
 *
 * The file is read as packet-wireguard.c reads its key log: kept open, read only as far as a
 * lookup needs (each line once, each key derived once), reopened from its start when it was
 * replaced or truncated, so that lines a node appends during a live capture are found.  A key
 * log that is not a regular file (a FIFO, a device such as /dev/zero) is not opened.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef P2PC_LIBP2P_NOISE_KEYS_H
#define P2PC_LIBP2P_NOISE_KEYS_H

#include "core/p2pc-compat.h"

#define NOISE_KEY_LEN 32
/* The longest line read (a key line is 73 bytes; NSS TLS lines are under 300). */
#define NOISE_LINE_MAX 1024
/* The keys kept of each kind, static and ephemeral (about 110 bytes each: ~28 MiB per kind);
 * past it the oldest are dropped (counted).  A live node writes one ephemeral key per
 * connection, so the newest are the ones a capture still needs.  (The fuzz harness builds
 * noise-keys.c with a small cap, to reach the dropping.) */
#ifndef NOISE_KEYS_MAX
#define NOISE_KEYS_MAX (1u << 18)
#endif

typedef struct noise_keys noise_keys_t;

typedef struct {
    guint bad_lines;            /* bad lines among those read (since the file was last reopened) */
    guint first_bad;            /* the line number of the first of them */
    guint64 dropped;            /* keys dropped over NOISE_KEYS_MAX */
    gboolean not_regular;       /* the key log is there but no regular file (a FIFO, a device): not read */
} noise_keys_stats_t;

noise_keys_t *noise_keys_new(void);
void noise_keys_free(noise_keys_t *keys);

/* The key log is `path` (NULL or "": none).  Another file than before: no key of the old one
 * is kept.  Nothing is read until a lookup needs it. */
void noise_keys_set_file(noise_keys_t *keys, const char *path);

/* The private key (static or ephemeral) whose public key is `pub`: FALSE when the key log has
 * none.  Lines not read yet are read first, up to the one that gives it. */
gboolean noise_keys_find(noise_keys_t *keys, gboolean ephemeral, const guint8 *pub, guint8 *priv);

void noise_keys_stats(const noise_keys_t *keys, noise_keys_stats_t *stats);

/* X25519: out = DH(priv, pub) (libgcrypt through wsutil). FALSE on failure. */
gboolean noise_dh(guint8 *out, const guint8 *priv, const guint8 *pub);

#endif /* P2PC_LIBP2P_NOISE_KEYS_H */
