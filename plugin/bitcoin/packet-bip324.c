/* packet-bip324.c
 * Bitcoin's v2 P2P transport, BIP324 (bitcoin/bips bip-0324.mediawiki; Bitcoin Core's default
 * with peers that offer it since v27).  Each side opens with a 64-byte ElligatorSwift-encoded
 * public key and up to 4095 bytes of garbage, then a 16-byte garbage terminator, a garbage
 * authentication packet, decoy packets and a version packet; everything after the keys is
 * ChaCha20-Poly1305 packets whose 3-byte lengths are themselves encrypted (FSChaCha20), so
 * without the session keys not even the packet boundaries can be found.  There is no key log
 * for it: the plugin names the traffic and counts it, one record (proto `bitcoin`, msg_type
 * `bip324 (encrypted)`) per TCP segment, the key shown in the first.
 *
 * Recognition, per direction, once, on the first pass (btc_bip324_direction()):
 * - only on a connection one of whose ports the tcp.port table gives to the Bitcoin framing
 *   (btcc.tcp.port: 8333, 18333, 38333, 48333, 18444 by default, or Decode As): 64 random
 *   bytes say nothing on any other port;
 * - a direction whose first bytes this session saw (the TCP handshake is in the capture, and
 *   the bytes are the first after the sender's SYN) is BIP324 when they do not begin a v1
 *   message header (a network magic and a printable command).  This is BIP324's own rule: the
 *   responder treats the connection as v1 only if its first 16 bytes are the network magic
 *   and "version\0\0\0\0\0" (a v1 message other than version is read as v1 here, not as v2);
 * - a direction whose start the session did not see (the capture began mid-connection) is
 *   BIP324 when its other direction is: in v2 both sides send only encrypted bytes.
 * Anything else, the v1 framing keeps (docs/bitcoin.md).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/p2pc-compat.h"
#include "core/conn.h"
#include "core/holes.h"
#include "core/ledger.h"
#include "core/record.h"
#include "bitcoin/bip324.h"

#include <epan/expert.h>
#include <epan/dissectors/packet-tcp.h>

void proto_register_bip324(void);

#define BIP324_KEY_LEN 64       /* ElligatorSwift-encoded public key */

static int proto_bip324 = -1;
static int hf_bip324_ellswift = -1;
static int hf_bip324_encrypted = -1;
static gint ett_bip324 = -1;
static expert_field ei_bip324_encrypted = EI_INIT;

typedef enum { DIR_UNDECIDED = 0, DIR_V1, DIR_BIP324 } dir_kind_t;

/* Per connection (core/conn.h); direction 0 is that of the first bytes handed over. */
typedef struct {
    address addr0;
    guint32 port0;
    guint8 kind[2];             /* dir_kind_t */
    guint32 key_frame[2];       /* the frame whose bytes start the direction: its key; 0 none */
} bip324_conn_t;

static bip324_conn_t *
get_conn(packet_info *pinfo, int *dir)
{
    gboolean made;
    bip324_conn_t *c = (bip324_conn_t *)p2pc_conn_state(pinfo, P2PC_SLOT_BIP324, sizeof(bip324_conn_t), &made);
    if (made) {
        copy_address_wmem(p2pc_conn_pool(p2pc_conn_get(pinfo)), &c->addr0, &pinfo->src);
        c->port0 = pinfo->srcport;
    }
    *dir = p2pc_conn_dir(&c->addr0, c->port0, pinfo);
    return c;
}

/* One of the connection's ports goes to the Bitcoin framing (its port preference, Decode As). */
static gboolean
on_bitcoin_port(packet_info *pinfo)
{
    dissector_table_t ports = find_dissector_table("tcp.port");
    dissector_handle_t btcc = find_dissector("btcc");
    return ports && btcc && (dissector_get_uint_handle(ports, pinfo->srcport) == btcc ||
                             dissector_get_uint_handle(ports, pinfo->destport) == btcc);
}

gboolean
btc_bip324_direction(packet_info *pinfo, void *data, gboolean v1_start)
{
    const struct tcpinfo *tcpi = (const struct tcpinfo *)data;
    int d;
    bip324_conn_t *c;

    if (!tcpi || pinfo->ptype != PT_TCP)
        return FALSE;
    c = get_conn(pinfo, &d);
    if (c->kind[d] == DIR_UNDECIDED && !PINFO_FD_VISITED(pinfo)) {
        if (!on_bitcoin_port(pinfo)) {
            c->kind[d] = DIR_V1;
        } else if (p2pc_tcp_at_start(pinfo, tcpi->seq)) {
            c->kind[d] = v1_start ? DIR_V1 : DIR_BIP324;
            if (!v1_start)
                c->key_frame[d] = pinfo->num;
        } else {
            c->kind[d] = c->kind[!d] == DIR_BIP324 ? DIR_BIP324 : DIR_V1;
        }
    }
    return c->kind[d] == DIR_BIP324;
}

static guint
get_bip324_pdu_len(packet_info *pinfo, tvbuff_t *tvb, int offset, void *data)
{
    /* Packet lengths are encrypted: a segment's bytes are one unit. */
    return (guint)tvb_reported_length_remaining(tvb, offset);
}

static int
dissect_bip324_pdu(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    gint len = (gint)tvb_reported_length(tvb), off = 0;
    proto_item *ti;
    proto_tree *t;
    p2pc_record_t rec;
    int d;
    bip324_conn_t *c = get_conn(pinfo, &d);

    col_set_str(pinfo->cinfo, COL_PROTOCOL, "BIP324");
    ti = proto_tree_add_item(tree, proto_bip324, tvb, 0, -1, ENC_NA);
    t = proto_item_add_subtree(ti, ett_bip324);
    if (c->key_frame[d] == pinfo->num && len >= BIP324_KEY_LEN) {
        proto_tree_add_item(t, hf_bip324_ellswift, tvb, 0, BIP324_KEY_LEN, ENC_NA);
        expert_add_info(pinfo, ti, &ei_bip324_encrypted);
        col_append_sep_str(pinfo->cinfo, COL_INFO, ", ", "ElligatorSwift key");
        off = BIP324_KEY_LEN;
    }
    if (len > off) {
        proto_tree_add_item(t, hf_bip324_encrypted, tvb, off, len - off, ENC_NA);
        col_append_sep_fstr(pinfo->cinfo, COL_INFO, ", ", "%d encrypted bytes", len - off);
    }
    proto_item_append_text(ti, ", %d bytes", len);
    p2pc_record_init(&rec, "bitcoin", "bip324 (encrypted)");
    rec.wire_len = rec.payload_len = rec.raw_len = (guint64)len;
    p2pc_record_add(tvb, 0, -1, pinfo, tree, &rec);
    return len;
}

static const p2pc_framing_t bip324_framing = { "bitcoin", 1, get_bip324_pdu_len, dissect_bip324_pdu };

int
btc_bip324_dissect(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    guint at;

    col_clear(pinfo->cinfo, COL_INFO);
    at = p2pc_holes_enter(tvb, pinfo, tree, data, &bip324_framing);
    p2pc_holes_dissect_pdus(tvb, at, pinfo, tree, data, &bip324_framing);
    p2pc_holes_leave(tvb, pinfo, data);
    return (int)tvb_captured_length(tvb);
}

void
proto_register_bip324(void)
{
    static hf_register_info hf[] = {
        { &hf_bip324_ellswift, { "ElligatorSwift public key", "bip324.ellswift", FT_BYTES, BASE_NONE, NULL, 0x0,
            "The sender's ephemeral public key, ElligatorSwift-encoded (64 bytes)", HFILL } },
        { &hf_bip324_encrypted, { "Encrypted bytes", "bip324.encrypted", FT_BYTES, BASE_NONE, NULL, 0x0,
            "Garbage, garbage terminator and ChaCha20-Poly1305 packets (lengths encrypted too)", HFILL } },
    };
    static gint *ett[] = { &ett_bip324 };
    static ei_register_info ei[] = {
        { &ei_bip324_encrypted, { "bip324.encrypted_transport", PI_UNDECODED, PI_NOTE,
            "BIP324 v2 transport: encrypted, with no key log to open it (the Bitcoin messages are not visible)",
            EXPFILL } },
    };
    expert_module_t *expert;

    proto_bip324 = proto_register_protocol("Bitcoin v2 P2P transport (BIP324)", "BIP324", "bip324");
    proto_register_field_array(proto_bip324, hf, array_length(hf));
    proto_register_subtree_array(ett, array_length(ett));
    expert = expert_register_protocol(proto_bip324);
    expert_register_field_array(expert, ei, array_length(ei));
}
