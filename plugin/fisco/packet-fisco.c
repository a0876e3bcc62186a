/* packet-fisco.c
 * Routines for FISCO BCOS 2.x P2P message dissection, with Snappy network compression.
 *
 * Sources: FISCO-BCOS/FISCO-BCOS tags v2.0.0-rc1 ... v2.11.1:
 *   libp2p/P2PMessageRC2.{h,cpp}   the 16-byte header, the compression flag and threshold
 *   libp2p/P2PMessage.{h,cpp}      the v2.0.0-rc1 12-byte header
 *   libethcore/Protocol.h          module IDs, CompressFlag 0x8000
 *   libdevcore/SnappyCompress.cpp  raw Snappy block format
 *   libsync/SyncMsgPacket.cpp      BlockSync: type byte (+1), RLP list, TxsParallelParser batches
 *   libconsensus/pbft/Common.h     PBFT: RLP list[ RLP string(packet_id, ttl, data ...) ]
 * and the seed paper "How does FISCO BCOS network compression function?" (Chen Yujie).
 * The paper's figure and FISCO's docs say the data is Length-12 bytes; the code's header is
 * 16 bytes, so the data is Length-16.
 *
 *   Length u32 | Version u16 | GroupID i16 | ModuleID u16 | PacketType u16 | Seq u32 | data
 *
 * All big-endian.  Length covers the header (and is the compressed size when compressed).
 * Version bit 15 says the data is a raw Snappy block: FISCO compresses when enable_compress
 * is on and the data is over 1024 bytes, and sends the Snappy output even when it is larger.
 * ProtocolID = (group << 16) | module as int32; a negative one is a response (-1 AMOP,
 * -2 Topic) that reuses its request's Seq.  The rc1 header is 12 bytes: Length u32,
 * ProtocolID i16 = (group << 8) | module, PacketType u16, Seq u32, and no compression.
 *
 * Real nodes speak it inside TLS 1.2 with mutual certificates; the TLS dissector hands
 * decrypted data back here (tls.port and a tls heuristic), so a capture with a key log
 * decodes the same as plaintext.  Without one, each application_data record is counted as
 * `tls (encrypted)`.  3.x gateways run TLS 1.2 the same way: their decrypted data is handed to
 * the 3.x dissector (dissect_fisco3_tls()) when its first message is 3.x's.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/p2pc-compat.h"
#include "core/budget.h"
#include "core/codecs.h"
#include "core/conn.h"
#include "core/heur.h"
#include "core/holes.h"
#include "core/ledger.h"
#include "core/msgtype.h"
#include "core/payload.h"
#include "core/post.h"
#include "core/prefs.h"
#include "core/record.h"
#include "core/spec.h"
#include "core/tree-room.h"
#include "fisco/fisco3.h"

#include <epan/conversation.h>
#include <epan/expert.h>
#include <epan/prefs.h>
#include <epan/proto_data.h>
#include <epan/dissectors/packet-tcp.h>

void proto_register_fisco(void);
void proto_reg_handoff_fisco(void);

#define FISCO_HEADER_LEN         16
#define FISCO_RC1_HEADER_LEN     12
#define FISCO_MAX_LENGTH         (100 * 1024 * 1024)   /* v2.8.0 max message, v2.11.0 max decompressed */
#define FISCO_COMPRESS_FLAG      0x8000
#define FISCO_COMPRESS_THRESHOLD 1024
#define FISCO_DEFAULT_PORTS      "30300-30399"   /* build_chain.sh: node i of a host listens on 30300 + i */
#define FISCO_AMOP_HEADER_LEN    42
#define TLS_RECORD_HEADER        5       /* content type, version, length (RFC 5246 6.2.1) */
#define TLS_APPLICATION_DATA     23
#define FISCO_KEY_TLS_KNOWN      0       /* packet-scope proto data: the TLS budget's proto told in this frame */

enum { MOD_AMOP = 1, MOD_TOPIC = 2, MOD_PBFT = 8, MOD_BLOCKSYNC = 9, MOD_TXPOOL = 10, MOD_RAFT = 11 };
enum { SYNC_STATUS = 1, SYNC_TRANSACTIONS = 2, SYNC_BLOCKS = 3, SYNC_REQ_BLOCKS = 4,
       SYNC_TXS_STATUS = 5, SYNC_TXS_REQUEST = 6 };

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
    { SYNC_STATUS, "Status" }, { SYNC_TRANSACTIONS, "Transactions" }, { SYNC_BLOCKS, "Blocks" },
    { SYNC_REQ_BLOCKS, "ReqBlocks" }, { SYNC_TXS_STATUS, "TxsStatus" },
    { SYNC_TXS_REQUEST, "TxsRequest" }, { 0, NULL }
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
static int hf_fisco_rc1 = -1;
static int hf_fisco_packet_type = -1;
static int hf_fisco_seq = -1;
static int hf_fisco_data = -1;
static int hf_fisco_msg_type = -1;
static int hf_fisco_uncompressed_len = -1;
static int hf_fisco_ratio = -1;
static int hf_fisco_topic_text = -1;
static int hf_fisco_topic_seq = -1;
static int hf_fisco_topic_name = -1;
static int hf_fisco_amop_length = -1;
static int hf_fisco_amop_type = -1;
static int hf_fisco_amop_seq = -1;
static int hf_fisco_amop_result = -1;
static int hf_fisco_amop_data = -1;
static int hf_fisco_pbft_packet_id = -1;
static int hf_fisco_pbft_ttl = -1;
static int hf_fisco_pbft_height = -1;
static int hf_fisco_pbft_view = -1;
static int hf_fisco_pbft_idx = -1;
static int hf_fisco_raft_type = -1;
static int hf_fisco_sync_type = -1;
static int hf_fisco_sync_items = -1;
static int hf_fisco_sync_txs = -1;
static int hf_fisco_sync_tx = -1;
static int hf_fisco_sync_number = -1;
static int hf_fisco_sync_size = -1;
static int hf_fisco_response_in = -1;
static int hf_fisco_response_to = -1;
static int hf_fisco_time = -1;

static gint ett_fisco = -1;
static gint ett_fisco_header = -1;
static gint ett_fisco_payload = -1;
static gint ett_fisco_txs = -1;

static expert_field ei_fisco_length = EI_INIT;
static expert_field ei_fisco_version = EI_INIT;
static expert_field ei_fisco_decompress = EI_INIT;
static expert_field ei_fisco_rlp = EI_INIT;
static expert_field ei_fisco_let_go = EI_INIT;

static dissector_handle_t fisco_handle;       /* TCP: plaintext, or TLS handed on */
static dissector_handle_t fisco_tls_handle;   /* data the TLS dissector decrypted */
static dissector_handle_t tls_handle;
static dissector_handle_t fisco3_handle;    /* 3.x shares port 30300 */

static p2pc_bool_t pref_rc1 = FALSE;
static p2pc_bool_t pref_decompress = TRUE;

/* One request and the response that reused its seq. */
typedef struct {
    guint32 req_frame;
    guint32 resp_frame;
    nstime_t req_time;
} fisco_transaction_t;

/* Per TCP connection (shared by plaintext and decrypted TLS data), the connection's state
 * (core/conn.h: it goes on across a live session reset). */
typedef struct {
    guint header_len;               /* 0 until the first header is seen, then 16 or 12 */
    gboolean plaintext;             /* FISCO headers seen directly on TCP: never hand it to TLS */
    gboolean tls;                   /* TLS on the connection: each record goes to TLS */
    gboolean tls_v3;                /* its decrypted data is 3.x's: handed to fisco3 */
    /* Over TLS, the byte budget's (dissect_fisco_tls_record()): the proto of the connection's
     * rows, known at its first application_data record, in frame tls_known_at (0: not yet), and
     * the bytes of the handshake records before it, by direction (first_src's 0). */
    const char *tls_proto;
    guint32 tls_known_at;
    guint64 tls_handshake[2];
    /* Whose the connection is, by frame number (so every pass agrees): FISCO's from claimed_at
     * (0: not yet) until let_go_at (0: never).  One the heuristic claimed is let go at the first
     * message that does not parse; one a FISCO port gave, when its first bytes are not FISCO. */
    guint32 claimed_at;
    guint32 let_go_at;
    gboolean by_heuristic;
    address first_src;              /* the side that spoke first is direction 0 */
    guint32 first_port;
    /* seq -> fisco_transaction_t by frame, one map per requesting direction: both peers
     * number their own requests from 2, so the same seq can be in flight both ways.  Frames are
     * numbered anew in each session: the maps are the session's (file scope). */
    guint session;
    wmem_multimap_t *requests[2];
} fisco_conv_t;

static fisco_conv_t *
fisco_get_conv(packet_info *pinfo)
{
    gboolean made;
    fisco_conv_t *fc = (fisco_conv_t *)p2pc_conn_state(pinfo, P2PC_SLOT_FISCO, sizeof(fisco_conv_t), &made);
    if (made) {
        copy_address_wmem(p2pc_conn_pool(p2pc_conn_get(pinfo)), &fc->first_src, &pinfo->src);
        fc->first_port = pinfo->srcport;
    }
    if (made || fc->session != p2pc_conn_session()) {
        /* Frames are numbered anew in a new session: what was decided holds from its start. */
        fc->claimed_at = fc->claimed_at ? 1 : 0;
        fc->let_go_at = fc->let_go_at ? 1 : 0;
        fc->tls_known_at = fc->tls_known_at ? 1 : 0;
        fc->session = p2pc_conn_session();
        fc->requests[0] = wmem_multimap_new(wmem_file_scope(), g_direct_hash, g_direct_equal);
        fc->requests[1] = wmem_multimap_new(wmem_file_scope(), g_direct_hash, g_direct_equal);
    }
    return fc;
}

static guint
fisco_direction(const fisco_conv_t *fc, const packet_info *pinfo)
{
    return (guint)p2pc_conn_dir(&fc->first_src, fc->first_port, pinfo);
}

/* ---- the header: which variant, and is it plausible ---- */

/* The module an rc1 ProtocolID addresses, 0 when it addresses none. */
static guint
rc1_module(gint16 pid)
{
    if (pid < 0)
        return (pid == -MOD_AMOP || pid == -MOD_TOPIC) ? (guint)-pid : 0;
    return (guint)pid & 0xff;
}

/* Bytes 4-5 tell the two headers apart: a 2.x Version is 0 or 0x8000, while an rc1
 * ProtocolID of 0 or 0x8000 would address module 0, which does not exist. */
static guint
detect_header_len(tvbuff_t *tvb, int offset)
{
    guint16 w = tvb_get_ntohs(tvb, offset + 4);
    if (w == 0 || w == FISCO_COMPRESS_FLAG)
        return FISCO_HEADER_LEN;
    if (try_val_to_str(rc1_module((gint16)w), module_vals))
        return FISCO_RC1_HEADER_LEN;
    return FISCO_HEADER_LEN;
}

/* The header length of connection fc: the preference, or what its first message showed.
 * Decided once per connection on the first pass, so later passes agree. */
static guint
fisco_header_len(tvbuff_t *tvb, int offset, fisco_conv_t *fc)
{
    if (pref_rc1)
        return FISCO_RC1_HEADER_LEN;
    if (!fc->header_len)
        fc->header_len = detect_header_len(tvb, offset);
    return fc->header_len;
}

/* A header of `hlen` bytes at offset with Length in range, Version 0 or 0x8000 (2.x), a known
 * module, and a response only where FISCO sends them (AMOP, Topic). */
static gboolean
plausible_header(tvbuff_t *tvb, int offset, guint hlen)
{
    guint32 length;
    if (tvb_captured_length_remaining(tvb, offset) < (gint)hlen)
        return FALSE;
    length = tvb_get_ntohl(tvb, offset);
    if (length < hlen || length > FISCO_MAX_LENGTH)
        return 0;
    if (hlen == FISCO_RC1_HEADER_LEN) {
        gint16 pid = (gint16)tvb_get_ntohs(tvb, offset + 4);
        return try_val_to_str(rc1_module(pid), module_vals) != NULL;
    } else {
        guint16 version = tvb_get_ntohs(tvb, offset + 4);
        gint16 group = (gint16)tvb_get_ntohs(tvb, offset + 6);
        guint16 module = tvb_get_ntohs(tvb, offset + 8);
        if (version != 0 && version != FISCO_COMPRESS_FLAG)
            return 0;
        if (group < 0)      /* a response: ProtocolID -1 or -2 */
            return group == -1 && (module == 0xffff || module == 0xfffe);
        return try_val_to_str(module, module_vals) != NULL;
    }
}

/* The header length a heuristic reads: 2.x's, or rc1's when the preference says so (a guess
 * between the two, made on FISCO's port, would let rc1's weaker header match other traffic). */
static guint
heur_header_len(void)
{
    return pref_rc1 ? FISCO_RC1_HEADER_LEN : FISCO_HEADER_LEN;
}

/* The header at offset on a FISCO port: either variant, as its bytes 4-5 say. */
static gboolean
plausible_on_port(tvbuff_t *tvb, int offset)
{
    return tvb_captured_length_remaining(tvb, offset) >= FISCO_RC1_HEADER_LEN &&
           plausible_header(tvb, offset, pref_rc1 ? FISCO_RC1_HEADER_LEN : detect_header_len(tvb, offset));
}

/* ---- a bounded RLP reader (Ethereum Yellow Paper, appendix B) ----
 * Every length is checked against the end of its enclosing item before it is used. */
typedef struct {
    gboolean is_list;
    guint off;      /* of the prefix */
    guint hdr;      /* prefix bytes */
    guint len;      /* payload bytes */
} rlp_item_t;

#define RLP_BODY(it) ((it)->off + (it)->hdr)
#define RLP_END(it)  ((it)->off + (it)->hdr + (it)->len)

static gboolean
rlp_read(tvbuff_t *tvb, guint off, guint end, rlp_item_t *it)
{
    guint8 b;
    guint n, i;
    guint64 len = 0;
    if (off >= end || end > tvb_captured_length(tvb))
        return FALSE;
    it->off = off;
    b = tvb_get_uint8(tvb, off);
    if (b < 0x80) {
        it->is_list = FALSE; it->hdr = 0; it->len = 1;
    } else if (b <= 0xb7) {
        it->is_list = FALSE; it->hdr = 1; it->len = b - 0x80;
    } else if (b <= 0xbf || b >= 0xf8) {
        n = b <= 0xbf ? b - 0xb7u : b - 0xf7u;
        if (n > 4 || (guint64)off + 1 + n > end)
            return FALSE;
        for (i = 0; i < n; i++)
            len = (len << 8) | tvb_get_uint8(tvb, off + 1 + i);
        it->is_list = b >= 0xf8;
        it->hdr = 1 + n;
        if (len > end)
            return FALSE;
        it->len = (guint)len;
    } else {
        it->is_list = TRUE; it->hdr = 1; it->len = b - 0xc0;
    }
    return (guint64)off + it->hdr + it->len <= end;
}

/* A string item as an unsigned integer (up to 8 bytes; a longer one gives its low 8). */
static guint64
rlp_uint(tvbuff_t *tvb, const rlp_item_t *it)
{
    guint64 v = 0;
    guint i, start;
    if (it->hdr == 0)
        return tvb_get_uint8(tvb, it->off);
    start = it->len > 8 ? it->len - 8 : 0;
    for (i = start; i < it->len; i++)
        v = (v << 8) | tvb_get_uint8(tvb, RLP_BODY(it) + i);
    return v;
}

/* Items in a list; -1 when one of them does not parse. */
static gint64
rlp_list_count(tvbuff_t *tvb, const rlp_item_t *list)
{
    rlp_item_t it;
    guint p = RLP_BODY(list);
    gint64 n = 0;
    while (p < RLP_END(list)) {
        if (!rlp_read(tvb, p, RLP_END(list), &it))
            return -1;
        p = RLP_END(&it);
        n++;
    }
    return n;
}

/* Add a string item as an integer field; FALSE when `it` is a list. */
static gboolean
rlp_add_uint(proto_tree *tree, int hf, tvbuff_t *tvb, const rlp_item_t *it)
{
    if (it->is_list)
        return FALSE;
    proto_tree_add_uint64(tree, hf, tvb, it->off, it->hdr + it->len, rlp_uint(tvb, it));
    return TRUE;
}

/* ---- payload decoders: each returns the message-type name ---- */

static const char *
dissect_topic(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, guint ptype)
{
    guint len = tvb_captured_length(tvb);
    if (len) {
        /* SendTopicSeq: the sender's topic seq in decimal ASCII.
         * SendTopics: "<seq>\t<topic>\t<topic>..." */
        guint p = 0, i = 0;
        proto_tree_add_item(tree, hf_fisco_topic_text, tvb, 0, len, ENC_ASCII);
        while (p <= len) {
            gint tab = tvb_find_uint8(tvb, p, len - p, '\t');
            guint end = tab < 0 ? len : (guint)tab;
            if (i == 0)
                proto_tree_add_item(tree, hf_fisco_topic_seq, tvb, p, end - p, ENC_ASCII);
            else if (end > p)       /* a topic a tab: as many as fit in the frame's tree */
                proto_tree_add_item(p2pc_tree_room(tree, pinfo, tvb, 1), hf_fisco_topic_name, tvb, p, end - p,
                                    ENC_ASCII);
            if (tab < 0)
                break;
            p = end + 1;
            i++;
        }
    }
    return try_val_to_str(ptype, topic_vals);
}

static const char *
dissect_amop(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, proto_item *ti, guint ptype)
{
    /* A whole channel message: length u32, type u16, seq (32 ASCII), result i32, data. */
    guint len = tvb_captured_length(tvb);
    if (len >= FISCO_AMOP_HEADER_LEN) {
        proto_tree_add_item(tree, hf_fisco_amop_length, tvb, 0, 4, ENC_BIG_ENDIAN);
        proto_tree_add_item(tree, hf_fisco_amop_type, tvb, 4, 2, ENC_BIG_ENDIAN);
        proto_tree_add_item(tree, hf_fisco_amop_seq, tvb, 6, 32, ENC_ASCII);
        proto_tree_add_item(tree, hf_fisco_amop_result, tvb, 38, 4, ENC_BIG_ENDIAN);
        if (len > FISCO_AMOP_HEADER_LEN)
            proto_tree_add_item(tree, hf_fisco_amop_data, tvb, FISCO_AMOP_HEADER_LEN,
                                len - FISCO_AMOP_HEADER_LEN, ENC_NA);
    } else if (len) {
        expert_add_info_format(pinfo, ti, &ei_fisco_rlp,
                               "AMOP payload shorter than the 42-byte channel message header");
    }
    return try_val_to_str(ptype, amop_vals);
}

static const char *
dissect_pbft(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, proto_item *ti)
{
    /* PBFTMsgPacket: list[ string( rlp(packet_id) rlp(ttl) rlp(data) [rlp(forwardNodes)] ) ],
     * data = list[ string( rlp(height) rlp(view) rlp(idx) rlp(timestamp) ... ) ]. */
    guint len = tvb_captured_length(tvb);
    rlp_item_t outer, inner, pid, ttl, data, dl, ds, f;
    guint32 id;
    if (!rlp_read(tvb, 0, len, &outer) || !outer.is_list ||
        !rlp_read(tvb, RLP_BODY(&outer), RLP_END(&outer), &inner) || inner.is_list ||
        !rlp_read(tvb, RLP_BODY(&inner), RLP_END(&inner), &pid) || pid.is_list) {
        expert_add_info_format(pinfo, ti, &ei_fisco_rlp, "PBFT payload is not the expected RLP nesting");
        return NULL;
    }
    id = (guint32)rlp_uint(tvb, &pid);
    proto_tree_add_uint(tree, hf_fisco_pbft_packet_id, tvb, pid.off, pid.hdr + pid.len, id);
    if (rlp_read(tvb, RLP_END(&pid), RLP_END(&inner), &ttl) && !ttl.is_list) {
        proto_tree_add_uint(tree, hf_fisco_pbft_ttl, tvb, ttl.off, ttl.hdr + ttl.len, (guint32)rlp_uint(tvb, &ttl));
        if (rlp_read(tvb, RLP_END(&ttl), RLP_END(&inner), &data) && !data.is_list &&
            rlp_read(tvb, RLP_BODY(&data), RLP_END(&data), &dl) && dl.is_list &&
            rlp_read(tvb, RLP_BODY(&dl), RLP_END(&dl), &ds) && !ds.is_list) {
            static int *const hfs[] = { &hf_fisco_pbft_height, &hf_fisco_pbft_view, &hf_fisco_pbft_idx };
            guint p = RLP_BODY(&ds);
            for (guint i = 0; i < array_length(hfs); i++) {
                if (!rlp_read(tvb, p, RLP_END(&ds), &f) || !rlp_add_uint(tree, *hfs[i], tvb, &f))
                    break;
                p = RLP_END(&f);
            }
        }
    }
    return try_val_to_str(id, pbft_vals);
}

static const char *
dissect_raft(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, proto_item *ti)
{
    /* rlp(type) || rlp(data) */
    rlp_item_t it;
    guint32 t;
    if (!rlp_read(tvb, 0, tvb_captured_length(tvb), &it) || it.is_list) {
        expert_add_info_format(pinfo, ti, &ei_fisco_rlp, "Raft payload does not start with an RLP type");
        return NULL;
    }
    t = (guint32)rlp_uint(tvb, &it);
    proto_tree_add_uint(tree, hf_fisco_raft_type, tvb, 0, it.hdr + it.len, t);
    return try_val_to_str(t, raft_vals);
}

/* TxsParallelParser (libethcore, v2.0.0-rc2 on): txNum u32, (txNum + 1) offsets u32 from the
 * start of the tx bytes, then the txs; host byte order, which is little-endian on every
 * platform FISCO ships for.  Returns txNum, or -1 when the offsets do not hold together. */
static gint64
dissect_txs_parallel(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, guint off, guint len)
{
    guint32 n, prev = 0, cur;
    guint64 objects;
    proto_tree *tt;
    if (len < 4)
        return -1;
    n = tvb_get_letohl(tvb, off);
    objects = 4 * ((guint64)n + 2);
    if (n == 0 || objects > len || tvb_get_letohl(tvb, off + 4) != 0 ||
        tvb_get_letohl(tvb, off + 4 + 4 * n) != len - objects)
        return -1;
    for (guint32 i = 1; i <= n; i++) {
        cur = tvb_get_letohl(tvb, off + 4 + 4 * i);
        if (cur < prev)
            return -1;
        prev = cur;
    }
    tt = proto_tree_add_subtree_format(tree, tvb, off, len, ett_fisco_txs, NULL, "Transactions (%u)", n);
    prev = 0;
    for (guint32 i = 1; i <= n; i++) {
        cur = tvb_get_letohl(tvb, off + 4 + 4 * i);
        proto_tree_add_item(p2pc_tree_room(tt, pinfo, tvb, 1), hf_fisco_sync_tx, tvb, off + (guint)objects + prev,
                            cur - prev, ENC_NA);
        prev = cur;
    }
    return n;
}

static const char *
dissect_blocksync(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, proto_item *ti, p2pc_record_t *rec)
{
    /* Type byte (SyncPacketType + 1), then an RLP list. */
    guint len = tvb_captured_length(tvb);
    rlp_item_t list, first, second;
    gint64 n, txs = -1;
    guint8 t;
    if (len < 1) {
        expert_add_info_format(pinfo, ti, &ei_fisco_rlp, "Empty BlockSync payload");
        return NULL;
    }
    t = tvb_get_uint8(tvb, 0);
    proto_tree_add_uint(tree, hf_fisco_sync_type, tvb, 0, 1, t);
    if (!rlp_read(tvb, 1, len, &list) || !list.is_list || (n = rlp_list_count(tvb, &list)) < 0) {
        expert_add_info_format(pinfo, ti, &ei_fisco_rlp, "BlockSync body is not an RLP list");
        return try_val_to_str(t, blocksync_vals);
    }
    proto_item_set_generated(proto_tree_add_uint(tree, hf_fisco_sync_items, tvb, list.off,
                                                 list.hdr + list.len, (guint32)n));
    if (n > 0)
        rlp_read(tvb, RLP_BODY(&list), RLP_END(&list), &first);
    switch (t) {
    case SYNC_TRANSACTIONS:
        /* rc2+: list[ string(TxsParallelParser bytes) [, consIndex] ]; rc1: list[ tx... ]. */
        if (n >= 1 && !first.is_list)
            txs = dissect_txs_parallel(tvb, pinfo, tree, RLP_BODY(&first), first.len);
        else if (n >= 1)
            txs = n;
        if (txs < 0) {
            expert_add_info_format(pinfo, ti, &ei_fisco_rlp, "Transactions packet: the tx batch does not parse");
        } else {
            proto_item_set_generated(proto_tree_add_uint(tree, hf_fisco_sync_txs, tvb, first.off,
                                                         first.hdr + first.len, (guint32)txs));
            /* The transactions batched in one message are its batch. */
            rec->batch_count = (guint32)txs;
        }
        break;
    case SYNC_STATUS:
        if (n >= 1)
            rlp_add_uint(tree, hf_fisco_sync_number, tvb, &first);
        break;
    case SYNC_REQ_BLOCKS:
        if (n >= 2 && rlp_add_uint(tree, hf_fisco_sync_number, tvb, &first) &&
            rlp_read(tvb, RLP_END(&first), RLP_END(&list), &second))
            rlp_add_uint(tree, hf_fisco_sync_size, tvb, &second);
        break;
    default:
        break;
    }
    return try_val_to_str(t, blocksync_vals);
}

/* ---- the heuristics: whole messages with every field in range (docs/fisco.md) ---- */

#define FISCO_HEUR_MESSAGES 8       /* whole messages of a first segment checked at most */

/* Printable ASCII (tabs allowed), `digits`: decimal digits only. */
static gboolean
ascii_text(tvbuff_t *tvb, guint off, guint len, gboolean digits)
{
    for (guint i = 0; i < len; i++) {
        guint8 c = tvb_get_uint8(tvb, off + i);
        if (digits ? !g_ascii_isdigit(c) : (c != '\t' && (c < 0x20 || c > 0x7e)))
            return FALSE;
    }
    return TRUE;
}

/* RLP items from `off` that end exactly at `end`; how many, -1 when they do not. */
static gint
rlp_exact(tvbuff_t *tvb, guint off, guint end, rlp_item_t *first)
{
    rlp_item_t it;
    gint n = 0;
    while (off < end) {
        if (!rlp_read(tvb, off, end, &it))
            return -1;
        if (n++ == 0 && first)
            *first = it;
        off = RLP_END(&it);
    }
    return n;
}

/* Does a module's payload tvb[0..) have the structure its module gives it?  *strong: the
 * structure pins many bytes (exact RLP, a channel header whose length matches, digits). */
static gboolean
heur_payload(tvbuff_t *tvb, guint module, guint ptype, gboolean response, gboolean *strong)
{
    guint len = tvb_captured_length(tvb);
    rlp_item_t first = { 0 }, inner = { 0 };
    *strong = FALSE;
    switch (module) {
    case MOD_TOPIC:
        if (!try_val_to_str(ptype, topic_vals) || !ascii_text(tvb, 0, len, ptype == 1))
            return FALSE;
        *strong = len > 0 && !response;
        return TRUE;
    case MOD_AMOP:
        if (!try_val_to_str(ptype, amop_vals) || len < FISCO_AMOP_HEADER_LEN)
            return FALSE;
        *strong = TRUE;
        return tvb_get_ntohl(tvb, 0) == len && ascii_text(tvb, 6, 32, FALSE);
    case MOD_PBFT:      /* list[ string(packet_id ttl data ...) ] */
        if (rlp_exact(tvb, 0, len, &first) != 1 || !first.is_list ||
            rlp_exact(tvb, RLP_BODY(&first), RLP_END(&first), &inner) != 1 || inner.is_list ||
            rlp_exact(tvb, RLP_BODY(&inner), RLP_END(&inner), &first) < 3 || first.is_list)
            return FALSE;
        *strong = TRUE;
        return try_val_to_str((guint32)rlp_uint(tvb, &first), pbft_vals) != NULL;
    case MOD_BLOCKSYNC: /* type byte, list[...] */
        if (len < 2 || !try_val_to_str(tvb_get_uint8(tvb, 0), blocksync_vals) ||
            rlp_exact(tvb, 1, len, &first) != 1 || !first.is_list)
            return FALSE;
        *strong = TRUE;
        return TRUE;
    case MOD_RAFT:      /* rlp(type) rlp(data) */
        if (rlp_exact(tvb, 0, len, &first) < 1 || first.is_list)
            return FALSE;
        *strong = TRUE;
        return try_val_to_str((guint32)rlp_uint(tvb, &first), raft_vals) != NULL;
    case MOD_TXPOOL:    /* no structure read here */
        return TRUE;
    default:
        return FALSE;
    }
}

/* The length of the whole 2.x message at `offset` whose every header field is in range and
 * whose payload (decompressed: FISCO compresses only over 1024 bytes) parses as its module's;
 * 0 when there is none.  rc1's 12-byte header is tried only when the preference says so. */
static guint
heur_message(tvbuff_t *tvb, guint offset, packet_info *pinfo, gboolean *strong)
{
    guint hlen = heur_header_len();
    guint avail = (guint)tvb_captured_length_remaining(tvb, offset);
    guint32 length;
    guint16 version = 0, ptype;
    guint module;
    gboolean response;
    tvbuff_t *payload;

    if (avail < hlen || !plausible_header(tvb, (int)offset, hlen))
        return 0;
    length = tvb_get_ntohl(tvb, offset);
    if (length > avail)
        return 0;
    if (pref_rc1) {
        gint16 pid = (gint16)tvb_get_ntohs(tvb, offset + 4);
        module = rc1_module(pid);
        response = pid < 0;
        ptype = tvb_get_ntohs(tvb, offset + 6);
    } else {
        version = tvb_get_ntohs(tvb, offset + 4);
        response = (gint16)tvb_get_ntohs(tvb, offset + 6) < 0;
        module = response ? 0x10000u - tvb_get_ntohs(tvb, offset + 8) : tvb_get_ntohs(tvb, offset + 8);
        ptype = tvb_get_ntohs(tvb, offset + 10);
    }
    payload = tvb_new_subset_length(tvb, offset + hlen, length - hlen);
    if (version & FISCO_COMPRESS_FLAG) {
        guint8 *raw;
        size_t raw_len;
        const char *detail;
        guint plen = length - hlen;
        if (p2pc_decompress(pinfo->pool, P2PC_CODEC_SNAPPY, tvb_memdup(pinfo->pool, payload, 0, plen), plen,
                            FISCO_MAX_LENGTH, &raw, &raw_len, &detail) != P2PC_DC_OK ||
            raw_len <= FISCO_COMPRESS_THRESHOLD)
            return 0;
        payload = tvb_new_child_real_data(tvb, raw, (guint)raw_len, (gint)raw_len);
    }
    return heur_payload(payload, module, ptype, response, strong) ? length : 0;
}

/* A direction's first segment is FISCO 2.x when it starts with whole messages (up to
 * FISCO_HEUR_MESSAGES of them) that all pass heur_message(), one strong or two of them, and
 * whatever follows them starts a plausible header. */
static gboolean
heur_segment(tvbuff_t *tvb, packet_info *pinfo)
{
    guint off = 0, n = 0, len = tvb_captured_length(tvb), mlen;
    gboolean strong, any_strong = FALSE;
    while (off < len && n < FISCO_HEUR_MESSAGES) {
        mlen = heur_message(tvb, off, pinfo, &strong);
        if (!mlen)
            break;
        any_strong |= strong;
        off += mlen;
        n++;
    }
    if (n == 0 || (!any_strong && n < 2))
        return FALSE;
    return off == len || n == FISCO_HEUR_MESSAGES || len - off < heur_header_len() ||
           plausible_header(tvb, (int)off, heur_header_len());
}

/* ---- request/response links ---- */

static void
fisco_match(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, const fisco_conv_t *fc, guint32 seq,
            gboolean response)
{
    fisco_transaction_t *tr;
    guint dir;
    proto_item *it;

    /* Heartbeats (SendTopicSeq) use seq 0 and are never answered. */
    if (seq == 0)
        return;
    dir = fisco_direction(fc, pinfo);
    if (!response) {
        if (!PINFO_FD_VISITED(pinfo)) {
            tr = wmem_new0(wmem_file_scope(), fisco_transaction_t);
            tr->req_frame = pinfo->num;
            tr->req_time = pinfo->abs_ts;
            wmem_multimap_insert32(fc->requests[dir], GUINT_TO_POINTER(seq), pinfo->num, tr);
        }
        tr = (fisco_transaction_t *)wmem_multimap_lookup32_le(fc->requests[dir], GUINT_TO_POINTER(seq), pinfo->num);
        if (tr && tr->req_frame == pinfo->num && tr->resp_frame) {
            it = proto_tree_add_uint(tree, hf_fisco_response_in, tvb, 0, 0, tr->resp_frame);
            proto_item_set_generated(it);
        }
    } else {
        /* The answer comes from the other side and reuses the request's seq. */
        tr = (fisco_transaction_t *)wmem_multimap_lookup32_le(fc->requests[1 - dir], GUINT_TO_POINTER(seq), pinfo->num);
        if (tr && !PINFO_FD_VISITED(pinfo) && !tr->resp_frame)
            tr->resp_frame = pinfo->num;
        if (tr && tr->resp_frame == pinfo->num) {
            nstime_t delta;
            it = proto_tree_add_uint(tree, hf_fisco_response_to, tvb, 0, 0, tr->req_frame);
            proto_item_set_generated(it);
            nstime_delta(&delta, &pinfo->abs_ts, &tr->req_time);
            it = proto_tree_add_time(tree, hf_fisco_time, tvb, 0, 0, &delta);
            proto_item_set_generated(it);
        }
    }
}

/* ---- one message ---- */

static guint
get_fisco_pdu_len(packet_info *pinfo, tvbuff_t *tvb, int offset, void *data _U_)
{
    fisco_conv_t *fc = fisco_get_conv(pinfo);
    guint hlen = fisco_header_len(tvb, offset, fc);
    guint32 length = tvb_get_ntohl(tvb, offset);
    /* The heuristic's guess was wrong after all: the rest of the segment is not FISCO, and
     * the connection is let go from the next frame on (dissect_fisco_pdu() shows why). */
    if (fc->by_heuristic && !plausible_header(tvb, offset, hlen)) {
        if (!PINFO_FD_VISITED(pinfo) && !fc->let_go_at) {
            fc->let_go_at = pinfo->num + 1;
            p2pc_holes_let_go(pinfo);
        }
        return tvb_reported_length_remaining(tvb, offset);
    }
    /* A Length below the header or over the limit cannot be followed: show this header with
     * its expert item and drop the rest of the segment rather than wait for up to 4 GB. */
    if (length < hlen)
        return hlen;
    if (length > FISCO_MAX_LENGTH)
        return tvb_reported_length_remaining(tvb, offset);
    return length;
}

/* What a FISCO 2.x header says (rc1's or 2.x's layout). */
typedef struct {
    gint32 protocol_id;
    guint module;
    guint ptype;
    guint32 seq;
    guint16 version;            /* 2.x only (rc1 has none): bit 15 says compressed */
} fisco_header_t;

/* rc1's header: Length, a 2-byte ProtocolID (group, module), PacketType, Seq. */
static void
read_rc1_header(tvbuff_t *tvb, proto_tree *ht, fisco_header_t *h)
{
    gint16 pid16 = (gint16)tvb_get_ntohs(tvb, 4);
    h->protocol_id = pid16;
    h->module = rc1_module(pid16);
    proto_tree_add_int(ht, hf_fisco_protocol_id, tvb, 4, 2, h->protocol_id);
    if (pid16 >= 0) {
        proto_tree_add_int(ht, hf_fisco_group, tvb, 4, 1, pid16 >> 8);
        proto_tree_add_uint(ht, hf_fisco_module, tvb, 5, 1, h->module);
    }
    h->ptype = tvb_get_ntohs(tvb, 6);
    proto_tree_add_item(ht, hf_fisco_packet_type, tvb, 6, 2, ENC_BIG_ENDIAN);
    h->seq = tvb_get_ntohl(tvb, 8);
    proto_tree_add_item(ht, hf_fisco_seq, tvb, 8, 4, ENC_BIG_ENDIAN);
}

/* 2.x's header: Length, Version (bit 15: compressed), a 4-byte ProtocolID (group, module; a
 * response's is -module), PacketType, Seq. */
static void
read_v2_header(tvbuff_t *tvb, packet_info *pinfo, proto_tree *ht, fisco_header_t *h)
{
    proto_item *vi, *pi;
    h->version = tvb_get_ntohs(tvb, 4);
    vi = proto_tree_add_item(ht, hf_fisco_version, tvb, 4, 2, ENC_BIG_ENDIAN);
    proto_tree_add_item(ht, hf_fisco_compressed, tvb, 4, 2, ENC_BIG_ENDIAN);
    if (h->version & ~FISCO_COMPRESS_FLAG)
        expert_add_info_format(pinfo, vi, &ei_fisco_version,
                               "Version 0x%04x: FISCO 2.x only sets bit 15 (compression)", h->version);
    h->protocol_id = (gint32)tvb_get_ntohl(tvb, 6);
    if (h->protocol_id < 0) {
        /* A response carries -module in all four bytes. */
        proto_tree_add_item(ht, hf_fisco_protocol_id, tvb, 6, 4, ENC_BIG_ENDIAN);
        h->module = h->protocol_id >= -0xffff ? (guint)-h->protocol_id : 0;
    } else {
        proto_tree_add_item(ht, hf_fisco_group, tvb, 6, 2, ENC_BIG_ENDIAN);
        proto_tree_add_item(ht, hf_fisco_module, tvb, 8, 2, ENC_BIG_ENDIAN);
        pi = proto_tree_add_int(ht, hf_fisco_protocol_id, tvb, 6, 4, h->protocol_id);
        proto_item_set_generated(pi);
        h->module = tvb_get_ntohs(tvb, 8);
    }
    h->ptype = tvb_get_ntohs(tvb, 10);
    proto_tree_add_item(ht, hf_fisco_packet_type, tvb, 10, 2, ENC_BIG_ENDIAN);
    h->seq = tvb_get_ntohl(tvb, 12);
    proto_tree_add_item(ht, hf_fisco_seq, tvb, 12, 4, ENC_BIG_ENDIAN);
}

/* The payload as the modules read it: decompressed when compressed and decompression is on
 * (NULL when it is off or fails), else as it is; rec's raw length follows. */
static tvbuff_t *
read_payload(tvbuff_t *payload, packet_info *pinfo, proto_tree *ft, proto_item *ti, gboolean compressed,
             p2pc_record_t *rec, gboolean *bounded)
{
    static const p2pc_payload_codec_t snappy = { P2PC_CODEC_SNAPPY, FISCO_MAX_LENGTH,
        "Decompressed FISCO payload", &hf_fisco_uncompressed_len, &hf_fisco_ratio, &ei_fisco_decompress };
    tvbuff_t *raw;
    guint rl;

    if (!compressed)
        return payload;
    if (!pref_decompress)
        return NULL;
    raw = p2pc_payload_decompress(&snappy, payload, pinfo, ft, ti, bounded, NULL);
    if (!raw)
        return NULL;
    rl = tvb_captured_length(raw);
    rec->raw_len = rl;
    if (rl <= FISCO_COMPRESS_THRESHOLD)
        p2pc_spec(pinfo, ti, P2PC_SPEC_FISCO_THRESHOLD,
            "Compressed payload of %u bytes: FISCO compresses only payloads over %u bytes",
            rl, FISCO_COMPRESS_THRESHOLD);
    return raw;
}

/* The message type: the module's and the packet type's names, the payload dissected by its
 * module when there is one to read; "unknown" when either is none FISCO defines, or the
 * payload does not say (core/msgtype.h). */
static const char *
read_msg_type(tvbuff_t *raw, packet_info *pinfo, proto_tree *pt, proto_item *ti, const fisco_header_t *h,
              gboolean response, p2pc_record_t *rec)
{
    const char *mod_name = try_val_to_str(h->module, module_vals), *type_name = NULL;

    if (mod_name && raw) {
        switch (h->module) {
        case MOD_TOPIC:     type_name = dissect_topic(raw, pinfo, pt, h->ptype); break;
        case MOD_AMOP:      type_name = dissect_amop(raw, pinfo, pt, ti, h->ptype); break;
        case MOD_PBFT:      type_name = dissect_pbft(raw, pinfo, pt, ti); break;
        case MOD_RAFT:      type_name = dissect_raft(raw, pinfo, pt, ti); break;
        case MOD_BLOCKSYNC: type_name = dissect_blocksync(raw, pinfo, pt, ti, rec); break;
        default:            type_name = "Undecoded"; break;     /* TxPool */
        }
    } else if (h->module == MOD_TOPIC) {
        /* Not decompressed (decompression off, or it failed): what the header alone says. */
        type_name = try_val_to_str(h->ptype, topic_vals);
    } else if (h->module == MOD_AMOP) {
        type_name = try_val_to_str(h->ptype, amop_vals);
    } else if (mod_name) {
        type_name = "Undecoded";
    }
    if (!mod_name)
        return p2pc_msg_type_unknown(pinfo, ti, "Module %u", h->module);
    if (!type_name)
        return p2pc_msg_type_unknown(pinfo, ti, "The %s packet type", mod_name);
    return wmem_strdup_printf(pinfo->pool, "%s.%s%s", mod_name, type_name, response ? ".Response" : "");
}

static int
dissect_fisco_pdu(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data _U_)
{
    fisco_conv_t *fc = fisco_get_conv(pinfo);
    guint hlen = fisco_header_len(tvb, 0, fc);
    gboolean rc1 = hlen == FISCO_RC1_HEADER_LEN;
    guint32 length = tvb_get_ntohl(tvb, 0);
    fisco_header_t h = { 0, 0, 0, 0, 0 };
    gboolean response, compressed;
    proto_item *ti, *li;
    proto_tree *ft, *ht, *pt;
    tvbuff_t *payload, *raw;
    p2pc_record_t rec;
    gboolean bounded = FALSE;
    guint avail = tvb_captured_length(tvb);

    col_set_str(pinfo->cinfo, COL_PROTOCOL, "FISCO");
    /* A frame of thousands of messages draws as many as fit and counts them all. */
    ti = proto_tree_add_item(p2pc_tree_room(tree, pinfo, tvb, P2PC_TREE_MESSAGE_ITEMS), proto_fisco, tvb, 0, -1, ENC_NA);
    ft = proto_item_add_subtree(ti, ett_fisco);
    ht = proto_tree_add_subtree(ft, tvb, 0, hlen, ett_fisco_header, NULL, rc1 ? "Header (rc1)" : "Header");

    li = proto_tree_add_item(ht, hf_fisco_length, tvb, 0, 4, ENC_BIG_ENDIAN);
    if (fc->by_heuristic && !plausible_header(tvb, 0, hlen)) {
        expert_add_info(pinfo, ti, &ei_fisco_let_go);
        col_append_sep_str(pinfo->cinfo, COL_INFO, ", ", "[not FISCO: connection let go]");
        col_set_fence(pinfo->cinfo, COL_INFO);
        return avail;
    }
    if (length < hlen || length > FISCO_MAX_LENGTH) {
        expert_add_info_format(pinfo, li, &ei_fisco_length, "Length %u outside [%u, %u]",
                               length, hlen, FISCO_MAX_LENGTH);
        col_append_sep_str(pinfo->cinfo, COL_INFO, ", ", "[bad Length]");
        col_set_fence(pinfo->cinfo, COL_INFO);
        /* Counted, not lost: the bytes dropped with this header. */
        p2pc_record_undecoded(tvb, 0, -1, pinfo, tree, "fisco", avail, NULL);
        return avail;
    }
    if (rc1)
        read_rc1_header(tvb, ht, &h);
    else
        read_v2_header(tvb, pinfo, ht, &h);
    /* A negative ProtocolID answers a request of module -ProtocolID (AMOP, Topic). */
    response = h.protocol_id < 0;
    if (response)
        proto_item_set_generated(proto_tree_add_uint(ht, hf_fisco_module, tvb, rc1 ? 4 : 6, rc1 ? 2 : 4, h.module));
    proto_item_set_generated(proto_tree_add_boolean(ht, hf_fisco_response, tvb, rc1 ? 4 : 6, rc1 ? 2 : 4, response));
    proto_item_set_generated(proto_tree_add_boolean(ht, hf_fisco_rc1, tvb, 0, 0, rc1));
    compressed = !rc1 && (h.version & FISCO_COMPRESS_FLAG);

    p2pc_record_init(&rec, "fisco", NULL);
    rec.wire_len = length;
    rec.header_len = hlen;
    rec.payload_len = length - hlen;
    rec.raw_len = rec.payload_len;
    rec.codec = compressed ? "snappy" : "none";

    payload = tvb_new_subset_length(tvb, hlen, length - hlen);
    if (length > hlen)
        proto_tree_add_item(ft, hf_fisco_data, tvb, hlen, length - hlen, ENC_NA);
    raw = read_payload(payload, pinfo, ft, ti, compressed, &rec, &bounded);
    rec.raw_tvb = raw;

    pt = proto_tree_add_subtree(ft, raw ? raw : payload, 0, -1, ett_fisco_payload, NULL, "Payload");
    rec.msg_type = read_msg_type(raw, pinfo, pt, ti, &h, response, &rec);
    proto_item_set_generated(proto_tree_add_string(ft, hf_fisco_msg_type, tvb, 0, length, rec.msg_type));
    proto_item_append_text(ti, ", %s, Seq %u%s", rec.msg_type, h.seq, compressed ? ", Snappy" : "");
    col_append_sep_fstr(pinfo->cinfo, COL_INFO, ", ", "%s seq=%u%s", rec.msg_type, h.seq,
                        compressed ? " [snappy]" : "");

    fisco_match(tvb, pinfo, ft, fc, h.seq, response);
    if (bounded)
        p2pc_record_bound(&rec);
    p2pc_record_add(tvb, 0, length, pinfo, tree, &rec);
    col_set_fence(pinfo->cinfo, COL_INFO);
    return avail;
}

/* ---- entry points ---- */

static const p2pc_framing_t fisco_framing = {
    /* 12 bytes tell the two header variants apart and hold either one's Length. */
    "fisco", FISCO_RC1_HEADER_LEN, get_fisco_pdu_len, dissect_fisco_pdu
};

static void
fisco_columns(packet_info *pinfo)
{
    col_set_str(pinfo->cinfo, COL_PROTOCOL, "FISCO");
    col_clear(pinfo->cinfo, COL_INFO);
}

static gboolean
looks_like_tls(tvbuff_t *tvb)
{
    /* A TLS record (content type 20..23, version 3.x) cannot be a FISCO header: a Length
     * starting 0x14..0x17 is over 100 MiB. */
    return tvb_captured_length(tvb) >= 3 && tvb_get_uint8(tvb, 0) >= 20 && tvb_get_uint8(tvb, 0) <= 23 &&
           tvb_get_uint8(tvb, 1) == 3 && tvb_get_uint8(tvb, 2) <= 4;
}

/* Is this frame's connection FISCO's?  On a FISCO port (or Decode As) it is claimed at the first
 * segment that starts like FISCO: a TLS record, a header of either 2.x variant, a 3.x header.
 * When the capture holds the connection's start and its first bytes start none of those, it is
 * not FISCO (Ethereum's devp2p listens on 30303, in the port range): stock gets it back.  A
 * connection joined mid-stream is trusted to the port, as before. */
static gboolean
fisco_claimed(tvbuff_t *tvb, packet_info *pinfo, fisco_conv_t *fc)
{
    if (!PINFO_FD_VISITED(pinfo) && !fc->claimed_at && !fc->let_go_at) {
        if (!p2pc_conn_start_seen(pinfo) || looks_like_tls(tvb) || plausible_on_port(tvb, 0) ||
            fisco3_plausible(tvb, 0))
            fc->claimed_at = pinfo->num;
        else
            fc->let_go_at = pinfo->num;
    }
    return fc->claimed_at && pinfo->num >= fc->claimed_at && !(fc->let_go_at && pinfo->num >= fc->let_go_at);
}

/* A connection whose first message is a 3.x handshake, or a 3.x gateway header that no 2.x header
 * reading fits (a Version of V1 to V3), is 3.x's for good: in plaintext and decrypted alike. */
static gboolean
first_message_is_3x(tvbuff_t *tvb)
{
    return fisco3_handle &&
           (fisco3_handshake_at(tvb, 0) || (!plausible_on_port(tvb, 0) && fisco3_plausible(tvb, 0)));
}

/* The connection's budget proto is known from here (this frame, after the record that told it):
 * the handshake's bytes before it go to the budget. */
static void
tls_proto_known(packet_info *pinfo, fisco_conv_t *fc)
{
    int d = p2pc_conn_dir(&fc->first_src, fc->first_port, pinfo);
    p_add_proto_data(pinfo->pool, pinfo, proto_fisco, FISCO_KEY_TLS_KNOWN, GUINT_TO_POINTER(1));
    p2pc_budget_add(pinfo, fc->tls_proto, P2PC_LAYER_NEGOTIATION, "tls_handshake", (gint64)fc->tls_handshake[d]);
    p2pc_budget_add_reverse(pinfo, fc->tls_proto, P2PC_LAYER_NEGOTIATION, "tls_handshake",
                            (gint64)fc->tls_handshake[1 - d]);
}

/* A TLS record on the P2P port: Wireshark's TLS decrypts it and brings the data back through
 * fisco_tls_handle.  An application_data record it does not decrypt (no key: TLS adds a tab
 * for every record it decrypts) is counted as it is, its 5-byte header as header bytes, with
 * the note naming the key log that would open it (as libp2p TLS's records).
 * In the byte budget (core/budget.h), with the kinds of libp2p TLS's: an application_data
 * record TLS decrypted is framing (header, explicit nonce, tag: its bytes less those of the
 * tab TLS added first, the record's plaintext, which FISCO's messages count), every other
 * record (handshake, change_cipher_spec, an alert) the handshake's, all its bytes.  Every
 * pass, as the records, under the proto of the connection's messages: that of its first
 * application_data record's ("fisco3" when TLS decrypted a 3.x message, else "fisco"), the
 * handshake records before it told with it; from its frame the connection is FISCO's in the
 * ledger (dissect_fisco()), so its transport bytes are in the budget under that proto. */
static int
dissect_fisco_tls_record(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data _U_)
{
    fisco_conv_t *fc = fisco_get_conv(pinfo);
    gboolean app = tvb_get_uint8(tvb, 0) == TLS_APPLICATION_DATA;
    guint sources = g_slist_length(pinfo->data_src);
    guint len = tvb_captured_length(tvb);
    const struct data_source *plain;

    call_dissector(tls_handle, tvb, pinfo, tree);
    plain = (const struct data_source *)g_slist_nth_data(pinfo->data_src, sources);
    if (app && !PINFO_FD_VISITED(pinfo) && !fc->tls_known_at) {
        fc->tls_proto = plain && fc->tls_v3 ? "fisco3" : "fisco";
        fc->tls_known_at = pinfo->num;
    }
    if (app && pinfo->num == fc->tls_known_at && !p_get_proto_data(pinfo->pool, pinfo, proto_fisco, FISCO_KEY_TLS_KNOWN))
        tls_proto_known(pinfo, fc);
    if (!app) {
        if (fc->tls_known_at && (pinfo->num > fc->tls_known_at ||
                                 p_get_proto_data(pinfo->pool, pinfo, proto_fisco, FISCO_KEY_TLS_KNOWN)))
            p2pc_budget_add(pinfo, fc->tls_proto, P2PC_LAYER_NEGOTIATION, "tls_handshake", len);
        else if (!PINFO_FD_VISITED(pinfo))
            fc->tls_handshake[p2pc_conn_dir(&fc->first_src, fc->first_port, pinfo)] += len;
    } else if (plain) {
        p2pc_budget_add(pinfo, fc->tls_proto, P2PC_LAYER_SECURITY, "tls_framing",
                        len - tvb_captured_length(get_data_source_tvb(plain)));
    } else {
        p2pc_tls_no_keys(pinfo, p2pc_record_encrypted(tvb, pinfo, tree, "fisco", "tls (encrypted)",
                                                      TLS_RECORD_HEADER));
    }
    return (int)len;
}

static guint
get_tls_record_len(packet_info *pinfo _U_, tvbuff_t *tvb, int offset, void *data _U_)
{
    return TLS_RECORD_HEADER + tvb_get_ntohs(tvb, offset + 3);
}

/* TCP: plaintext FISCO, or (as real nodes run) TLS on the P2P port, cut into whole records
 * here (each handed to the TLS dissector) so that the records TLS cannot decrypt are counted. */
static int
dissect_fisco(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    fisco_conv_t *fc = fisco_get_conv(pinfo);
    const p2pc_framing_t *carried = p2pc_holes_carried(pinfo);
    p2pc_conn_t *pc = p2pc_conn_find(pinfo);
    const char *dropped = p2pc_conn_had(pc, P2PC_SLOT_FISCO) ? p2pc_conn_dropped(pc) : NULL;
    const struct tcpinfo *tcpi = (const struct tcpinfo *)data;
    guint at;

    /* A live session reset dropped the connection's state (TLS's, which Wireshark cannot be
     * given again, or over the budget): its bytes are undecoded, for that reason. */
    if (dropped) {
        fisco_columns(pinfo);
        col_add_fstr(pinfo->cinfo, COL_INFO, "[Undecoded: state dropped at a session reset (%s)]", dropped);
        p2pc_record_undecoded(tvb, 0, -1, pinfo, tree, "fisco", tvb_captured_length(tvb), dropped);
        return tvb_captured_length(tvb);
    }
    /* A 3.x connection a live session reset carried over goes on as 3.x, where the
     * first bytes of the session may be in the middle of a message. */
    if (carried && carried != &fisco_framing && fisco3_handle) {
        conversation_set_dissector(find_or_create_conversation(pinfo), fisco3_handle);
        return dissect_fisco3(tvb, pinfo, tree, data);
    }
    if (!carried && !fisco_claimed(tvb, pinfo, fc))
        return 0;
    if (!fc->plaintext && tls_handle && (fc->tls || looks_like_tls(tvb))) {
        p2pc_conn_carry(pc);
        p2pc_conn_stay(pc);
        /* TLS's records reach FISCO without TCP's sequence numbers: the ledger watches the
         * connection until FISCO claims it (below), so that its retransmissions are checked. */
        p2pc_ledger_watch(pinfo);
        if (!PINFO_FD_VISITED(pinfo))
            fc->tls = TRUE;
        tcp_dissect_pdus(tvb, pinfo, tree, TRUE, TLS_RECORD_HEADER, get_tls_record_len,
                         dissect_fisco_tls_record, data);
        /* From the frame whose record told the budget's proto (dissect_fisco_tls_record()) the
         * connection is FISCO's in the ledger, framed by TLS records: its transport bytes are
         * in the budget (core/transport.h: those of the frames before told in that frame). */
        if (!PINFO_FD_VISITED(pinfo) && fc->tls_known_at && tcpi &&
            p2pc_ledger_enter(tvb, pinfo, tcpi->seq, P2PC_CLAIM_FRAMED, fc->tls_proto))
            p2pc_post_handed(pinfo);
        return tvb_captured_length(tvb);
    }
    if (!fc->header_len && !fc->plaintext && !PINFO_FD_VISITED(pinfo) && first_message_is_3x(tvb)) {
        conversation_set_dissector(find_or_create_conversation(pinfo), fisco3_handle);
        return dissect_fisco3(tvb, pinfo, tree, data);
    }
    /* Once a FISCO header starts a segment, later segments that happen to look like TLS
     * (payload bytes, when TCP reassembly is off) stay FISCO. */
    if (!PINFO_FD_VISITED(pinfo) && plausible_on_port(tvb, 0))
        fc->plaintext = TRUE;
    fisco_columns(pinfo);
    at = p2pc_holes_enter(tvb, pinfo, tree, data, &fisco_framing);
    p2pc_holes_dissect_pdus(tvb, at, pinfo, tree, data, &fisco_framing);
    p2pc_holes_leave(tvb, pinfo, data);
    return tvb_captured_length(tvb);
}

/* Decrypted TLS data: 3.x's when its first message is (first_message_is_3x()), as on TCP. */
static int
dissect_fisco_tls(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    fisco_conv_t *fc = fisco_get_conv(pinfo);

    /* TLS on a port FISCO does not know (its heuristic, Decode As): only this entry runs. */
    p2pc_ledger_watch(pinfo);
    if (!fc->header_len && !fc->tls_v3 && !PINFO_FD_VISITED(pinfo) && first_message_is_3x(tvb))
        fc->tls_v3 = TRUE;
    if (fc->tls_v3)
        return dissect_fisco3_tls(tvb, pinfo, tree, data);
    fisco_columns(pinfo);
    tcp_dissect_pdus(tvb, pinfo, tree, TRUE, fisco_framing.fixed_len, get_fisco_pdu_len, dissect_fisco_pdu, data);
    return tvb_captured_length(tvb);
}

/* Another port: a connection whose start the capture holds, on no stock dissector's port, whose
 * first segment holds whole 2.x messages that parse (heur_segment()) or a whole 3.x handshake. */
static p2pc_bool_t
dissect_fisco_heur_tcp(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    const p2pc_framing_t *carried = p2pc_holes_carried(pinfo);
    fisco_conv_t *fc;
    if (carried) {
        /* A connection a live session reset carried over is FISCO's only if it was. */
        if (carried != &fisco_framing && g_strcmp0(carried->proto, "fisco3") != 0)
            return FALSE;
    } else if (!p2pc_conn_start_seen(pinfo) || !p2pc_heur_may_claim(pinfo, fisco_handle) ||
               !(heur_segment(tvb, pinfo) || fisco3_handshake_at(tvb, 0))) {
        return FALSE;
    }
    fc = fisco_get_conv(pinfo);
    if (fc->let_go_at && pinfo->num >= fc->let_go_at)
        return FALSE;
    if (!PINFO_FD_VISITED(pinfo) && !fc->claimed_at) {
        fc->claimed_at = pinfo->num;
        fc->by_heuristic = TRUE;
    }
    conversation_set_dissector(find_or_create_conversation(pinfo), fisco_handle);
    dissect_fisco(tvb, pinfo, tree, data);
    return TRUE;
}

/* Decrypted TLS data on another port.  TLS asks its heuristics again for every record, so the
 * connection's first records decide (whole 2.x messages that parse or a whole 3.x handshake, as
 * on TCP), and from the frame where they did, every record is FISCO's: a record may hold a lone
 * header-only message, or the middle of a long one. */
static p2pc_bool_t
dissect_fisco_heur_tls(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    p2pc_conn_t *pc = p2pc_conn_find(pinfo);
    const fisco_conv_t *known = pc ? (const fisco_conv_t *)p2pc_conn_slot(pc, P2PC_SLOT_FISCO) : NULL;
    fisco_conv_t *fc;

    if (!(known && known->claimed_at && pinfo->num >= known->claimed_at) &&
        !(heur_segment(tvb, pinfo) || fisco3_handshake_at(tvb, 0)))
        return FALSE;
    fc = fisco_get_conv(pinfo);
    if (!PINFO_FD_VISITED(pinfo) && !fc->claimed_at)
        fc->claimed_at = pinfo->num;
    dissect_fisco_tls(tvb, pinfo, tree, data);
    return TRUE;
}

/* Over 80 lines: the registration tables README.dissector asks for (fields, subtrees, expert
 * items, preferences), one entry each; cut up, they would only be harder to find. */
void
proto_register_fisco(void)
{
    static hf_register_info hf[] = {
        { &hf_fisco_length, { "Length", "fisco.length", FT_UINT32, BASE_DEC, NULL, 0x0,
            "Whole message including the header (compressed size when compressed)", HFILL } },
        { &hf_fisco_version, { "Version", "fisco.version", FT_UINT16, BASE_HEX, NULL, 0x0,
            "Extension bits; only bit 15 (compression) is used", HFILL } },
        { &hf_fisco_compressed, { "Compressed", "fisco.compressed", FT_BOOLEAN, 16, NULL, FISCO_COMPRESS_FLAG,
            "Version bit 15: the data is a Snappy block", HFILL } },
        { &hf_fisco_group, { "Group ID", "fisco.group", FT_INT16, BASE_DEC, NULL, 0x0,
            "Destination group (high half of the ProtocolID)", HFILL } },
        { &hf_fisco_module, { "Module ID", "fisco.module", FT_UINT16, BASE_DEC, VALS(module_vals), 0x0,
            "Destination module (low half of the ProtocolID; -ProtocolID for a response)", HFILL } },
        { &hf_fisco_protocol_id, { "Protocol ID", "fisco.protocol_id", FT_INT32, BASE_DEC, NULL, 0x0,
            "(group << 16) | module (rc1: (group << 8) | module); negative for responses", HFILL } },
        { &hf_fisco_response, { "Response", "fisco.response", FT_BOOLEAN, BASE_NONE, NULL, 0x0,
            "Negative protocol ID: an answer reusing its request's seq", HFILL } },
        { &hf_fisco_rc1, { "rc1 header", "fisco.rc1", FT_BOOLEAN, BASE_NONE, NULL, 0x0,
            "The 12-byte v2.0.0-rc1 header", HFILL } },
        { &hf_fisco_packet_type, { "Packet type", "fisco.packet_type", FT_UINT16, BASE_DEC, NULL, 0x0,
            "Per module (Topic, AMOP); BlockSync: 1 when the txs came from RPC", HFILL } },
        { &hf_fisco_seq, { "Seq", "fisco.seq", FT_UINT32, BASE_DEC, NULL, 0x0,
            "Sender's message counter; responses reuse the request's", HFILL } },
        { &hf_fisco_data, { "Data", "fisco.data", FT_BYTES, BASE_NONE, NULL, 0x0, "Payload as sent", HFILL } },
        { &hf_fisco_msg_type, { "Message type", "fisco.msg_type", FT_STRING, BASE_NONE, NULL, 0x0,
            "Module.PacketType[.Response]", HFILL } },
        { &hf_fisco_uncompressed_len, { "Uncompressed length", "fisco.uncompressed_len", FT_UINT32, BASE_DEC,
            NULL, 0x0, "Payload bytes after Snappy decompression", HFILL } },
        { &hf_fisco_ratio, { "Compression ratio", "fisco.ratio", FT_DOUBLE, BASE_CUSTOM, CF_FUNC(p2pc_ratio_format), 0x0,
            "Compressed / uncompressed payload bytes", HFILL } },
        { &hf_fisco_topic_text, { "Topic data", "fisco.topic.text", FT_STRING, BASE_NONE, NULL, 0x0,
            "Heartbeat seq or tab-separated topics", HFILL } },
        { &hf_fisco_topic_seq, { "Topic seq", "fisco.topic.seq", FT_STRING, BASE_NONE, NULL, 0x0,
            "The sender's topic list version", HFILL } },
        { &hf_fisco_topic_name, { "Topic", "fisco.topic.name", FT_STRING, BASE_NONE, NULL, 0x0, "One topic of a SendTopics list", HFILL } },
        { &hf_fisco_amop_length, { "Channel message length", "fisco.amop.length", FT_UINT32, BASE_DEC, NULL, 0x0,
            "Channel message length field, header included", HFILL } },
        { &hf_fisco_amop_type, { "Channel message type", "fisco.amop.type", FT_UINT16, BASE_HEX, NULL, 0x0,
            "Channel message type", HFILL } },
        { &hf_fisco_amop_seq, { "Channel message seq", "fisco.amop.seq", FT_STRING, BASE_NONE, NULL, 0x0,
            "Channel message seq (32 ASCII characters)", HFILL } },
        { &hf_fisco_amop_result, { "Result", "fisco.amop.result", FT_INT32, BASE_DEC, NULL, 0x0, "Channel message result code (0 = success)", HFILL } },
        { &hf_fisco_amop_data, { "Channel data", "fisco.amop.data", FT_BYTES, BASE_NONE, NULL, 0x0, "Channel message body after the 42-byte header", HFILL } },
        { &hf_fisco_pbft_packet_id, { "PBFT packet", "fisco.pbft.packet_id", FT_UINT32, BASE_DEC, VALS(pbft_vals),
            0x0, "PBFT packet type: Prepare, Sign, Commit or ViewChange", HFILL } },
        { &hf_fisco_pbft_ttl, { "TTL", "fisco.pbft.ttl", FT_UINT32, BASE_DEC, NULL, 0x0, "Forwarding hops left", HFILL } },
        { &hf_fisco_pbft_height, { "Height", "fisco.pbft.height", FT_UINT64, BASE_DEC, NULL, 0x0, "Block height the PBFT message is about", HFILL } },
        { &hf_fisco_pbft_view, { "View", "fisco.pbft.view", FT_UINT64, BASE_DEC, NULL, 0x0, "PBFT view number", HFILL } },
        { &hf_fisco_pbft_idx, { "Node index", "fisco.pbft.idx", FT_UINT64, BASE_DEC, NULL, 0x0, "Index of the sending node in the sealer list", HFILL } },
        { &hf_fisco_raft_type, { "Raft packet", "fisco.raft.type", FT_UINT32, BASE_DEC, VALS(raft_vals), 0x0,
            "Raft packet type: VoteReq, VoteResp, HeartBeat or HeartBeatResp", HFILL } },
        { &hf_fisco_sync_type, { "BlockSync packet", "fisco.sync.type", FT_UINT8, BASE_DEC, VALS(blocksync_vals),
            0x0, "SyncPacketType + 1", HFILL } },
        { &hf_fisco_sync_items, { "Items", "fisco.sync.items", FT_UINT32, BASE_DEC, NULL, 0x0,
            "Items in the packet's RLP list", HFILL } },
        { &hf_fisco_sync_txs, { "Transactions", "fisco.sync.txs", FT_UINT32, BASE_DEC, NULL, 0x0,
            "Transactions batched in a Transactions packet", HFILL } },
        { &hf_fisco_sync_tx, { "Transaction", "fisco.sync.tx", FT_BYTES, BASE_NONE, NULL, 0x0,
            "One RLP-encoded transaction", HFILL } },
        { &hf_fisco_sync_number, { "Block number", "fisco.sync.number", FT_UINT64, BASE_DEC, NULL, 0x0,
            "Status: the sender's height; ReqBlocks: the first block asked for", HFILL } },
        { &hf_fisco_sync_size, { "Blocks asked for", "fisco.sync.size", FT_UINT64, BASE_DEC, NULL, 0x0,
            "ReqBlocks: number of blocks asked for", HFILL } },
        { &hf_fisco_response_in, { "Response in", "fisco.response_in", FT_FRAMENUM, BASE_NONE,
            FRAMENUM_TYPE(FT_FRAMENUM_RESPONSE), 0x0, "The frame of the answer to this request", HFILL } },
        { &hf_fisco_response_to, { "Request in", "fisco.response_to", FT_FRAMENUM, BASE_NONE,
            FRAMENUM_TYPE(FT_FRAMENUM_REQUEST), 0x0, "The frame of the request this answers", HFILL } },
        { &hf_fisco_time, { "Time", "fisco.time", FT_RELATIVE_TIME, BASE_NONE, NULL, 0x0,
            "Time since the request", HFILL } },
    };
    static gint *ett[] = { &ett_fisco, &ett_fisco_header, &ett_fisco_payload, &ett_fisco_txs };
    static ei_register_info ei[] = {
        { &ei_fisco_length, { "fisco.length.invalid", PI_MALFORMED, PI_ERROR,
            "Length below the header size or over 100 MiB", EXPFILL } },
        { &ei_fisco_version, { "fisco.version.unknown", PI_PROTOCOL, PI_WARN,
            "Version bits other than 0x8000", EXPFILL } },
        { &ei_fisco_decompress, { "fisco.decompress_failed", PI_MALFORMED, PI_ERROR,
            "Snappy decompression failed", EXPFILL } },
        { &ei_fisco_rlp, { "fisco.rlp", PI_MALFORMED, PI_WARN, "Payload structure problem", EXPFILL } },
        { &ei_fisco_let_go, { "fisco.let_go", PI_PROTOCOL, PI_NOTE,
            "Not a FISCO header on a connection the heuristic took: it is let go from the next frame", EXPFILL } },
    };
    module_t *module;
    expert_module_t *expert;

    proto_fisco = proto_register_protocol("FISCO BCOS P2P", "FISCO", "fisco");
    proto_register_field_array(proto_fisco, hf, array_length(hf));
    proto_register_subtree_array(ett, array_length(ett));
    expert = expert_register_protocol(proto_fisco);
    expert_register_field_array(expert, ei, array_length(ei));
    fisco_handle = register_dissector("fisco", dissect_fisco, proto_fisco);
    fisco_tls_handle = register_dissector("fisco.tls", dissect_fisco_tls, proto_fisco);

    module = prefs_register_protocol(proto_fisco, NULL);
    prefs_register_bool_preference(module, "rc1", "Always use the rc1 header",
        "Read every message with the 12-byte v2.0.0-rc1 header (no compression). Off: each "
        "connection's first message says which header it uses", &pref_rc1);
    prefs_register_bool_preference(module, "decompress", "Decompress Snappy payloads",
        "Decompress payloads whose Version has bit 15 set", &pref_decompress);
}

void
proto_reg_handoff_fisco(void)
{
    tls_handle = find_dissector("tls");
    fisco3_handle = find_dissector("fisco3");
    /* Both give a range preference (fisco.tcp.port, fisco.tls.port) and Decode As. */
    dissector_add_uint_range_with_preference("tcp.port", FISCO_DEFAULT_PORTS, fisco_handle);
    dissector_add_uint_range_with_preference("tls.port", FISCO_DEFAULT_PORTS, fisco_tls_handle);
    heur_dissector_add("tcp", dissect_fisco_heur_tcp, "FISCO BCOS P2P over TCP", "fisco_tcp", proto_fisco,
                       HEURISTIC_ENABLE);
    heur_dissector_add("tls", dissect_fisco_heur_tls, "FISCO BCOS P2P over TLS", "fisco_tls", proto_fisco,
                       HEURISTIC_ENABLE);
}
