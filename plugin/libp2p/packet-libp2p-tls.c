/* packet-libp2p-tls.c
 * libp2p's /tls/1.0.0 security layer (libp2p/specs tls): TLS 1.3, decrypted by Wireshark's own
 * TLS dissector from tls.keylog_file or from secrets embedded in the pcapng.  A layer under
 * multistream-select: registered in "multistream.protocol", called with the connection
 * direction's pipe.  It cuts the pipe into whole TLS records (the pipe is no TCP stream, so
 * TLS could not reassemble it itself) and hands each to the "tls" dissector.
 *
 * TLS hands the decrypted application data to the dissector the "tls.alpn" table has for the
 * ALPN the server chose: go-libp2p offers its muxers ("/yamux/1.0.0", "/mplex/6.7.0") and then
 * "libp2p".  p2pc registers all three: a muxer chosen by ALPN starts the decrypted stream
 * directly (no multistream-select inside), "libp2p" starts it in multistream-select.  Each
 * decrypted stream is a pipe of its own (engine.h), found through the record's pipe, which
 * this file leaves in the packet's proto data while TLS runs.  So the decrypted bytes never
 * reach TLS's heuristic list (4.0's 5GLI heuristic took them before: TLS's reassembly then
 * lost sync).
 *
 * The libp2p certificate extension (OID 1.3.6.1.4.1.53594.1.1, SignedKey ::= SEQUENCE
 * { publicKey OCTET STRING, signature OCTET STRING }) is shown with the peer ID in base58,
 * which goes to the records (p2pc_peer_add()) as the certificate's sender's.
 *
 * Accounting, as for Noise (packet-libp2p-noise.c): the framing of a record that carried
 * application data (its 5-byte header, content type byte, padding and tag: the record's bytes
 * minus the data TLS decrypted from it) goes to the header bytes of the messages decoded above
 * it, split among the messages the record completes in proportion to their wire bytes, the
 * framing of records that completed none carried over to the next that does.  Handshake
 * records belong to no message.  An application_data record TLS does not decrypt (no keys)
 * gets a record of its own, msg_type `tls (encrypted)`, and the note p2pc.tls_no_keys, which
 * names the key log (as QUIC's packets not decrypted do).
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

#include <epan/exceptions.h>
#include <epan/expert.h>
#include <epan/proto_data.h>
#include <epan/dissectors/packet-ber.h>

void proto_register_libp2p_tls(void);
void proto_reg_handoff_libp2p_tls(void);

#define LIBP2P_TLS_OID "1.3.6.1.4.1.53594.1.1"
#define TLS_MAX_RECORD (5 + 16384 + 256)
#define TLS_APPLICATION_DATA 23
#define TLS_HANDSHAKE 22
#define TLS_CLIENT_HELLO 1
#define TLS_AEAD_FRAMING (5 + 1 + 16)   /* TLS 1.3: header, content type, tag */
#define KEY_RECORD 0    /* packet-scope proto data: the record TLS is dissecting (rec_ctx_t) */

static int proto_l2p_tls = -1;
static int hf_tls_record_len = -1;
static int hf_tls_framing_given = -1;
static gint ett_tls = -1;
static int hf_cert_key_type = -1;
static int hf_cert_key = -1;
static int hf_cert_peer_id = -1;
static int hf_cert_sig = -1;
static gint ett_cert = -1;
static expert_field ei_cert_malformed = EI_INIT;
static dissector_handle_t l2p_tls_handle;
static dissector_handle_t tls_handle;

static const value_string key_type_vals[] = {
    { 0, "RSA" }, { 1, "Ed25519" }, { 2, "Secp256k1" }, { 3, "ECDSA" }, { 0, NULL }
};

/* The ALPNs p2pc takes, and where each starts the decrypted stream. */
static const struct {
    const char *alpn;
    const char *protocol;       /* the muxer's protocol ID; "" for multistream-select */
} alpns[] = {
    { "/yamux/1.0.0", "/yamux/1.0.0" },
    { "/mplex/6.7.0", "/mplex/6.7.0" },
    { "libp2p", "" },
};

/* A connection's decrypted streams, by pipe->dir (file scope; state of both record pipes). */
typedef struct {
    l2p_pipe_t *inner[2];
    guint64 unattributed[2];    /* framing bytes not yet given to a message, by pipe->dir */
} tls_conn_t;

/* One record while TLS dissects it (packet scope). */
typedef struct {
    l2p_pipe_t *pipe;
    guint32 delivered;          /* decrypted application data TLS handed on */
    gboolean replay;
    wmem_array_t **shares;      /* the record's: guint64 per message it completed */
} rec_ctx_t;

static gint64
tls_len(l2p_pipe_t *pipe, const guint8 *p, guint avail)
{
    guint len;
    if (avail < 5)
        return 0;
    /* change_cipher_spec .. heartbeat, version 3.x */
    if (p[0] < 20 || p[0] > 24 || p[1] != 3)
        return -1;
    len = 5 + pntohu16(p + 3);
    return len > TLS_MAX_RECORD ? -1 : (gint64)len;
}

/* The records the layers above added for this TLS record: the framing goes to their header
 * bytes (see the top of this file). */
static void
tls_attribute(packet_info *pinfo, p2pc_record_t **recs, guint n, void *ctx)
{
    rec_ctx_t *r = (rec_ctx_t *)ctx;
    tls_conn_t *c = (tls_conn_t *)r->pipe->state;
    p2pc_record_give_framing(pinfo, recs, n, !r->replay && c ? &c->unattributed[r->pipe->dir] : NULL, r->shares);
}

/* TLS on one record, the records of the messages it completes held until its framing is
 * known.  (Its own function: the exception frame's setjmp stays away from the caller's locals.) */
static void
call_tls_attributed(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, rec_ctx_t *r)
{
    p2pc_record_hold(pinfo);
    p_add_proto_data(pinfo->pool, pinfo, proto_l2p_tls, KEY_RECORD, r);
    TRY {
        call_dissector(tls_handle, tvb, pinfo, tree);
    }
    CATCH_ALL {
        p_remove_proto_data(pinfo->pool, pinfo, proto_l2p_tls, KEY_RECORD);
        p2pc_record_release(pinfo, tls_attribute, r);
        RETHROW;
    }
    ENDTRY;
    p_remove_proto_data(pinfo->pool, pinfo, proto_l2p_tls, KEY_RECORD);
    if (!r->replay && r->delivered && r->pipe->state)
        ((tls_conn_t *)r->pipe->state)->unattributed[r->pipe->dir] += tvb_captured_length(tvb) - r->delivered;
    p2pc_record_release(pinfo, tls_attribute, r);
}

/* Every pass: a record TLS decrypted or that needs no keys, in the budget (core/budget.h).  One
 * that carried application data: its framing, less what the messages it completed took of the
 * framing not yet given; any other (handshake, change_cipher_spec, an alert, a session ticket):
 * the handshake's, all its bytes. */
static void
budget_record(tvbuff_t *tvb, packet_info *pinfo, const rec_ctx_t *r)
{
    guint len = tvb_captured_length(tvb);
    if (r->delivered)
        p2pc_budget_add(pinfo, "libp2p", P2PC_LAYER_SECURITY, "tls_framing",
                        (gint64)(len - r->delivered) - (gint64)p2pc_record_shares_sum(*r->shares));
    else
        p2pc_budget_add(pinfo, "libp2p", P2PC_LAYER_NEGOTIATION, "tls_handshake", len);
}

static void
tls_pdu(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, l2p_pipe_t *pipe, l2p_pdu_t *pdu)
{
    rec_ctx_t r;
    wmem_array_t **shares;
    guint sources;

    if (pdu->truncated) {
        proto_tree_add_item(tree, hf_tls_record_len, tvb, 0, 0, ENC_NA);
        p2pc_budget_add(pinfo, "libp2p", P2PC_LAYER_SECURITY, "truncated", tvb_captured_length(tvb));
        return;
    }
    if (!PINFO_FD_VISITED(pinfo) && tvb_captured_length(tvb) > 5 &&
        tvb_get_uint8(tvb, 0) == TLS_HANDSHAKE && tvb_get_uint8(tvb, 5) == TLS_CLIENT_HELLO)
        l2p_learn_role(pipe, pinfo, TRUE, L2P_ROLE_SECURITY);   /* the client dialed */
    if (!PINFO_FD_VISITED(pinfo) && !pdu->info) {
        pdu->info = wmem_new0(p2pc_replay_scope(pinfo), wmem_array_t *);
        p2pc_replay_charge(pinfo, sizeof(wmem_array_t *));
    }
    shares = (wmem_array_t **)pdu->info;
    if (!shares) {
        p2pc_budget_add(pinfo, "libp2p", P2PC_LAYER_SECURITY, "unread", tvb_captured_length(tvb));
        return;
    }
    r.pipe = pipe;
    r.delivered = 0;
    r.replay = PINFO_FD_VISITED(pinfo);
    r.shares = shares;
    sources = g_slist_length(pinfo->data_src);
    call_tls_attributed(tvb, pinfo, tree, &r);
    if (tvb_get_uint8(tvb, 0) == TLS_APPLICATION_DATA && g_slist_length(pinfo->data_src) == sources) {
        /* Not decrypted (TLS adds a tab for every record it decrypts): counted as it is, with
         * the note naming the key log that would open it. */
        p2pc_tls_no_keys(pinfo, p2pc_record_encrypted(tvb, pinfo, tree, "libp2p", "tls (encrypted)",
                                                      TLS_AEAD_FRAMING));
        return;
    }
    budget_record(tvb, pinfo, &r);
    if (r.delivered) {
        proto_item *ti = proto_tree_add_item(tree, proto_l2p_tls, tvb, 0, -1, ENC_NA);
        proto_item *pi;
        proto_item_append_text(ti, ": record framing %u bytes", tvb_captured_length(tvb) - r.delivered);
        pi = proto_tree_add_uint64(proto_item_add_subtree(ti, ett_tls), hf_tls_framing_given, tvb, 0, 0,
                                   p2pc_record_shares_sum(*shares));
        proto_item_set_generated(pi);
    }
}

static int
dissect_l2p_tls(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    l2p_pipe_t *pipe = (l2p_pipe_t *)data;
    if (!pipe)
        return call_dissector(tls_handle, tvb, pinfo, tree);
    l2p_dissect_pdus(tvb, pinfo, tree, pipe, tls_len, tls_pdu);
    return tvb_captured_length(tvb);
}

/* Decrypted application data of the ALPN alpns[i]. */
static int
dissect_alpn(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, size_t i)
{
    rec_ctx_t *r = (rec_ctx_t *)p_get_proto_data(pinfo->pool, pinfo, proto_l2p_tls, KEY_RECORD);
    l2p_pipe_t *pipe = r ? r->pipe : NULL;
    const char *protocol = alpns[i].protocol;
    dissector_handle_t h = *protocol ? l2p_handle_for(protocol) : l2p_multistream_handle();
    tls_conn_t *c;

    if (!pipe)      /* TLS not on a libp2p connection: one message, drawn as it is */
        return call_dissector_with_data(h, tvb, pinfo, tree, NULL);
    c = (tls_conn_t *)pipe->state;
    if (!c && pipe->peer && pipe->peer->state)
        c = (tls_conn_t *)pipe->peer->state;
    if (!c && !PINFO_FD_VISITED(pinfo)) {
        c = wmem_new0(l2p_pipe_pool(pipe), tls_conn_t);
        /* Wireshark's TLS keeps the session: after a session reset it cannot decrypt. */
        if (pipe->conn)
            p2pc_conn_stay(pipe->conn);
    }
    if (!c)
        return tvb_captured_length(tvb);
    pipe->state = c;
    if (!c->inner[pipe->dir] && !PINFO_FD_VISITED(pinfo)) {
        for (int dir = 0; dir < 2; dir++) {
            c->inner[dir] = l2p_pipe_inside(h, dir, pipe);
            c->inner[dir]->protocol = protocol;
        }
        c->inner[0]->peer = c->inner[1];
        c->inner[1]->peer = c->inner[0];
    }
    r->delivered += tvb_captured_length(tvb);
    if (c->inner[pipe->dir]) {
        /* Wireshark's TLS hands over a record's plaintext, not where the record ends: its unit
         * is the end of the bytes TLS was given in this call (p2pc_unit_t). */
        l2p_pipe_call_unit(c->inner[pipe->dir], tvb, pinfo, tree, FALSE, p2pc_unit_opaque(p2pc_unit_get(pinfo)),
                           NULL, NULL);
    }
    return tvb_captured_length(tvb);
}

static int
dissect_alpn_yamux(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    return dissect_alpn(tvb, pinfo, tree, 0);
}

static int
dissect_alpn_mplex(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    return dissect_alpn(tvb, pinfo, tree, 1);
}

static int
dissect_alpn_libp2p(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    return dissect_alpn(tvb, pinfo, tree, 2);
}

/* One DER element at *off (inside [*off, end), end within the tvb) with the tag `want`: its
 * contents' offset and length; FALSE when it is something else or runs past end.  Unsigned
 * and compared before any sum: the identifier and length octets may themselves run past end
 * (a SignedKey whose inner lengths overrun its SEQUENCE), and a length is up to 2^32 - 1. */
static gboolean
der_element(tvbuff_t *tvb, guint *off, guint end, gint32 want, guint *start, guint *len)
{
    gint8 cls;
    p2pc_bool_t pc, ind;
    gint32 tag;
    guint32 l;
    guint o;
    if (*off > end || end - *off < 2)
        return FALSE;
    o = (guint)get_ber_identifier(tvb, (int)*off, &cls, &pc, &tag);
    o = (guint)get_ber_length(tvb, (int)o, &l, &ind);
    if (ind || cls != BER_CLASS_UNI || tag != want || o > end || l > end - o)
        return FALSE;
    *start = o;
    *len = l;
    *off = o + l;
    return TRUE;
}

/* The SignedKey of the libp2p certificate extension. */
static int
dissect_signed_key(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    guint end = tvb_captured_length(tvb), off = 0, seq, seq_len, key, key_len, sig, sig_len;
    int koff;
    proto_item *ti = proto_tree_add_item(tree, proto_l2p_tls, tvb, 0, -1, ENC_NA);
    proto_tree *t = proto_item_add_subtree(ti, ett_cert);
    p2pc_pb_field_t f;

    proto_item_set_text(ti, "libp2p SignedKey");
    if (!der_element(tvb, &off, end, BER_UNI_TAG_SEQUENCE, &seq, &seq_len) ||
        !der_element(tvb, &seq, seq + seq_len, BER_UNI_TAG_OCTETSTRING, &key, &key_len) ||
        !der_element(tvb, &seq, seq + seq_len, BER_UNI_TAG_OCTETSTRING, &sig, &sig_len) ||
        key_len == 0) {
        /* An empty publicKey names no peer. */
        expert_add_info(pinfo, ti, &ei_cert_malformed);
        return (int)end;
    }
    /* publicKey: a protobuf PublicKey { KeyType Type = 1; bytes Data = 2 }. */
    koff = (int)key;
    while (p2pc_pb_next(tvb, &koff, (int)(key + key_len), &f)) {
        if (f.number == 1 && f.wire_type == 0)
            proto_tree_add_uint(t, hf_cert_key_type, tvb, (int)key, (int)key_len, (guint32)f.value);
        else if (f.number == 2 && f.wire_type == 2)
            proto_tree_add_item(t, hf_cert_key, tvb, f.start, f.len, ENC_NA);
    }
    {
        const char *peer_id = p2pc_peer_id_from_key(pinfo->pool, tvb_get_ptr(tvb, (int)key, (int)key_len),
                                                    key_len);
        proto_item *pi = proto_tree_add_string(t, hf_cert_peer_id, tvb, (int)key, (int)key_len, peer_id);
        proto_item_set_generated(pi);
        proto_item_append_text(ti, ": %s", peer_id);
        p2pc_peer_add(pinfo, "tls", peer_id);
    }
    proto_tree_add_item(t, hf_cert_sig, tvb, (int)sig, (int)sig_len, ENC_NA);
    return (int)end;
}

void
proto_register_libp2p_tls(void)
{
    static hf_register_info hf[] = {
        { &hf_tls_record_len, { "Truncated TLS record", "libp2p_tls.truncated", FT_NONE, BASE_NONE, NULL, 0x0,
            "The connection closed inside a TLS record", HFILL } },
        { &hf_tls_framing_given, { "TLS framing given to messages", "libp2p_tls.framing_given", FT_UINT64, BASE_DEC, NULL, 0x0,
            "Record framing bytes (this record's and those of earlier records that completed no message) added to the "
            "header bytes of the messages this record completes", HFILL } },
        { &hf_cert_key_type, { "Identity key type", "libp2p_tls.key_type", FT_UINT32, BASE_DEC, VALS(key_type_vals), 0x0,
            "Type of the libp2p identity key that signed the certificate's key", HFILL } },
        { &hf_cert_key, { "Identity public key", "libp2p_tls.key", FT_BYTES, BASE_NONE, NULL, 0x0,
            "The peer's libp2p identity public key", HFILL } },
        { &hf_cert_peer_id, { "Peer ID", "libp2p_tls.peer_id", FT_STRING, BASE_NONE, NULL, 0x0,
            "The peer ID of the identity key, base58btc", HFILL } },
        { &hf_cert_sig, { "Signature", "libp2p_tls.signature", FT_BYTES, BASE_NONE, NULL, 0x0,
            "The identity key's signature of \"libp2p-tls-handshake:\" and the certificate's public key", HFILL } },
    };
    static gint *ett[] = { &ett_cert, &ett_tls };
    static ei_register_info ei[] = {
        { &ei_cert_malformed, { "libp2p_tls.signed_key_malformed", PI_MALFORMED, PI_WARN,
            "The libp2p certificate extension is not a SignedKey", EXPFILL } },
    };
    expert_module_t *expert;

    proto_l2p_tls = proto_register_protocol("libp2p TLS", "libp2p TLS", "libp2p_tls");
    proto_register_field_array(proto_l2p_tls, hf, array_length(hf));
    proto_register_subtree_array(ett, array_length(ett));
    expert = expert_register_protocol(proto_l2p_tls);
    expert_register_field_array(expert, ei, array_length(ei));
    l2p_tls_handle = register_dissector("libp2p_tls", dissect_l2p_tls, proto_l2p_tls);
}

void
proto_reg_handoff_libp2p_tls(void)
{
    static const dissector_t fns[] = { dissect_alpn_yamux, dissect_alpn_mplex, dissect_alpn_libp2p };
    tls_handle = find_dissector("tls");
    dissector_add_string("multistream.protocol", "/tls/1.0.0", l2p_tls_handle);
    for (size_t i = 0; i < G_N_ELEMENTS(alpns); i++)
        dissector_add_string("tls.alpn", alpns[i].alpn, create_dissector_handle(fns[i], proto_l2p_tls));
    register_ber_oid_dissector(LIBP2P_TLS_OID, dissect_signed_key, proto_l2p_tls, "libp2p-signed-key");
}
