/* noise-keys.c
 * The Noise key log (see noise-keys.h), read the way packet-wireguard.c reads its key log:
 * each private key is turned into its public key with X25519 (wsutil/curve25519, libgcrypt)
 * and kept in a table by that public key.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "libp2p/noise-keys.h"

#include <wsutil/curve25519.h>
#include <glib/gstdio.h>

struct noise_keys {
    GHashTable *table[2];       /* [ephemeral]: GBytes public key -> GBytes private key */
    char *path;
    gint64 size;                /* of the file when it was read */
    gint64 mtime;
};

noise_keys_t *
noise_keys_new(void)
{
    noise_keys_t *k = g_new0(noise_keys_t, 1);
    for (int i = 0; i < 2; i++)
        k->table[i] = g_hash_table_new_full(g_bytes_hash, g_bytes_equal, (GDestroyNotify)g_bytes_unref,
                                            (GDestroyNotify)g_bytes_unref);
    k->size = -1;
    return k;
}

gboolean
noise_dh(guint8 *out, const guint8 *priv, const guint8 *pub)
{
    return crypto_scalarmult_curve25519(out, priv, pub) == 0;
}

static void
add_line(noise_keys_t *k, const char *line)
{
    static const char *const names[2] = { "LOCAL_STATIC_PRIVATE_KEY", "LOCAL_EPHEMERAL_PRIVATE_KEY" };
    for (int eph = 0; eph < 2; eph++) {
        size_t n = strlen(names[eph]);
        const char *p = line;
        guchar *raw;
        gsize raw_len = 0;
        guint8 pub[NOISE_KEY_LEN];
        char *b64;

        if (strncmp(p, names[eph], n))
            continue;
        p += n;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p++ != '=')
            return;
        b64 = g_strstrip(g_strdup(p));     /* strips in place: the same allocation */
        raw = g_base64_decode(b64, &raw_len);
        g_free(b64);
        if (raw_len == NOISE_KEY_LEN && crypto_scalarmult_curve25519_base(pub, raw) == 0)
            g_hash_table_replace(k->table[eph], g_bytes_new(pub, sizeof(pub)), g_bytes_new(raw, raw_len));
        g_free(raw);
        return;
    }
}

static gboolean
file_changed(noise_keys_t *k, const char *path, GStatBuf *st)
{
    if (g_stat(path, st) != 0)
        return FALSE;
    return (gint64)st->st_size != k->size || (gint64)st->st_mtime != k->mtime;
}

void
noise_keys_load(noise_keys_t *k, const char *path)
{
    GStatBuf st;
    char *text = NULL;
    gsize len;

    if (!path || !*path) {
        for (int i = 0; i < 2; i++)
            g_hash_table_remove_all(k->table[i]);
        g_free(k->path);
        k->path = NULL;
        return;
    }
    if (g_strcmp0(path, k->path)) {
        /* Another file: none of the old keys. */
        for (int i = 0; i < 2; i++)
            g_hash_table_remove_all(k->table[i]);
        g_free(k->path);
        k->path = g_strdup(path);
        k->size = -1;
    }
    if (!file_changed(k, path, &st))
        return;
    k->size = (gint64)st.st_size;
    k->mtime = (gint64)st.st_mtime;
    if (!g_file_get_contents(path, &text, &len, NULL))
        return;
    {
        char **lines = g_strsplit(text, "\n", -1);
        for (char **l = lines; *l; l++)
            add_line(k, *l);
        g_strfreev(lines);
    }
    g_free(text);
}

gboolean
noise_keys_find(noise_keys_t *k, gboolean ephemeral, const guint8 *pub, guint8 *priv)
{
    GBytes *key = g_bytes_new_static(pub, NOISE_KEY_LEN);
    GBytes *v = (GBytes *)g_hash_table_lookup(k->table[ephemeral ? 1 : 0], key);
    if (!v && k->path) {
        noise_keys_load(k, k->path);    /* a live capture's key log grows */
        v = (GBytes *)g_hash_table_lookup(k->table[ephemeral ? 1 : 0], key);
    }
    g_bytes_unref(key);
    if (!v)
        return FALSE;
    memcpy(priv, g_bytes_get_data(v, NULL), NOISE_KEY_LEN);
    return TRUE;
}
