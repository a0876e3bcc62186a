/* packet-fisco3.c
 * Routines for FISCO BCOS 3.x gateway P2P message dissection, with zstd payload compression.
 *
 * Sources: FISCO-BCOS/FISCO-BCOS v3.16.4 (docs/fisco.md):
 *   bcos-gateway/bcos-gateway/libp2p/P2PMessage.{h,cpp}   header, options, COMPRESS, zstd
 *   bcos-gateway/bcos-gateway/libp2p/P2PMessageV2.cpp     TTL and P2P node IDs from Version V1
 *   bcos-gateway/bcos-gateway/libp2p/Service.cpp          the handshake: min of the two maxVersions
 *   bcos-gateway/bcos-gateway/libp2p/ServiceV2.cpp        resetP2pID: raw IDs below V3, short from V3
 *   bcos-framework/bcos-framework/gateway/GatewayTypeDef.h HASH_NODEID_MAX_SIZE (a raw ID is longer)
 *   bcos-tars-protocol/bcos-tars-protocol/tars/ProtocolInfo.tars  the handshake's payload
 *   bcos-gateway/bcos-gateway/libp2p/Common.h             c_compressThreshold 1024, zstd level 1
 *   bcos-gateway/bcos-gateway/Common.h                    MAX_MESSAGE_LENGTH 32 MiB
 *   bcos-framework/bcos-framework/gateway/GatewayTypeDef.h GatewayMessageType (packet types)
 *   bcos-framework/bcos-framework/protocol/Protocol.h     MessageExtFieldFlag, ModuleID
 *   bcos-front/bcos-front/FrontMessage.cpp                 the front service's message
 *
 *   Length u32 | Version u16 | PacketType u16 | Seq u32 | Ext u16
 *   [Version >= V1: TTL i16 | srcP2PNodeID (u16 len) | dstP2PNodeID (u16 len)]
 *   [PeerToPeerMessage, BroadcastMessage: groupID (u16 len) | srcNodeID (u16 len) |
 *    dst count u8 | dst nodeIDs (each srcNodeID's length) | moduleID u16]
 *   payload: zstd (one frame) when Ext has COMPRESS; for messages 5 and 6 a front message:
 *   moduleID u16 | uuid (u8 len) | ext u16 (Response 1) | the module's payload.
 * Module payloads read here: TxsSync (bcos-txpool sync/protocol/proto/TxsSync.proto, packet types
 * in sync/utilities/Common.h), whose txsData is a tars Block (bcos-tars-protocol tars/Block.tars)
 * of the transactions; BlockSync (bcos-sync protocol/proto/BlockSync.proto, utilities/Common.h).
 *
 * All big-endian; Length covers the whole message.  FISCO compresses only the payload, only
 * over 1024 bytes and only from Version V2, and sends the zstd output even when it is larger.
 * Each side's V0 handshake states its ProtocolInfo; the session then runs at the lower of the two
 * maxVersions, kept per connection here.  A message's own Version decides its framing (as
 * P2PMessageV2::decodeHeader does): heartbeats and PBFT broadcasts (Gateway::broadcastMessage)
 * stay at V0 on any session.
 * Both generations use port 30300: packet-fisco.c hands a connection whose first message is a
 * 3.x header here (fisco3_plausible()), in plaintext and, decrypted by Wireshark's TLS, over TLS
 * (dissect_fisco3_tls()).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/p2pc-compat.h"
#include "core/codecs.h"
#include "core/conn.h"
#include "core/holes.h"
#include "core/msgtype.h"
#include "core/payload.h"
#include "core/prefs.h"
#include "core/protobuf.h"
#include "core/record.h"
#include "core/spec.h"
#include "core/tree-room.h"
#include "fisco/fisco3.h"

#include <epan/conversation.h>
#include <epan/expert.h>
#include <epan/dissectors/packet-tcp.h>

void proto_register_fisco3(void);
void proto_reg_handoff_fisco3(void);

#define FISCO3_HEADER_LEN          14
#define FISCO3_MAX_LENGTH          (32 * 1024 * 1024)
#define FISCO3_COMPRESS_THRESHOLD  1024
#define FISCO3_MAX_VERSION         3
#define FISCO3_FRONT_MIN_LEN       5
#define FISCO3_HASH_NODEID_MAX     33   /* HASH_NODEID_MAX_SIZE: a longer P2P ID is raw (hex text) */

enum { EXT_RESPONSE = 0x01, EXT_CONSENSUS = 0x02, EXT_OBSERVER = 0x04, EXT_FREE = 0x08,
       EXT_COMPRESS = 0x10, EXT_LIGHT = 0x20, EXT_ALL = 0x3f };
enum { GW_HANDSHAKE = 0x2, GW_P2P = 0x5, GW_BROADCAST = 0x6, GW_LAST = 0xd };

static const value_string gateway_type_vals[] = {
    { 0x1, "Heartbeat" }, { 0x2, "Handshake" }, { 0x3, "RequestNodeStatus" },
    { 0x4, "ResponseNodeStatus" }, { 0x5, "PeerToPeerMessage" }, { 0x6, "BroadcastMessage" },
    { 0x7, "AMOPMessageType" }, { 0x8, "WSMessageType" }, { 0x9, "SyncNodeSeq" },
    { 0xa, "RouterTableSyncSeq" }, { 0xb, "RouterTableResponse" }, { 0xc, "RouterTableRequest" },
    { 0xd, "ForwardMessage" },
    { 0, NULL }
};

static const value_string module_vals[] = {
    { 1000, "PBFT" }, { 1001, "Raft" }, { 2000, "BlockSync" }, { 2001, "TxsSync" },
    { 2002, "ConsTxsSync" }, { 3000, "AMOP" },
    { 4000, "LIGHTNODE_GET_BLOCK" }, { 4001, "LIGHTNODE_GET_TRANSACTIONS" },
    { 4002, "LIGHTNODE_GET_RECEIPTS" }, { 4003, "LIGHTNODE_GET_STATUS" },
    { 4004, "LIGHTNODE_SEND_TRANSACTION" }, { 4005, "LIGHTNODE_CALL" }, { 4006, "LIGHTNODE_GET_ABI" },
    { 5000, "SYNC_PUSH_TRANSACTION" }, { 5001, "SYNC_GET_TRANSACTIONS" },
    { 6000, "TREE_PUSH_TRANSACTION" },
    { 0, NULL }
};

enum { TXS_PACKET = 0, TXS_STATUS = 1, TXS_REQUEST = 2, TXS_RESPONSE = 3 };
static const value_string txs_packet_vals[] = {
    { TXS_PACKET, "TxsPacket" }, { TXS_STATUS, "TxsStatusPacket" }, { TXS_REQUEST, "TxsRequestPacket" },
    { TXS_RESPONSE, "TxsResponsePacket" },
    { 0, NULL }
};
static const value_string block_packet_vals[] = {
    { 0, "BlockStatusPacket" }, { 1, "BlockRequestPacket" }, { 2, "BlockResponsePacket" },
    { 0, NULL }
};
enum { MOD_BLOCKSYNC = 2000, MOD_TXSSYNC = 2001 };
#define TARS_MAX_DEPTH 16

static const value_string version_vals[] = {
    { 0, "V0" }, { 1, "V1" }, { 2, "V2" }, { 3, "V3 (short P2P IDs)" },
    { 0, NULL }
};

static int proto_fisco3 = -1;
static int hf_length = -1;
static int hf_version = -1;
static int hf_packet_type = -1;
static int hf_seq = -1;
static int hf_ext = -1;
static int hf_ext_response = -1;
static int hf_ext_consensus = -1;
static int hf_ext_observer = -1;
static int hf_ext_free = -1;
static int hf_ext_compress = -1;
static int hf_ext_light = -1;
static int hf_ttl = -1;
static int hf_src_p2p = -1;
static int hf_dst_p2p = -1;
static int hf_src_p2p_short = -1;
static int hf_dst_p2p_short = -1;
static int hf_group = -1;
static int hf_src_node = -1;
static int hf_dst_count = -1;
static int hf_dst_node = -1;
static int hf_module = -1;
static int hf_data = -1;
static int hf_uncompressed_len = -1;
static int hf_front_module = -1;
static int hf_front_uuid = -1;
static int hf_front_ext = -1;
static int hf_front_response = -1;
static int hf_front_payload = -1;
static int hf_txs_type = -1;
static int hf_txs_count = -1;
static int hf_txs_hashes = -1;
static int hf_block_type = -1;
static int hf_block_number = -1;
static int hf_blocks = -1;
static int hf_hs_module = -1;
static int hf_hs_min = -1;
static int hf_hs_max = -1;
static int hf_negotiated = -1;

static gint ett_fisco3 = -1;
static gint ett_header = -1;
static gint ett_ext = -1;
static gint ett_options = -1;
static gint ett_front = -1;
static gint ett_module = -1;

static expert_field ei_length = EI_INIT;
static expert_field ei_header = EI_INIT;
static expert_field ei_decompress = EI_INIT;
static expert_field ei_front = EI_INIT;
static expert_field ei_module_payload = EI_INIT;
static expert_field ei_handshake = EI_INIT;
static expert_field ei_hs_range = EI_INIT;
static expert_field ei_hs_unknown_version = EI_INIT;
static expert_field ei_not_negotiated = EI_INIT;
static expert_field ei_version = EI_INIT;

static dissector_handle_t fisco3_handle;

/* A connection's handshakes: each side's ProtocolInfo and the frame it came in, in the session
 * it came in (the first pass fills it; a message sees the negotiation only in a frame after both,
 * so one pass and two agree; core/conn.h: it goes on across a live session reset, whose next
 * session numbers frames anew).  Side 0 is the side of the connection's first message. */
typedef struct {
    address addr[2];
    guint32 port[2];
    gboolean seen[2];
    guint32 frame[2];
    guint session[2];
    guint32 max[2];             /* each side's maxVersion, as FISCO keeps it (a uint32_t) */
} fisco3_conv_t;

static int * const ext_fields[] = {
    &hf_ext_response, &hf_ext_consensus, &hf_ext_observer, &hf_ext_free, &hf_ext_compress,
    &hf_ext_light, NULL
};

gboolean
fisco3_plausible(tvbuff_t *tvb, int offset)
{
    guint32 length;
    guint16 type;
    if (tvb_captured_length_remaining(tvb, offset) < FISCO3_HEADER_LEN)
        return FALSE;
    length = tvb_get_ntohl(tvb, offset);
    type = tvb_get_ntohs(tvb, offset + 6);
    return length >= FISCO3_HEADER_LEN && length <= FISCO3_MAX_LENGTH &&
           tvb_get_ntohs(tvb, offset + 4) <= FISCO3_MAX_VERSION && type >= 1 && type <= GW_LAST &&
           (tvb_get_ntohs(tvb, offset + 12) & ~EXT_ALL) == 0;
}

static guint
get_fisco3_pdu_len(packet_info *pinfo, tvbuff_t *tvb, int offset, void *data _U_)
{
    guint32 length = tvb_get_ntohl(tvb, offset);
    /* A Length below the header or over the limit cannot be followed: show this header with
     * its expert item and drop the rest of the segment rather than wait for up to 4 GB. */
    if (length < FISCO3_HEADER_LEN)
        return FISCO3_HEADER_LEN;
    if (length > FISCO3_MAX_LENGTH)
        return tvb_reported_length_remaining(tvb, offset);
    return length;
}

/* A u16-length-prefixed field at *off, within [*off, end): added and skipped; FALSE (and an
 * expert item) when it runs past the end. */
static gboolean
add_len16(proto_tree *tree, packet_info *pinfo, proto_item *ti, int hf, tvbuff_t *tvb, guint *off,
          guint end, guint enc, guint16 *len_out)
{
    guint16 len;
    if (*off + 2 > end) {
        expert_add_info(pinfo, ti, &ei_header);
        return FALSE;
    }
    len = tvb_get_ntohs(tvb, *off);
    if (*off + 2 + len > end) {
        expert_add_info(pinfo, ti, &ei_header);
        return FALSE;
    }
    proto_tree_add_item(tree, hf, tvb, *off + 2, len, enc);
    *off += 2 + len;
    if (len_out)
        *len_out = len;
    return TRUE;
}

/* The options of messages 5 and 6; the module ID, or -1 when they do not parse. */
static gint
dissect_options(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, proto_item *ti, guint *off, guint end)
{
    guint16 node_len;
    guint8 count;
    proto_tree *ot = proto_tree_add_subtree(tree, tvb, *off, end - *off, ett_options, NULL, "Options");
    if (!add_len16(ot, pinfo, ti, hf_group, tvb, off, end, ENC_ASCII, NULL) ||
        !add_len16(ot, pinfo, ti, hf_src_node, tvb, off, end, ENC_NA, &node_len))
        return -1;
    if (*off + 1 > end) {
        expert_add_info(pinfo, ti, &ei_header);
        return -1;
    }
    count = tvb_get_uint8(tvb, *off);
    proto_tree_add_item(ot, hf_dst_count, tvb, *off, 1, ENC_NA);
    *off += 1;
    if (*off + (guint)count * node_len + 2 > end) {
        expert_add_info(pinfo, ti, &ei_header);
        return -1;
    }
    for (guint i = 0; i < count; i++, *off += node_len)
        proto_tree_add_item(ot, hf_dst_node, tvb, *off, node_len, ENC_NA);
    proto_tree_add_item(ot, hf_module, tvb, *off, 2, ENC_BIG_ENDIAN);
    *off += 2;
    return tvb_get_ntohs(tvb, *off - 2);
}

/* The front service's message (the payload of messages 5 and 6); the module's payload, or NULL. */
static tvbuff_t *
dissect_front(tvbuff_t *raw, packet_info *pinfo, proto_tree *tree, proto_item *ti, gint gw_module)
{
    guint len = tvb_captured_length(raw);
    guint8 uuid_len;
    proto_tree *ft;
    guint16 module;

    if (len < FISCO3_FRONT_MIN_LEN || len < FISCO3_FRONT_MIN_LEN + (guint)tvb_get_uint8(raw, 2)) {
        expert_add_info(pinfo, ti, &ei_front);
        return NULL;
    }
    uuid_len = tvb_get_uint8(raw, 2);
    ft = proto_tree_add_subtree(tree, raw, 0, -1, ett_front, NULL, "Front message");
    module = tvb_get_ntohs(raw, 0);
    proto_tree_add_item(ft, hf_front_module, raw, 0, 2, ENC_BIG_ENDIAN);
    if (module != gw_module)
        expert_add_info_format(pinfo, ti, &ei_front, "Front module %u differs from the options' %d",
                               module, gw_module);
    proto_tree_add_item(ft, hf_front_uuid, raw, 3, uuid_len, ENC_ASCII);
    proto_tree_add_item(ft, hf_front_ext, raw, 3 + uuid_len, 2, ENC_BIG_ENDIAN);
    proto_tree_add_item(ft, hf_front_response, raw, 3 + uuid_len, 2, ENC_BIG_ENDIAN);
    if (len > FISCO3_FRONT_MIN_LEN + (guint)uuid_len)
        proto_tree_add_item(ft, hf_front_payload, raw, FISCO3_FRONT_MIN_LEN + uuid_len, -1, ENC_NA);
    return tvb_new_subset_remaining(raw, FISCO3_FRONT_MIN_LEN + uuid_len);
}

/* ---- module payloads: protobuf messages, a tars block inside ---- */

/* A tars head (TarsOutputStream: tag << 4 | type, tag 15 followed by a tag byte). */
static gboolean
tars_head(tvbuff_t *tvb, guint *off, guint end, guint *tag, guint *type)
{
    guint8 b;
    if (*off >= end)
        return FALSE;
    b = tvb_get_uint8(tvb, (*off)++);
    *type = b & 0x0f;
    *tag = b >> 4;
    if (*tag == 15) {
        if (*off >= end)
            return FALSE;
        *tag = tvb_get_uint8(tvb, (*off)++);
    }
    return TRUE;
}

/* A tars integer's value (any width, or the zero tag) whose head, of `type`, was read. */
static gboolean
tars_int_value(tvbuff_t *tvb, guint *off, guint end, guint type, guint64 *v)
{
    guint n;
    switch (type) {
    case 0: n = 1; break;
    case 1: n = 2; break;
    case 2: n = 4; break;
    case 3: n = 8; break;
    case 12: *v = 0; return TRUE;
    default: return FALSE;
    }
    if (n > end - *off)
        return FALSE;
    *v = n == 1 ? (guint64)(gint8)tvb_get_uint8(tvb, *off) : n == 2 ? (guint64)(gint16)tvb_get_ntohs(tvb, *off) :
         n == 4 ? (guint64)(gint32)tvb_get_ntohl(tvb, *off) : tvb_get_ntoh64(tvb, *off);
    *off += n;
    return TRUE;
}

/* A tars integer, its head then its value. */
static gboolean
tars_int(tvbuff_t *tvb, guint *off, guint end, guint64 *v)
{
    guint tag, type;
    return tars_head(tvb, off, end, &tag, &type) && tars_int_value(tvb, off, end, type, v);
}

/* Skip a tars value of `type` whose head was read. */
static gboolean
tars_skip(tvbuff_t *tvb, guint *off, guint end, guint type, guint depth)
{
    static const guint8 fixed[] = { 1, 2, 4, 8, 4, 8 };
    guint64 n = 0;
    guint tag, t;
    if (depth > TARS_MAX_DEPTH)
        return FALSE;
    switch (type) {
    case 0: case 1: case 2: case 3: case 4: case 5:
        n = fixed[type];
        break;
    case 6:
        if (*off >= end)
            return FALSE;
        n = tvb_get_uint8(tvb, (*off)++);
        break;
    case 7:
        if (end - *off < 4)
            return FALSE;
        n = tvb_get_ntohl(tvb, *off);
        *off += 4;
        break;
    case 8: case 9: {
        guint64 count;
        if (!tars_int(tvb, off, end, &count) || count > end - *off)
            return FALSE;
        for (guint64 i = 0; i < count * (type == 8 ? 2 : 1); i++)
            if (!tars_head(tvb, off, end, &tag, &t) || !tars_skip(tvb, off, end, t, depth + 1))
                return FALSE;
        return TRUE;
    }
    case 10:
        for (;;) {
            if (!tars_head(tvb, off, end, &tag, &t))
                return FALSE;
            if (t == 11)
                return TRUE;
            if (!tars_skip(tvb, off, end, t, depth + 1))
                return FALSE;
        }
    case 11: case 12:
        return TRUE;
    case 13:
        if (!tars_head(tvb, off, end, &tag, &t) || t != 0 || !tars_int(tvb, off, end, &n))
            return FALSE;
        break;
    default:
        return FALSE;
    }
    if (n > end - *off)
        return FALSE;
    *off += (guint)n;
    return TRUE;
}

/* The transactions in a tars Block (its field 4, vector<Transaction>); -1 when it does not parse. */
static gint64
tars_block_tx_count(tvbuff_t *tvb, guint off, guint end)
{
    guint tag, type;
    guint64 count;
    while (off < end) {
        if (!tars_head(tvb, &off, end, &tag, &type))
            return -1;
        if (tag == 4 && type == 9)
            return tars_int(tvb, &off, end, &count) && count <= end - off ? (gint64)count : -1;
        if (!tars_skip(tvb, &off, end, type, 0))
            return -1;
    }
    return 0;
}

/* A handshake's ProtocolInfo (ProtocolInfo.tars: moduleID 1, minVersion 2, maxVersion 3, each a
 * tars int, an int32), as read: each field's value, its tree item, and the fields written as a
 * tars int64, which are no int32: FISCO's decoder (tars read(Int32)) throws a type mismatch on
 * them, Service::onReceiveProtocol logs it and negotiates nothing, and that side's session stays
 * at its initial V0. */
typedef struct {
    gint64 val[4];
    proto_item *item[4];
    guint wide;                 /* bit `tag`: that field was a tars int64 */
} protocol_info_t;

/* FISCO keeps a version as a uint32_t (ProtocolInfo::setMaxVersion): a negative int32 is that. */
#define PROTOCOL_VERSION(v) ((guint32)(gint32)(v))
#define PROTOCOL_VERSION_MAX 3  /* ProtocolVersion (bcos-framework protocol/Protocol.h): V0..V3 */

/* The handshake's payload, a tars ProtocolInfo written field by field (ProtocolInfoCodecImpl::
 * encode: moduleID 1, minVersion 2, maxVersion 3, no struct head) in tvb[off, end), its fields
 * added to `tree` (may be NULL) and put in *pi; FALSE when it does not parse. */
static gboolean
protocol_info_read(tvbuff_t *tvb, guint off, guint end, proto_tree *tree, protocol_info_t *pi)
{
    static int * const hfs[] = { NULL, &hf_hs_module, &hf_hs_min, &hf_hs_max };
    guint tag, type, found = 0;
    guint64 v;

    memset(pi, 0, sizeof(*pi));
    while (off < end) {
        guint start = off;
        if (!tars_head(tvb, &off, end, &tag, &type))
            break;
        if (tag >= 1 && tag <= 3) {
            if (!tars_int_value(tvb, &off, end, type, &v))
                break;
            pi->item[tag] = proto_tree_add_int64(tree, *hfs[tag], tvb, start, off - start, (gint64)v);
            pi->val[tag] = (gint64)v;
            if (type == 3)
                pi->wide |= 1u << tag;
            found |= 1u << tag;
        } else if (!tars_skip(tvb, &off, end, type, 0)) {
            break;
        }
    }
    return off == end && found == 0xe;
}

/* The same, added to `tree`; the sender's maxVersion in *max when FISCO would take this
 * handshake.  FALSE and an expert item when it does not parse or a field is no int32 (then no
 * version: a value past int32 is never cut into one); a maxVersion FISCO does not know gets a
 * warning, and is kept: a FISCO node negotiates the lower of it and its own maxVersion. */
static gboolean
dissect_protocol_info(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, proto_item *ti, guint32 *max)
{
    static const char * const names[] = { NULL, "moduleID", "minVersion", "maxVersion" };
    protocol_info_t pi;

    if (!protocol_info_read(tvb, 0, tvb_captured_length(tvb), tree, &pi)) {
        expert_add_info(pinfo, ti, &ei_handshake);
        return FALSE;
    }
    for (guint tag = 1; tag <= 3; tag++)
        if (pi.wide & (1u << tag))
            expert_add_info_format(pinfo, pi.item[tag] ? pi.item[tag] : ti, &ei_hs_range,
                                   "ProtocolInfo %s %" PRId64 " is written as a tars int64, where FISCO reads "
                                   "an int32: FISCO refuses this handshake and negotiates nothing", names[tag],
                                   pi.val[tag]);
    if (pi.wide)
        return FALSE;
    *max = PROTOCOL_VERSION(pi.val[3]);
    if (*max > PROTOCOL_VERSION_MAX)
        expert_add_info_format(pinfo, pi.item[3] ? pi.item[3] : ti, &ei_hs_unknown_version,
                               "ProtocolInfo maxVersion %" PRId64 " is no version FISCO knows (V0 to V%u; it keeps "
                               "it as the uint32 %u): a FISCO node negotiates the lower of it and its own maxVersion",
                               pi.val[3], PROTOCOL_VERSION_MAX, *max);
    return TRUE;
}

gboolean
fisco3_handshake_at(tvbuff_t *tvb, guint offset)
{
    protocol_info_t pi;
    guint32 length;
    if (!fisco3_plausible(tvb, (int)offset))
        return FALSE;
    length = tvb_get_ntohl(tvb, offset);
    /* V0, the Handshake packet type, nothing in Ext (a handshake is never a response nor
     * compressed), and the whole message here. */
    return length <= (guint)tvb_captured_length_remaining(tvb, offset) && tvb_get_ntohs(tvb, offset + 4) == 0 &&
           tvb_get_ntohs(tvb, offset + 6) == GW_HANDSHAKE && tvb_get_ntohs(tvb, offset + 12) == 0 &&
           protocol_info_read(tvb, offset + FISCO3_HEADER_LEN, offset + length, NULL, &pi);
}

static fisco3_conv_t *
fisco3_get_conv(packet_info *pinfo, guint *side)
{
    gboolean made;
    fisco3_conv_t *fc = (fisco3_conv_t *)p2pc_conn_state(pinfo, P2PC_SLOT_FISCO3, sizeof(fisco3_conv_t), &made);
    if (made) {
        wmem_allocator_t *pool = p2pc_conn_pool(p2pc_conn_get(pinfo));
        copy_address_wmem(pool, &fc->addr[0], &pinfo->src);
        fc->port[0] = pinfo->srcport;
        copy_address_wmem(pool, &fc->addr[1], &pinfo->dst);
        fc->port[1] = pinfo->destport;
    }
    *side = (guint)p2pc_conn_dir(&fc->addr[0], fc->port[0], pinfo);
    return fc;
}

/* The version the connection negotiated before this frame (Service::onReceiveProtocol: the
 * lower of the two maxVersions), or -1 when its handshakes are not both in the capture before it
 * (or FISCO refused one). */
static gint64
negotiated_version(const fisco3_conv_t *fc, packet_info *pinfo)
{
    for (int side = 0; side < 2; side++)
        if (!fc->seen[side] || (fc->session[side] == p2pc_conn_session() && fc->frame[side] >= pinfo->num))
            return -1;
    return (gint64)MIN(fc->max[0], fc->max[1]);
}

/* A P2P node ID of the V1 fields, raw (the public key as hex text) when longer than
 * HASH_NODEID_MAX_SIZE, else short (ServiceV2.cpp isRawP2pID).  The length decides, not the
 * version: resetP2pID sends raw IDs below V3 and short ones from V3, but falls back to the
 * other form when it does not know the peer's. */
static gboolean
add_p2p_id(proto_tree *tree, packet_info *pinfo, proto_item *ti, gboolean src, tvbuff_t *tvb, guint *off,
           guint end)
{
    gboolean raw = *off + 2 <= end && tvb_get_ntohs(tvb, *off) > FISCO3_HASH_NODEID_MAX;
    int hf = raw ? (src ? hf_src_p2p : hf_dst_p2p) : (src ? hf_src_p2p_short : hf_dst_p2p_short);
    return add_len16(tree, pinfo, ti, hf, tvb, off, end, raw ? ENC_ASCII : ENC_NA, NULL);
}

/* TxsSync and BlockSync payloads: the packet type's name into *type_name and the transactions
 * a TxsPacket or TxsResponsePacket carries into *batch. */
static void
dissect_module(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, proto_item *ti, gint module,
               const char **type_name, guint32 *batch)
{
    int off = 0, end = (int)tvb_captured_length(tvb);
    guint txs_off = 0, txs_len = 0;
    guint64 ptype = 0, hashes = 0, blocks = 0;
    p2pc_pb_field_t f;
    gboolean has_txs = FALSE;
    proto_tree *mt;

    if (module != MOD_TXSSYNC && module != MOD_BLOCKSYNC)
        return;
    mt = proto_tree_add_subtree(tree, tvb, 0, -1, ett_module, NULL,
                                module == MOD_TXSSYNC ? "TxsSyncMessage" : "BlockSyncMessage");
    while (off < end) {
        int start = off;
        if (!p2pc_pb_next(tvb, &off, end, &f)) {
            expert_add_info_format(pinfo, ti, &ei_module_payload, "Protobuf field at byte %d does not parse", start);
            return;
        }
        if (f.number == 2 && f.wire_type == 0) {
            ptype = f.value;
        } else if (module == MOD_TXSSYNC && f.number == 3 && f.wire_type == 2) {
            has_txs = TRUE;
            txs_off = (guint)f.start;
            txs_len = (guint)f.len;
        } else if (module == MOD_TXSSYNC && f.number == 4 && f.wire_type == 2) {
            hashes++;
        } else if (module == MOD_BLOCKSYNC && f.number == 3 && f.wire_type == 0) {
            proto_tree_add_uint64(mt, hf_block_number, tvb, start, off - start, f.value);
        } else if (module == MOD_BLOCKSYNC && f.number == 7 && f.wire_type == 2) {
            blocks++;
        }
    }
    if (module == MOD_BLOCKSYNC) {
        proto_tree_add_uint64(mt, hf_block_type, tvb, 0, end, ptype);
        proto_tree_add_uint64(mt, hf_blocks, tvb, 0, end, blocks);
        *type_name = try_val_to_str((guint32)ptype, block_packet_vals);
        return;
    }
    proto_tree_add_uint64(mt, hf_txs_type, tvb, 0, end, ptype);
    *type_name = try_val_to_str((guint32)ptype, txs_packet_vals);
    if (hashes)
        proto_tree_add_uint64(mt, hf_txs_hashes, tvb, 0, end, hashes);
    if (has_txs && (ptype == TXS_PACKET || ptype == TXS_RESPONSE)) {
        gint64 n = tars_block_tx_count(tvb, txs_off, txs_off + txs_len);
        if (n < 0) {
            expert_add_info(pinfo, ti, &ei_module_payload);
        } else {
            proto_tree_add_uint64(mt, hf_txs_count, tvb, txs_off, txs_len, (guint64)n);
            *batch = (guint32)MIN(n, G_MAXUINT32);
        }
    }
}

/* From V1: the header's ttl and the source and destination node IDs, checked against the
 * version the session negotiated.  FALSE: they run past the message's Length. */
static gboolean
read_v1_fields(tvbuff_t *tvb, packet_info *pinfo, proto_tree *ht, proto_item *ti, guint16 version,
               gint64 negotiated, guint *off, guint32 length)
{
    if (negotiated < 0)
        expert_add_info(pinfo, ti, &ei_not_negotiated);
    else if (version != negotiated)
        expert_add_info_format(pinfo, ti, &ei_version, "Version V%u on a session negotiated at V%" PRId64 ": FISCO "
                               "sends only V0 and the negotiated version", version, negotiated);
    /* The ttl is inside the message: a Length of 14 leaves no room for it. */
    if (*off + 2 > length) {
        expert_add_info(pinfo, ti, &ei_header);
        return FALSE;
    }
    proto_tree_add_item(ht, hf_ttl, tvb, *off, 2, ENC_BIG_ENDIAN);
    *off += 2;
    return add_p2p_id(ht, pinfo, ti, TRUE, tvb, off, length) && add_p2p_id(ht, pinfo, ti, FALSE, tvb, off, length);
}

/* The payload as the modules read it: zstd-decompressed when the header says compressed (NULL
 * when that fails), else as it is; rec's codec and raw length follow. */
static tvbuff_t *
read_payload(tvbuff_t *payload, packet_info *pinfo, proto_tree *ft, proto_item *ti, guint16 version, guint16 ext,
             p2pc_record_t *rec, gboolean *bounded)
{
    static const p2pc_payload_codec_t zstd = { P2PC_CODEC_ZSTD, FISCO3_MAX_LENGTH,
        "Decompressed FISCO 3.x payload", &hf_uncompressed_len, NULL, &ei_decompress };
    tvbuff_t *raw;
    guint rl;

    if (!(ext & EXT_COMPRESS))
        return payload;
    rec->codec = "zstd";
    if (version < 2)
        p2pc_spec(pinfo, ti, P2PC_SPEC_FISCO_FLAG, "Compressed at Version %u: FISCO compresses "
                  "only from V2", version);
    raw = p2pc_payload_decompress(&zstd, payload, pinfo, ft, ti, bounded, NULL);
    if (!raw)
        return NULL;
    rl = tvb_captured_length(raw);
    rec->raw_len = rl;
    if (rl <= FISCO3_COMPRESS_THRESHOLD)
        p2pc_spec(pinfo, ti, P2PC_SPEC_FISCO_THRESHOLD, "Compressed payload of %u bytes: "
                  "FISCO compresses only payloads over %u bytes", rl, FISCO3_COMPRESS_THRESHOLD);
    return raw;
}

/* The module's name and its packet's, or the gateway packet type's; "unknown" when FISCO
 * defines none of that number (core/msgtype.h). */
static const char *
msg_type_of(packet_info *pinfo, proto_item *ti, gint module, const char *packet_name, guint16 type)
{
    const char *msg_type;
    if (module >= 0) {
        msg_type = try_val_to_str((guint32)module, module_vals);
        if (!msg_type)
            return p2pc_msg_type_unknown(pinfo, ti, "Module %d", module);
        return packet_name ? wmem_strdup_printf(pinfo->pool, "%s.%s", msg_type, packet_name) : msg_type;
    }
    msg_type = try_val_to_str(type, gateway_type_vals);
    return msg_type ? msg_type : p2pc_msg_type_unknown(pinfo, ti, "Packet type %u", type);
}

/* A handshake's ProtocolInfo; the first of each side (first pass) is the connection's. */
static void
dissect_handshake(tvbuff_t *raw, packet_info *pinfo, proto_tree *ft, proto_item *ti, fisco3_conv_t *fc,
                  guint side)
{
    guint32 max;

    if (dissect_protocol_info(raw, pinfo, ft, ti, &max) && !PINFO_FD_VISITED(pinfo) && !fc->seen[side]) {
        fc->seen[side] = TRUE;
        fc->frame[side] = pinfo->num;
        fc->session[side] = p2pc_conn_session();
        fc->max[side] = max;
    }
}

static int
dissect_fisco3_pdu(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data _U_)
{
    guint32 length = tvb_get_ntohl(tvb, 0);
    guint16 version, type, ext;
    guint off = FISCO3_HEADER_LEN;
    gint module = -1;
    proto_item *ti, *li;
    proto_tree *ft, *ht;
    tvbuff_t *payload, *raw;
    const char *packet_name = NULL;
    p2pc_record_t rec;
    gboolean bounded = FALSE;
    guint avail = tvb_captured_length(tvb);
    guint side;
    fisco3_conv_t *fc = fisco3_get_conv(pinfo, &side);
    gint64 negotiated = negotiated_version(fc, pinfo);

    col_set_str(pinfo->cinfo, COL_PROTOCOL, "FISCO3");
    /* A frame of thousands of messages draws as many as fit and counts them all. */
    ti = proto_tree_add_item(p2pc_tree_room(tree, pinfo, tvb, P2PC_TREE_MESSAGE_ITEMS), proto_fisco3, tvb, 0, -1, ENC_NA);
    ft = proto_item_add_subtree(ti, ett_fisco3);
    ht = proto_tree_add_subtree(ft, tvb, 0, FISCO3_HEADER_LEN, ett_header, NULL, "Header");
    li = proto_tree_add_item(ht, hf_length, tvb, 0, 4, ENC_BIG_ENDIAN);
    if (length < FISCO3_HEADER_LEN || length > FISCO3_MAX_LENGTH) {
        expert_add_info_format(pinfo, li, &ei_length, "Length %u outside [%u, %u]", length,
                               FISCO3_HEADER_LEN, FISCO3_MAX_LENGTH);
        col_append_sep_str(pinfo->cinfo, COL_INFO, ", ", "[bad Length]");
        col_set_fence(pinfo->cinfo, COL_INFO);
        /* Counted, not lost: the bytes dropped with this header. */
        p2pc_record_undecoded(tvb, 0, -1, pinfo, tree, "fisco3", avail, NULL);
        return avail;
    }
    version = tvb_get_ntohs(tvb, 4);
    type = tvb_get_ntohs(tvb, 6);
    ext = tvb_get_ntohs(tvb, 12);
    proto_tree_add_item(ht, hf_version, tvb, 4, 2, ENC_BIG_ENDIAN);
    proto_tree_add_item(ht, hf_packet_type, tvb, 6, 2, ENC_BIG_ENDIAN);
    proto_tree_add_item(ht, hf_seq, tvb, 8, 4, ENC_BIG_ENDIAN);
    proto_tree_add_bitmask(ht, tvb, 12, hf_ext, ett_ext, ext_fields, ENC_BIG_ENDIAN);
    if (negotiated >= 0)
        proto_item_set_generated(proto_tree_add_uint(ht, hf_negotiated, tvb, 4, 2, (guint32)negotiated));
    /* A message whose fields run past its Length is framed all the same: counted, not lost. */
    if ((version >= 1 && !read_v1_fields(tvb, pinfo, ht, ti, version, negotiated, &off, length)) ||
        ((type == GW_P2P || type == GW_BROADCAST) &&
         (module = dissect_options(tvb, pinfo, ft, ti, &off, length)) < 0)) {
        p2pc_record_undecoded(tvb, 0, length, pinfo, tree, "fisco3", length, NULL);
        return avail;
    }
    proto_item_set_len(ht, off);

    p2pc_record_init(&rec, "fisco3", NULL);
    rec.wire_len = length;
    rec.header_len = off;
    rec.payload_len = length - off;
    rec.raw_len = rec.payload_len;
    payload = tvb_new_subset_length(tvb, off, length - off);
    if (length > off)
        proto_tree_add_item(ft, hf_data, tvb, off, length - off, ENC_NA);
    raw = read_payload(payload, pinfo, ft, ti, version, ext, &rec, &bounded);
    rec.raw_tvb = raw;
    if (raw && type == GW_HANDSHAKE)
        dissect_handshake(raw, pinfo, ft, ti, fc, side);
    if (raw && module >= 0) {
        tvbuff_t *mp = dissect_front(raw, pinfo, ft, ti, module);
        if (mp)
            dissect_module(mp, pinfo, ft, ti, module, &packet_name, &rec.batch_count);
    }
    rec.msg_type = msg_type_of(pinfo, ti, module, packet_name, type);
    proto_item_append_text(ti, ", %s%s%s", rec.msg_type, (ext & EXT_RESPONSE) ? " (response)" : "",
                           (ext & EXT_COMPRESS) ? ", zstd" : "");
    col_append_sep_str(pinfo->cinfo, COL_INFO, ", ", rec.msg_type);
    if (bounded)
        p2pc_record_bound(&rec);
    p2pc_record_add(tvb, 0, length, pinfo, tree, &rec);
    return avail;
}

static const p2pc_framing_t fisco3_framing = { "fisco3", FISCO3_HEADER_LEN, get_fisco3_pdu_len, dissect_fisco3_pdu };

int
dissect_fisco3(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    guint at;

    col_set_str(pinfo->cinfo, COL_PROTOCOL, "FISCO3");
    col_clear(pinfo->cinfo, COL_INFO);
    at = p2pc_holes_enter(tvb, pinfo, tree, data, &fisco3_framing);
    p2pc_holes_dissect_pdus(tvb, at, pinfo, tree, data, &fisco3_framing);
    p2pc_holes_leave(tvb, pinfo, data);
    return tvb_captured_length(tvb);
}

int
dissect_fisco3_tls(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    col_set_str(pinfo->cinfo, COL_PROTOCOL, "FISCO3");
    col_clear(pinfo->cinfo, COL_INFO);
    /* TLS reassembles its decrypted data as TCP does: whole messages, several per record. */
    tcp_dissect_pdus(tvb, pinfo, tree, TRUE, FISCO3_HEADER_LEN, get_fisco3_pdu_len, dissect_fisco3_pdu, data);
    return tvb_captured_length(tvb);
}

/* Over 80 lines: the registration tables README.dissector asks for (fields, subtrees, expert
 * items, preferences), one entry each; cut up, they would only be harder to find. */
void
proto_register_fisco3(void)
{
    static hf_register_info hf[] = {
        { &hf_length, { "Length", "fisco3.length", FT_UINT32, BASE_DEC, NULL, 0x0,
            "Whole message including the header (compressed size when compressed)", HFILL } },
        { &hf_version, { "Version", "fisco3.version", FT_UINT16, BASE_DEC, VALS(version_vals), 0x0,
            "The connection's negotiated protocol version (V0 in the handshake)", HFILL } },
        { &hf_packet_type, { "Packet type", "fisco3.packet_type", FT_UINT16, BASE_HEX, VALS(gateway_type_vals), 0x0,
            "GatewayMessageType", HFILL } },
        { &hf_seq, { "Seq", "fisco3.seq", FT_UINT32, BASE_DEC, NULL, 0x0, "The sender's message number", HFILL } },
        { &hf_ext, { "Ext", "fisco3.ext", FT_UINT16, BASE_HEX, NULL, 0x0, "MessageExtFieldFlag bits", HFILL } },
        { &hf_ext_response, { "Response", "fisco3.ext.response", FT_BOOLEAN, 16, NULL, EXT_RESPONSE, "An answer to a request", HFILL } },
        { &hf_ext_consensus, { "Consensus node", "fisco3.ext.consensus_node", FT_BOOLEAN, 16, NULL, EXT_CONSENSUS,
            "The sender is a consensus node", HFILL } },
        { &hf_ext_observer, { "Observer node", "fisco3.ext.observer_node", FT_BOOLEAN, 16, NULL, EXT_OBSERVER,
            "The sender is an observer node", HFILL } },
        { &hf_ext_free, { "Free node", "fisco3.ext.free_node", FT_BOOLEAN, 16, NULL, EXT_FREE, "The sender is a free node", HFILL } },
        { &hf_ext_compress, { "Compressed", "fisco3.ext.compress", FT_BOOLEAN, 16, NULL, EXT_COMPRESS,
            "The payload is one zstd frame", HFILL } },
        { &hf_ext_light, { "Light node", "fisco3.ext.light_node", FT_BOOLEAN, 16, NULL, EXT_LIGHT, "The sender is a light node", HFILL } },
        { &hf_ttl, { "TTL", "fisco3.ttl", FT_INT16, BASE_DEC, NULL, 0x0, "Hops left (Version >= V1)", HFILL } },
        { &hf_src_p2p, { "Source P2P node ID", "fisco3.src_p2p_id", FT_STRING, BASE_NONE, NULL, 0x0,
            "The sending gateway (Version >= V1)", HFILL } },
        { &hf_dst_p2p, { "Destination P2P node ID", "fisco3.dst_p2p_id", FT_STRING, BASE_NONE, NULL, 0x0,
            "The receiving gateway, empty when direct (Version >= V1)", HFILL } },
        { &hf_src_p2p_short, { "Source P2P node ID", "fisco3.src_p2p_id_short", FT_BYTES, BASE_NONE, NULL, 0x0,
            "The sending gateway's short ID (Version V3)", HFILL } },
        { &hf_dst_p2p_short, { "Destination P2P node ID", "fisco3.dst_p2p_id_short", FT_BYTES, BASE_NONE, NULL, 0x0,
            "The receiving gateway's short ID, empty when direct (Version V3)", HFILL } },
        { &hf_group, { "Group ID", "fisco3.group", FT_STRING, BASE_NONE, NULL, 0x0, "The group the message is for", HFILL } },
        { &hf_src_node, { "Source node ID", "fisco3.src_node", FT_BYTES, BASE_NONE, NULL, 0x0,
            "The sending group node's public key", HFILL } },
        { &hf_dst_count, { "Destination node count", "fisco3.dst_count", FT_UINT8, BASE_DEC, NULL, 0x0,
            "0 for a broadcast", HFILL } },
        { &hf_dst_node, { "Destination node ID", "fisco3.dst_node", FT_BYTES, BASE_NONE, NULL, 0x0,
            "A receiving group node's public key", HFILL } },
        { &hf_module, { "Module ID", "fisco3.module", FT_UINT16, BASE_DEC, VALS(module_vals), 0x0,
            "Front service module the payload is for", HFILL } },
        { &hf_data, { "Data", "fisco3.data", FT_BYTES, BASE_NONE, NULL, 0x0, "Payload as sent", HFILL } },
        { &hf_uncompressed_len, { "Uncompressed length", "fisco3.uncompressed_len", FT_UINT32, BASE_DEC, NULL, 0x0,
            "Payload bytes after zstd decompression", HFILL } },
        { &hf_front_module, { "Front module ID", "fisco3.front.module", FT_UINT16, BASE_DEC, VALS(module_vals), 0x0,
            "The module the front service hands the payload to", HFILL } },
        { &hf_front_uuid, { "UUID", "fisco3.front.uuid", FT_STRING, BASE_NONE, NULL, 0x0,
            "Request/response match (empty when no answer is expected)", HFILL } },
        { &hf_front_ext, { "Front ext", "fisco3.front.ext", FT_UINT16, BASE_HEX, NULL, 0x0, "Front message flags", HFILL } },
        { &hf_front_response, { "Front response", "fisco3.front.response", FT_BOOLEAN, 16, NULL, 0x0001,
            "Front ext bit 0: an answer to a request", HFILL } },
        { &hf_front_payload, { "Module payload", "fisco3.front.payload", FT_BYTES, BASE_NONE, NULL, 0x0,
            "The module's own encoding (protobuf, tars)", HFILL } },
        { &hf_txs_type, { "TxsSync packet type", "fisco3.txs.type", FT_UINT64, BASE_DEC, NULL, 0x0,
            "TxsSyncPacketType", HFILL } },
        { &hf_txs_count, { "Transactions", "fisco3.txs.count", FT_UINT64, BASE_DEC, NULL, 0x0,
            "Transactions in txsData's tars Block", HFILL } },
        { &hf_txs_hashes, { "Transaction hashes", "fisco3.txs.hashes", FT_UINT64, BASE_DEC, NULL, 0x0,
            "txsHash entries (status and request packets)", HFILL } },
        { &hf_block_type, { "BlockSync packet type", "fisco3.blocksync.type", FT_UINT64, BASE_DEC, NULL, 0x0,
            "BlockSyncPacketType", HFILL } },
        { &hf_block_number, { "Block number", "fisco3.blocksync.number", FT_UINT64, BASE_DEC, NULL, 0x0,
            "BlockSyncMessage number", HFILL } },
        { &hf_blocks, { "Blocks", "fisco3.blocksync.blocks", FT_UINT64, BASE_DEC, NULL, 0x0,
            "blocksData entries", HFILL } },
        { &hf_hs_module, { "Protocol module ID", "fisco3.handshake.module", FT_INT64, BASE_DEC, NULL, 0x0,
            "ProtocolInfo moduleID (1: GatewayService)", HFILL } },
        { &hf_hs_min, { "Min version", "fisco3.handshake.min_version", FT_INT64, BASE_DEC, NULL, 0x0,
            "ProtocolInfo minVersion: the lowest protocol version the sender speaks", HFILL } },
        { &hf_hs_max, { "Max version", "fisco3.handshake.max_version", FT_INT64, BASE_DEC, NULL, 0x0,
            "ProtocolInfo maxVersion: the highest protocol version the sender speaks", HFILL } },
        { &hf_negotiated, { "Negotiated version", "fisco3.negotiated_version", FT_UINT32, BASE_DEC,
            VALS(version_vals), 0x0, "The lower of the two handshakes' maxVersions", HFILL } },
    };
    static gint *ett[] = { &ett_fisco3, &ett_header, &ett_ext, &ett_options, &ett_front, &ett_module };
    static ei_register_info ei[] = {
        { &ei_length, { "fisco3.length.invalid", PI_MALFORMED, PI_ERROR, "Length out of range", EXPFILL } },
        { &ei_header, { "fisco3.header.truncated", PI_MALFORMED, PI_ERROR,
            "Header fields run past the message's Length", EXPFILL } },
        { &ei_decompress, { "fisco3.decompress.failed", PI_MALFORMED, PI_ERROR, "zstd decompression failed",
            EXPFILL } },
        { &ei_front, { "fisco3.front.bad", PI_MALFORMED, PI_ERROR, "Front message malformed", EXPFILL } },
        { &ei_module_payload, { "fisco3.module.payload", PI_MALFORMED, PI_ERROR,
            "TxsSync/BlockSync payload (protobuf, tars block) does not parse", EXPFILL } },
        { &ei_handshake, { "fisco3.handshake.bad", PI_MALFORMED, PI_ERROR,
            "Handshake payload is no tars ProtocolInfo", EXPFILL } },
        { &ei_hs_range, { "fisco3.handshake.out_of_range", PI_MALFORMED, PI_ERROR,
            "A ProtocolInfo field is no int32: FISCO refuses the handshake and negotiates nothing", EXPFILL } },
        { &ei_hs_unknown_version, { "fisco3.handshake.unknown_version", PI_PROTOCOL, PI_WARN,
            "A maxVersion FISCO does not know: a FISCO node negotiates the lower of it and its own", EXPFILL } },
        { &ei_not_negotiated, { "fisco3.version.not_negotiated", PI_SEQUENCE, PI_NOTE,
            "No negotiation seen (both handshakes before this frame): P2P IDs told apart by their length", EXPFILL } },
        { &ei_version, { "fisco3.version.unexpected", PI_PROTOCOL, PI_WARN,
            "Version neither V0 nor the negotiated one", EXPFILL } },
    };
    expert_module_t *expert;

    proto_fisco3 = proto_register_protocol("FISCO BCOS 3.x P2P", "FISCO3", "fisco3");
    proto_register_field_array(proto_fisco3, hf, array_length(hf));
    proto_register_subtree_array(ett, array_length(ett));
    expert = expert_register_protocol(proto_fisco3);
    expert_register_field_array(expert, ei, array_length(ei));
    fisco3_handle = register_dissector("fisco3", dissect_fisco3, proto_fisco3);
}

void
proto_reg_handoff_fisco3(void)
{
    /* Port 30300 is 2.x's too: there packet-fisco.c hands 3.x connections over.  Other ports:
     * the fisco3.tcp.port preference or Decode As. */
    dissector_add_uint_range_with_preference("tcp.port", "", fisco3_handle);
}
