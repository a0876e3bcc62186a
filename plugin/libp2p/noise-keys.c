/* noise-keys.c
 * The Noise key log (see noise-keys.h), read the way packet-wireguard.c's wg_keylog_read()
 * reads its key log: the file stays open, a lookup that misses reads on from where the last
 * one stopped (only what was appended since), and file_needs_reopen() (wsutil) says when the
 * file was replaced or truncated: it is then read again from its start, the keys read before
 * kept.  Each private key is turned into its public key with X25519 (wsutil/curve25519,
 * libgcrypt: ~110 us a key, so the read stops at the line that gives the key sought) and kept
 * in a table by that public key.  Lines are cut on LF by their length, so a NUL byte is one bad
 * line, not the end of the file.  Only a regular file is read (a FIFO or a device is closed
 * unread, see open_regular()); its size bounds the reading, NOISE_LINE_MAX a line and
 * NOISE_KEYS_MAX the keys kept.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "libp2p/noise-keys.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include <wsutil/curve25519.h>
#include <wsutil/filesystem.h>
#include <glib/gstdio.h>

#define READ_CHUNK 4096

typedef struct {
    guint8 pub[NOISE_KEY_LEN];
    guint8 priv[NOISE_KEY_LEN];
} noise_key_t;

/* One kind of key: a set by public key, and the order they came in (a ring once full). */
typedef struct {
    GHashTable *by_pub;         /* noise_key_t *, hashed and compared on pub */
    GPtrArray *order;
    guint oldest;               /* once order holds NOISE_KEYS_MAX keys: the next to drop */
} key_set_t;

struct noise_keys {
    key_set_t set[2];           /* [ephemeral] */
    char *path;
    FILE *fp;
    guint8 buf[READ_CHUNK];     /* read from fp, not processed yet: buf[pos, len) */
    gsize pos, len;
    GByteArray *line;           /* the line being read (up to NOISE_LINE_MAX bytes) */
    gboolean too_long;          /* it was longer: a bad line, the rest up to LF dropped */
    guint tried_len;            /* the unterminated last line was tried as a key at this length */
    guint line_no;              /* complete lines read from the file */
    noise_keys_stats_t stats;
};

static guint
key_hash(gconstpointer k)
{
    /* X25519 public keys are uniform: their first four bytes are hash enough. */
    const guint8 *p = ((const noise_key_t *)k)->pub;
    return (guint)p[0] | (guint)p[1] << 8 | (guint)p[2] << 16 | (guint)p[3] << 24;
}

static gboolean
key_equal(gconstpointer a, gconstpointer b)
{
    return memcmp(((const noise_key_t *)a)->pub, ((const noise_key_t *)b)->pub, NOISE_KEY_LEN) == 0;
}

noise_keys_t *
noise_keys_new(void)
{
    noise_keys_t *k = g_new0(noise_keys_t, 1);
    for (int i = 0; i < 2; i++) {
        k->set[i].by_pub = g_hash_table_new(key_hash, key_equal);
        k->set[i].order = g_ptr_array_new_with_free_func(g_free);
    }
    k->line = g_byte_array_new();
    return k;
}

/* Back to the file's start: the line state and the bad-line count go, the keys stay. */
static void
close_file(noise_keys_t *k)
{
    if (k->fp)
        fclose(k->fp);
    k->fp = NULL;
    k->pos = k->len = 0;
    g_byte_array_set_size(k->line, 0);
    k->too_long = FALSE;
    k->tried_len = 0;
    k->line_no = 0;
    k->stats.bad_lines = k->stats.first_bad = 0;
    k->stats.not_regular = FALSE;
}

static void
clear_keys(noise_keys_t *k)
{
    for (int i = 0; i < 2; i++) {
        g_hash_table_remove_all(k->set[i].by_pub);
        g_ptr_array_set_size(k->set[i].order, 0);
        k->set[i].oldest = 0;
    }
    k->stats.dropped = 0;
}

void
noise_keys_free(noise_keys_t *k)
{
    close_file(k);
    for (int i = 0; i < 2; i++) {
        g_hash_table_destroy(k->set[i].by_pub);
        g_ptr_array_free(k->set[i].order, TRUE);
    }
    g_byte_array_free(k->line, TRUE);
    g_free(k->path);
    g_free(k);
}

void
noise_keys_set_file(noise_keys_t *k, const char *path)
{
    if (path && !*path)
        path = NULL;
    if (!g_strcmp0(path, k->path))
        return;
    close_file(k);
    clear_keys(k);
    g_free(k->path);
    k->path = g_strdup(path);
}

gboolean
noise_dh(guint8 *out, const guint8 *priv, const guint8 *pub)
{
    return crypto_scalarmult_curve25519(out, priv, pub) == 0;
}

static void
add_key(noise_keys_t *k, int eph, const guint8 *priv, const guint8 *pub)
{
    key_set_t *s = &k->set[eph];
    noise_key_t *key = g_new(noise_key_t, 1);
    memcpy(key->pub, pub, NOISE_KEY_LEN);
    memcpy(key->priv, priv, NOISE_KEY_LEN);
    if (g_hash_table_contains(s->by_pub, key)) {
        g_free(key);    /* the same private key again (a static key, once per connection) */
        return;
    }
    if (s->order->len < NOISE_KEYS_MAX) {
        g_ptr_array_add(s->order, key);
    } else {
        noise_key_t *old = (noise_key_t *)g_ptr_array_index(s->order, s->oldest);
        g_hash_table_remove(s->by_pub, old);
        g_free(old);
        s->order->pdata[s->oldest] = key;
        s->oldest = (s->oldest + 1) % NOISE_KEYS_MAX;
        k->stats.dropped++;
    }
    g_hash_table_add(s->by_pub, key);
}

typedef enum { LINE_OTHER, LINE_KEY, LINE_BAD } line_kind_t;

/* The base64 of 32 bytes: 43 characters of the alphabet and one '=' (as WireGuard's key log). */
static gboolean
decode_key(const char *p, gsize len, guint8 *out)
{
    gint state = 0;
    guint save = 0;
    guint8 raw[NOISE_KEY_LEN + 3];
    if (len != 44 || p[43] != '=')
        return FALSE;
    for (gsize i = 0; i < 43; i++)
        if (!g_ascii_isalnum(p[i]) && p[i] != '+' && p[i] != '/')
            return FALSE;
    if (g_base64_decode_step(p, len, raw, &state, &save) != NOISE_KEY_LEN)
        return FALSE;
    memcpy(out, raw, NOISE_KEY_LEN);
    return TRUE;
}

/* One line p[0, len) without its LF: a key (*eph and priv set), another line, or a bad one. */
static line_kind_t
parse_line(const char *p, gsize len, int *eph, guint8 *priv)
{
    static const char *const names[2] = { "LOCAL_STATIC_PRIVATE_KEY", "LOCAL_EPHEMERAL_PRIVATE_KEY" };
    gsize i = 0, name, n;

    if (len && p[len - 1] == '\r')
        len--;
    for (gsize j = 0; j < len; j++)
        if ((guchar)p[j] < 0x20 && p[j] != '\t')
            return LINE_BAD;
    while (i < len && (p[i] == ' ' || p[i] == '\t'))
        i++;
    name = i;
    while (i < len && p[i] != ' ' && p[i] != '\t' && p[i] != '=')
        i++;
    n = i - name;
    for (*eph = 0; *eph < 2; (*eph)++)
        if (n == strlen(names[*eph]) && !memcmp(p + name, names[*eph], n))
            break;
    if (*eph == 2)
        return LINE_OTHER;
    while (i < len && (p[i] == ' ' || p[i] == '\t'))
        i++;
    if (i == len || p[i++] != '=')
        return LINE_BAD;
    while (i < len && (p[i] == ' ' || p[i] == '\t'))
        i++;
    while (len > i && (p[len - 1] == ' ' || p[len - 1] == '\t'))
        len--;
    return decode_key(p + i, len - i, priv) ? LINE_KEY : LINE_BAD;
}

/* The line in k->line: its key added.  TRUE when it is the key sought. */
static gboolean
take_line(noise_keys_t *k, gboolean complete, int want_eph, const guint8 *want)
{
    int eph;
    guint8 priv[NOISE_KEY_LEN], pub[NOISE_KEY_LEN];
    line_kind_t kind = k->too_long ? LINE_BAD
                     : parse_line((const char *)k->line->data, k->line->len, &eph, priv);

    if (kind == LINE_KEY && crypto_scalarmult_curve25519_base(pub, priv) != 0)
        kind = LINE_BAD;
    if (kind == LINE_BAD && complete && k->stats.bad_lines++ == 0)
        k->stats.first_bad = k->line_no;
    if (kind != LINE_KEY)
        return FALSE;
    add_key(k, eph, priv, pub);
    return eph == want_eph && !memcmp(pub, want, NOISE_KEY_LEN);
}

/* Whether the open file is no longer the one at k->path (replaced, deleted), or was cut
 * shorter than what was read of it (file_needs_reopen() compares the open file's size with
 * the named file's: the same file, truncated in place, has one size). */
static gboolean
replaced(noise_keys_t *k)
{
    GStatBuf st;
    long pos = ftell(k->fp);
    return file_needs_reopen(fileno(k->fp), k->path) || g_stat(k->path, &st) != 0 ||
           (pos >= 0 && (gint64)st.st_size < (gint64)pos);
}

/* k->path opened if it is a regular file.  It is opened without blocking (a FIFO's open would
 * wait for a writer) and checked on the open file (fstat), so nothing can put another file in
 * its place between the check and the open; a FIFO would block every read, a device such as
 * /dev/zero never ends.  Anything else that exists is closed unread, and the stats say so (a
 * file that does not exist is no key log yet). */
static FILE *
open_regular(noise_keys_t *k)
{
    GStatBuf st;
    FILE *fp;
    int fd = g_open(k->path, O_RDONLY | O_NONBLOCK, 0);

    k->stats.not_regular = FALSE;
    if (fd < 0)
        return NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        k->stats.not_regular = TRUE;
        close(fd);
        return NULL;
    }
    if (!(fp = fdopen(fd, "rb")))
        close(fd);
    return fp;
}

/* Read on until the key sought (TRUE) or the end of the file. */
static gboolean
read_on(noise_keys_t *k, int want_eph, const guint8 *want)
{
    if (!k->path)
        return FALSE;
    if (k->fp && replaced(k))
        close_file(k);
    if (!k->fp && !(k->fp = open_regular(k)))
        return FALSE;
    for (;;) {
        const guint8 *lf;
        gsize n;
        if (k->pos == k->len) {
            k->pos = 0;
            k->len = fread(k->buf, 1, sizeof(k->buf), k->fp);
            if (k->len == 0)
                break;
        }
        lf = (const guint8 *)memchr(k->buf + k->pos, '\n', k->len - k->pos);
        n = (lf ? (gsize)(lf - k->buf) : k->len) - k->pos;
        if (k->line->len + n > NOISE_LINE_MAX)
            k->too_long = TRUE;
        else
            g_byte_array_append(k->line, k->buf + k->pos, (guint)n);
        k->pos += n;
        if (lf) {
            gboolean found;
            k->pos++;
            k->line_no++;
            found = take_line(k, TRUE, want_eph, want);
            g_byte_array_set_size(k->line, 0);
            k->too_long = FALSE;
            k->tried_len = 0;
            if (found)
                return TRUE;
        }
    }
    /* The end for now (a live node appends more): take the unterminated last line as it is,
     * once per length (its LF may come later: it is read again then). */
    clearerr(k->fp);
    if (k->line->len && k->line->len != k->tried_len && !k->too_long) {
        k->tried_len = k->line->len;
        return take_line(k, FALSE, want_eph, want);
    }
    return FALSE;
}

gboolean
noise_keys_find(noise_keys_t *k, gboolean ephemeral, const guint8 *pub, guint8 *priv)
{
    int eph = ephemeral ? 1 : 0;
    noise_key_t probe, *v;
    memcpy(probe.pub, pub, NOISE_KEY_LEN);
    v = (noise_key_t *)g_hash_table_lookup(k->set[eph].by_pub, &probe);
    if (!v && read_on(k, eph, pub))
        v = (noise_key_t *)g_hash_table_lookup(k->set[eph].by_pub, &probe);
    if (!v)
        return FALSE;
    memcpy(priv, v->priv, NOISE_KEY_LEN);
    return TRUE;
}

void
noise_keys_stats(const noise_keys_t *k, noise_keys_stats_t *stats)
{
    *stats = k->stats;
}
