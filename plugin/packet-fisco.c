/* packet-fisco.c
 * FISCO BCOS 2.x P2P messages with Snappy network compression.
 *
 * Source: FISCO-BCOS/FISCO-BCOS tags v2.0.0-rc2 ... v2.11.1 (libp2p/P2PMessageRC2.{h,cpp},
 * libethcore/Protocol.h, libdevcore/SnappyCompress.cpp).  The seed paper and FISCO's docs say
 * the data is Length-12 bytes; the code's header is 16 bytes, so the data is Length-16.
 *
 *   Length u32 | Version u16 | GroupID i16 | ModuleID u16 | PacketType u16 | Seq u32 | data
 *
 * all big-endian; Length covers the header; Version bit 15 means the data is a raw Snappy
 * block (sent when compression is enabled and the data is over 1024 bytes, even when the
 * compressed form is larger).  ProtocolID = (group << 16) | module as int32; a negative one is a
 * response (-1 AMOP, -2 Topic).  The legacy rc1 header is 12 bytes: Length u32, ProtocolID i16
 * = (group << 8) | module, PacketType u16, Seq u32, and no compression.
 *
 * Real nodes always speak it inside TLS (mutual certificates); register for decrypted TLS data
 * too, so a capture with a key log decodes the same as plaintext.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "p2pc-compat.h"
#include "p2pc-codecs.h"
#include "p2pc-record.h"

#include <epan/conversation.h>
#include <epan/expert.h>
#include <epan/prefs.h>
#include <epan/dissectors/packet-tcp.h>
#include <epan/dissectors/packet-tls.h>

void proto_register_fisco(void);
void proto_reg_handoff_fisco(void);

#define FISCO_HEADER_LEN        16
#define FISCO_RC1_HEADER_LEN    12
#define FISCO_MAX_LENGTH        (100 * 1024 * 1024)   /* v2.8.0 max message, v2.11.0 max decompressed */
#define FISCO_COMPRESS_FLAG     0x8000
#define FISCO_COMPRESS_THRESHOLD 1024
#define FISCO_DEFAULT_PORTS     "30300"

enum { MOD_AMOP = 1, MOD_TOPIC = 2, MOD_PBFT = 8, MOD_BLOCKSYNC = 9, MOD_TXPOOL = 10, MOD_RAFT = 11 };

static const value_string module_vals[] = {
    { MOD_AMOP, "AMOP" }, { MOD_TOPIC, "Topic" }, { MOD_PBFT, "PBFT" },
    { MOD_BLOCKSYNC, "BlockSync" }, { MOD_TXPOOL, "TxPool" }, { MOD_RAFT, "Raft" },
    { 0, NULL }
};
static const value_string topic_vals[] = {
    { 1, "SendTopicSeq" }, { 2, "RequestTopics" }, { 3, "SendTopics" }, { 0, NULL }
};
static const value_string amop_vals[] = {
    { 0, "Unicast" }, { 1, "Multicast" }, { 0, NULL }
};
static const value_string pbft_vals[] = {
    { 0, "Prepare" }, { 1, "Sign" }, { 2, "Commit" }, { 3, "ViewChange" }, { 0, NULL }
};
static const value_string blocksync_vals[] = {
    { 1, "Status" }, { 2, "Transactions" }, { 3, "Blocks" }, { 4, "ReqBlocks" },
    { 5, "TxsStatus" }, { 6, "TxsRequest" }, { 0, NULL }
};
static const value_string raft_vals[] = {
    { 0, "VoteReq" }, { 1, "VoteResp" }, { 2, "HeartBeat" }, { 3, "HeartBeatResp" }, { 0, NULL }
};

static int proto_fisco = -1;
static int hf_fisco_length = -1;
static int hf_fisco_version = -1;
static int hf_fisco_compressed = -1;
static int hf_fisco_group = -1;
static int hf_fisco_module = -1;
static int hf_fisco_protocol_id = -1;
static int hf_fisco_response = -1;
static int hf_fisco_packet_type = -1;
static int hf_fisco_seq = -1;
static int hf_fisco_data = -1;
static int hf_fisco_msg_type = -1;
static int hf_fisco_uncompressed_len = -1;
static int hf_fisco_topic_text = -1;
static int hf_fisco_amop_length = -1;
static int hf_fisco_amop_type = -1;
static int hf_fisco_amop_seq = -1;
static int hf_fisco_amop_result = -1;
static int hf_fisco_amop_data = -1;
static int hf_fisco_pbft_packet_id = -1;
static int hf_fisco_pbft_ttl = -1;
static int hf_fisco_raft_type = -1;
static int hf_fisco_sync_type = -1;
static int hf_fisco_sync_items = -1;
static int hf_fisco_response_in = -1;
static int hf_fisco_response_to = -1;

static gint ett_fisco = -1;
static gint ett_fisco_header = -1;
static gint ett_fisco_payload = -1;

static expert_field ei_fisco_length = EI_INIT;
static expert_field ei_fisco_decompress = EI_INIT;
static expert_field ei_fisco_small_compressed = EI_INIT;
static expert_field ei_fisco_larger = EI_INIT;
static expert_field ei_fisco_unknown_module = EI_INIT;
static expert_field ei_fisco_rlp = EI_INIT;

static dissector_handle_t fisco_handle;
static dissector_handle_t tls_handle;

static p2pc_bool_t pref_rc1 = FALSE;
static p2pc_bool_t pref_decompress = TRUE;

/* Request/response matching: per conversation, seq -> frames. */
typedef struct {
    guint32 req_frame;
    guint32 resp_frame;
} fisco_transaction_t;

/* ---- a bounded RLP reader (Ethereum Yellow Paper appendix B) ---- */
typedef struct {
    gboolean is_list;
    guint hdr;      /* prefix bytes */
    guint len;      /* payload bytes */
} rlp_item_t;

static gboolean
rlp_read(tvbuff_t *tvb, guint off, guint end, rlp_item_t *it)
{
    guint8 b;
    guint n, i;
    guint64 len = 0;
    if (off >= end)
        return FALSE;
    b = tvb_get_uint8(tvb, off);
    if (b < 0x80) {
        it->is_list = FALSE; it->hdr = 0; it->len = 1;
    } else if (b <= 0xb7) {
        it->is_list = FALSE; it->hdr = 1; it->len = b - 0x80;
    } else if (b <= 0xbf || (b >= 0xf8)) {
        n = b <= 0xbf ? b - 0xb7 : b - 0xf7;
        if (n > 4 || off + 1 + n > end)
            return FALSE;
        for (i = 0; i < n; i++)
            len = (len << 8) | tvb_get_uint8(tvb, off + 1 + i);
        it->is_list = b >= 0xf8;
        it->hdr = 1 + n;
        it->len = (guint)len;
    } else {
        it->is_list = TRUE; it->hdr = 1; it->len = b - 0xc0;
    }
    return (guint64)off + it->hdr + it->len <= end;
}

static guint64
rlp_uint(tvbuff_t *tvb, guint off, const rlp_item_t *it)
{
    guint64 v = 0;
    if (it->hdr == 0)
        return tvb_get_uint8(tvb, off);
    for (guint i = 0; i < it->len && i < 8; i++)
        v = (v << 8) | tvb_get_uint8(tvb, off + it->hdr + i);
    return v;
}

/* Items in the RLP list at off; -1 when it is not a well-formed list. */
static gint64
rlp_list_count(tvbuff_t *tvb, guint off, guint end)
{
    rlp_item_t list, it;
    guint p, lend;
    gint64 n = 0;
    if (!rlp_read(tvb, off, end, &list) || !list.is_list)
        return -1;
    p = off + list.hdr;
    lend = p + list.len;
    while (p < lend) {
        if (!rlp_read(tvb, p, lend, &it))
            return -1;
        p += it.hdr + it.len;
        n++;
    }
    return n;
}

/* ---- payload decoders: return the message-type name ---- */

static const char *
dissect_payload(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, guint module, guint ptype,
                p2pc_record_t *rec)
{
    guint len = tvb_captured_length(tvb);
    rlp_item_t it;

    switch (module) {
    case MOD_TOPIC:
        if (len)
            proto_tree_add_item(tree, hf_fisco_topic_text, tvb, 0, len, ENC_ASCII);
        return val_to_str_const(ptype, topic_vals, "Unknown");
    case MOD_AMOP:
        if (len >= 42) {
            proto_tree_add_item(tree, hf_fisco_amop_length, tvb, 0, 4, ENC_BIG_ENDIAN);
            proto_tree_add_item(tree, hf_fisco_amop_type, tvb, 4, 2, ENC_BIG_ENDIAN);
            proto_tree_add_item(tree, hf_fisco_amop_seq, tvb, 6, 32, ENC_ASCII);
            proto_tree_add_item(tree, hf_fisco_amop_result, tvb, 38, 4, ENC_BIG_ENDIAN);
            if (len > 42)
                proto_tree_add_item(tree, hf_fisco_amop_data, tvb, 42, len - 42, ENC_NA);
        } else if (len) {
            expert_add_info_format(pinfo, proto_tree_get_parent(tree), &ei_fisco_rlp,
                                   "AMOP payload shorter than the 42-byte channel message header");
        }
        return val_to_str_const(ptype, amop_vals, "Unknown");
    case MOD_PBFT: {
        /* RLP list [ RLP string( rlp(packet_id) || rlp(ttl) || rlp(data) [|| rlp(fwd)] ) ] */
        rlp_item_t outer, inner, pid, ttl;
        guint p;
        if (!rlp_read(tvb, 0, len, &outer) || !outer.is_list ||
            !rlp_read(tvb, outer.hdr, outer.hdr + outer.len, &inner) || inner.is_list) {
            expert_add_info_format(pinfo, proto_tree_get_parent(tree), &ei_fisco_rlp, "PBFT payload is not the expected RLP nesting");
            return "Unknown";
        }
        p = outer.hdr + inner.hdr;
        if (!rlp_read(tvb, p, p + inner.len, &pid) || pid.is_list) {
            expert_add_info_format(pinfo, proto_tree_get_parent(tree), &ei_fisco_rlp, "PBFT packet id is not an RLP integer");
            return "Unknown";
        }
        proto_tree_add_uint(tree, hf_fisco_pbft_packet_id, tvb, p, pid.hdr + pid.len, (guint32)rlp_uint(tvb, p, &pid));
        if (rlp_read(tvb, p + pid.hdr + pid.len, p + inner.len, &ttl) && !ttl.is_list)
            proto_tree_add_uint(tree, hf_fisco_pbft_ttl, tvb, p + pid.hdr + pid.len, ttl.hdr + ttl.len,
                                (guint32)rlp_uint(tvb, p + pid.hdr + pid.len, &ttl));
        return val_to_str_const((guint32)rlp_uint(tvb, p, &pid), pbft_vals, "Unknown");
    }
    case MOD_RAFT:
        if (!rlp_read(tvb, 0, len, &it) || it.is_list) {
            expert_add_info_format(pinfo, proto_tree_get_parent(tree), &ei_fisco_rlp, "Raft payload does not start with an RLP type");
            return "Unknown";
        }
        proto_tree_add_uint(tree, hf_fisco_raft_type, tvb, 0, it.hdr + it.len, (guint32)rlp_uint(tvb, 0, &it));
        return val_to_str_const((guint32)rlp_uint(tvb, 0, &it), raft_vals, "Unknown");
    case MOD_BLOCKSYNC: {
        guint8 t;
        gint64 n;
        if (len < 1)
            return "Unknown";
        t = tvb_get_uint8(tvb, 0);
        proto_tree_add_uint(tree, hf_fisco_sync_type, tvb, 0, 1, t);
        n = rlp_list_count(tvb, 1, len);
        if (n < 0) {
            expert_add_info_format(pinfo, proto_tree_get_parent(tree), &ei_fisco_rlp, "BlockSync body is not an RLP list");
        } else {
            proto_item_set_generated(proto_tree_add_uint(tree, hf_fisco_sync_items, tvb, 1, len - 1, (guint32)n));
            /* Transactions are batched in one message: each is an item of the batch. */
            if (t == 2 && n > 0)
                rec->batch_count = (guint32)n;
        }
        return val_to_str_const(t, blocksync_vals, "Unknown");
    }
    default:
        return NULL;
    }
}

/* ---- framing ---- */

static guint
get_fisco_pdu_len(packet_info *pinfo, tvbuff_t *tvb, int offset, void *data)
{
    guint hlen = pref_rc1 ? FISCO_RC1_HEADER_LEN : FISCO_HEADER_LEN;
    guint32 length = tvb_get_ntohl(tvb, offset);
    /* A Length below the header or over the limit cannot be followed: show this header with
     * its expert item and give up on the rest of the segment rather than wait for 4 GB. */
    if (length < hlen)
        return hlen;
    if (length > FISCO_MAX_LENGTH)
        return tvb_reported_length_remaining(tvb, offset);
    return length;
}

static int
dissect_fisco_pdu(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    gboolean rc1 = pref_rc1;
    guint hlen = rc1 ? FISCO_RC1_HEADER_LEN : FISCO_HEADER_LEN;
    guint32 length = tvb_get_ntohl(tvb, 0);
    guint16 version = 0;
    gint32 protocol_id;
    guint module, group, ptype;
    guint32 seq;
    gboolean response, compressed;
    proto_item *ti, *hi;
    proto_tree *ft, *ht, *pt;
    tvbuff_t *payload, *raw = NULL;
    const char *mod_name, *type_name = NULL;
    p2pc_record_t rec;
    guint avail = tvb_captured_length(tvb);

    col_set_str(pinfo->cinfo, COL_PROTOCOL, "FISCO");
    ti = proto_tree_add_item(tree, proto_fisco, tvb, 0, -1, ENC_NA);
    ft = proto_item_add_subtree(ti, ett_fisco);
    ht = proto_tree_add_subtree(ft, tvb, 0, hlen, ett_fisco_header, &hi, rc1 ? "Header (rc1)" : "Header");

    hi = proto_tree_add_item(ht, hf_fisco_length, tvb, 0, 4, ENC_BIG_ENDIAN);
    if (length < hlen || length > FISCO_MAX_LENGTH) {
        expert_add_info_format(pinfo, hi, &ei_fisco_length, "Length %u outside [%u, %u]", length, hlen, FISCO_MAX_LENGTH);
        col_append_sep_str(pinfo->cinfo, COL_INFO, ", ", "[bad Length]");
        return avail;
    }
    if (rc1) {
        gint16 pid16 = (gint16)tvb_get_ntohs(tvb, 4);
        protocol_id = pid16;
        group = ((guint16)pid16 >> 8) & 0xff;
        module = (guint16)pid16 & 0xff;
        proto_tree_add_item(ht, hf_fisco_protocol_id, tvb, 4, 2, ENC_BIG_ENDIAN);
        ptype = tvb_get_ntohs(tvb, 6);
        proto_tree_add_item(ht, hf_fisco_packet_type, tvb, 6, 2, ENC_BIG_ENDIAN);
        seq = tvb_get_ntohl(tvb, 8);
        proto_tree_add_item(ht, hf_fisco_seq, tvb, 8, 4, ENC_BIG_ENDIAN);
    } else {
        version = tvb_get_ntohs(tvb, 4);
        proto_tree_add_item(ht, hf_fisco_version, tvb, 4, 2, ENC_BIG_ENDIAN);
        proto_tree_add_item(ht, hf_fisco_compressed, tvb, 4, 2, ENC_BIG_ENDIAN);
        group = tvb_get_ntohs(tvb, 6);
        module = tvb_get_ntohs(tvb, 8);
        protocol_id = (gint32)((group << 16) | module);
        proto_tree_add_item(ht, hf_fisco_group, tvb, 6, 2, ENC_BIG_ENDIAN);
        proto_tree_add_item(ht, hf_fisco_module, tvb, 8, 2, ENC_BIG_ENDIAN);
        proto_item_set_generated(proto_tree_add_int(ht, hf_fisco_protocol_id, tvb, 6, 4, protocol_id));
        ptype = tvb_get_ntohs(tvb, 10);
        proto_tree_add_item(ht, hf_fisco_packet_type, tvb, 10, 2, ENC_BIG_ENDIAN);
        seq = tvb_get_ntohl(tvb, 12);
        proto_tree_add_item(ht, hf_fisco_seq, tvb, 12, 4, ENC_BIG_ENDIAN);
    }
    /* A negative ProtocolID answers a request of module -ProtocolID (AMOP, Topic). */
    response = protocol_id < 0;
    if (response) {
        module = (guint)(-protocol_id);
        group = 0;
    }
    proto_item_set_generated(proto_tree_add_boolean(ht, hf_fisco_response, tvb, 6, 4, response));
    compressed = !rc1 && (version & FISCO_COMPRESS_FLAG);
    mod_name = try_val_to_str(module, module_vals);

    p2pc_record_init(&rec, "fisco", NULL);
    rec.wire_len = length;
    rec.header_len = hlen;
    rec.payload_len = length - hlen;
    rec.raw_len = rec.payload_len;
    rec.codec = compressed ? "snappy" : "none";

    payload = tvb_new_subset_length(tvb, hlen, length - hlen);
    if (length > hlen)
        proto_tree_add_item(ft, hf_fisco_data, tvb, hlen, length - hlen, ENC_NA);
    if (compressed && pref_decompress) {
        p2pc_dc_status_t st;
        const char *detail = NULL;
        raw = p2pc_decompress_tvb(payload, 0, -1, pinfo, P2PC_CODEC_SNAPPY, p2pc_bound(FISCO_MAX_LENGTH),
                                  "Decompressed FISCO payload", &st, &detail);
        if (!raw) {
            expert_add_info_format(pinfo, ti, &ei_fisco_decompress, "Snappy decompression failed: %s",
                                   detail ? detail : p2pc_dc_status_name(st));
        } else {
            guint rl = tvb_captured_length(raw);
            rec.raw_len = rl;
            proto_item_set_generated(proto_tree_add_uint(ft, hf_fisco_uncompressed_len, tvb, hlen, length - hlen, rl));
            if (rl <= FISCO_COMPRESS_THRESHOLD)
                expert_add_info_format(pinfo, ti, &ei_fisco_small_compressed,
                    "Compressed payload of %u bytes: FISCO compresses only payloads over %u bytes", rl, FISCO_COMPRESS_THRESHOLD);
            if (length - hlen > rl)
                expert_add_info_format(pinfo, ti, &ei_fisco_larger,
                    "Snappy output (%u bytes) is larger than the payload (%u bytes); FISCO sends it anyway", length - hlen, rl);
        }
    } else if (!compressed) {
        raw = payload;
    }
    rec.raw_tvb = raw;

    pt = proto_tree_add_subtree(ft, raw ? raw : payload, 0, -1, ett_fisco_payload, NULL, "Payload");
    if (!mod_name) {
        expert_add_info_format(pinfo, ti, &ei_fisco_unknown_module, "Unknown module %u", module);
    } else if (raw) {
        type_name = dissect_payload(raw, pinfo, pt, module, ptype, &rec);
    }
    if (!type_name) {
        if (module == MOD_TOPIC)
            type_name = val_to_str_const(ptype, topic_vals, "Unknown");
        else if (module == MOD_AMOP)
            type_name = val_to_str_const(ptype, amop_vals, "Unknown");
        else
            type_name = "Undecoded";
    }
    rec.msg_type = wmem_strdup_printf(pinfo->pool, "%s.%s%s", mod_name ? mod_name : "Unknown", type_name,
                                      response ? ".Response" : "");
    proto_item_set_generated(proto_tree_add_string(ft, hf_fisco_msg_type, tvb, 0, length, rec.msg_type));
    proto_item_append_text(ti, ", %s, seq %u%s", rec.msg_type, seq, compressed ? ", snappy" : "");
    col_append_sep_fstr(pinfo->cinfo, COL_INFO, ", ", "%s seq=%u%s", rec.msg_type, seq,
                        compressed ? " [snappy]" : "");

    /* Request/response links: a response reuses its request's seq; heartbeats use seq 0. */
    if (seq != 0) {
        conversation_t *conv = find_or_create_conversation(pinfo);
        wmem_map_t *map = (wmem_map_t *)conversation_get_proto_data(conv, proto_fisco);
        fisco_transaction_t *tr;
        if (!map) {
            map = wmem_map_new(wmem_file_scope(), g_direct_hash, g_direct_equal);
            conversation_add_proto_data(conv, proto_fisco, map);
        }
        tr = (fisco_transaction_t *)wmem_map_lookup(map, GUINT_TO_POINTER(seq));
        if (!PINFO_FD_VISITED(pinfo)) {
            if (!response && !tr) {
                tr = wmem_new0(wmem_file_scope(), fisco_transaction_t);
                tr->req_frame = pinfo->num;
                wmem_map_insert(map, GUINT_TO_POINTER(seq), tr);
            } else if (response && tr && !tr->resp_frame) {
                tr->resp_frame = pinfo->num;
            }
        }
        if (tr) {
            if (!response && tr->req_frame == pinfo->num && tr->resp_frame)
                proto_item_set_generated(proto_tree_add_uint(ft, hf_fisco_response_in, tvb, 0, 0, tr->resp_frame));
            if (response && tr->resp_frame == pinfo->num)
                proto_item_set_generated(proto_tree_add_uint(ft, hf_fisco_response_to, tvb, 0, 0, tr->req_frame));
        }
    }

    p2pc_record_add(tvb, 0, length, pinfo, tree, &rec);
    col_set_fence(pinfo->cinfo, COL_INFO);
    return avail;
}

static gboolean
looks_like_tls(tvbuff_t *tvb)
{
    /* TLS record: content type 20..23, version 3.x */
    return tvb_captured_length(tvb) >= 3 && tvb_get_uint8(tvb, 0) >= 20 && tvb_get_uint8(tvb, 0) <= 23 &&
           tvb_get_uint8(tvb, 1) == 3 && tvb_get_uint8(tvb, 2) <= 4;
}

static int
dissect_fisco(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    /* Real nodes use TLS on the P2P port: hand TLS to the TLS dissector, which brings the
     * decrypted records back here through the tls.port table. */
    if (pinfo->ptype == PT_TCP && tls_handle && looks_like_tls(tvb) && !pinfo->match_string) {
        conversation_t *conv = find_or_create_conversation(pinfo);
        if (conversation_get_proto_data(conv, proto_fisco) == NULL) {
            conversation_set_dissector(conv, tls_handle);
            return call_dissector(tls_handle, tvb, pinfo, tree);
        }
    }
    col_clear(pinfo->cinfo, COL_INFO);
    tcp_dissect_pdus(tvb, pinfo, tree, TRUE, pref_rc1 ? FISCO_RC1_HEADER_LEN : FISCO_HEADER_LEN,
                     get_fisco_pdu_len, dissect_fisco_pdu, data);
    return tvb_captured_length(tvb);
}

static gboolean
plausible_header(tvbuff_t *tvb, gboolean rc1)
{
    guint32 length;
    guint module;
    gint32 pid;
    if (tvb_captured_length(tvb) < (rc1 ? FISCO_RC1_HEADER_LEN : FISCO_HEADER_LEN))
        return FALSE;
    length = tvb_get_ntohl(tvb, 0);
    if (length < (rc1 ? FISCO_RC1_HEADER_LEN : FISCO_HEADER_LEN) || length > FISCO_MAX_LENGTH)
        return FALSE;
    if (rc1) {
        pid = (gint16)tvb_get_ntohs(tvb, 4);
        module = pid < 0 ? (guint)-pid : ((guint)pid & 0xff);
    } else {
        guint16 version = tvb_get_ntohs(tvb, 4);
        if (version != 0 && version != FISCO_COMPRESS_FLAG)
            return FALSE;
        pid = (gint32)(((guint32)tvb_get_ntohs(tvb, 6) << 16) | tvb_get_ntohs(tvb, 8));
        module = pid < 0 ? (guint)-pid : tvb_get_ntohs(tvb, 8);
        if (pid < 0 && module > MOD_TOPIC)
            return FALSE;
    }
    return try_val_to_str(module, module_vals) != NULL;
}

static p2pc_bool_t
dissect_fisco_heur(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    if (!plausible_header(tvb, pref_rc1))
        return FALSE;
    conversation_set_dissector(find_or_create_conversation(pinfo), fisco_handle);
    dissect_fisco(tvb, pinfo, tree, data);
    return TRUE;
}

/* Decrypted TLS data: the TCP conversation belongs to TLS, which remembers the match itself. */
static p2pc_bool_t
dissect_fisco_heur_tls(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    if (!plausible_header(tvb, pref_rc1))
        return FALSE;
    dissect_fisco(tvb, pinfo, tree, data);
    return TRUE;
}

void
proto_register_fisco(void)
{
    static hf_register_info hf[] = {
        { &hf_fisco_length, { "Length", "fisco.length", FT_UINT32, BASE_DEC, NULL, 0x0,
            "Whole message including the header (compressed size when compressed)", HFILL } },
        { &hf_fisco_version, { "Version", "fisco.version", FT_UINT16, BASE_HEX, NULL, 0x0, NULL, HFILL } },
        { &hf_fisco_compressed, { "Compressed", "fisco.compressed", FT_BOOLEAN, 16, NULL, FISCO_COMPRESS_FLAG,
            "Version bit 15: the data is a Snappy block", HFILL } },
        { &hf_fisco_group, { "Group ID", "fisco.group", FT_INT16, BASE_DEC, NULL, 0x0, NULL, HFILL } },
        { &hf_fisco_module, { "Module ID", "fisco.module", FT_UINT16, BASE_DEC, VALS(module_vals), 0x0, NULL, HFILL } },
        { &hf_fisco_protocol_id, { "Protocol ID", "fisco.protocol_id", FT_INT32, BASE_DEC, NULL, 0x0,
            "(group << 16) | module; negative for responses", HFILL } },
        { &hf_fisco_response, { "Response", "fisco.response", FT_BOOLEAN, BASE_NONE, NULL, 0x0,
            "Negative protocol ID", HFILL } },
        { &hf_fisco_packet_type, { "Packet type", "fisco.packet_type", FT_UINT16, BASE_DEC, NULL, 0x0, NULL, HFILL } },
        { &hf_fisco_seq, { "Seq", "fisco.seq", FT_UINT32, BASE_DEC, NULL, 0x0, NULL, HFILL } },
        { &hf_fisco_data, { "Data", "fisco.data", FT_BYTES, BASE_NONE, NULL, 0x0, "Payload as sent", HFILL } },
        { &hf_fisco_msg_type, { "Message type", "fisco.msg_type", FT_STRING, BASE_NONE, NULL, 0x0,
            "Module.PacketType", HFILL } },
        { &hf_fisco_uncompressed_len, { "Uncompressed length", "fisco.uncompressed_len", FT_UINT32, BASE_DEC, NULL, 0x0, NULL, HFILL } },
        { &hf_fisco_topic_text, { "Topic data", "fisco.topic.text", FT_STRING, BASE_NONE, NULL, 0x0,
            "Heartbeat seq or tab-separated topics", HFILL } },
        { &hf_fisco_amop_length, { "Channel message length", "fisco.amop.length", FT_UINT32, BASE_DEC, NULL, 0x0, NULL, HFILL } },
        { &hf_fisco_amop_type, { "Channel message type", "fisco.amop.type", FT_UINT16, BASE_HEX, NULL, 0x0, NULL, HFILL } },
        { &hf_fisco_amop_seq, { "Channel message seq", "fisco.amop.seq", FT_STRING, BASE_NONE, NULL, 0x0, NULL, HFILL } },
        { &hf_fisco_amop_result, { "Result", "fisco.amop.result", FT_INT32, BASE_DEC, NULL, 0x0, NULL, HFILL } },
        { &hf_fisco_amop_data, { "Channel data", "fisco.amop.data", FT_BYTES, BASE_NONE, NULL, 0x0, NULL, HFILL } },
        { &hf_fisco_pbft_packet_id, { "PBFT packet", "fisco.pbft.packet_id", FT_UINT32, BASE_DEC, VALS(pbft_vals), 0x0, NULL, HFILL } },
        { &hf_fisco_pbft_ttl, { "TTL", "fisco.pbft.ttl", FT_UINT32, BASE_DEC, NULL, 0x0, NULL, HFILL } },
        { &hf_fisco_raft_type, { "Raft packet", "fisco.raft.type", FT_UINT32, BASE_DEC, VALS(raft_vals), 0x0, NULL, HFILL } },
        { &hf_fisco_sync_type, { "BlockSync packet", "fisco.sync.type", FT_UINT8, BASE_DEC, VALS(blocksync_vals), 0x0,
            "Raw type + 1", HFILL } },
        { &hf_fisco_sync_items, { "Items", "fisco.sync.items", FT_UINT32, BASE_DEC, NULL, 0x0,
            "Items in the RLP list (transactions in a Transactions packet)", HFILL } },
        { &hf_fisco_response_in, { "Response in", "fisco.response_in", FT_FRAMENUM, BASE_NONE,
            FRAMENUM_TYPE(FT_FRAMENUM_RESPONSE), 0x0, NULL, HFILL } },
        { &hf_fisco_response_to, { "Request in", "fisco.response_to", FT_FRAMENUM, BASE_NONE,
            FRAMENUM_TYPE(FT_FRAMENUM_REQUEST), 0x0, NULL, HFILL } },
    };
    static gint *ett[] = { &ett_fisco, &ett_fisco_header, &ett_fisco_payload };
    static ei_register_info ei[] = {
        { &ei_fisco_length, { "fisco.length.invalid", PI_MALFORMED, PI_ERROR, "Length out of range", EXPFILL } },
        { &ei_fisco_decompress, { "fisco.decompress_failed", PI_MALFORMED, PI_ERROR, "Snappy decompression failed", EXPFILL } },
        { &ei_fisco_small_compressed, { "fisco.small_compressed", PI_PROTOCOL, PI_WARN,
            "Compressed payload at or below the 1024-byte threshold", EXPFILL } },
        { &ei_fisco_larger, { "fisco.compressed_larger", PI_PROTOCOL, PI_NOTE,
            "Compressed output larger than the payload", EXPFILL } },
        { &ei_fisco_unknown_module, { "fisco.unknown_module", PI_UNDECODED, PI_WARN, "Unknown module", EXPFILL } },
        { &ei_fisco_rlp, { "fisco.rlp", PI_MALFORMED, PI_WARN, "Payload structure problem", EXPFILL } },
    };
    module_t *module;
    expert_module_t *expert;

    proto_fisco = proto_register_protocol("FISCO BCOS P2P", "FISCO", "fisco");
    proto_register_field_array(proto_fisco, hf, array_length(hf));
    proto_register_subtree_array(ett, array_length(ett));
    expert = expert_register_protocol(proto_fisco);
    expert_register_field_array(expert, ei, array_length(ei));
    fisco_handle = register_dissector("fisco", dissect_fisco, proto_fisco);

    module = prefs_register_protocol(proto_fisco, NULL);
    prefs_register_bool_preference(module, "rc1", "Legacy rc1 header",
        "Messages use the 12-byte v2.0.0-rc1 header (no compression)", &pref_rc1);
    prefs_register_bool_preference(module, "decompress", "Decompress Snappy payloads",
        "Decompress payloads whose Version has bit 15 set", &pref_decompress);
}

void
proto_reg_handoff_fisco(void)
{
    tls_handle = find_dissector("tls");
    dissector_add_uint_range_with_preference("tcp.port", FISCO_DEFAULT_PORTS, fisco_handle);
    /* Decrypted TLS application data on the P2P port. */
    dissector_add_uint("tls.port", 30300, fisco_handle);
    heur_dissector_add("tcp", dissect_fisco_heur, "FISCO BCOS P2P over TCP", "fisco_tcp", proto_fisco, HEURISTIC_ENABLE);
    heur_dissector_add("tls", dissect_fisco_heur_tls, "FISCO BCOS P2P over TLS", "fisco_tls", proto_fisco, HEURISTIC_ENABLE);
}
