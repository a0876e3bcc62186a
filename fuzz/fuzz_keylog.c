/* fuzz_keylog.c — libFuzzer harness for the Noise key log reader (plugin/libp2p/noise-keys.c),
 * built with a small NOISE_KEYS_MAX (the Makefile's -DNOISE_KEYS_MAX=16) so that dropping the
 * oldest keys is reached.
 *
 * The input is a run of writes to a key log file, each [op:1][length:1][data:length]: op bit 0
 * clear appends the data (a node writing, a line perhaps cut anywhere), set replaces the file
 * by a new one holding the data (renamed over it, as a restarted node's log).  After each
 * write one reader looks up the four keys of captures/eth2/eth2-noise-{yamux,mplex}.keys (the
 * seeds' lines), static and ephemeral, as the dissector does during a live capture.  Checks:
 *   - a key found is a private key whose public key is the one sought (not always the known
 *     one: X25519 clamps a private key, so 32-byte strings that differ in its clamped bits are
 *     one key);
 *   - at the end, a fresh reader of the final file agrees with the one that followed it: the
 *     same bad lines (count and first line number), and every key the fresh one finds the other
 *     finds too (unless it dropped keys over its limit).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "libp2p/noise-keys.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <glib/gstdio.h>
#include <wsutil/curve25519.h>
#include <wsutil/wsgcrypt.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond, ...) do { if (!(cond)) { fprintf(stderr, "fuzz_keylog: " __VA_ARGS__); \
                                             fputc('\n', stderr); abort(); } } while (0)

/* The private keys of the committed Noise captures' key logs (dialer's, mplex and yamux). */
static const char *const known_b64[] = {
    "jzJVLl1HVROuo2cdYGNiG1JOqlh5BS4ZE+HpYL8S3nE=", "/zwIXHS6qgatoIQQxwNCROAvW7WUSaHCuOShNx79lL4=",
    "SZehHprjzrlcisuNqI0jTkJQFsR3LjeG40jZg8N7kCw=", "3/kWTe/Kax1+TxRS8odNaPTXC7eDDwpr6DiQdOluPAU=",
};
#define N_KNOWN G_N_ELEMENTS(known_b64)

static guint8 known_priv[N_KNOWN][NOISE_KEY_LEN], known_pub[N_KNOWN][NOISE_KEY_LEN];
static const guint8 nobodys_pub[NOISE_KEY_LEN] = { 0 };    /* no key's: a lookup reads to the end */
static char *dir, *path, *next_path;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    gcry_check_version(NULL);
    for (size_t i = 0; i < N_KNOWN; i++) {
        gsize len;
        guchar *raw = g_base64_decode(known_b64[i], &len);
        CHECK(len == NOISE_KEY_LEN, "known key %zu", i);
        memcpy(known_priv[i], raw, NOISE_KEY_LEN);
        g_free(raw);
        CHECK(crypto_scalarmult_curve25519_base(known_pub[i], known_priv[i]) == 0, "known key %zu", i);
    }
    dir = g_dir_make_tmp("p2pc-fuzz-keylog-XXXXXX", NULL);
    CHECK(dir, "no temporary folder");
    path = g_build_filename(dir, "node.keys", NULL);
    next_path = g_build_filename(dir, "node.keys.new", NULL);
    return 0;
}

static void
write_file(const char *name, const char *mode, const uint8_t *data, size_t len)
{
    FILE *f = g_fopen(name, mode);
    CHECK(f, "cannot open %s", name);
    CHECK(fwrite(data, 1, len, f) == len && fclose(f) == 0, "cannot write %s", name);
}

/* Every known key, both kinds: whether `k` found it (a found key must give its public key). */
static guint
lookup_known(noise_keys_t *k)
{
    guint found = 0;
    for (size_t i = 0; i < N_KNOWN; i++)
        for (int eph = 0; eph < 2; eph++) {
            guint8 priv[NOISE_KEY_LEN], pub[NOISE_KEY_LEN];
            if (noise_keys_find(k, eph, known_pub[i], priv)) {
                CHECK(crypto_scalarmult_curve25519_base(pub, priv) == 0 && !memcmp(pub, known_pub[i], NOISE_KEY_LEN),
                      "key %zu: a private key of another public key", i);
                found |= 1u << (i * 2 + (size_t)eph);
            }
        }
    return found;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    noise_keys_t *live = noise_keys_new(), *fresh = noise_keys_new();
    noise_keys_stats_t a, b;
    guint8 priv[NOISE_KEY_LEN];
    guint live_found, fresh_found;
    size_t pos = 0;

    write_file(path, "wb", NULL, 0);
    noise_keys_set_file(live, path);
    while (pos + 2 <= size) {
        guint8 op = data[pos];
        size_t len = MIN((size_t)data[pos + 1], size - pos - 2);
        pos += 2;
        if (op & 1) {
            write_file(next_path, "wb", data + pos, len);
            CHECK(g_rename(next_path, path) == 0, "cannot replace %s", path);
        } else {
            write_file(path, "ab", data + pos, len);
        }
        pos += len;
        lookup_known(live);
    }
    live_found = lookup_known(live);
    CHECK(!noise_keys_find(live, FALSE, nobodys_pub, priv), "a key for nobody's public key");
    noise_keys_set_file(fresh, path);
    fresh_found = lookup_known(fresh);
    CHECK(!noise_keys_find(fresh, FALSE, nobodys_pub, priv), "a key for nobody's public key");
    noise_keys_stats(live, &a);
    noise_keys_stats(fresh, &b);
    CHECK(a.bad_lines == b.bad_lines && a.first_bad == b.first_bad,
          "read as written: %u bad lines (first %u); read at once: %u (first %u)", a.bad_lines, a.first_bad,
          b.bad_lines, b.first_bad);
    if (!a.dropped)
        CHECK((fresh_found & ~live_found) == 0, "keys %#x found at once, not as written (%#x)", fresh_found,
              live_found);
    noise_keys_free(live);
    noise_keys_free(fresh);
    return 0;
}
