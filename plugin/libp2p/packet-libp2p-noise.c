/* packet-libp2p-noise.c
 * libp2p's /noise security layer (libp2p/specs noise): Noise_XX_25519_ChaChaPoly_SHA256, every
 * message, handshake or transport, a u16 big-endian length and then its payload.  A layer
 * under multistream-select: registered in "multistream.protocol" (the "/noise" family), called
 * with the connection direction's pipe.
 *
 * With the keys of either side in the key log (libp2p_noise.keylog_file, noise-keys.h) the
 * connection decrypts: message 1 sends the initiator's ephemeral key e in clear, message 2 the
 * responder's e, its static key s and its payload (encrypted), message 3 the initiator's s and
 * payload; then each direction's transport messages are ChaCha20-Poly1305 under its own key,
 * with a per-direction counter as nonce.  An ephemeral private key is found by the clear e of
 * message 1 or 2, a static one by the decrypted s; one side's two keys give ee, es and se.
 * The handshake payloads are shown: identity key, peer ID, the signature of the Noise static
 * key (verified with gcry_pk_verify for Ed25519 and secp256k1), the extensions; the peer ID,
 * unless its signature fails, goes to the records (p2pc_peer_add()) as the sender's.  The
 * decrypted transport bytes get their own tab and go on, on a pipe of their own (engine.h), to
 * multistream-select, or straight to the muxer both sides listed in the handshake extensions
 * (the initiator's first choice the responder also lists, as go-libp2p's matchMuxers picks it).
 *
 * After a hole in the capture (engine.h, l2p_pipe_gap) a decrypting direction resynchronises:
 * frames were lost, an unknown number of them, so it looks for the next frame whose tag
 * verifies under one of the next nonces.  First where the frame the hole cut must end (its
 * length was held before the hole, and TCP says how many bytes the hole took), then at every
 * byte from the hole on: a length of at least the tag, and a frame that decrypts under nonce
 * n+1 .. n+W, n being the nonce of the frame the hole cut.  A forged frame verifying is as
 * likely as a forged tag (2^-128 per try).  W covers every frame the hole can have taken
 * (each takes at least 18 bytes: W = 1 + missing / 18), at most NOISE_WINDOW.  The scan is
 * bounded: the next frame starts within one largest frame (2 + 65535 bytes) of the hole, and
 * trial decryptions spend a credit each direction earns with its bytes (NOISE_CREDIT_PER_BYTE,
 * at most NOISE_CREDIT_MAX): hostile input costs work linear in its size.  The bytes skipped
 * are undecoded bytes (engine.h: an expert item and a record), the layers above get a hole of
 * their own (the muxer resynchronises in turn), and the first frame after it shows
 * libp2p_noise.frames_lost.  Without keys, or with a handshake not decrypted, the rest of the
 * direction stays undecoded bytes, counted.
 *
 * Decryption runs on the first pass, which keeps per message only what re-dissection needs:
 * the handshake payloads, and for a transport message its key and nonce (it is decrypted again
 * from the frame's bytes), so `tshark -2` and the GUI show the same as one pass.
 *
 * Accounting: the Noise framing of a transport message (the 2-byte length and the 16-byte tag)
 * goes to the header bytes of the messages decoded above it: the framing of the transport
 * messages a direction received since the last one that completed a message is split among
 * the messages that one completes, in proportion to their wire bytes, the rounding remainder
 * to the last.  Handshake messages belong to no message's record.  A transport message that is
 * not decrypted (no key, a failed tag, decryption stopped) gets a record of its own: proto
 * `libp2p`, msg_type `noise (encrypted)`.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/p2pc-compat.h"
#include "core/peer-id.h"
#include "core/prefs.h"
#include "core/record.h"
#include "core/shares.h"
#include "core/taps.h"
#include "core/unit.h"
#include "libp2p/engine.h"
#include "libp2p/noise-keys.h"

#include <epan/expert.h>
#include <epan/prefs.h>
#include <wsutil/wsgcrypt.h>

void proto_register_libp2p_noise(void);
void proto_reg_handoff_libp2p_noise(void);

#define NOISE_TAG 16
#define NOISE_FRAMING (2 + NOISE_TAG)
#define NOISE_MAX_MSG (2 + 65535)
/* Resynchronisation after a hole (see the top of this file).  The window: a hole of one lost
 * segment takes one frame of a bulk transfer (65535-byte frames) and at most a few dozen
 * frames of small messages (a 1448-byte segment of 30-byte frames, a 12-byte yamux window
 * update each, is 48 of them); 64 covers that, and a hole of more than 64 whole frames is more
 * than a capture defect.  The credit: 32 bytes of trial decryption per byte carried lets a
 * hole in a bulk transfer verify the frame after it and scan its neighbourhood, and keeps the
 * work hostile input causes within 32 bytes of decryption per byte of input; the cap keeps one
 * hole within 16 MiB of it. */
#define NOISE_WINDOW 64
#define NOISE_CREDIT_PER_BYTE 32
#define NOISE_CREDIT_MAX (16 * 1024 * 1024)
#define NOISE_PROTOCOL_NAME "Noise_XX_25519_ChaChaPoly_SHA256"   /* 32 bytes: h starts as it */
#define SIG_PREFIX "noise-libp2p-static-key:"

static int proto_noise = -1;
static int hf_noise_length = -1;
static int hf_noise_message = -1;
static int hf_noise_ephemeral = -1;
static int hf_noise_static_enc = -1;
static int hf_noise_static = -1;
static int hf_noise_payload_enc = -1;
static int hf_noise_data = -1;
static int hf_noise_tag = -1;
static int hf_noise_nonce = -1;
static int hf_noise_keys_of = -1;
static int hf_noise_decrypted = -1;
static int hf_noise_stopped_in = -1;
static int hf_noise_framing_given = -1;
static int hf_noise_frames_lost = -1;
static int hf_noise_id_key_type = -1;
static int hf_noise_id_key = -1;
static int hf_noise_peer_id = -1;
static int hf_noise_sig = -1;
static int hf_noise_sig_valid = -1;
static int hf_noise_muxer = -1;
static int hf_noise_certhash = -1;
static int hf_noise_early_muxer = -1;
static gint ett_noise = -1;
static gint ett_noise_payload = -1;
static gint ett_noise_ext = -1;
static expert_field ei_noise_no_key = EI_INIT;
static expert_field ei_noise_bad_tag = EI_INIT;
static expert_field ei_noise_stopped = EI_INIT;
static expert_field ei_noise_bad_handshake = EI_INIT;
static expert_field ei_noise_sig_bad = EI_INIT;
static expert_field ei_noise_keylog_skipped = EI_INIT;
static expert_field ei_noise_keylog_unread = EI_INIT;
static dissector_handle_t noise_handle;

static const char *pref_keylog = "";
static noise_keys_t *keylog;    /* the key log read from pref_keylog (noise-keys.c) */

static const value_string key_type_vals[] = {
    { 0, "RSA" }, { 1, "Ed25519" }, { 2, "Secp256k1" }, { 3, "ECDSA" }, { 0, NULL }
};

/* What became of a message (first pass). */
typedef enum {
    NS_DECRYPTED,   /* transport: decrypted; handshake: what it encrypts is decrypted */
    NS_NO_KEY,      /* no key in the key log matches the connection */
    NS_BAD_TAG,     /* this message's tag does not verify: its direction stops */
    NS_STOPPED,     /* an earlier message of the connection failed */
    NS_MALFORMED,   /* a handshake message too short for its pattern */
} noise_status_t;

/* Noise's SymmetricState and a CipherState's key (the Noise spec, 5.1 and 5.2). */
typedef struct {
    guint8 ck[32];
    guint8 h[32];
    guint8 k[32];
    gboolean has_k;
    guint64 n;
} sym_t;

/* A direction looking for its next frame after a hole (first pass). */
typedef struct {
    gint64 cut_end;             /* where the frame the hole cut ends, counted from the first byte
                                   after the hole (-1: unknown, or tried) */
    guint64 skipped;            /* bytes skipped since the hole */
    guint64 first_nonce;        /* the nonce of the first frame after the cut one */
    guint64 cut_plain;          /* the plaintext bytes of the frame the hole cut (0: unknown) */
    guint window;               /* nonces tried from first_nonce */
    guint64 lost;               /* set when found: frames the hole took (the next message shows it) */
} noise_resync_t;

/* One connection (its connection's pool; first pass only).  Roles: 0 initiator -> responder, 1 back. */
typedef struct {
    guint hs_msgs;              /* handshake messages seen (3: transport) */
    int role_of_dir[2];         /* pipe->dir -> role; -1 until the direction speaks */
    sym_t ss;
    guint8 e[2][32];            /* ephemeral public keys, by role */
    guint8 s[2][32];            /* static public keys, by role (once decrypted) */
    int keys_role;              /* whose private keys the key log has: -1 nobody's */
    guint8 e_priv[32];
    noise_status_t status;      /* of the handshake: NS_DECRYPTED while all goes well */
    guint8 key[2][32];          /* transport keys (after Split), by role */
    guint64 nonce[2];
    guint32 stopped_in[2];      /* the frame whose tag failed (0: none) */
    wmem_allocator_t *pool;     /* where it is (its connection's pool, engine.h) */
    wmem_array_t *muxers[2];    /* const char * each, from the extensions, by role */
    const char *early_muxer;
    l2p_pipe_t *inner[2];       /* the decrypted bytes, by role */
    guint64 unattributed[2];    /* framing bytes not yet given to a record, by role */
    noise_resync_t resync[2];   /* by pipe direction */
    guint64 credit[2];          /* trial decryption bytes a direction may still spend, by pipe
                                   direction */
} noise_conn_t;

/* One message (replay scope): set on the first pass, drawn on every pass. */
typedef struct {
    guint msg;                  /* 1-3 handshake, 0 transport */
    int role;
    noise_status_t status;
    int keys_role;
    guint32 stopped_in;
    guint8 *s;                  /* handshake 2 and 3: the decrypted static key */
    guint8 *payload;            /* handshake: the clear or decrypted payload */
    guint payload_len;
    const char *early_muxer;    /* message 3: the muxer the extensions agreed on */
    const guint8 *key;          /* transport: the key (the connection's, file scope) */
    guint64 nonce;
    guint64 lost;               /* transport: frames a hole took just before this one */
    l2p_pipe_t *inner;
    wmem_array_t *shares;       /* guint64 per record the layers above added */
    noise_keys_stats_t keylog;  /* handshake 2 and 3 (they look keys up): the key log's state */
} noise_msg_t;

/* ---- Noise's symmetric state, on libgcrypt ---- */

static void
mix_hash(sym_t *ss, const guint8 *data, size_t len)
{
    gcry_md_hd_t md;
    if (gcry_md_open(&md, GCRY_MD_SHA256, 0))
        return;
    gcry_md_write(md, ss->h, 32);
    gcry_md_write(md, data, len);
    memcpy(ss->h, gcry_md_read(md, GCRY_MD_SHA256), 32);
    gcry_md_close(md);
}

/* HKDF(ck, ikm) with two outputs: RFC 5869 with an empty info is the Noise spec's HKDF. */
static gboolean
noise_hkdf(const guint8 *ck, const guint8 *ikm, size_t ikm_len, guint8 *out1, guint8 *out2)
{
    guint8 prk[32], out[64];
    if (hkdf_extract(GCRY_MD_SHA256, ck, 32, ikm, ikm_len, prk) ||
        hkdf_expand(GCRY_MD_SHA256, prk, 32, NULL, 0, out, 64))
        return FALSE;
    memcpy(out1, out, 32);
    memcpy(out2, out + 32, 32);
    return TRUE;
}

static gboolean
mix_key(sym_t *ss, const guint8 *ikm)
{
    ss->has_k = TRUE;
    ss->n = 0;
    return noise_hkdf(ss->ck, ikm, 32, ss->ck, ss->k);
}

/* ChaCha20-Poly1305 with Noise's nonce (32 zero bits, then n little-endian): in[0, len) is
 * ciphertext and tag; out gets len - 16 bytes.  FALSE when the tag does not verify. */
static gboolean
aead_decrypt(const guint8 *key, guint64 n, const guint8 *ad, size_t ad_len, const guint8 *in, size_t len,
             guint8 *out)
{
    gcry_cipher_hd_t hd;
    guint8 nonce[12] = { 0 };
    gboolean ok;

    if (len < NOISE_TAG)
        return FALSE;
    for (int i = 0; i < 8; i++)
        nonce[4 + i] = (guint8)(n >> (8 * i));
    if (gcry_cipher_open(&hd, GCRY_CIPHER_CHACHA20, GCRY_CIPHER_MODE_POLY1305, 0))
        return FALSE;
    ok = !gcry_cipher_setkey(hd, key, 32) && !gcry_cipher_setiv(hd, nonce, sizeof(nonce)) &&
         (!ad_len || !gcry_cipher_authenticate(hd, ad, ad_len)) &&
         !gcry_cipher_decrypt(hd, out, len - NOISE_TAG, in, len - NOISE_TAG) &&
         !gcry_cipher_checktag(hd, in + len - NOISE_TAG, NOISE_TAG);
    gcry_cipher_close(hd);
    return ok;
}

/* DecryptAndHash: in[0, len) to out (len - 16 bytes with a key, len without). */
static gboolean
decrypt_and_hash(sym_t *ss, const guint8 *in, size_t len, guint8 *out, size_t *out_len)
{
    if (!ss->has_k) {
        memcpy(out, in, len);
        *out_len = len;
    } else {
        if (!aead_decrypt(ss->k, ss->n, ss->h, 32, in, len, out))
            return FALSE;
        ss->n++;
        *out_len = len - NOISE_TAG;
    }
    mix_hash(ss, in, len);
    return TRUE;
}

/* ---- the handshake (first pass) ---- */

static gboolean noise_gap(l2p_pipe_t *pipe, const guint8 *held, guint held_len);

static noise_conn_t *
conn_of(l2p_pipe_t *pipe)
{
    noise_conn_t *c;
    pipe->gap_fn = noise_gap;
    if (pipe->state)
        return (noise_conn_t *)pipe->state;
    if (pipe->peer && pipe->peer->state) {
        c = (noise_conn_t *)pipe->peer->state;
    } else {
        c = wmem_new0(l2p_pipe_pool(pipe), noise_conn_t);
        c->pool = l2p_pipe_pool(pipe);
        c->role_of_dir[0] = c->role_of_dir[1] = -1;
        c->keys_role = -1;
        c->status = NS_DECRYPTED;
        memcpy(c->ss.h, NOISE_PROTOCOL_NAME, 32);
        memcpy(c->ss.ck, c->ss.h, 32);
        mix_hash(&c->ss, NULL, 0);      /* libp2p's prologue is empty */
    }
    pipe->state = c;
    return c;
}

/* The muxers an extensions message lists (protobuf NoiseExtensions, field 2). */
static void
read_extensions(noise_conn_t *c, int role, const guint8 *payload, guint len)
{
    tvbuff_t *tvb = tvb_new_real_data(payload, len, len);
    int off = 0, eoff;
    p2pc_pb_field_t f, e;

    c->muxers[role] = wmem_array_new(c->pool, sizeof(const char *));
    while (p2pc_pb_next(tvb, &off, (int)len, &f)) {
        if (f.number != 4 || f.wire_type != 2)
            continue;
        eoff = f.start;
        while (p2pc_pb_next(tvb, &eoff, f.start + f.len, &e)) {
            if (e.number == 2 && e.wire_type == 2) {
                const char *m = (const char *)tvb_get_string_enc(c->pool, tvb, e.start, e.len, ENC_UTF_8);
                wmem_array_append_one(c->muxers[role], m);
            }
        }
    }
    tvb_free(tvb);
}

static const char *
match_muxers(noise_conn_t *c)
{
    if (!c->muxers[0] || !c->muxers[1])
        return NULL;
    for (guint i = 0; i < wmem_array_get_count(c->muxers[0]); i++) {
        const char *m = *(const char **)wmem_array_index(c->muxers[0], i);
        for (guint j = 0; j < wmem_array_get_count(c->muxers[1]); j++)
            if (!strcmp(m, *(const char **)wmem_array_index(c->muxers[1], j)))
                return m;
    }
    return NULL;
}

/* After message 3: the transport keys, and the pipes the decrypted bytes go to. */
static void
split(noise_conn_t *c, l2p_pipe_t *pipe)
{
    dissector_handle_t h;
    if (!noise_hkdf(c->ss.ck, NULL, 0, c->key[0], c->key[1])) {
        c->status = NS_BAD_TAG;
        return;
    }
    c->early_muxer = match_muxers(c);
    h = c->early_muxer ? l2p_handle_for(c->early_muxer) : l2p_multistream_handle();
    for (int dir = 0; dir < 2; dir++) {
        int role = c->role_of_dir[dir];     /* both sides have spoken by message 3 */
        /* The layers above take the initiator as the dialer (yamux: its stream ids are odd),
         * whoever sent the connection's first bytes. */
        c->inner[role] = l2p_pipe_inside(h, role, pipe);
        c->inner[role]->role = L2P_ROLE_SECURITY;
        c->inner[role]->protocol = c->early_muxer ? c->early_muxer : "";
        c->inner[role]->muxer = pipe->muxer;
        c->inner[role]->stream_id = pipe->stream_id;
    }
    c->inner[0]->peer = c->inner[1];
    c->inner[1]->peer = c->inner[0];
}

/* Message 2 or 3's encrypted static key and payload, p[0, len), sent by `role`. */
static noise_status_t
read_static_and_payload(noise_conn_t *c, noise_msg_t *m, int role, const guint8 *p, guint len)
{
    guint8 out[48];
    size_t out_len;
    if (len < 48 || !decrypt_and_hash(&c->ss, p, 48, out, &out_len))
        return len < 48 ? NS_MALFORMED : NS_BAD_TAG;
    memcpy(c->s[role], out, 32);
    m->s = (guint8 *)wmem_memdup(wmem_file_scope(), out, 32);
    return NS_DECRYPTED;
}

static noise_status_t
read_payload(noise_conn_t *c, noise_msg_t *m, int role, const guint8 *p, guint len)
{
    guint8 *out = (guint8 *)wmem_alloc(wmem_file_scope(), len ? len : 1);
    size_t out_len;
    if (!decrypt_and_hash(&c->ss, p, len, out, &out_len))
        return NS_BAD_TAG;
    m->payload = out;
    m->payload_len = (guint)out_len;
    read_extensions(c, role, out, (guint)out_len);
    return NS_DECRYPTED;
}

/* The DH of one side's private key with the other side's public key: `mine` is a private key
 * of the side the key log covers; FALSE when the static private key it needs is not there. */
static gboolean
mix_dh(noise_conn_t *c, const guint8 *priv, const guint8 *pub)
{
    guint8 dh[32];
    return noise_dh(dh, priv, pub) && mix_key(&c->ss, dh);
}

static gboolean
static_priv(noise_conn_t *c, guint8 *priv)
{
    return noise_keys_find(keylog, FALSE, c->s[c->keys_role], priv);
}

/* Handshake message `msg` (1-3), p[0, len) after the length, sent by `role`. */
static noise_status_t
handshake(noise_conn_t *c, noise_msg_t *m, int role, const guint8 *p, guint len)
{
    guint8 priv[32];
    noise_status_t st;

    if (c->status != NS_DECRYPTED)
        return c->status == NS_NO_KEY ? NS_NO_KEY : NS_STOPPED;
    if (len < 32)
        return NS_MALFORMED;
    memcpy(c->e[role], p, 32);
    mix_hash(&c->ss, p, 32);
    if (m->msg == 1) {
        m->payload = (guint8 *)wmem_memdup(wmem_file_scope(), p + 32, len - 32);
        m->payload_len = len - 32;
        mix_hash(&c->ss, p + 32, len - 32);
        return NS_DECRYPTED;
    }
    if (m->msg == 2) {
        /* ee: either side's ephemeral private key. */
        if (noise_keys_find(keylog, TRUE, c->e[0], c->e_priv))
            c->keys_role = 0;
        else if (noise_keys_find(keylog, TRUE, c->e[1], c->e_priv))
            c->keys_role = 1;
        else
            return NS_NO_KEY;
        if (!mix_dh(c, c->e_priv, c->e[!c->keys_role]))
            return NS_BAD_TAG;
        if ((st = read_static_and_payload(c, m, 1, p + 32, len - 32)) != NS_DECRYPTED)
            return st;
        /* es: DH(initiator's e, responder's s) */
        if (c->keys_role == 0 ? !mix_dh(c, c->e_priv, c->s[1])
                              : !(static_priv(c, priv) && mix_dh(c, priv, c->e[0])))
            return NS_NO_KEY;
        return read_payload(c, m, 1, p + 80, len - 80);
    }
    return NS_MALFORMED;
}

/* Message 3: no ephemeral key, the initiator's static key and payload. */
static noise_status_t
handshake3(noise_conn_t *c, noise_msg_t *m, l2p_pipe_t *pipe, const guint8 *p, guint len)
{
    guint8 priv[32];
    noise_status_t st;

    if (c->status != NS_DECRYPTED)
        return c->status == NS_NO_KEY ? NS_NO_KEY : NS_STOPPED;
    if ((st = read_static_and_payload(c, m, 0, p, len)) != NS_DECRYPTED)
        return st;
    /* se: DH(initiator's s, responder's e) */
    if (c->keys_role == 0 ? !(static_priv(c, priv) && mix_dh(c, priv, c->e[1]))
                          : !mix_dh(c, c->e_priv, c->s[0]))
        return NS_NO_KEY;
    if ((st = read_payload(c, m, 0, p + 48, len - 48)) != NS_DECRYPTED)
        return st;
    split(c, pipe);
    m->early_muxer = c->early_muxer;
    return NS_DECRYPTED;
}

/* First pass: what message `p[0, len)` (the length included) is, and what became of it; a
 * decrypted transport message's plaintext goes to *plain (packet scope). */
static noise_msg_t *
process(noise_conn_t *c, l2p_pipe_t *pipe, packet_info *pinfo, const guint8 *p, guint len, guint8 **plain)
{
    noise_msg_t *m = wmem_new0(p2pc_replay_scope(pinfo), noise_msg_t);
    p2pc_replay_charge(pinfo, sizeof(noise_msg_t));
    if (c->role_of_dir[pipe->dir] < 0) {
        /* The first to speak is the initiator. */
        c->role_of_dir[pipe->dir] = c->role_of_dir[!pipe->dir] < 0 ? 0 : 1;
    }
    m->role = c->role_of_dir[pipe->dir];
    if (c->hs_msgs == 0 && len != 2 + 32) {
        /* libp2p's message 1 is e alone: this connection was captured after its handshake (or
         * is no Noise XX).  Nothing of it can be decrypted. */
        c->hs_msgs = 3;
        c->status = NS_MALFORMED;
    } else if (c->hs_msgs == 0) {
        /* Message 1: its sender is the initiator, the connection's dialer. */
        l2p_learn_role(pipe, pinfo, TRUE, L2P_ROLE_SECURITY);
    }
    if (c->hs_msgs < 3 && (c->hs_msgs % 2) == (guint)m->role) {
        m->msg = ++c->hs_msgs;
        m->status = m->msg == 3 ? handshake3(c, m, pipe, p + 2, len - 2) : handshake(c, m, m->role, p + 2, len - 2);
        if (c->status == NS_DECRYPTED)
            c->status = m->status;
        m->keys_role = c->keys_role;
        noise_keys_stats(keylog, &m->keylog);
        return m;
    }
    m->keys_role = c->keys_role;
    if (c->hs_msgs < 3 || c->status != NS_DECRYPTED) {
        /* Transport data before the handshake ended, or after it failed. */
        m->status = c->status == NS_DECRYPTED || c->status == NS_MALFORMED ? NS_MALFORMED
                  : c->status == NS_NO_KEY ? NS_NO_KEY : NS_STOPPED;
        return m;
    }
    if (c->stopped_in[m->role]) {
        m->status = NS_STOPPED;
        m->stopped_in = c->stopped_in[m->role];
        return m;
    }
    *plain = (guint8 *)wmem_alloc(pinfo->pool, len);
    if (!aead_decrypt(c->key[m->role], c->nonce[m->role], NULL, 0, p + 2, len - 2, *plain)) {
        *plain = NULL;
        m->status = NS_BAD_TAG;
        c->stopped_in[m->role] = pinfo->num;
        m->nonce = c->nonce[m->role];
        return m;
    }
    m->status = NS_DECRYPTED;
    m->key = c->key[m->role];
    m->nonce = c->nonce[m->role]++;
    m->lost = c->resync[pipe->dir].lost;
    c->resync[pipe->dir].lost = 0;
    m->inner = c->inner[m->role];
    return m;
}

/* ---- drawing ---- */

/* The identity signature: Ed25519 over the message, or secp256k1 ECDSA (DER) over its SHA-256.
 * 1 valid, 0 invalid, -1 not checked (another key type, or a key libgcrypt does not take). */
static int
verify_sig(guint32 type, const guint8 *key, int key_len, const guint8 *sig, int sig_len, const guint8 *s)
{
    guint8 msg[sizeof(SIG_PREFIX) - 1 + 32];
    gcry_sexp_t spk = NULL, ssig = NULL, sdata = NULL;
    gcry_error_t err;
    int ok = -1;

    memcpy(msg, SIG_PREFIX, sizeof(SIG_PREFIX) - 1);
    memcpy(msg + sizeof(SIG_PREFIX) - 1, s, 32);
    if (type == 1) {
        if (key_len != 32 || sig_len != 64)
            return 0;
        if (gcry_sexp_build(&spk, NULL, "(public-key (ecc (curve Ed25519) (flags eddsa) (q %b)))", key_len, key) ||
            gcry_sexp_build(&ssig, NULL, "(sig-val (eddsa (r %b) (s %b)))", 32, sig, 32, sig + 32) ||
            gcry_sexp_build(&sdata, NULL, "(data (flags eddsa) (hash-algo sha512) (value %b))", (int)sizeof(msg), msg))
            goto out;
    } else if (type == 2) {
        /* DER: SEQUENCE { INTEGER r, INTEGER s } */
        guint8 hash[32];
        int rl, sl;
        if (sig_len < 8 || sig[0] != 0x30 || sig[1] != sig_len - 2 || sig[2] != 0x02 ||
            (rl = sig[3]) + 6 > sig_len || sig[4 + rl] != 0x02 || (sl = sig[5 + rl]) + rl + 6 != sig_len)
            return 0;
        gcry_md_hash_buffer(GCRY_MD_SHA256, hash, msg, sizeof(msg));
        if (gcry_sexp_build(&spk, NULL, "(public-key (ecc (curve secp256k1) (q %b)))", key_len, key) ||
            gcry_sexp_build(&ssig, NULL, "(sig-val (ecdsa (r %b) (s %b)))", rl, sig + 4, sl, sig + 6 + rl) ||
            gcry_sexp_build(&sdata, NULL, "(data (flags raw) (value %b))", 32, hash))
            goto out;
    } else {
        return -1;
    }
    err = gcry_pk_verify(ssig, sdata, spk);
    ok = !err ? 1 : gcry_err_code(err) == GPG_ERR_BAD_SIGNATURE ? 0 : -1;
out:
    gcry_sexp_release(spk);
    gcry_sexp_release(ssig);
    gcry_sexp_release(sdata);
    return ok;
}

/* The NoiseHandshakePayload { identity_key = 1; identity_sig = 2; extensions = 4 }. */
static void
draw_payload(tvbuff_t *ptvb, packet_info *pinfo, proto_tree *tree, const guint8 *s)
{
    int len = (int)tvb_captured_length(ptvb), off = 0, koff;
    p2pc_pb_field_t f, k;
    guint32 key_type = G_MAXUINT32;
    int key_off = -1, key_len = 0, pk_off = -1, sig_off = -1, sig_len = 0, ok = -1;
    const char *peer_id = NULL;
    proto_item *ti;

    while (p2pc_pb_next(ptvb, &off, len, &f)) {
        if (f.wire_type != 2)
            continue;
        if (f.number == 1 && f.len > 0) {
            pk_off = f.start;
            koff = f.start;
            while (p2pc_pb_next(ptvb, &koff, f.start + f.len, &k)) {
                if (k.number == 1 && k.wire_type == 0) {
                    key_type = (guint32)k.value;
                    proto_tree_add_uint(tree, hf_noise_id_key_type, ptvb, f.start, f.len, key_type);
                } else if (k.number == 2 && k.wire_type == 2) {
                    key_off = k.start;
                    key_len = k.len;
                    proto_tree_add_item(tree, hf_noise_id_key, ptvb, k.start, k.len, ENC_NA);
                }
            }
            peer_id = p2pc_peer_id_from_key(pinfo->pool, tvb_get_ptr(ptvb, f.start, f.len), (size_t)f.len);
            ti = proto_tree_add_string(tree, hf_noise_peer_id, ptvb, f.start, f.len, peer_id);
            proto_item_set_generated(ti);
            /* The value, not the item's text: with a display filter that does not name it, the
             * item is not built (tshark -Y), and has none. */
            if (peer_id)
                col_append_sep_str(pinfo->cinfo, COL_INFO, " ", peer_id);
        } else if (f.number == 2) {
            sig_off = f.start;
            sig_len = f.len;
            proto_tree_add_item(tree, hf_noise_sig, ptvb, f.start, f.len, ENC_NA);
        } else if (f.number == 4) {
            proto_tree *et = proto_tree_add_subtree(tree, ptvb, f.start, f.len, ett_noise_ext, NULL, "Extensions");
            int eoff = f.start;
            while (p2pc_pb_next(ptvb, &eoff, f.start + f.len, &k)) {
                if (k.number == 2 && k.wire_type == 2)
                    proto_tree_add_item(et, hf_noise_muxer, ptvb, k.start, k.len, ENC_UTF_8);
                else if (k.number == 1 && k.wire_type == 2)
                    proto_tree_add_item(et, hf_noise_certhash, ptvb, k.start, k.len, ENC_NA);
            }
        }
    }
    if (s && key_off >= 0 && sig_off >= 0 && pk_off >= 0) {
        ok = verify_sig(key_type, tvb_get_ptr(ptvb, key_off, key_len), key_len,
                        tvb_get_ptr(ptvb, sig_off, sig_len), sig_len, s);
        if (ok >= 0) {
            ti = proto_tree_add_boolean(tree, hf_noise_sig_valid, ptvb, sig_off, sig_len, ok);
            proto_item_set_generated(ti);
            if (!ok)
                expert_add_info(pinfo, ti, &ei_noise_sig_bad);
        }
    }
    /* The sender's identity, unless its signature of the Noise static key fails. */
    if (peer_id && ok != 0)
        p2pc_peer_add(pinfo, "noise", peer_id);
}

static const char *
keys_of(int keys_role)
{
    return keys_role == 0 ? "the initiator's" : keys_role == 1 ? "the responder's" : "nobody's";
}

static void
draw_status(packet_info *pinfo, proto_item *ti, const noise_msg_t *m)
{
    switch (m->status) {
    case NS_DECRYPTED:
        break;
    case NS_NO_KEY:
        expert_add_info(pinfo, ti, &ei_noise_no_key);
        break;
    case NS_BAD_TAG:
        expert_add_info(pinfo, ti, &ei_noise_bad_tag);
        break;
    case NS_STOPPED:
        expert_add_info(pinfo, ti, &ei_noise_stopped);
        break;
    case NS_MALFORMED:
        expert_add_info(pinfo, ti, &ei_noise_bad_handshake);
        break;
    }
}

/* Bad lines the key log had (and keys it dropped), or that it was not read (no regular file),
 * when this message looked its keys up. */
static void
draw_keylog(packet_info *pinfo, proto_item *ti, const noise_msg_t *m)
{
    const noise_keys_stats_t *st = &m->keylog;
    if (st->not_regular)
        expert_add_info(pinfo, ti, &ei_noise_keylog_unread);
    else if (st->bad_lines)
        expert_add_info_format(pinfo, ti, &ei_noise_keylog_skipped,
                               "libp2p_noise.keylog_file: %u bad line%s skipped (the first: line %u), "
                               "not text or not a key of 32 bytes in base64%s", st->bad_lines,
                               plurality(st->bad_lines, "", "s"), st->first_bad,
                               st->dropped ? "; the oldest keys dropped, over the limit" : "");
    else if (st->dropped)
        expert_add_info_format(pinfo, ti, &ei_noise_keylog_skipped,
                               "libp2p_noise.keylog_file: %" PRIu64 " oldest keys dropped (%u of each kind are kept)",
                               st->dropped, NOISE_KEYS_MAX);
}

static void
draw_handshake(tvbuff_t *tvb, packet_info *pinfo, proto_tree *t, proto_item *ti, const noise_msg_t *m)
{
    int len = (int)tvb_captured_length(tvb), off = 2;
    proto_item *pi;

    proto_item_append_text(ti, ": handshake message %u", m->msg);
    col_append_sep_fstr(pinfo->cinfo, COL_INFO, ", ", "Noise handshake %u", m->msg);
    pi = proto_tree_add_uint(t, hf_noise_message, tvb, 0, 0, m->msg);
    proto_item_set_generated(pi);
    if (m->msg != 3 && len >= off + 32) {
        proto_tree_add_item(t, hf_noise_ephemeral, tvb, off, 32, ENC_NA);
        off += 32;
    }
    if (m->msg != 1 && len >= off + 48) {
        proto_tree_add_item(t, hf_noise_static_enc, tvb, off, 48, ENC_NA);
        if (m->s) {
            /* The 32-byte key, decrypted from the 48 bytes (key and tag) it covers. */
            pi = proto_tree_add_bytes_with_length(t, hf_noise_static, tvb, off, 48, m->s, 32);
            proto_item_set_generated(pi);
        }
        off += 48;
    }
    if (m->msg != 1 && len > off)
        proto_tree_add_item(t, hf_noise_payload_enc, tvb, off, -1, ENC_NA);
    if (m->msg >= 2) {
        pi = proto_tree_add_string(t, hf_noise_keys_of, tvb, 0, 0, keys_of(m->keys_role));
        proto_item_set_generated(pi);
        draw_keylog(pinfo, ti, m);
    }
    if (m->payload && m->payload_len) {
        tvbuff_t *ptvb = tvb_new_child_real_data(tvb, m->payload, m->payload_len, m->payload_len);
        proto_tree *pt;
        if (m->msg != 1)
            add_new_data_source(pinfo, ptvb, "Decrypted Noise handshake payload");
        pt = proto_tree_add_subtree_format(t, ptvb, 0, -1, ett_noise_payload, NULL, "Handshake payload (%u bytes)",
                                           m->payload_len);
        draw_payload(ptvb, pinfo, pt, m->s);
    }
    if (m->early_muxer) {
        pi = proto_tree_add_string(t, hf_noise_early_muxer, tvb, 0, 0, m->early_muxer);
        proto_item_set_generated(pi);
    }
    draw_status(pinfo, ti, m);
}

/* A transport message not decrypted: its own record, so that no byte goes uncounted. */
static void
record_encrypted(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree)
{
    p2pc_record_encrypted(tvb, pinfo, tree, "libp2p", "noise (encrypted)", NOISE_FRAMING);
}

typedef struct {
    noise_conn_t *c;            /* NULL on a later pass */
    noise_msg_t *m;
} attr_ctx_t;

/* The records the layers above added for this transport message: the Noise framing goes to
 * their header bytes (see the top of this file). */
static void
noise_attribute(packet_info *pinfo, p2pc_record_t **recs, guint n, void *ctx)
{
    attr_ctx_t *a = (attr_ctx_t *)ctx;
    p2pc_record_give_framing(pinfo, recs, n, a->c ? &a->c->unattributed[a->m->role] : NULL, &a->m->shares);
}

/* The framing this message gave to the records it completed (0: it completed none). */
static void
given_item(tvbuff_t *tvb, proto_tree *t, const noise_msg_t *m)
{
    proto_item *pi = proto_tree_add_uint64(t, hf_noise_framing_given, tvb, 0, 0, p2pc_record_shares_sum(m->shares));
    proto_item_set_generated(pi);
}

/* c and out: the connection and the plaintext on the first pass; NULL on a later pass (the
 * message is decrypted again from the frame's bytes with its key and nonce). */
/* Every pass: a decrypted transport message's framing in the budget (core/budget.h), less what
 * its messages took of the framing not yet given (this one's and that of earlier messages that
 * completed none). */
static void
budget_framing(packet_info *pinfo, const noise_msg_t *m)
{
    p2pc_budget_add(pinfo, "libp2p", P2PC_LAYER_SECURITY, "noise_framing",
                    NOISE_FRAMING - (gint64)p2pc_record_shares_sum(m->shares));
}

static void
draw_transport(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, proto_tree *t, proto_item *ti,
               noise_conn_t *c, noise_msg_t *m, guint8 *out)
{
    int len = (int)tvb_captured_length(tvb);
    proto_item *pi;
    tvbuff_t *dtvb;
    attr_ctx_t actx;

    proto_item_append_text(ti, ": transport message, %d bytes", len);
    if (len > NOISE_FRAMING) {
        proto_tree_add_item(t, hf_noise_data, tvb, 2, len - NOISE_FRAMING, ENC_NA);
        proto_tree_add_item(t, hf_noise_tag, tvb, len - NOISE_TAG, NOISE_TAG, ENC_NA);
    }
    if (m->status == NS_DECRYPTED || m->status == NS_BAD_TAG) {
        pi = proto_tree_add_uint64(t, hf_noise_nonce, tvb, 0, 0, m->nonce);
        proto_item_set_generated(pi);
    }
    if (m->stopped_in) {
        pi = proto_tree_add_uint(t, hf_noise_stopped_in, tvb, 0, 0, m->stopped_in);
        proto_item_set_generated(pi);
    }
    if (m->lost) {
        pi = proto_tree_add_uint64(t, hf_noise_frames_lost, tvb, 0, 0, m->lost);
        proto_item_set_generated(pi);
    }
    draw_status(pinfo, ti, m);
    if (m->status != NS_DECRYPTED) {
        col_append_sep_str(pinfo->cinfo, COL_INFO, ", ", "Noise (encrypted)");
        record_encrypted(tvb, pinfo, tree);
        return;
    }
    if (!out) {
        out = (guint8 *)wmem_alloc(pinfo->pool, (size_t)len);
        if (!aead_decrypt(m->key, m->nonce, NULL, 0, tvb_get_ptr(tvb, 2, len - 2), (size_t)len - 2, out))
            return;     /* it did on the first pass: the same bytes, the same key */
    }
    pi = proto_tree_add_uint(t, hf_noise_decrypted, tvb, 2, len - 2, (guint32)(len - NOISE_FRAMING));
    proto_item_set_generated(pi);
    if (c)
        c->unattributed[m->role] += NOISE_FRAMING;
    if (len == NOISE_FRAMING) {
        given_item(tvb, t, m);
        budget_framing(pinfo, m);
        return;
    }
    dtvb = tvb_new_child_real_data(tvb, out, (guint)(len - NOISE_FRAMING), len - NOISE_FRAMING);
    add_new_data_source(pinfo, dtvb, "Decrypted Noise");
    actx.c = c;
    actx.m = m;
    /* Every decrypted byte is carried by this record: its end is their unit (p2pc_unit_t). */
    l2p_pipe_call_unit(m->inner, dtvb, pinfo, tree, FALSE, p2pc_unit_opaque(p2pc_unit_get(pinfo)),
                       noise_attribute, &actx);
    given_item(tvb, t, m);
    budget_framing(pinfo, m);
}

static void
draw_encrypted_only(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree)
{
    proto_item *ti = proto_tree_add_item(tree, proto_noise, tvb, 0, -1, ENC_NA);
    proto_tree *t = proto_item_add_subtree(ti, ett_noise);
    proto_tree_add_item(t, hf_noise_length, tvb, 0, 2, ENC_BIG_ENDIAN);
    proto_tree_add_item(t, hf_noise_data, tvb, 2, -1, ENC_NA);
    col_append_sep_str(pinfo->cinfo, COL_INFO, ", ", "Noise");
}

/* ---- resynchronisation after a hole (first pass; see the top of this file) ---- */

/* A hole took bytes of this direction: look for the next frame if this direction decrypts
 * (else the rest is undecoded bytes).  held: the start of the frame the hole cut. */
static gboolean
noise_gap(l2p_pipe_t *pipe, const guint8 *held, guint held_len)
{
    noise_conn_t *c = conn_of(pipe);
    noise_resync_t *rs = &c->resync[pipe->dir];
    int role = c->role_of_dir[pipe->dir];
    guint64 missing = pipe->gap_bytes;

    if (role < 0 || c->hs_msgs < 3 || c->status != NS_DECRYPTED || c->stopped_in[role])
        return FALSE;
    rs->skipped = 0;
    rs->lost = 0;
    rs->first_nonce = c->nonce[role] + 1;
    rs->window = missing ? (guint)MIN(NOISE_WINDOW, 1 + missing / NOISE_FRAMING) : NOISE_WINDOW;
    rs->cut_end = -1;
    rs->cut_plain = 0;
    if (held_len >= 2 && missing && 2 + (guint64)pntohu16(held) >= held_len + missing) {
        rs->cut_end = (gint64)(2 + pntohu16(held) - held_len - missing);
        rs->cut_plain = pntohu16(held) >= NOISE_TAG ? pntohu16(held) - NOISE_TAG : 0;
    }
    return TRUE;
}

/* Whether the frame at p (complete: 2 + its length) decrypts under one of the window's nonces
 * (*nonce gets it); FALSE too when the direction's credit is spent (*spent set). */
static gboolean
try_frame(noise_conn_t *c, int dir, const guint8 *p, guint8 *scratch, guint64 *nonce, gboolean *spent)
{
    noise_resync_t *rs = &c->resync[dir];
    guint len = pntohu16(p);
    const guint8 *key = c->key[c->role_of_dir[dir]];

    for (guint i = 0; i < rs->window; i++) {
        if (c->credit[dir] < len) {
            *spent = TRUE;
            return FALSE;
        }
        c->credit[dir] -= len;
        if (aead_decrypt(key, rs->first_nonce + i, NULL, 0, p + 2, len, scratch)) {
            *nonce = rs->first_nonce + i;
            return TRUE;
        }
    }
    return FALSE;
}

/* The framing after a hole, as a len_fn: the next frame found (its length), bytes to skip
 * before it (-1, pipe->skip), more bytes needed (0), or no frame to be found (-1, skip 0: the
 * rest of the direction is undecoded bytes). */
static gint64
noise_resync(l2p_pipe_t *pipe, noise_conn_t *c, const guint8 *p, guint avail)
{
    noise_resync_t *rs = &c->resync[pipe->dir];
    guint8 *scratch = (guint8 *)g_malloc(NOISE_MAX_MSG);
    gboolean spent = FALSE, found = FALSE, at_cut_end = FALSE;
    guint64 nonce = 0;
    guint k = 0;

    if (rs->cut_end >= 0) {
        /* Where the frame the hole cut ends (nothing is skipped before it is tried). */
        guint e = (guint)rs->cut_end;
        if (e + 2 > avail || e + 2 + pntohu16(p + e) > avail) {
            g_free(scratch);
            return 0;
        }
        rs->cut_end = -1;
        if (pntohu16(p + e) >= NOISE_TAG && try_frame(c, pipe->dir, p + e, scratch, &nonce, &spent)) {
            found = at_cut_end = TRUE;
            k = e;
        }
    }
    while (!found && !spent && rs->skipped + k < NOISE_MAX_MSG) {
        if (k + 2 > avail || k + 2 + pntohu16(p + k) > avail)
            break;      /* wait for the whole frame */
        if (pntohu16(p + k) >= NOISE_TAG && try_frame(c, pipe->dir, p + k, scratch, &nonce, &spent))
            found = TRUE;
        else
            k++;
    }
    g_free(scratch);
    if (found) {
        int role = c->role_of_dir[pipe->dir];
        rs->lost = nonce - c->nonce[role];
        c->nonce[role] = nonce;
        pipe->resync = FALSE;
        /* The plaintext lost the frames' bytes too (known when the hole took only the rest of
         * the frame it cut): the layer above resynchronises in turn. */
        if (c->inner[role])
            l2p_pipe_gap(c->inner[role], rs->lost == 1 && at_cut_end ? rs->cut_plain : 0);
        if (k == 0)
            return 2 + (gint64)pntohu16(p);
    } else if (spent || rs->skipped + k >= NOISE_MAX_MSG) {
        pipe->skip = 0;     /* no frame within reach: the rest is undecoded */
        return -1;
    } else if (k == 0) {
        return 0;
    }
    rs->skipped += k;
    pipe->skip = k;
    return -1;
}

static gint64
noise_len(l2p_pipe_t *pipe, const guint8 *p, guint avail)
{
    if (avail < 2)
        return 0;
    if (pipe->resync)
        return noise_resync(pipe, conn_of(pipe), p, avail);
    return 2 + (gint64)pntohu16(p);
}

static void
noise_pdu(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, l2p_pipe_t *pipe, l2p_pdu_t *pdu)
{
    noise_conn_t *c = NULL;
    noise_msg_t *m;
    proto_item *ti;
    proto_tree *t;
    guint8 *plain = NULL;

    col_set_str(pinfo->cinfo, COL_PROTOCOL, "libp2p Noise");
    ti = proto_tree_add_item(tree, proto_noise, tvb, 0, -1, ENC_NA);
    t = proto_item_add_subtree(ti, ett_noise);
    proto_tree_add_item(t, hf_noise_length, tvb, 0, MIN(2, (int)tvb_captured_length(tvb)), ENC_BIG_ENDIAN);
    if (pdu->truncated) {
        /* The connection closed inside this message: counted, not decrypted. */
        proto_tree_add_item(t, hf_noise_data, tvb, MIN(2, (int)tvb_captured_length(tvb)), -1, ENC_NA);
        expert_add_info(pinfo, ti, &ei_noise_bad_handshake);
        record_encrypted(tvb, pinfo, tree);
        return;
    }
    if (!PINFO_FD_VISITED(pinfo) && !pdu->info) {
        guint len = tvb_captured_length(tvb);
        c = conn_of(pipe);
        pdu->info = process(c, pipe, pinfo, tvb_get_ptr(tvb, 0, len), len, &plain);
    }
    m = (noise_msg_t *)pdu->info;
    if (!m) {
        p2pc_budget_add(pinfo, "libp2p", P2PC_LAYER_SECURITY, "unread", tvb_captured_length(tvb));
        return;
    }
    if (m->msg) {
        p2pc_budget_add(pinfo, "libp2p", P2PC_LAYER_NEGOTIATION, "noise_handshake", tvb_captured_length(tvb));
        draw_handshake(tvb, pinfo, t, ti, m);
    }
    else
        draw_transport(tvb, pinfo, tree, t, ti, c, m, plain);
}

/* The frame's record of whether this direction's close went on to the decrypted pipe. */
typedef struct {
    l2p_pipe_t *inner;
} fin_slot_t;

static void
pass_fin(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, l2p_pipe_t *pipe)
{
    gboolean replay;
    fin_slot_t *fs = (fin_slot_t *)l2p_frame_slot(pinfo, pipe, sizeof(fin_slot_t), &replay);
    if (!fs)
        return;
    if (!replay && pipe->state) {
        noise_conn_t *c = (noise_conn_t *)pipe->state;
        int role = c->role_of_dir[pipe->dir];
        if (role >= 0 && c->inner[role] && !c->stopped_in[role])
            fs->inner = c->inner[role];
    }
    if (fs->inner)
        l2p_pipe_call(fs->inner, tvb_new_subset_length(tvb, 0, 0), pinfo, tree, TRUE);
}

static int
dissect_noise(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    l2p_pipe_t *pipe = (l2p_pipe_t *)data;
    gboolean fin;
    if (!pipe) {
        draw_encrypted_only(tvb, pinfo, tree);
        return tvb_captured_length(tvb);
    }
    fin = pipe->fin;
    if (!PINFO_FD_VISITED(pinfo)) {
        /* Every byte a direction carries earns trial decryptions for a resynchronisation. */
        noise_conn_t *c = conn_of(pipe);
        c->credit[pipe->dir] = MIN(NOISE_CREDIT_MAX, c->credit[pipe->dir] +
                                   (guint64)tvb_captured_length(tvb) * NOISE_CREDIT_PER_BYTE);
    }
    l2p_dissect_pdus(tvb, pinfo, tree, pipe, noise_len, noise_pdu);
    if (fin)
        pass_fin(tvb, pinfo, tree, pipe);
    return tvb_captured_length(tvb);
}

static void
apply_prefs(void)
{
    noise_keys_set_file(keylog, pref_keylog);
}

/* Over 80 lines: the registration tables README.dissector asks for (fields, subtrees, expert
 * items, preferences), one entry each; cut up, they would only be harder to find. */
void
proto_register_libp2p_noise(void)
{
    static hf_register_info hf[] = {
        { &hf_noise_length, { "Length", "libp2p_noise.length", FT_UINT16, BASE_DEC, NULL, 0x0,
            "Length of the Noise message that follows", HFILL } },
        { &hf_noise_message, { "Handshake message", "libp2p_noise.handshake", FT_UINT32, BASE_DEC, NULL, 0x0,
            "Which XX handshake message: 1 (-> e), 2 (<- e, ee, s, es), 3 (-> s, se)", HFILL } },
        { &hf_noise_ephemeral, { "Ephemeral public key", "libp2p_noise.ephemeral", FT_BYTES, BASE_NONE, NULL, 0x0,
            "The sender's ephemeral X25519 key, sent in clear", HFILL } },
        { &hf_noise_static_enc, { "Encrypted static key", "libp2p_noise.static_encrypted", FT_BYTES, BASE_NONE, NULL, 0x0,
            "The sender's Noise static key, encrypted, with its tag", HFILL } },
        { &hf_noise_static, { "Static public key", "libp2p_noise.static", FT_BYTES, BASE_NONE, NULL, 0x0,
            "The sender's Noise static X25519 key, decrypted", HFILL } },
        { &hf_noise_payload_enc, { "Encrypted payload", "libp2p_noise.payload_encrypted", FT_BYTES, BASE_NONE, NULL, 0x0,
            "The handshake payload, encrypted, with its tag", HFILL } },
        { &hf_noise_data, { "Encrypted data", "libp2p_noise.data", FT_BYTES, BASE_NONE, NULL, 0x0,
            "Ciphertext of a transport message", HFILL } },
        { &hf_noise_tag, { "Authentication tag", "libp2p_noise.tag", FT_BYTES, BASE_NONE, NULL, 0x0,
            "The Poly1305 tag", HFILL } },
        { &hf_noise_nonce, { "Nonce", "libp2p_noise.nonce", FT_UINT64, BASE_DEC, NULL, 0x0,
            "The direction's message counter", HFILL } },
        { &hf_noise_keys_of, { "Keys from the key log", "libp2p_noise.keys_of", FT_STRING, BASE_NONE, NULL, 0x0,
            "Whose private keys in libp2p_noise.keylog_file decrypt this connection", HFILL } },
        { &hf_noise_decrypted, { "Decrypted bytes", "libp2p_noise.decrypted", FT_UINT32, BASE_DEC, NULL, 0x0,
            "Plaintext bytes of this transport message", HFILL } },
        { &hf_noise_stopped_in, { "Decryption stopped in", "libp2p_noise.stopped_in", FT_FRAMENUM, BASE_NONE, NULL, 0x0,
            "The frame whose message failed to decrypt", HFILL } },
        { &hf_noise_framing_given, { "Noise framing given to messages", "libp2p_noise.framing_given", FT_UINT64, BASE_DEC, NULL, 0x0,
            "Noise framing bytes (18 per transport message since the last that completed a message) added to the "
            "header bytes of the messages this one completes", HFILL } },
        { &hf_noise_frames_lost, { "Frames lost before this one", "libp2p_noise.frames_lost", FT_UINT64, BASE_DEC, NULL, 0x0,
            "Transport messages a hole in the capture took just before this one (its nonce minus the one expected): "
            "decryption resynchronised here", HFILL } },
        { &hf_noise_id_key_type, { "Identity key type", "libp2p_noise.key_type", FT_UINT32, BASE_DEC, VALS(key_type_vals), 0x0,
            "Type of the sender's libp2p identity key", HFILL } },
        { &hf_noise_id_key, { "Identity public key", "libp2p_noise.key", FT_BYTES, BASE_NONE, NULL, 0x0,
            "The sender's libp2p identity public key", HFILL } },
        { &hf_noise_peer_id, { "Peer ID", "libp2p_noise.peer_id", FT_STRING, BASE_NONE, NULL, 0x0,
            "The sender's peer ID, base58btc (12D3KooW... Ed25519, 16Uiu2... secp256k1, Qm... RSA)", HFILL } },
        { &hf_noise_sig, { "Identity signature", "libp2p_noise.signature", FT_BYTES, BASE_NONE, NULL, 0x0,
            "Signature of \"noise-libp2p-static-key:\" and the Noise static key by the identity key", HFILL } },
        { &hf_noise_sig_valid, { "Signature valid", "libp2p_noise.signature_valid", FT_BOOLEAN, BASE_NONE, NULL, 0x0,
            "The identity signature verifies (Ed25519, secp256k1)", HFILL } },
        { &hf_noise_muxer, { "Stream muxer", "libp2p_noise.stream_muxer", FT_STRING, BASE_NONE, NULL, 0x0,
            "A muxer the sender offers in its extensions (early muxer negotiation)", HFILL } },
        { &hf_noise_certhash, { "WebTransport cert hash", "libp2p_noise.webtransport_certhash", FT_BYTES, BASE_NONE, NULL, 0x0,
            "A certificate hash the sender lists for WebTransport (multihash)", HFILL } },
        { &hf_noise_early_muxer, { "Muxer agreed in the handshake", "libp2p_noise.early_muxer", FT_STRING, BASE_NONE, NULL, 0x0,
            "The initiator's first muxer the responder also lists: the transport data starts in it", HFILL } },
    };
    static gint *ett[] = { &ett_noise, &ett_noise_payload, &ett_noise_ext };
    static ei_register_info ei[] = {
        { &ei_noise_no_key, { "libp2p_noise.no_key", PI_DECRYPTION, PI_NOTE,
            "Noise-encrypted: no key in libp2p_noise.keylog_file matches this connection", EXPFILL } },
        { &ei_noise_bad_tag, { "libp2p_noise.bad_tag", PI_DECRYPTION, PI_ERROR,
            "The authentication tag does not verify (corrupted, or wrong key): this direction is not decrypted further", EXPFILL } },
        { &ei_noise_stopped, { "libp2p_noise.stopped", PI_DECRYPTION, PI_WARN,
            "Not decrypted: an earlier message of this connection failed to decrypt", EXPFILL } },
        { &ei_noise_bad_handshake, { "libp2p_noise.no_handshake", PI_MALFORMED, PI_WARN,
            "Not a Noise XX handshake as expected (a capture that starts mid-connection), or a message cut by the connection's close: nothing decrypted", EXPFILL } },
        { &ei_noise_sig_bad, { "libp2p_noise.signature_bad", PI_SECURITY, PI_ERROR,
            "The identity signature of the Noise static key does not verify", EXPFILL } },
        { &ei_noise_keylog_skipped, { "libp2p_noise.keylog_skipped", PI_DECRYPTION, PI_NOTE,
            "libp2p_noise.keylog_file: bad lines skipped, or the oldest keys dropped", EXPFILL } },
        { &ei_noise_keylog_unread, { "libp2p_noise.keylog_unread", PI_DECRYPTION, PI_WARN,
            "libp2p_noise.keylog_file is not a regular file (a FIFO, a device or a folder): not read", EXPFILL } },
    };
    module_t *module;
    expert_module_t *expert;

    proto_noise = proto_register_protocol("libp2p Noise", "libp2p Noise", "libp2p_noise");
    proto_register_field_array(proto_noise, hf, array_length(hf));
    proto_register_subtree_array(ett, array_length(ett));
    expert = expert_register_protocol(proto_noise);
    expert_register_field_array(expert, ei, array_length(ei));
    keylog = noise_keys_new();
    module = prefs_register_protocol(proto_noise, apply_prefs);
    prefs_register_filename_preference(module, "keylog_file", "Noise key log file",
        "Private keys of libp2p Noise sessions, one a line: LOCAL_STATIC_PRIVATE_KEY = <base64> and "
        "LOCAL_EPHEMERAL_PRIVATE_KEY = <base64> (the WireGuard key log format); other text lines are skipped. "
        "Read as far as a lookup needs, lines appended later as well (a live capture)",
        &pref_keylog, FALSE);
    noise_handle = register_dissector("libp2p_noise", dissect_noise, proto_noise);
}

void
proto_reg_handoff_libp2p_noise(void)
{
    /* Every Noise variant ("/noise", and any "/noise/..." through the family lookup). */
    dissector_add_string("multistream.protocol", "/noise", noise_handle);
}
