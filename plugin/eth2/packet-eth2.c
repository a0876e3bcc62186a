/* packet-eth2.c
 * Ethereum consensus layer over libp2p: req/resp (`/eth2/beacon_chain/req/<name>/<v>/ssz_snappy`,
 * SSZ in the Snappy framing format) and gossipsub (`/meshsub/1.x`, SSZ in Snappy block format).
 *
 * Source: ethereum/consensus-specs specs/{phase0,altair,...}/p2p-interface.md; Snappy framing:
 * google/snappy framing_format.txt; gossipsub RPC: libp2p/specs pubsub/gossipsub.
 *
 *   request         uvarint(len(ssz)) || framed-snappy(ssz)
 *   response chunk  result || [fork digest, success chunks of Altair+ methods] ||
 *                   uvarint(len(ssz)) || framed-snappy(ssz)
 *   gossip message  Message.data = snappy-block(ssz);  message-id (Altair+) =
 *                   SHA256(0x01000000 || uint64_le(len(topic)) || topic || ssz)[:20]
 *
 * Both are registered in "multistream.protocol" under their protocol IDs and called with the
 * muxed stream direction's pipe (p2pc-libp2p.h): the framing below cuts each request, response
 * chunk and gossip RPC out of the stream, however the muxer split it.  There is no end marker
 * in req/resp: a chunk ends when its Snappy frames have produced the declared SSZ length.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/p2pc-compat.h"
#include "core/codecs.h"
#include "core/prefs.h"
#include "libp2p/engine.h"
#include "core/record.h"

#include <epan/expert.h>
#include <epan/prefs.h>
#include <wsutil/wsgcrypt.h>

void proto_register_eth2(void);
void proto_reg_handoff_eth2(void);

#define ETH2_MAX_PAYLOAD (10 * 1024 * 1024)     /* MAX_PAYLOAD_SIZE */

static int proto_eth2 = -1;
static int proto_gossipsub = -1;

static int hf_eth2_method = -1;
static int hf_eth2_direction = -1;
static int hf_eth2_result = -1;
static int hf_eth2_context = -1;
static int hf_eth2_fork = -1;
static int hf_eth2_ssz_length = -1;
static int hf_eth2_chunk = -1;
static int hf_eth2_chunk_type = -1;
static int hf_eth2_chunk_length = -1;
static int hf_eth2_chunk_crc = -1;
static int hf_eth2_chunk_crc_status = -1;
static int hf_eth2_compressed_len = -1;
static int hf_eth2_error_message = -1;
static int hf_eth2_fork_digest = -1;
static int hf_eth2_finalized_root = -1;
static int hf_eth2_finalized_epoch = -1;
static int hf_eth2_head_root = -1;
static int hf_eth2_head_slot = -1;
static int hf_eth2_seq = -1;
static int hf_eth2_reason = -1;
static int hf_eth2_attnets = -1;
static int hf_eth2_syncnets = -1;
static int hf_eth2_start_slot = -1;
static int hf_eth2_count = -1;
static int hf_eth2_step = -1;
static int hf_eth2_root = -1;
static int hf_eth2_block_slot = -1;
static int hf_eth2_block_proposer = -1;
static int hf_eth2_block_parent_root = -1;
static int hf_eth2_block_state_root = -1;
static int hf_eth2_block_signature = -1;
static int hf_gs_subscribe = -1;
static int hf_gs_topic = -1;
static int hf_gs_topic_name = -1;
static int hf_gs_data = -1;
static int hf_gs_seqno = -1;
static int hf_gs_message_id = -1;
static int hf_gs_ihave = -1;
static int hf_gs_iwant = -1;
static int hf_gs_graft = -1;
static int hf_gs_prune = -1;
static int hf_gs_idontwant = -1;

static gint ett_eth2 = -1;
static gint ett_eth2_chunks = -1;
static gint ett_eth2_ssz = -1;
static gint ett_gs = -1;
static gint ett_gs_msg = -1;

static expert_field ei_eth2_crc = EI_INIT;
static expert_field ei_eth2_unskippable = EI_INIT;
static expert_field ei_eth2_length_mismatch = EI_INIT;
static expert_field ei_eth2_too_long = EI_INIT;
static expert_field ei_eth2_compressed_too_long = EI_INIT;
static expert_field ei_eth2_result = EI_INIT;
static expert_field ei_eth2_trailing = EI_INIT;
static expert_field ei_eth2_decompress = EI_INIT;
static expert_field ei_eth2_truncated = EI_INIT;

static const char *pref_extra_digests = "";
static GHashTable *extra_digests;   /* lowercase hex digest -> fork name, from the preference */

static const value_string result_vals[] = {
    { 0, "Success" }, { 1, "InvalidRequest" }, { 2, "ServerError" }, { 3, "ResourceUnavailable" },
    { 0, NULL }
};
static const value_string chunk_type_vals[] = {
    { 0x00, "Compressed data" }, { 0x01, "Uncompressed data" }, { 0xfe, "Padding" },
    { 0xff, "Stream identifier" }, { 0, NULL }
};

/* Mainnet fork digests (consensus-specs); others through the extra_digests preference. */
static const struct { const char *digest; const char *fork; } mainnet_digests[] = {
    { "b5303f2a", "phase0" }, { "afcaaba0", "altair" }, { "4a26c58b", "bellatrix" },
    { "bba4da96", "capella" }, { "6a95a1a9", "deneb" }, { "ad532ceb", "electra" },
    { "cc2c5cdb", "fulu" },
};

static const char *
fork_name(const char *hex)
{
    for (size_t i = 0; i < G_N_ELEMENTS(mainnet_digests); i++)
        if (!g_ascii_strcasecmp(hex, mainnet_digests[i].digest))
            return mainnet_digests[i].fork;
    if (extra_digests) {
        gchar *key = g_ascii_strdown(hex, -1);
        const char *found = (const char *)g_hash_table_lookup(extra_digests, key);
        g_free(key);
        if (found)
            return found;
    }
    return "unknown";
}

/* "/eth2/beacon_chain/req/beacon_blocks_by_range/2/ssz_snappy" -> "beacon_blocks_by_range/2" */
static const char *
method_of(const char *protocol, wmem_allocator_t *scope)
{
    const char *p = protocol + strlen("/eth2/beacon_chain/req/");
    const char *end = strstr(p, "/ssz_snappy");
    return wmem_strndup(scope, p, end ? (gsize)(end - p) : strlen(p));
}

static void
dissect_signed_block(tvbuff_t *ssz, proto_tree *tree)
{
    guint len = tvb_captured_length(ssz);
    guint32 msg_off;
    if (len < 100)
        return;
    msg_off = tvb_get_letohl(ssz, 0);
    proto_tree_add_item(tree, hf_eth2_block_signature, ssz, 4, 96, ENC_NA);
    if (msg_off + 80 > len)
        return;
    proto_tree_add_item(tree, hf_eth2_block_slot, ssz, msg_off, 8, ENC_LITTLE_ENDIAN);
    proto_tree_add_item(tree, hf_eth2_block_proposer, ssz, msg_off + 8, 8, ENC_LITTLE_ENDIAN);
    proto_tree_add_item(tree, hf_eth2_block_parent_root, ssz, msg_off + 16, 32, ENC_NA);
    proto_tree_add_item(tree, hf_eth2_block_state_root, ssz, msg_off + 48, 32, ENC_NA);
}

/* The SSZ of a request or response, by method. */
static void
dissect_ssz(tvbuff_t *ssz, packet_info *pinfo, proto_tree *tree, const char *method, gboolean request,
            guint8 result)
{
    guint len = tvb_captured_length(ssz);
    proto_tree *t = proto_tree_add_subtree(tree, ssz, 0, -1, ett_eth2_ssz, NULL, "SSZ");
    if (result != 0) {
        /* ErrorMessage: List[byte, 256] */
        proto_tree_add_item(t, hf_eth2_error_message, ssz, 0, MIN(len, 256), ENC_UTF_8);
        return;
    }
    if (g_str_has_prefix(method, "status/") && len >= 84) {
        proto_tree_add_item(t, hf_eth2_fork_digest, ssz, 0, 4, ENC_NA);
        proto_tree_add_item(t, hf_eth2_finalized_root, ssz, 4, 32, ENC_NA);
        proto_tree_add_item(t, hf_eth2_finalized_epoch, ssz, 36, 8, ENC_LITTLE_ENDIAN);
        proto_tree_add_item(t, hf_eth2_head_root, ssz, 44, 32, ENC_NA);
        proto_tree_add_item(t, hf_eth2_head_slot, ssz, 76, 8, ENC_LITTLE_ENDIAN);
    } else if (g_str_has_prefix(method, "ping/") && len >= 8) {
        proto_tree_add_item(t, hf_eth2_seq, ssz, 0, 8, ENC_LITTLE_ENDIAN);
    } else if (g_str_has_prefix(method, "goodbye/") && len >= 8) {
        proto_tree_add_item(t, hf_eth2_reason, ssz, 0, 8, ENC_LITTLE_ENDIAN);
    } else if (g_str_has_prefix(method, "metadata/") && !request && len >= 16) {
        proto_tree_add_item(t, hf_eth2_seq, ssz, 0, 8, ENC_LITTLE_ENDIAN);
        proto_tree_add_item(t, hf_eth2_attnets, ssz, 8, 8, ENC_NA);
        if (len >= 17)
            proto_tree_add_item(t, hf_eth2_syncnets, ssz, 16, 1, ENC_NA);
    } else if (g_str_has_prefix(method, "beacon_blocks_by_range/") && request && len >= 16) {
        proto_tree_add_item(t, hf_eth2_start_slot, ssz, 0, 8, ENC_LITTLE_ENDIAN);
        proto_tree_add_item(t, hf_eth2_count, ssz, 8, 8, ENC_LITTLE_ENDIAN);
        if (len >= 24)
            proto_tree_add_item(t, hf_eth2_step, ssz, 16, 8, ENC_LITTLE_ENDIAN);
    } else if (g_str_has_prefix(method, "beacon_blocks_by_root/") && request) {
        for (guint off = 0; off + 32 <= len; off += 32)
            proto_tree_add_item(t, hf_eth2_root, ssz, off, 32, ENC_NA);
    } else if (g_str_has_prefix(method, "beacon_blocks_by_")) {
        dissect_signed_block(ssz, t);
    }
    (void)pinfo;
}

/* Methods answered with exactly one chunk. */
static gboolean
single_chunk(const char *method)
{
    return g_str_has_prefix(method, "status/") || g_str_has_prefix(method, "ping/") ||
           g_str_has_prefix(method, "metadata/") || g_str_has_prefix(method, "goodbye/");
}

/* The largest SSZ a method's request or success chunk can hold (0: only MAX_PAYLOAD_SIZE).
 * Status v1 84, v2 92 (+ earliest_available_slot); Ping and Goodbye a uint64; MetaData v1 16,
 * v2 17 (+ syncnets), v3 25 (+ custody_group_count); BeaconBlocksByRange request 24;
 * ByRoot request at most MAX_REQUEST_BLOCKS (1024) roots. */
static guint64
ssz_max(const char *method, gboolean request)
{
    static const struct { const char *method; guint64 req, resp; } sizes[] = {
        { "status/1", 84, 84 }, { "status/2", 92, 92 }, { "ping/1", 8, 8 }, { "goodbye/1", 8, 8 },
        { "metadata/1", 0, 16 }, { "metadata/2", 0, 17 }, { "metadata/3", 0, 25 },
        { "beacon_blocks_by_range/1", 24, 0 }, { "beacon_blocks_by_range/2", 24, 0 },
        { "beacon_blocks_by_root/1", 1024 * 32, 0 }, { "beacon_blocks_by_root/2", 1024 * 32, 0 },
    };
    for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++)
        if (!strcmp(method, sizes[i].method))
            return request ? sizes[i].req : sizes[i].resp;
    return 0;
}

/* Methods whose success chunks carry the 4-byte fork-digest context (Altair+). */
static gboolean
has_context(const char *protocol)
{
    return strstr(protocol, "/beacon_blocks_by_range/2/") || strstr(protocol, "/beacon_blocks_by_root/2/") ||
           strstr(protocol, "_sidecars_by_") || strstr(protocol, "/light_client_");
}

/* Bytes of a framed Snappy stream that produce `want` uncompressed bytes; 0 if incomplete. */
/* How far the framed-Snappy scan of the chunk being received got: the next call resumes at the
 * chunk boundary it reached instead of walking again what it walked (a 440 KB block arrives in
 * hundreds of pieces), so the scan is linear in the chunk's bytes.  A pipe's state, first pass. */
typedef struct {
    guint off;                  /* the next Snappy chunk, from the start of the framed stream */
    guint64 out;                /* uncompressed bytes the chunks before it produce */
    gboolean any;               /* a chunk was seen */
} snappy_scan_t;

/* Bytes of a framed Snappy stream that produce `want` uncompressed bytes; 0 if incomplete (the
 * scan remembers where it stopped), < 0 if broken. */
static gint64
snappy_framed_len(const guint8 *p, guint avail, guint64 want, snappy_scan_t *scan)
{
    /* An empty SSZ is still a stream identifier; otherwise frames until `want` bytes. */
    while (scan->out < want || !scan->any) {
        guint8 type;
        guint32 clen;
        if (avail - scan->off < 4)
            return 0;
        type = p[scan->off];
        clen = pletohu24(p + scan->off + 1);
        if (avail - scan->off - 4 < clen)
            return 0;
        scan->any = TRUE;
        if (type == 0x00 && clen >= 4) {
            guint64 n;
            guint used;
            if (!l2p_uvarint(p + scan->off + 8, clen - 4, &n, &used))
                return -1;
            scan->out += n;
        } else if (type == 0x01 && clen >= 4) {
            scan->out += clen - 4;
        } else if (type >= 0x02 && type <= 0x7f) {
            return scan->off + 4 + clen;    /* reserved unskippable: the decoder flags it */
        }
        scan->off += 4 + clen;
        if (want == 0 && type == 0xff)
            break;
    }
    return scan->off;
}

/* One request or response chunk: [result [context]] uvarint(len) framed-snappy. */
static gint64
reqresp_len(l2p_pipe_t *pipe, const guint8 *p, guint avail)
{
    guint off = 0, used;
    guint64 n;
    gint64 f;
    if (pipe->dir != 0) {
        if (avail < 1)
            return 0;
        off = 1;
        if (p[0] == 0 && has_context(pipe->protocol))
            off += 4;
    }
    if (avail < off)
        return 0;
    if (!l2p_uvarint(p + off, avail - off, &n, &used))
        return avail - off >= 9 ? -1 : 0;
    off += used;
    if (n > L2P_MAX_PDU)
        return -1;
    if (!pipe->state)
        pipe->state = wmem_new0(wmem_file_scope(), snappy_scan_t);
    f = snappy_framed_len(p + off, avail - off, n, (snappy_scan_t *)pipe->state);
    if (f == 0)
        return 0;
    memset(pipe->state, 0, sizeof(snappy_scan_t));     /* the next chunk starts afresh */
    return f < 0 ? -1 : off + f;
}

static void
reqresp_pdu(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, l2p_pipe_t *pipe, l2p_pdu_t *pdu)
{
    const char *method;
    gboolean request;
    proto_item *ti, *li;
    proto_tree *t, *ct;
    guint off = 0, len = tvb_captured_length(tvb), used;
    guint8 result = 0;
    guint64 ssz_len;
    guint8 *out = NULL;
    size_t out_len = 0, consumed = 0;
    const char *detail = NULL;
    p2pc_dc_status_t st;
    wmem_array_t *chunks;
    p2pc_record_t rec;
    tvbuff_t *ssz = NULL;
    p2pc_bound_t bound;
    gboolean bounded = FALSE;

    method = method_of(pipe->protocol, pinfo->pool);
    request = pipe->dir == 0;
    col_set_str(pinfo->cinfo, COL_PROTOCOL, "eth2");
    ti = proto_tree_add_item(tree, proto_eth2, tvb, 0, -1, ENC_NA);
    t = proto_item_add_subtree(ti, ett_eth2);
    proto_item_set_generated(proto_tree_add_string(t, hf_eth2_method, tvb, 0, 0, method));
    if (pdu->truncated)
        expert_add_info_format(pinfo, ti, &ei_eth2_truncated, "The stream closed after %u bytes of this %s",
                               len, request ? "request" : "response chunk");
    /* One request per stream; status, ping, metadata and goodbye answer with one chunk. */
    if (pdu->index > 0 && (request || single_chunk(method)))
        proto_tree_add_expert_format(t, pinfo, &ei_eth2_trailing, tvb, 0, len,
                                     "%u bytes after the %s this stream carries", len,
                                     request ? "one request" : "one response chunk");
    proto_item_set_generated(proto_tree_add_string(t, hf_eth2_direction, tvb, 0, 0, request ? "request" : "response"));
    if (!request) {
        result = tvb_get_uint8(tvb, 0);
        proto_tree_add_item(t, hf_eth2_result, tvb, 0, 1, ENC_NA);
        off = 1;
        if (result != 0) {
            expert_add_info_format(pinfo, ti, &ei_eth2_result, "Response result %u (%s)", result,
                                   val_to_str_const(result, result_vals, "method-specific"));
        } else if (has_context(pipe->protocol)) {
            char hex[9];
            if (len < off + 4)
                goto record;
            proto_tree_add_item(t, hf_eth2_context, tvb, off, 4, ENC_NA);
            snprintf(hex, sizeof hex, "%02x%02x%02x%02x", tvb_get_uint8(tvb, off), tvb_get_uint8(tvb, off + 1),
                     tvb_get_uint8(tvb, off + 2), tvb_get_uint8(tvb, off + 3));
            proto_item_set_generated(proto_tree_add_string(t, hf_eth2_fork, tvb, off, 4, fork_name(hex)));
            off += 4;
        }
    }
    if (len <= off || !(used = tvb_get_varint(tvb, off, MIN(FT_VARINT_MAX_LEN, len - off), &ssz_len,
                                               ENC_VARINT_PROTOBUF)))
        goto record;
    proto_tree_add_uint64(t, hf_eth2_ssz_length, tvb, off, used, ssz_len);
    off += used;
    li = proto_tree_get_parent(t);
    if (ssz_len > ETH2_MAX_PAYLOAD) {
        expert_add_info_format(pinfo, ti, &ei_eth2_too_long, "SSZ length %" G_GUINT64_FORMAT " exceeds MAX_PAYLOAD_SIZE (%u)",
                               ssz_len, ETH2_MAX_PAYLOAD);
    } else if (result == 0) {
        guint64 max = ssz_max(method, request);
        if (max && ssz_len > max)
            expert_add_info_format(pinfo, ti, &ei_eth2_too_long, "SSZ length %" G_GUINT64_FORMAT
                                   " exceeds the largest %s %s (%" G_GUINT64_FORMAT " bytes)",
                                   ssz_len, method, request ? "request" : "response", max);
    }
    proto_item_set_generated(proto_tree_add_uint(t, hf_eth2_compressed_len, tvb, off, len - off, len - off));
    /* p2p-interface.md: a conforming encoder never exceeds snappy's max_compressed_len. */
    if ((guint64)(len - off) > 32 + ssz_len + ssz_len / 6)
        expert_add_info_format(pinfo, ti, &ei_eth2_compressed_too_long,
                               "Compressed length %u exceeds 32 + n + n/6 = %" G_GUINT64_FORMAT, len - off,
                               32 + ssz_len + ssz_len / 6);

    chunks = wmem_array_new(pinfo->pool, sizeof(p2pc_snappy_chunk_t));
    bound = p2pc_bound(pinfo, MIN(ssz_len + 65536, ETH2_MAX_PAYLOAD), len - off, 0);
    st = p2pc_snappy_framed_decode(pinfo->pool, tvb_get_ptr(tvb, off, len - off), len - off,
                                   (size_t)ssz_len, bound.bound, &out, &out_len, &consumed, chunks, &detail);
    bounded = p2pc_bound_charge(pinfo, &bound, out_len, st == P2PC_DC_BOUND);
    ct = proto_tree_add_subtree_format(t, tvb, off, (gint)consumed, ett_eth2_chunks, NULL, "Snappy frames: %u",
                                       wmem_array_get_count(chunks));
    for (guint i = 0; i < wmem_array_get_count(chunks); i++) {
        p2pc_snappy_chunk_t *c = (p2pc_snappy_chunk_t *)wmem_array_index(chunks, i);
        proto_item *ci = proto_tree_add_uint(ct, hf_eth2_chunk_type, tvb, off + c->offset, 4 + c->length, c->type);
        proto_tree *cit = proto_item_add_subtree(ci, ett_eth2_chunks);
        proto_tree_add_uint(cit, hf_eth2_chunk_length, tvb, off + c->offset + 1, 3, c->length);
        if (c->type <= 1 && c->length >= 4) {
            proto_tree_add_checksum(cit, tvb, off + c->offset + 4, hf_eth2_chunk_crc, hf_eth2_chunk_crc_status,
                                    &ei_eth2_crc, pinfo, c->crc_computed, ENC_LITTLE_ENDIAN, PROTO_CHECKSUM_VERIFY);
        } else if (c->type >= 0x02 && c->type <= 0x7f) {
            expert_add_info(pinfo, ci, &ei_eth2_unskippable);
        }
    }
    if (bounded) {
        p2pc_bound_expert(pinfo, ti, bound.by);
    } else if (st == P2PC_DC_CORRUPT || st == P2PC_DC_TRUNCATED || st == P2PC_DC_BOUND) {
        if (!(detail && strstr(detail, "unskippable")))
            expert_add_info_format(pinfo, ti, &ei_eth2_decompress, "Snappy framing: %s", detail ? detail : p2pc_dc_status_name(st));
    } else {
        ssz = tvb_new_child_real_data(tvb, out, (guint)out_len, (gint)out_len);
        add_new_data_source(pinfo, ssz, "Decompressed SSZ");
        if (out_len != ssz_len)
            expert_add_info_format(pinfo, ti, &ei_eth2_length_mismatch, "Declared SSZ length %" G_GUINT64_FORMAT
                                   ", decompressed %zu", ssz_len, out_len);
        dissect_ssz(ssz, pinfo, t, method, request, result);
    }
    if (off + consumed < len && ssz)
        proto_tree_add_expert_format(t, pinfo, &ei_eth2_trailing, tvb, off + (guint)consumed, len - off - (guint)consumed,
                                     "%u bytes after the Snappy frames", len - off - (guint)consumed);
    (void)li;

record:
    p2pc_record_init(&rec, "eth2", wmem_strdup_printf(pinfo->pool, "%s %s", method, request ? "request" : "response"));
    rec.codec = "snappy-framed";
    rec.header_len = off + pdu->overhead;
    rec.payload_len = len - off;
    rec.raw_len = ssz ? out_len : len - off;
    rec.wire_len = len + pdu->overhead;
    rec.raw_tvb = ssz;
    if (bounded)
        p2pc_record_bound(&rec);
    p2pc_record_add(tvb, 0, len, pinfo, tree, &rec);
    proto_item_append_text(ti, ": %s %s%s", method, request ? "request" : "response",
                           result ? " (error)" : "");
    col_append_sep_fstr(pinfo->cinfo, COL_INFO, ", ", "%s %s", method, request ? "request" : "response");
}

static int
dissect_eth2_reqresp(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    l2p_pipe_t *pipe = (l2p_pipe_t *)data;
    if (!pipe)
        return 0;   /* needs its stream: which side sent it, the protocol ID */
    l2p_dissect_pdus(tvb, pinfo, tree, pipe, reqresp_len, reqresp_pdu);
    return tvb_captured_length(tvb);
}

/* ---- gossipsub ---- */

/* How many fields numbered `want` the protobuf message tvb[start, start + len) has. */
static guint
count_field(tvbuff_t *tvb, int start, int len, guint64 want)
{
    int off = start;
    guint n = 0;
    l2p_pb_field_t f;
    while (l2p_pb_next(tvb, &off, start + len, &f))
        if (f.number == want)
            n++;
    return n;
}

static void
gossip_message(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, int start, int len,
               guint rpc_overhead, guint nmsgs)
{
    int off = start, data_off = 0, data_len = 0, topic_off = 0, topic_len = 0;
    l2p_pb_field_t f;
    proto_tree *mt;
    proto_item *mi;
    const char *topic = "", *name = "unknown";
    p2pc_record_t rec;
    tvbuff_t *ssz = NULL;
    p2pc_dc_status_t st = P2PC_DC_CORRUPT;
    const char *detail = NULL;
    p2pc_bound_t bound;
    gboolean bounded = FALSE;
    guint8 h[32], id[20];
    gcry_md_hd_t md;

    mt = proto_tree_add_subtree(tree, tvb, start, len, ett_gs_msg, &mi, "Message");
    while (l2p_pb_next(tvb, &off, start + len, &f)) {
        if (f.wire_type != 2)
            continue;
        if (f.number == 2) {
            data_off = f.start;
            data_len = f.len;
        } else if (f.number == 3) {
            proto_tree_add_item(mt, hf_gs_seqno, tvb, f.start, f.len, ENC_NA);
        } else if (f.number == 4) {
            topic_off = f.start;
            topic_len = f.len;
        }
    }
    if (topic_len) {
        topic = (const char *)tvb_get_string_enc(pinfo->pool, tvb, topic_off, topic_len, ENC_UTF_8);
        proto_tree_add_item(mt, hf_gs_topic, tvb, topic_off, topic_len, ENC_UTF_8);
        /* /eth2/<fork digest>/<name>/ssz_snappy */
        if (g_str_has_prefix(topic, "/eth2/") && strlen(topic) > 15) {
            gchar **parts = g_strsplit(topic, "/", -1);
            if (g_strv_length(parts) >= 5) {
                name = wmem_strdup(pinfo->pool, parts[3]);
                proto_item_set_generated(proto_tree_add_string(mt, hf_eth2_fork, tvb, topic_off, topic_len, fork_name(parts[2])));
                proto_item_set_generated(proto_tree_add_string(mt, hf_gs_topic_name, tvb, topic_off, topic_len, name));
            }
            g_strfreev(parts);
        }
    }
    if (data_len) {
        proto_tree_add_item(mt, hf_gs_data, tvb, data_off, data_len, ENC_NA);
        bound = p2pc_bound(pinfo, ETH2_MAX_PAYLOAD, data_len, 0);
        ssz = p2pc_decompress_tvb(tvb, data_off, data_len, pinfo, P2PC_CODEC_SNAPPY, bound.bound,
                                  "Decompressed gossip SSZ", &st, &detail);
        bounded = p2pc_bound_charge(pinfo, &bound, ssz ? tvb_captured_length(ssz) : 0, st == P2PC_DC_BOUND);
        if (bounded)
            p2pc_bound_expert(pinfo, mi, bound.by);
        else if (!ssz)
            expert_add_info_format(pinfo, mi, &ei_eth2_decompress, "Snappy block: %s", detail ? detail : p2pc_dc_status_name(st));
    }
    /* message-id (Altair+): valid snappy -> domain 0x01000000 and the uncompressed data,
     * otherwise 0x00000000 and the raw data. */
    if (gcry_md_open(&md, GCRY_MD_SHA256, 0) == 0) {
        static const guint8 valid[4] = { 1, 0, 0, 0 }, invalid[4] = { 0, 0, 0, 0 };
        guint8 tl[8];
        guint64 tlen = topic_len;
        for (int i = 0; i < 8; i++)
            tl[i] = (guint8)(tlen >> (8 * i));
        gcry_md_write(md, ssz ? valid : invalid, 4);
        gcry_md_write(md, tl, 8);
        if (topic_len)
            gcry_md_write(md, tvb_get_ptr(tvb, topic_off, topic_len), topic_len);
        if (ssz)
            gcry_md_write(md, tvb_get_ptr(ssz, 0, tvb_captured_length(ssz)), tvb_captured_length(ssz));
        else if (data_len)
            gcry_md_write(md, tvb_get_ptr(tvb, data_off, data_len), data_len);
        memcpy(h, gcry_md_read(md, GCRY_MD_SHA256), 32);
        gcry_md_close(md);
        memcpy(id, h, 20);
        proto_item_set_generated(proto_tree_add_bytes_with_length(mt, hf_gs_message_id, tvb, start, len, id, 20));
    }
    if (ssz && !strcmp(name, "beacon_block")) {
        proto_tree *st2 = proto_tree_add_subtree(mt, ssz, 0, -1, ett_eth2_ssz, NULL, "SignedBeaconBlock");
        dissect_signed_block(ssz, st2);
    }
    proto_item_append_text(mi, ": %s", name);
    p2pc_record_init(&rec, "eth2", wmem_strdup_printf(pinfo->pool, "gossip %s", name));
    rec.codec = "snappy";
    rec.payload_len = data_len;
    rec.raw_len = ssz ? tvb_captured_length(ssz) : (guint)data_len;
    rec.header_len = (len - data_len) + (nmsgs ? rpc_overhead / nmsgs : 0);
    rec.wire_len = rec.header_len + rec.payload_len;
    rec.raw_tvb = ssz;
    if (bounded)
        p2pc_record_bound(&rec);
    p2pc_record_add(tvb, start, len, pinfo, tree, &rec);
    col_append_sep_fstr(pinfo->cinfo, COL_INFO, ", ", "gossip %s", name);
}

static gint64
rpc_len(l2p_pipe_t *pipe, const guint8 *p, guint avail)
{
    guint64 n;
    guint used;
    if (!l2p_uvarint(p, avail, &n, &used))
        return avail >= 9 ? -1 : 0;
    if (n > L2P_MAX_PDU)
        return -1;
    return used + n <= avail ? (gint64)(used + n) : 0;
}

static void
gossipsub_rpc(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, l2p_pipe_t *pipe, l2p_pdu_t *pdu)
{
    int len = (int)tvb_captured_length(tvb), off, end;
    guint used, nmsgs, msg_bytes = 0;
    guint64 rlen;
    l2p_pb_field_t f, sub;
    proto_item *ti;
    proto_tree *t;

    col_set_str(pinfo->cinfo, COL_PROTOCOL, "gossipsub");
    ti = proto_tree_add_item(tree, proto_gossipsub, tvb, 0, -1, ENC_NA);
    t = proto_item_add_subtree(ti, ett_gs);
    if (pdu->truncated)
        expert_add_info_format(pinfo, ti, &ei_eth2_truncated, "The stream closed after %d bytes of this RPC", len);
    used = tvb_get_varint(tvb, 0, MIN(FT_VARINT_MAX_LEN, len), &rlen, ENC_VARINT_PROTOBUF);
    if (!used || rlen > (guint64)(len - (int)used))
        return;
    end = (int)used + (int)rlen;
    nmsgs = count_field(tvb, (int)used, (int)rlen, 2);
    off = (int)used;
    while (l2p_pb_next(tvb, &off, end, &f))
        if (f.number == 2 && f.wire_type == 2)
            msg_bytes += f.len;
    off = (int)used;
    while (l2p_pb_next(tvb, &off, end, &f)) {
        if (f.wire_type != 2)
            continue;
        if (f.number == 1) {            /* SubOpts { bool subscribe = 1; string topic_id = 2 } */
            int so = f.start;
            while (l2p_pb_next(tvb, &so, f.start + f.len, &sub)) {
                if (sub.number == 1 && sub.wire_type == 0)
                    proto_tree_add_boolean(t, hf_gs_subscribe, tvb, f.start, f.len, sub.value != 0);
                else if (sub.number == 2 && sub.wire_type == 2)
                    proto_tree_add_item(t, hf_gs_topic, tvb, sub.start, sub.len, ENC_UTF_8);
            }
        } else if (f.number == 2) {     /* Message */
            gossip_message(tvb, pinfo, t, f.start, f.len, len - msg_bytes + pdu->overhead, nmsgs);
        } else if (f.number == 3) {     /* ControlMessage */
            proto_tree_add_uint(t, hf_gs_ihave, tvb, f.start, f.len, count_field(tvb, f.start, f.len, 1));
            proto_tree_add_uint(t, hf_gs_iwant, tvb, f.start, f.len, count_field(tvb, f.start, f.len, 2));
            proto_tree_add_uint(t, hf_gs_graft, tvb, f.start, f.len, count_field(tvb, f.start, f.len, 3));
            proto_tree_add_uint(t, hf_gs_prune, tvb, f.start, f.len, count_field(tvb, f.start, f.len, 4));
            proto_tree_add_uint(t, hf_gs_idontwant, tvb, f.start, f.len, count_field(tvb, f.start, f.len, 5));
        }
    }
}

static int
dissect_gossipsub(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    l2p_pipe_t *pipe = (l2p_pipe_t *)data;
    if (!pipe)
        return 0;
    l2p_dissect_pdus(tvb, pinfo, tree, pipe, rpc_len, gossipsub_rpc);
    return tvb_captured_length(tvb);
}

static void
apply_prefs(void)
{
    if (extra_digests)
        g_hash_table_destroy(extra_digests);
    extra_digests = p2pc_pref_pairs(pref_extra_digests, TRUE);
}

void
proto_register_eth2(void)
{
    static hf_register_info hf[] = {
        { &hf_eth2_method, { "Method", "eth2.method", FT_STRING, BASE_NONE, NULL, 0x0, "Req/resp method and version", HFILL } },
        { &hf_eth2_direction, { "Direction", "eth2.direction", FT_STRING, BASE_NONE, NULL, 0x0, "request or response, from the side that opened the stream", HFILL } },
        { &hf_eth2_result, { "Result", "eth2.result", FT_UINT8, BASE_DEC, VALS(result_vals), 0x0, "Response code: 0 success, 1 invalid request, 2 server error, 3 resource unavailable", HFILL } },
        { &hf_eth2_context, { "Context bytes", "eth2.context", FT_BYTES, BASE_NONE, NULL, 0x0, "Fork digest", HFILL } },
        { &hf_eth2_fork, { "Fork", "eth2.fork", FT_STRING, BASE_NONE, NULL, 0x0, "Fork named by the 4-byte fork digest", HFILL } },
        { &hf_eth2_ssz_length, { "SSZ length", "eth2.ssz_length", FT_UINT64, BASE_DEC, NULL, 0x0, "Uncompressed SSZ length (unsigned varint before the Snappy frames)", HFILL } },
        { &hf_eth2_chunk, { "Snappy frame", "eth2.snappy.frame", FT_NONE, BASE_NONE, NULL, 0x0, "One chunk of the Snappy framing format", HFILL } },
        { &hf_eth2_chunk_type, { "Snappy frame", "eth2.snappy.type", FT_UINT8, BASE_HEX, VALS(chunk_type_vals), 0x0, "Chunk type: 0x00 compressed, 0x01 uncompressed, 0xfe padding, 0xff stream identifier", HFILL } },
        { &hf_eth2_chunk_length, { "Length", "eth2.snappy.length", FT_UINT32, BASE_DEC, NULL, 0x0, "Chunk data length (24-bit little-endian)", HFILL } },
        { &hf_eth2_chunk_crc, { "Masked CRC-32C", "eth2.snappy.crc", FT_UINT32, BASE_HEX, NULL, 0x0, "Masked CRC-32C of the uncompressed chunk data", HFILL } },
        { &hf_eth2_chunk_crc_status, { "CRC status", "eth2.snappy.crc.status", FT_UINT8, BASE_NONE,
            VALS(proto_checksum_vals), 0x0, "Whether the masked CRC-32C matches the decompressed data", HFILL } },
        { &hf_eth2_compressed_len, { "Compressed length", "eth2.compressed_len", FT_UINT32, BASE_DEC, NULL, 0x0, "Bytes of Snappy frames after the length prefix", HFILL } },
        { &hf_eth2_error_message, { "Error message", "eth2.error_message", FT_STRING, BASE_NONE, NULL, 0x0, "ErrorMessage of a non-zero response (UTF-8)", HFILL } },
        { &hf_eth2_fork_digest, { "Fork digest", "eth2.status.fork_digest", FT_BYTES, BASE_NONE, NULL, 0x0, "Status: the sender's current fork digest", HFILL } },
        { &hf_eth2_finalized_root, { "Finalized root", "eth2.status.finalized_root", FT_BYTES, BASE_NONE, NULL, 0x0, "Status: root of the sender's finalized checkpoint", HFILL } },
        { &hf_eth2_finalized_epoch, { "Finalized epoch", "eth2.status.finalized_epoch", FT_UINT64, BASE_DEC, NULL, 0x0, "Status: epoch of the sender's finalized checkpoint", HFILL } },
        { &hf_eth2_head_root, { "Head root", "eth2.status.head_root", FT_BYTES, BASE_NONE, NULL, 0x0, "Status: root of the sender's head block", HFILL } },
        { &hf_eth2_head_slot, { "Head slot", "eth2.status.head_slot", FT_UINT64, BASE_DEC, NULL, 0x0, "Status: slot of the sender's head block", HFILL } },
        { &hf_eth2_seq, { "Sequence number", "eth2.seq_number", FT_UINT64, BASE_DEC, NULL, 0x0, "Ping / MetaData: the sender's metadata sequence number", HFILL } },
        { &hf_eth2_reason, { "Goodbye reason", "eth2.goodbye_reason", FT_UINT64, BASE_DEC, NULL, 0x0, "Goodbye: 1 shutdown, 2 irrelevant network, 3 fault/error, others client-specific", HFILL } },
        { &hf_eth2_attnets, { "Attnets", "eth2.metadata.attnets", FT_BYTES, BASE_NONE, NULL, 0x0, "MetaData: bitvector of subscribed attestation subnets", HFILL } },
        { &hf_eth2_syncnets, { "Syncnets", "eth2.metadata.syncnets", FT_BYTES, BASE_NONE, NULL, 0x0, "MetaData v2+: bitvector of subscribed sync committee subnets", HFILL } },
        { &hf_eth2_start_slot, { "Start slot", "eth2.range.start_slot", FT_UINT64, BASE_DEC, NULL, 0x0, "BeaconBlocksByRange: first slot asked for", HFILL } },
        { &hf_eth2_count, { "Count", "eth2.range.count", FT_UINT64, BASE_DEC, NULL, 0x0, "BeaconBlocksByRange: number of slots asked for", HFILL } },
        { &hf_eth2_step, { "Step", "eth2.range.step", FT_UINT64, BASE_DEC, NULL, 0x0, "BeaconBlocksByRange: slot step (deprecated; 1)", HFILL } },
        { &hf_eth2_root, { "Block root", "eth2.root", FT_BYTES, BASE_NONE, NULL, 0x0, "BeaconBlocksByRoot: a block root asked for", HFILL } },
        { &hf_eth2_block_slot, { "Slot", "eth2.block.slot", FT_UINT64, BASE_DEC, NULL, 0x0, "SignedBeaconBlock: slot of the block", HFILL } },
        { &hf_eth2_block_proposer, { "Proposer index", "eth2.block.proposer_index", FT_UINT64, BASE_DEC, NULL, 0x0, "SignedBeaconBlock: validator index of the proposer", HFILL } },
        { &hf_eth2_block_parent_root, { "Parent root", "eth2.block.parent_root", FT_BYTES, BASE_NONE, NULL, 0x0, "SignedBeaconBlock: root of the parent block", HFILL } },
        { &hf_eth2_block_state_root, { "State root", "eth2.block.state_root", FT_BYTES, BASE_NONE, NULL, 0x0, "SignedBeaconBlock: root of the post-state", HFILL } },
        { &hf_eth2_block_signature, { "Signature", "eth2.block.signature", FT_BYTES, BASE_NONE, NULL, 0x0, "SignedBeaconBlock: the proposer's BLS signature", HFILL } },
        { &hf_gs_subscribe, { "Subscribe", "gossipsub.subscribe", FT_BOOLEAN, BASE_NONE, NULL, 0x0, "SubOpts: subscribe (true) or unsubscribe (false)", HFILL } },
        { &hf_gs_topic, { "Topic", "gossipsub.topic", FT_STRING, BASE_NONE, NULL, 0x0, "Topic string as sent", HFILL } },
        { &hf_gs_topic_name, { "Topic name", "gossipsub.topic_name", FT_STRING, BASE_NONE, NULL, 0x0, "Message type part of an /eth2/<digest>/<name>/<encoding> topic", HFILL } },
        { &hf_gs_data, { "Data", "gossipsub.data", FT_BYTES, BASE_NONE, NULL, 0x0, "Snappy block", HFILL } },
        { &hf_gs_seqno, { "Seqno", "gossipsub.seqno", FT_BYTES, BASE_NONE, NULL, 0x0, "Message seqno (absent under the eth2 StrictNoSign policy)", HFILL } },
        { &hf_gs_message_id, { "Message ID", "eth2.gossip.message_id", FT_BYTES, BASE_NONE, NULL, 0x0,
            "SHA256(domain || uint64_le(len(topic)) || topic || data)[:20]", HFILL } },
        { &hf_gs_ihave, { "IHAVE", "gossipsub.control.ihave", FT_UINT32, BASE_DEC, NULL, 0x0, "IHAVE entries in the control message", HFILL } },
        { &hf_gs_iwant, { "IWANT", "gossipsub.control.iwant", FT_UINT32, BASE_DEC, NULL, 0x0, "IWANT entries in the control message", HFILL } },
        { &hf_gs_graft, { "GRAFT", "gossipsub.control.graft", FT_UINT32, BASE_DEC, NULL, 0x0, "GRAFT entries in the control message", HFILL } },
        { &hf_gs_prune, { "PRUNE", "gossipsub.control.prune", FT_UINT32, BASE_DEC, NULL, 0x0, "PRUNE entries in the control message", HFILL } },
        { &hf_gs_idontwant, { "IDONTWANT", "gossipsub.control.idontwant", FT_UINT32, BASE_DEC, NULL, 0x0, "IDONTWANT entries in the control message", HFILL } },
    };
    static gint *ett[] = { &ett_eth2, &ett_eth2_chunks, &ett_eth2_ssz, &ett_gs, &ett_gs_msg };
    static ei_register_info ei[] = {
        { &ei_eth2_crc, { "eth2.snappy.crc_bad", PI_CHECKSUM, PI_ERROR, "Masked CRC-32C mismatch", EXPFILL } },
        { &ei_eth2_unskippable, { "eth2.snappy.unskippable", PI_MALFORMED, PI_ERROR, "Reserved unskippable Snappy frame", EXPFILL } },
        { &ei_eth2_length_mismatch, { "eth2.length_mismatch", PI_MALFORMED, PI_ERROR, "Declared length differs from the decompressed length", EXPFILL } },
        { &ei_eth2_too_long, { "eth2.too_long", PI_PROTOCOL, PI_WARN, "SSZ length over MAX_PAYLOAD_SIZE", EXPFILL } },
        { &ei_eth2_compressed_too_long, { "eth2.compressed_too_long", PI_PROTOCOL, PI_WARN, "Compressed length over 32 + n + n/6", EXPFILL } },
        { &ei_eth2_result, { "eth2.result_error", PI_RESPONSE_CODE, PI_NOTE, "Non-zero response result", EXPFILL } },
        { &ei_eth2_trailing, { "eth2.trailing", PI_MALFORMED, PI_WARN, "Bytes after the Snappy frames", EXPFILL } },
        { &ei_eth2_truncated, { "eth2.truncated", PI_MALFORMED, PI_ERROR, "The stream closed inside a message", EXPFILL } },
        { &ei_eth2_decompress, { "eth2.decompress_failed", PI_MALFORMED, PI_ERROR, "Snappy decompression failed", EXPFILL } },
    };
    module_t *module;
    expert_module_t *expert;

    proto_eth2 = proto_register_protocol("Ethereum consensus req/resp (ssz_snappy)", "eth2", "eth2");
    proto_gossipsub = proto_register_protocol("libp2p gossipsub", "gossipsub", "gossipsub");
    proto_register_field_array(proto_eth2, hf, array_length(hf));
    proto_register_subtree_array(ett, array_length(ett));
    expert = expert_register_protocol(proto_eth2);
    expert_register_field_array(expert, ei, array_length(ei));
    module = prefs_register_protocol(proto_eth2, apply_prefs);
    prefs_register_string_preference(module, "extra_digests", "Fork digests of other networks",
        "digest=name pairs, comma-separated (e.g. 6a95a1a9=deneb), added to the mainnet ones", &pref_extra_digests);
}

void
proto_reg_handoff_eth2(void)
{
    static const char *const methods[] = {
        "status/1", "status/2", "goodbye/1", "ping/1", "metadata/1", "metadata/2", "metadata/3",
        "beacon_blocks_by_range/1", "beacon_blocks_by_range/2", "beacon_blocks_by_root/1",
        "beacon_blocks_by_root/2", "blob_sidecars_by_range/1", "blob_sidecars_by_root/1",
        "data_column_sidecars_by_range/1", "data_column_sidecars_by_root/1",
        "light_client_bootstrap/1", "light_client_updates_by_range/1",
        "light_client_finality_update/1", "light_client_optimistic_update/1",
    };
    dissector_handle_t rr = create_dissector_handle(dissect_eth2_reqresp, proto_eth2);
    dissector_handle_t gs = create_dissector_handle(dissect_gossipsub, proto_gossipsub);
    for (size_t i = 0; i < G_N_ELEMENTS(methods); i++)
        dissector_add_string("multistream.protocol",
                             wmem_strdup_printf(wmem_epan_scope(), "/eth2/beacon_chain/req/%s/ssz_snappy", methods[i]), rr);
    dissector_add_string("multistream.protocol", "/meshsub/1.1.0", gs);
    dissector_add_string("multistream.protocol", "/meshsub/1.2.0", gs);
    dissector_add_string("multistream.protocol", "/meshsub/1.3.0", gs);
}
