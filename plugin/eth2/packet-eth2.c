/* packet-eth2.c
 * Ethereum consensus layer over libp2p: req/resp (`/eth2/beacon_chain/req/<name>/<v>/ssz_snappy`,
 * SSZ in the Snappy framing format) and gossipsub (`/meshsub/1.x`, SSZ in Snappy block format).
 *
 * Source: ethereum/consensus-specs specs/{phase0,...,heze}/p2p-interface.md (and light-client/,
 * fulu/partial-columns/); Snappy framing: google/snappy framing_format.txt; gossipsub RPC:
 * libp2p/specs pubsub/gossipsub (v1.3 extensions: extensions/extensions.proto) and
 * go-libp2p-pubsub pb/rpc.proto (the Partial Messages extension).
 *
 *   request         uvarint(len(ssz)) || framed-snappy(ssz)
 *   response chunk  result || [fork digest, success chunks of Altair+ methods] ||
 *                   uvarint(len(ssz)) || framed-snappy(ssz)
 *   gossip message  Message.data = snappy-block(ssz);  message-id (Altair+) =
 *                   SHA256(0x01000000 || uint64_le(len(topic)) || topic || ssz)[:20]
 *                   (phase0: SHA256(0x01000000 || ssz)[:20])
 *
 * Both are registered in "multistream.protocol" under their protocol IDs and called with the
 * muxed stream direction's pipe (p2pc-libp2p.h): the framing below cuts each request, response
 * chunk and gossip RPC out of the stream, however the muxer split it.  There is no end marker
 * in req/resp: a chunk ends when its Snappy frames have produced the declared SSZ length.
 *
 * A record's msg_type is a method of eth2_methods or a topic of gossip_topics (a subnet
 * topic under its name, whatever its subnet and fork digest), and "unknown" otherwise: a peer
 * chooses its topic strings (core/msgtype.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/p2pc-compat.h"
#include "core/codecs.h"
#include "core/gossip.h"
#include "core/msgtype.h"
#include "core/prefs.h"
#include "core/spec.h"
#include "core/tree-room.h"
#include "libp2p/engine.h"
#include "core/record.h"

#include <epan/expert.h>
#include <epan/prefs.h>
#include <wsutil/wsgcrypt.h>

void proto_register_eth2(void);
void proto_reg_handoff_eth2(void);

#define ETH2_MAX_PAYLOAD (10 * 1024 * 1024)     /* MAX_PAYLOAD_SIZE */
#define ETH2_MAX_REQUEST_BLOCKS 1024            /* MAX_REQUEST_BLOCKS (phase0; the largest) */
#define SNAPPY_MAX_CHUNK 65536                  /* framing_format.txt 4.2, 4.3 */

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
static int hf_eth2_column = -1;
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
static int hf_gs_requests_partial = -1;
static int hf_gs_supports_partial = -1;
static int hf_gs_extensions = -1;
static int hf_gs_ext_partial = -1;
static int hf_gs_ext_test = -1;
static int hf_gs_ext_unknown = -1;
static int hf_gs_partial = -1;
static int hf_gs_partial_topic = -1;
static int hf_gs_partial_group = -1;
static int hf_gs_partial_message = -1;
static int hf_gs_partial_metadata = -1;
static int hf_gs_test_extension = -1;

static gint ett_eth2 = -1;
static gint ett_eth2_chunks = -1;
static gint ett_eth2_ssz = -1;
static gint ett_gs = -1;
static gint ett_gs_msg = -1;
static gint ett_gs_ext = -1;

static expert_field ei_eth2_result = EI_INIT;
static expert_field ei_eth2_trailing = EI_INIT;
static expert_field ei_eth2_decompress = EI_INIT;
static expert_field ei_eth2_truncated = EI_INIT;

static p2pc_pairs_t *fork_digests;  /* the user's fork digest -> fork name table (a UAT) */

static const value_string result_vals[] = {
    { 0, "Success" }, { 1, "InvalidRequest" }, { 2, "ServerError" }, { 3, "ResourceUnavailable" },
    { 0, NULL }
};
static const value_string chunk_type_vals[] = {
    { 0x00, "Compressed data" }, { 0x01, "Uncompressed data" }, { 0xfe, "Padding" },
    { 0xff, "Stream identifier" }, { 0, NULL }
};

/* The forks, oldest first (consensus-specs specs/<fork>/): a method's bounds hold from the fork
 * of their row on. */
static const char *const forks[] = {
    "phase0", "altair", "bellatrix", "capella", "deneb", "electra", "fulu", "gloas", "heze",
};

/* Mainnet fork digests (consensus-specs); others through the eth2_fork_digests table. */
static const struct { const char *digest; const char *fork; } mainnet_digests[] = {
    { "b5303f2a", "phase0" }, { "afcaaba0", "altair" }, { "4a26c58b", "bellatrix" },
    { "bba4da96", "capella" }, { "6a95a1a9", "deneb" }, { "ad532ceb", "electra" },
    { "cc2c5cdb", "fulu" },
};

static const char *
fork_name(const char *hex)
{
    const char *found;
    for (size_t i = 0; i < G_N_ELEMENTS(mainnet_digests); i++)
        if (!g_ascii_strcasecmp(hex, mainnet_digests[i].digest))
            return mainnet_digests[i].fork;
    found = p2pc_pairs_lookup(fork_digests, hex, TRUE);
    return found ? found : "unknown";
}

/* A fork's place in forks[], or -1 for a name that is none of them. */
static int
fork_index(const char *name)
{
    for (size_t i = 0; i < G_N_ELEMENTS(forks); i++)
        if (!strcmp(name, forks[i]))
            return (int)i;
    return -1;
}

/* The req/resp methods, each registered in multistream.protocol under
 * /eth2/beacon_chain/req/<method>/ssz_snappy, with the SSZ bounds of its request and of a success
 * chunk from the fork of the row on (a method's rows are together, oldest fork first).  ANY: no
 * bound of the type's own, only MAX_PAYLOAD_SIZE; a method with no request content has 0..0.
 * `context`: success chunks carry the fork digest (ForkDigest-context); `one_chunk`: the answer
 * is exactly one chunk.  Each bound is computed from the types in the spec file named. */
#define ANY G_MAXUINT64
#define ROOTS(n) 0, (n) * 32                    /* List[Root, n] */
#define COLUMN_FULU 356, 356 + 4096 * (2048 + 48 + 48)
#define COLUMN_GLOAS 56, 8585272
typedef struct {
    const char *method, *fork;
    gboolean context, one_chunk;
    guint64 req_min, req_max, resp_min, resp_max;
} eth2_method_t;
static const eth2_method_t eth2_methods[] = {
    /* specs/phase0/p2p-interface.md: Status (fork_digest 4, finalized_root 32, finalized_epoch 8,
     * head_root 32, head_slot 8), Goodbye and Ping (uint64), MetaData (seq_number 8, attnets
     * Bitvector[64] 8), BeaconBlocksByRange request (start_slot, count, step), BeaconBlockRoots
     * List[Root, MAX_REQUEST_BLOCKS = 1024] */
    { "status/1", "phase0", FALSE, TRUE, 84, 84, 84, 84 },
    { "goodbye/1", "phase0", FALSE, TRUE, 8, 8, 8, 8 },
    { "ping/1", "phase0", FALSE, TRUE, 8, 8, 8, 8 },
    { "metadata/1", "phase0", FALSE, TRUE, 0, 0, 16, 16 },
    { "beacon_blocks_by_range/1", "phase0", FALSE, FALSE, 24, 24, 0, ANY },
    { "beacon_blocks_by_root/1", "phase0", FALSE, FALSE, ROOTS(1024), 0, ANY },
    /* specs/altair/p2p-interface.md: the v2 block methods (ForkDigest-context), MetaData v2
     * (+ syncnets Bitvector[4] 1); specs/deneb/p2p-interface.md: BeaconBlockRoots
     * List[Root, MAX_REQUEST_BLOCKS_DENEB = 128] */
    { "beacon_blocks_by_range/2", "altair", TRUE, FALSE, 24, 24, 0, ANY },
    { "beacon_blocks_by_root/2", "altair", TRUE, FALSE, ROOTS(1024), 0, ANY },
    { "beacon_blocks_by_root/2", "deneb", TRUE, FALSE, ROOTS(128), 0, ANY },
    { "metadata/2", "altair", FALSE, TRUE, 0, 0, 17, 17 },
    /* specs/altair/light-client/p2p-interface.md: bootstrap (a block Root), updates_by_range
     * (start_period, count), the two updates (no request content, one chunk) */
    { "light_client_bootstrap/1", "altair", TRUE, FALSE, 32, 32, 0, ANY },
    { "light_client_updates_by_range/1", "altair", TRUE, FALSE, 16, 16, 0, ANY },
    { "light_client_finality_update/1", "altair", TRUE, TRUE, 0, 0, 0, ANY },
    { "light_client_optimistic_update/1", "altair", TRUE, TRUE, 0, 0, 0, ANY },
    /* specs/deneb/p2p-interface.md: BlobSidecarsByRange request (start_slot, count);
     * BlobIdentifiers List[BlobIdentifier (block_root 32, index 8),
     * compute_max_request_blob_sidecars() = 128 * MAX_BLOBS_PER_BLOCK 6]; BlobSidecar (index 8,
     * blob 4096 * 32, kzg_commitment 48, kzg_proof 48, signed_block_header 208,
     * kzg_commitment_inclusion_proof 17 * 32) = 131928.  specs/electra/p2p-interface.md:
     * compute_max_request_blob_sidecars() = 128 * MAX_BLOBS_PER_BLOCK_ELECTRA 9 */
    { "blob_sidecars_by_range/1", "deneb", TRUE, FALSE, 16, 16, 131928, 131928 },
    { "blob_sidecars_by_root/1", "deneb", TRUE, FALSE, 0, 768 * 40, 131928, 131928 },
    { "blob_sidecars_by_root/1", "electra", TRUE, FALSE, 0, 1152 * 40, 131928, 131928 },
    /* specs/fulu/p2p-interface.md: Status v2 (+ earliest_available_slot 8), MetaData v3
     * (+ custody_group_count 8); DataColumnSidecarsByRange request (start_slot, count, columns
     * List[ColumnIndex, NUMBER_OF_COLUMNS = 128]); DataColumnsByRootIdentifiers
     * List[DataColumnsByRootIdentifier (block_root 32, columns as above), 128]; BeaconBlocksByHead
     * request (beacon_root 32, count 8).  specs/fulu/das-core.md DataColumnSidecar (index 8,
     * column List[Cell 2048, 4096], kzg_commitments and kzg_proofs List[48, 4096],
     * signed_block_header 208, kzg_commitments_inclusion_proof 4 * 32).
     * specs/gloas/p2p-interface.md DataColumnSidecar (index 8, column and kzg_proofs
     * ProgressiveLists, slot 8, beacon_block_root 32), at most MAX_DATA_COLUMN_SIDECAR_SIZE */
    { "status/2", "fulu", FALSE, TRUE, 92, 92, 92, 92 },
    { "metadata/3", "fulu", FALSE, TRUE, 0, 0, 25, 25 },
    { "data_column_sidecars_by_range/1", "fulu", TRUE, FALSE, 20, 20 + 128 * 8, COLUMN_FULU },
    { "data_column_sidecars_by_range/1", "gloas", TRUE, FALSE, 20, 20 + 128 * 8, COLUMN_GLOAS },
    { "data_column_sidecars_by_root/1", "fulu", TRUE, FALSE, 0, 128 * (4 + 36 + 128 * 8), COLUMN_FULU },
    { "data_column_sidecars_by_root/1", "gloas", TRUE, FALSE, 0, 128 * (4 + 36 + 128 * 8), COLUMN_GLOAS },
    { "beacon_blocks_by_head/1", "fulu", TRUE, FALSE, 40, 40, 0, ANY },
    /* specs/gloas/p2p-interface.md: ExecutionPayloadEnvelopesByRange request (start_slot, count),
     * ExecutionPayloadEnvelopeRoots List[Root, MAX_REQUEST_PAYLOADS = 128] */
    { "execution_payload_envelopes_by_range/1", "gloas", TRUE, FALSE, 16, 16, 0, ANY },
    { "execution_payload_envelopes_by_root/1", "gloas", TRUE, FALSE, ROOTS(128), 0, ANY },
    /* specs/heze/p2p-interface.md (work in progress): InclusionListsByIndices request (slot 8,
     * dependent_root 32, indices InclusionListBits = Bitvector[INCLUSION_LIST_COMMITTEE_SIZE 16]
     * 2), a SignedInclusionList at most MAX_SIGNED_INCLUSION_LIST_SIZE */
    { "inclusion_lists_by_indices/1", "heze", TRUE, FALSE, 42, 42, 0, 8348 },
};
#undef ROOTS
#undef COLUMN_FULU
#undef COLUMN_GLOAS

/* The rows of a protocol ID's method: its first row, *n set to how many; NULL if none. */
static const eth2_method_t *
method_rows(const char *protocol, guint *n)
{
    static const char prefix[] = "/eth2/beacon_chain/req/", suffix[] = "/ssz_snappy";
    size_t len = strlen(protocol), plen = sizeof prefix - 1, slen = sizeof suffix - 1;
    *n = 0;
    if (len <= plen + slen || strncmp(protocol, prefix, plen) || strcmp(protocol + len - slen, suffix))
        return NULL;
    for (size_t i = 0; i < G_N_ELEMENTS(eth2_methods); i++) {
        const char *m = eth2_methods[i].method;
        if (strlen(m) == len - plen - slen && !strncmp(protocol + plen, m, len - plen - slen)) {
            while (i + *n < G_N_ELEMENTS(eth2_methods) && !strcmp(eth2_methods[i + *n].method, m))
                (*n)++;
            return &eth2_methods[i];
        }
    }
    return NULL;
}

/* The bounds a message of `rows` is held to: for a success chunk of a known fork, those of the
 * method's latest row at or before that fork; otherwise (a request names no fork) the widest of
 * its rows.  *from: the fork of the row applied, or NULL for the widest. */
static void
ssz_bounds(const eth2_method_t *rows, guint n, gboolean request, int fork, guint64 *min, guint64 *max,
           const char **from)
{
    const eth2_method_t *at = NULL;
    for (guint i = 0; i < n && fork >= 0 && !request; i++)
        if (fork_index(rows[i].fork) <= fork)
            at = &rows[i];
    if (at) {
        *min = at->resp_min;
        *max = at->resp_max;
        *from = at->fork;
        return;
    }
    *min = ANY;
    *max = 0;
    *from = NULL;
    for (guint i = 0; i < n; i++) {
        *min = MIN(*min, request ? rows[i].req_min : rows[i].resp_min);
        *max = MAX(*max, request ? rows[i].req_max : rows[i].resp_max);
    }
}

/* Gossip topic names -> msg_type, from the "Topics and messages" tables of consensus-specs
 * specs/<fork>/p2p-interface.md (phase0 to heze) and specs/altair/light-client/p2p-interface.md.
 * A subnet topic, <name>_<subnet_id>, is listed as "<name>_": all its subnets are one message
 * type. */
static const string_string gossip_topics[] = {
    { "beacon_block", "gossip beacon_block" },
    { "beacon_aggregate_and_proof", "gossip beacon_aggregate_and_proof" },
    { "beacon_attestation_", "gossip beacon_attestation" },
    { "voluntary_exit", "gossip voluntary_exit" },
    { "proposer_slashing", "gossip proposer_slashing" },
    { "attester_slashing", "gossip attester_slashing" },
    { "sync_committee_contribution_and_proof", "gossip sync_committee_contribution_and_proof" },
    { "sync_committee_", "gossip sync_committee" },
    { "light_client_finality_update", "gossip light_client_finality_update" },
    { "light_client_optimistic_update", "gossip light_client_optimistic_update" },
    { "bls_to_execution_change", "gossip bls_to_execution_change" },
    { "blob_sidecar_", "gossip blob_sidecar" },
    { "data_column_sidecar_", "gossip data_column_sidecar" },
    { "execution_payload_bid", "gossip execution_payload_bid" },               /* gloas */
    { "execution_payload", "gossip execution_payload" },
    { "payload_attestation_message", "gossip payload_attestation_message" },
    { "proposer_preferences", "gossip proposer_preferences" },
    { "inclusion_list", "gossip inclusion_list" },                             /* heze */
    { NULL, NULL }
};

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
        guint64 count = tvb_get_letoh64(ssz, 8);
        proto_item *ci;
        proto_tree_add_item(t, hf_eth2_start_slot, ssz, 0, 8, ENC_LITTLE_ENDIAN);
        ci = proto_tree_add_item(t, hf_eth2_count, ssz, 8, 8, ENC_LITTLE_ENDIAN);
        if (count > ETH2_MAX_REQUEST_BLOCKS)
            p2pc_spec(pinfo, ci, P2PC_SPEC_ETH2_REQUEST_LIMIT, "count %" G_GUINT64_FORMAT
                      " exceeds MAX_REQUEST_BLOCKS (%u)", count, ETH2_MAX_REQUEST_BLOCKS);
        if (len >= 24)
            proto_tree_add_item(t, hf_eth2_step, ssz, 16, 8, ENC_LITTLE_ENDIAN);
    } else if (g_str_has_prefix(method, "data_column_sidecars_by_range/") && request && len >= 20) {
        /* start_slot, count, offset of columns: List[ColumnIndex, NUMBER_OF_COLUMNS] */
        guint32 cols = tvb_get_letohl(ssz, 16);
        proto_tree_add_item(t, hf_eth2_start_slot, ssz, 0, 8, ENC_LITTLE_ENDIAN);
        proto_tree_add_item(t, hf_eth2_count, ssz, 8, 8, ENC_LITTLE_ENDIAN);
        for (guint64 off = cols; off >= 20 && off + 8 <= len; off += 8)
            proto_tree_add_item(p2pc_tree_room(t, pinfo, ssz, 1), hf_eth2_column, ssz, (gint)off, 8, ENC_LITTLE_ENDIAN);
    } else if (g_str_has_prefix(method, "beacon_blocks_by_root/") && request) {
        for (guint off = 0; off + 32 <= len; off += 32)
            proto_tree_add_item(p2pc_tree_room(t, pinfo, ssz, 1), hf_eth2_root, ssz, off, 32, ENC_NA);
    } else if (g_str_has_prefix(method, "beacon_blocks_by_") && !request) {
        dissect_signed_block(ssz, t);
    }
    (void)pinfo;
}

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
            if (!p2pc_uvarint(p + scan->off + 8, clen - 4, &n, &used))
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
        if (p[0] == 0) {
            guint n_rows;
            const eth2_method_t *rows = method_rows(pipe->protocol, &n_rows);
            if (rows && rows->context)
                off += 4;
        }
    }
    if (avail < off)
        return 0;
    if (!p2pc_uvarint(p + off, avail - off, &n, &used))
        return avail - off >= 9 ? -1 : 0;
    off += used;
    if (n > L2P_MAX_PDU)
        return -1;
    if (!pipe->state)
        pipe->state = wmem_new0(l2p_pipe_pool(pipe), snappy_scan_t);
    f = snappy_framed_len(p + off, avail - off, n, (snappy_scan_t *)pipe->state);
    if (f == 0)
        return 0;
    memset(pipe->state, 0, sizeof(snappy_scan_t));     /* the next chunk starts afresh */
    return f < 0 ? -1 : off + f;
}

/* One request or response chunk as reqresp_pdu()'s steps read it. */
typedef struct {
    const eth2_method_t *rows;  /* the method's rows; NULL: a protocol ID that names no method */
    guint n_rows;
    const char *method;
    gboolean request;
    proto_item *ti;
    proto_tree *t;
    guint len;
    guint off;                  /* read up to here: the chunk's header ends at it */
    guint8 result;
    int fork;                   /* the context bytes' fork (-1: none) */
    guint64 ssz_len;
    tvbuff_t *ssz;              /* the decompressed SSZ, when it decompressed */
    gboolean bounded;           /* a decompression bound stopped it */
    guint32 data_chunks;        /* its Snappy data chunks */
} chunk_t;

/* The chunk's item, its method and direction, and what its place in the stream says. */
static void
chunk_begin(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, const l2p_pipe_t *pipe, const l2p_pdu_t *pdu,
            chunk_t *k)
{
    memset(k, 0, sizeof *k);
    k->fork = -1;
    k->len = tvb_captured_length(tvb);
    /* A protocol ID mapped here by the user (Decode As, Lua) that is
     * no method is shown as it is, and counted as unknown. */
    k->rows = method_rows(pipe->protocol, &k->n_rows);
    k->method = k->rows ? k->rows->method : pipe->protocol;
    k->request = pipe->dir == 0;
    col_set_str(pinfo->cinfo, COL_PROTOCOL, "eth2");
    k->ti = proto_tree_add_item(tree, proto_eth2, tvb, 0, -1, ENC_NA);
    k->t = proto_item_add_subtree(k->ti, ett_eth2);
    proto_item_set_generated(proto_tree_add_string(k->t, hf_eth2_method, tvb, 0, 0, k->method));
    if (pdu->truncated)
        expert_add_info_format(pinfo, k->ti, &ei_eth2_truncated, "The stream closed after %u bytes of this %s",
                               k->len, k->request ? "request" : "response chunk");
    /* One request per stream; some methods answer with one chunk. */
    if (pdu->index > 0 && (k->request || (k->rows && k->rows->one_chunk)))
        proto_tree_add_expert_format(k->t, pinfo, &ei_eth2_trailing, tvb, 0, k->len,
                                     "%u bytes after the %s this stream carries", k->len,
                                     k->request ? "one request" : "one response chunk");
    proto_item_set_generated(proto_tree_add_string(k->t, hf_eth2_direction, tvb, 0, 0,
                                                   k->request ? "request" : "response"));
}

/* A response's result byte and, for a method with one, its context bytes (the fork).  FALSE:
 * a success chunk too short for its context, nothing more to read. */
static gboolean
chunk_result(tvbuff_t *tvb, packet_info *pinfo, chunk_t *k)
{
    char hex[9];
    const char *name;

    if (k->request)
        return TRUE;
    k->result = tvb_get_uint8(tvb, 0);
    proto_tree_add_item(k->t, hf_eth2_result, tvb, 0, 1, ENC_NA);
    k->off = 1;
    if (k->result != 0) {
        expert_add_info_format(pinfo, k->ti, &ei_eth2_result, "Response result %u (%s)", k->result,
                               val_to_str_const(k->result, result_vals, "method-specific"));
        if (k->result >= 4 && k->result <= 127)
            p2pc_spec(pinfo, k->ti, P2PC_SPEC_ETH2_RESULT, "Response result %u is in the reserved "
                      "range [4, 127]", k->result);
        return TRUE;
    }
    if (!k->rows || !k->rows->context)
        return TRUE;
    if (k->len < k->off + 4) {
        p2pc_spec(pinfo, k->ti, P2PC_SPEC_ETH2_CONTEXT, "A %s success chunk of %u bytes: no "
                  "room for its 4 context bytes", k->method, k->len);
        return FALSE;
    }
    proto_tree_add_item(k->t, hf_eth2_context, tvb, k->off, 4, ENC_NA);
    snprintf(hex, sizeof hex, "%02x%02x%02x%02x", tvb_get_uint8(tvb, k->off), tvb_get_uint8(tvb, k->off + 1),
             tvb_get_uint8(tvb, k->off + 2), tvb_get_uint8(tvb, k->off + 3));
    name = fork_name(hex);
    k->fork = fork_index(name);
    proto_item_set_generated(proto_tree_add_string(k->t, hf_eth2_fork, tvb, k->off, 4, name));
    k->off += 4;
    return TRUE;
}

/* The SSZ length prefix, checked against MAX_PAYLOAD_SIZE, the method's bounds and what the
 * compressed bytes may be for it.  FALSE: there is none to read. */
static gboolean
chunk_length(tvbuff_t *tvb, packet_info *pinfo, chunk_t *k)
{
    guint used, len = k->len;
    guint64 min, max;
    const char *from;

    if (len <= k->off || !(used = tvb_get_varint(tvb, k->off, MIN(FT_VARINT_MAX_LEN, len - k->off), &k->ssz_len,
                                                 ENC_VARINT_PROTOBUF)))
        return FALSE;
    p2pc_spec_varint(tvb, k->off, used, pinfo,
                     proto_tree_add_uint64(k->t, hf_eth2_ssz_length, tvb, k->off, used, k->ssz_len));
    k->off += used;
    if (k->ssz_len > ETH2_MAX_PAYLOAD) {
        p2pc_spec(pinfo, k->ti, P2PC_SPEC_ETH2_TOO_LONG, "SSZ length %" G_GUINT64_FORMAT " exceeds MAX_PAYLOAD_SIZE (%u)",
                  k->ssz_len, ETH2_MAX_PAYLOAD);
    } else if (k->result == 0 && k->rows) {
        ssz_bounds(k->rows, k->n_rows, k->request, k->fork, &min, &max, &from);
        if (k->ssz_len > max || k->ssz_len < min)
            p2pc_spec(pinfo, k->ti, k->ssz_len > max ? P2PC_SPEC_ETH2_TOO_LONG : P2PC_SPEC_ETH2_TOO_SHORT,
                      "SSZ length %" G_GUINT64_FORMAT " is outside the %s %s's bounds%s%s (%"
                      G_GUINT64_FORMAT " to %" G_GUINT64_FORMAT " bytes)", k->ssz_len, k->method,
                      k->request ? "request" : "response", from ? " from " : "", from ? from : "",
                      min, max);
    }
    proto_item_set_generated(proto_tree_add_uint(k->t, hf_eth2_compressed_len, tvb, k->off, len - k->off,
                                                 len - k->off));
    /* p2p-interface.md: a conforming encoder never exceeds snappy's max_compressed_len. */
    if ((guint64)(len - k->off) > 32 + k->ssz_len + k->ssz_len / 6)
        p2pc_spec(pinfo, k->ti, P2PC_SPEC_ETH2_COMPRESSED_LEN,
                  "Compressed length %u exceeds 32 + n + n/6 = %" G_GUINT64_FORMAT, len - k->off,
                  32 + k->ssz_len + k->ssz_len / 6);
    return TRUE;
}

/* The framed Snappy chunks the decoder walked (they start at `off`), with their conformance
 * checks; how many of them carry data. */
static guint32
draw_snappy_chunks(tvbuff_t *tvb, packet_info *pinfo, proto_tree *t, guint off, size_t consumed,
                   wmem_array_t *chunks)
{
    guint32 data_chunks = 0;
    proto_tree *ct = proto_tree_add_subtree_format(t, tvb, off, (gint)consumed, ett_eth2_chunks, NULL,
                                                   "Snappy frames: %u", wmem_array_get_count(chunks));
    for (guint i = 0; i < wmem_array_get_count(chunks); i++) {
        p2pc_snappy_chunk_t *c = (p2pc_snappy_chunk_t *)wmem_array_index(chunks, i);
        proto_item *ci = proto_tree_add_uint(ct, hf_eth2_chunk_type, tvb, off + c->offset, 4 + c->length, c->type);
        proto_tree *cit = proto_item_add_subtree(ci, ett_eth2_chunks);
        if (c->type <= 1)
            data_chunks++;
        proto_tree_add_uint(cit, hf_eth2_chunk_length, tvb, off + c->offset + 1, 3, c->length);
        if (i == 0 && c->type != P2PC_SNAPPY_CHUNK_STREAM_ID)
            p2pc_spec(pinfo, ci, P2PC_SPEC_SNAPPY_STREAM_ID, "The framed Snappy stream starts with a "
                      "chunk of type 0x%02x", c->type);
        if (c->type <= 1 && c->out_len > SNAPPY_MAX_CHUNK) {
            /* The decoder stops there, its CRC not computed. */
            p2pc_spec(pinfo, ci, P2PC_SPEC_SNAPPY_CHUNK_LEN, "A chunk of %u uncompressed bytes", c->out_len);
        } else if (c->type <= 1 && c->length >= 4) {
            p2pc_spec_snappy_crc(cit, tvb, off + c->offset + 4, hf_eth2_chunk_crc, hf_eth2_chunk_crc_status,
                                 pinfo, c->crc_computed);
        } else if (c->type >= 0x02 && c->type <= 0x7f) {
            p2pc_spec(pinfo, ci, P2PC_SPEC_SNAPPY_UNSKIPPABLE, NULL);
        }
    }
    return data_chunks;
}

/* The compressed bytes decoded under the capture's bounds, their chunks drawn, and the SSZ
 * dissected when it decompressed. */
static void
chunk_decode(tvbuff_t *tvb, packet_info *pinfo, chunk_t *k)
{
    guint off = k->off, len = k->len;
    wmem_array_t *chunks = wmem_array_new(pinfo->pool, sizeof(p2pc_snappy_chunk_t));
    p2pc_bound_t bound = p2pc_bound(pinfo, MIN(k->ssz_len + 65536, ETH2_MAX_PAYLOAD), len - off, 0);
    guint8 *out = NULL;
    size_t out_len = 0, consumed = 0;
    const char *detail = NULL;
    p2pc_dc_status_t st;

    st = p2pc_snappy_framed_decode(pinfo->pool, tvb_get_ptr(tvb, off, len - off), len - off,
                                   (size_t)k->ssz_len, bound.bound, &out, &out_len, &consumed, chunks, &detail);
    k->bounded = p2pc_bound_charge(pinfo, &bound, out_len, st == P2PC_DC_BOUND);
    k->data_chunks = draw_snappy_chunks(tvb, pinfo, k->t, off, consumed, chunks);
    if (k->bounded) {
        p2pc_bound_expert(pinfo, k->ti, bound.by);
    } else if (st == P2PC_DC_CORRUPT || st == P2PC_DC_TRUNCATED || st == P2PC_DC_BOUND) {
        /* The reserved and oversized chunks have their conformance checks above. */
        if (!(detail && (strstr(detail, "unskippable") || strstr(detail, "more than 65536"))))
            expert_add_info_format(pinfo, k->ti, &ei_eth2_decompress, "Snappy framing: %s",
                                   detail ? detail : p2pc_dc_status_name(st));
    } else {
        k->ssz = tvb_new_child_real_data(tvb, out, (guint)out_len, (gint)out_len);
        add_new_data_source(pinfo, k->ssz, "Decompressed SSZ");
        if (out_len != k->ssz_len)
            p2pc_spec(pinfo, k->ti, P2PC_SPEC_ETH2_LENGTH, "Declared SSZ length %" G_GUINT64_FORMAT
                      ", decompressed %zu", k->ssz_len, out_len);
        dissect_ssz(k->ssz, pinfo, k->t, k->method, k->request, k->result);
    }
    if (off + consumed < len && k->ssz)
        proto_tree_add_expert_format(k->t, pinfo, &ei_eth2_trailing, tvb, off + (guint)consumed,
                                     len - off - (guint)consumed, "%u bytes after the Snappy frames",
                                     len - off - (guint)consumed);
}

/* The chunk's record: its header (result, context, length prefix and the framing below), its
 * compressed payload, and what it decompressed to. */
static void
chunk_record(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, const l2p_pipe_t *pipe, const l2p_pdu_t *pdu,
             const chunk_t *k)
{
    p2pc_record_t rec;

    p2pc_record_init(&rec, "eth2", !k->rows ? p2pc_msg_type_unknown(pinfo, k->ti, "Protocol ID %s", k->method) :
                     wmem_strdup_printf(pinfo->pool, "%s %s", k->method, k->request ? "request" : "response"));
    rec.codec = "snappy-framed";
    rec.header_len = k->off + pdu->overhead;
    rec.payload_len = k->len - k->off;
    rec.raw_len = k->ssz ? tvb_captured_length(k->ssz) : k->len - k->off;
    rec.wire_len = k->len + pdu->overhead;
    rec.raw_tvb = k->ssz;
    rec.snappy_chunks = k->data_chunks;
    l2p_record_framing(&rec, pipe, pdu);
    if (k->bounded)
        p2pc_record_bound(&rec);
    p2pc_record_add(tvb, 0, k->len, pinfo, tree, &rec);
    proto_item_append_text(k->ti, ": %s %s%s", k->method, k->request ? "request" : "response",
                           k->result ? " (error)" : "");
    col_append_sep_fstr(pinfo->cinfo, COL_INFO, ", ", "%s %s", k->method, k->request ? "request" : "response");
}

static void
reqresp_pdu(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, l2p_pipe_t *pipe, l2p_pdu_t *pdu)
{
    chunk_t k;

    chunk_begin(tvb, pinfo, tree, pipe, pdu, &k);
    if (chunk_result(tvb, pinfo, &k) && chunk_length(tvb, pinfo, &k))
        chunk_decode(tvb, pinfo, &k);
    chunk_record(tvb, pinfo, tree, pipe, pdu, &k);
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

/* The gossip_topics key of a topic name: a subnet topic's name up to its "_<subnet_id>". */
static const char *
topic_key(const char *name, wmem_allocator_t *scope)
{
    const char *end = name + strlen(name), *p = end;
    while (p > name && g_ascii_isdigit(p[-1]))
        p--;
    return p < end && p > name && p[-1] == '_' ? wmem_strndup(scope, name, (gsize)(p - name)) : name;
}

/* A topic string (field hf) and, for /eth2/<fork digest>/<name>/ssz_snappy, its fork and name
 * (generated); returns the name, or "unknown". */
static const char *
topic_name(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, int hf, int off, int len)
{
    const char *topic = (const char *)tvb_get_string_enc(pinfo->pool, tvb, off, len, ENC_UTF_8), *name = "unknown";
    proto_tree_add_item(tree, hf, tvb, off, len, ENC_UTF_8);
    if (g_str_has_prefix(topic, "/eth2/") && strlen(topic) > 15) {
        gchar **parts = g_strsplit(topic, "/", -1);
        if (g_strv_length(parts) >= 5) {
            name = wmem_strdup(pinfo->pool, parts[3]);
            proto_item_set_generated(proto_tree_add_string(tree, hf_eth2_fork, tvb, off, len, fork_name(parts[2])));
            proto_item_set_generated(proto_tree_add_string(tree, hf_gs_topic_name, tvb, off, len, name));
        }
        g_strfreev(parts);
    }
    return name;
}

/* An /eth2/<fork digest>/... topic of a phase0 digest: its messages' IDs have no topic in them. */
static gboolean
phase0_topic(const char *topic)
{
    char digest[9];
    if (!g_str_has_prefix(topic, "/eth2/") || strlen(topic) < 15 || topic[14] != '/')
        return FALSE;
    memcpy(digest, topic + 6, 8);
    digest[8] = '\0';
    return !strcmp(fork_name(digest), "phase0");
}

/* A Message's data: drawn, its Snappy block decompressed within the bounds (NULL when it does not
 * decompress; *bounded when a bound stopped it), with the expert items and spec checks. */
static tvbuff_t *
message_data(tvbuff_t *tvb, packet_info *pinfo, proto_tree *mt, proto_item *mi, int data_off, int data_len,
             gboolean *bounded)
{
    proto_item *di = proto_tree_add_item(mt, hf_gs_data, tvb, data_off, data_len, ENC_NA);
    p2pc_dc_status_t st = P2PC_DC_CORRUPT;
    const char *detail = NULL;
    p2pc_bound_t bound;
    guint64 declared;
    tvbuff_t *ssz;

    /* A Snappy block starts with its uncompressed length (format_description.txt 1). */
    if (tvb_get_varint(tvb, data_off, MIN(FT_VARINT_MAX_LEN, data_len), &declared, ENC_VARINT_PROTOBUF) &&
        declared > ETH2_MAX_PAYLOAD)
        p2pc_spec(pinfo, di, P2PC_SPEC_GOSSIP_SIZE, "%" G_GUINT64_FORMAT " bytes uncompressed, over "
                  "MAX_PAYLOAD_SIZE (%u)", declared, ETH2_MAX_PAYLOAD);
    bound = p2pc_bound(pinfo, ETH2_MAX_PAYLOAD, data_len, 0);
    ssz = p2pc_decompress_tvb(tvb, data_off, data_len, pinfo, P2PC_CODEC_SNAPPY, bound.bound,
                              "Decompressed gossip SSZ", &st, &detail);
    *bounded = p2pc_bound_charge(pinfo, &bound, ssz ? tvb_captured_length(ssz) : 0, st == P2PC_DC_BOUND);
    if (*bounded)
        p2pc_bound_expert(pinfo, mi, bound.by);
    else if (!ssz)
        expert_add_info_format(pinfo, mi, &ei_eth2_decompress, "Snappy block: %s", detail ? detail : p2pc_dc_status_name(st));
    return ssz;
}

/* A Message's message-id (id, 20 bytes): valid snappy -> domain 0x01000000 and the uncompressed
 * data (ssz), otherwise 0x00000000 and the raw data; from Altair on, the topic's length and the
 * topic between (specs/altair/p2p-interface.md), not on a phase0 topic
 * (specs/phase0/p2p-interface.md).  FALSE when libgcrypt gave no hash. */
static gboolean
message_id(tvbuff_t *tvb, tvbuff_t *ssz, const char *topic, int topic_off, int topic_len,
           int data_off, int data_len, guint8 id[20])
{
    static const guint8 valid[4] = { 1, 0, 0, 0 }, invalid[4] = { 0, 0, 0, 0 };
    guint8 tl[8];
    guint64 tlen = (guint64)topic_len;
    gcry_md_hd_t md;

    if (gcry_md_open(&md, GCRY_MD_SHA256, 0) != 0)
        return FALSE;
    for (int i = 0; i < 8; i++)
        tl[i] = (guint8)(tlen >> (8 * i));
    gcry_md_write(md, ssz ? valid : invalid, 4);
    if (!phase0_topic(topic)) {
        gcry_md_write(md, tl, 8);
        if (topic_len)
            gcry_md_write(md, tvb_get_ptr(tvb, topic_off, topic_len), topic_len);
    }
    if (ssz)
        gcry_md_write(md, tvb_get_ptr(ssz, 0, tvb_captured_length(ssz)), tvb_captured_length(ssz));
    else if (data_len)
        gcry_md_write(md, tvb_get_ptr(tvb, data_off, data_len), data_len);
    memcpy(id, gcry_md_read(md, GCRY_MD_SHA256), 20);
    gcry_md_close(md);
    return TRUE;
}

static void
gossip_message(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, int start, int len,
               guint rpc_overhead, guint nmsgs, const l2p_pipe_t *pipe, const l2p_pdu_t *pdu,
               p2pc_gossip_rpc_t *parts)
{
    int off = start, data_off = 0, data_len = 0, topic_off = 0, topic_len = 0;
    p2pc_pb_field_t f;
    proto_tree *mt;
    proto_item *mi;
    const char *topic = "", *name = "unknown", *msg_type;
    p2pc_record_t rec;
    tvbuff_t *ssz = NULL;
    gboolean bounded = FALSE;
    guint8 id[20];
    static const char *const signing_fields[] = { NULL, "from", NULL, "seqno", NULL, "signature", "key" };
    wmem_strbuf_t *signed_fields = wmem_strbuf_new(pinfo->pool, "");

    mt = proto_tree_add_subtree(tree, tvb, start, len, ett_gs_msg, &mi, "Message");
    while (p2pc_pb_next(tvb, &off, start + len, &f)) {
        /* Message { from = 1; data = 2; seqno = 3; topic = 4; signature = 5; key = 6 } */
        if (f.number == 1 || f.number == 3 || f.number == 5 || f.number == 6)
            wmem_strbuf_append_printf(signed_fields, "%s%s", wmem_strbuf_get_len(signed_fields) ? ", " : "",
                                      signing_fields[f.number]);
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
        name = topic_name(tvb, pinfo, mt, hf_gs_topic, topic_off, topic_len);
    }
    if (g_str_has_prefix(topic, "/eth2/") && wmem_strbuf_get_len(signed_fields))
        p2pc_spec(pinfo, mi, P2PC_SPEC_GOSSIP_NO_SIGN, "%s on eth2 topic %s (StrictNoSign)",
                  wmem_strbuf_get_str(signed_fields), topic);
    if (data_len)
        ssz = message_data(tvb, pinfo, mt, mi, data_off, data_len, &bounded);
    if (message_id(tvb, ssz, topic, topic_off, topic_len, data_off, data_len, id)) {
        proto_item_set_generated(proto_tree_add_bytes_with_length(mt, hf_gs_message_id, tvb, start, len, id, 20));
        /* The topic's rule for the gossip accounting's duplicates: eth2's on an eth2 topic. */
        if (g_str_has_prefix(topic, "/eth2/"))
            p2pc_gossip_message_id(parts, start, id, 20);
    }
    if (ssz && !strcmp(name, "beacon_block")) {
        proto_tree *st2 = proto_tree_add_subtree(mt, ssz, 0, -1, ett_eth2_ssz, NULL, "SignedBeaconBlock");
        dissect_signed_block(ssz, st2);
    }
    proto_item_append_text(mi, ": %s", name);
    msg_type = try_str_to_str(topic_key(name, pinfo->pool), gossip_topics);
    if (!msg_type)
        msg_type = p2pc_msg_type_unknown(pinfo, mi, "Topic \"%s\"", topic);
    p2pc_record_init(&rec, "eth2", msg_type);
    rec.codec = "snappy";
    rec.payload_len = data_len;
    rec.raw_len = ssz ? tvb_captured_length(ssz) : (guint)data_len;
    rec.header_len = (len - data_len) + (nmsgs ? rpc_overhead / nmsgs : 0);
    rec.wire_len = rec.header_len + rec.payload_len;
    rec.raw_tvb = ssz;
    l2p_record_framing(&rec, pipe, pdu);
    if (bounded)
        p2pc_record_bound(&rec);
    p2pc_record_add(tvb, start, len, pinfo, tree, &rec);
    col_append_sep_fstr(pinfo->cinfo, COL_INFO, ", ", "gossip %s", name);
}

static gint64
rpc_len(l2p_pipe_t *pipe, const guint8 *p, guint avail)
{
    return p2pc_uvarint_prefixed(p, avail, L2P_MAX_PDU);
}


/* The most items one SubOpts (SUB_ITEMS) and one published Message (MSG_ITEMS, its SSZ block
 * included) draw: each asks p2pc_tree_room() for them, so an RPC of a million subscriptions or
 * messages is counted whole and drawn as far as gui.max_tree_items goes. */
#define SUB_ITEMS 8
#define MSG_ITEMS 256

/* ControlExtensions { optional bool partialMessages = 10; optional bool testExtension = 6492434 }:
 * each extension the sender supports, and any other field number (peers ignore those). */
static void
gossipsub_extensions(tvbuff_t *tvb, proto_tree *tree, int start, int len, wmem_strbuf_t *info)
{
    int off = start;
    p2pc_pb_field_t f;
    proto_item *ei = proto_tree_add_item(tree, hf_gs_extensions, tvb, start, len, ENC_NA);
    proto_tree *et = proto_item_add_subtree(ei, ett_gs_ext);
    wmem_strbuf_append(info, ", extensions");
    while (p2pc_pb_next(tvb, &off, start + len, &f)) {
        if (f.number == GS_EXT_PARTIAL && f.wire_type == 0) {
            proto_tree_add_boolean(et, hf_gs_ext_partial, tvb, start, len, f.value != 0);
            proto_item_append_text(ei, ": partialMessages=%s", f.value ? "true" : "false");
        } else if (f.number == GS_EXT_TEST && f.wire_type == 0) {
            proto_tree_add_boolean(et, hf_gs_ext_test, tvb, start, len, f.value != 0);
            proto_item_append_text(ei, ": testExtension=%s", f.value ? "true" : "false");
        } else {
            proto_tree_add_uint64(et, hf_gs_ext_unknown, tvb, start, len, f.number);
        }
    }
}

/* RPC.partial: PartialMessagesExtension { string topicID = 1; bytes groupID = 2;
 * bytes partialMessage = 3; bytes partsMetadata = 4 }; returns the topic's name. */
static const char *
gossipsub_partial(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, int start, int len)
{
    static int *const fields[] = { &hf_gs_partial_group, &hf_gs_partial_message, &hf_gs_partial_metadata };
    int off = start;
    p2pc_pb_field_t f;
    const char *name = "unknown";
    proto_item *pi = proto_tree_add_item(tree, hf_gs_partial, tvb, start, len, ENC_NA);
    proto_tree *pt = proto_item_add_subtree(pi, ett_gs_ext);
    while (p2pc_pb_next(tvb, &off, start + len, &f)) {
        if (f.wire_type != 2 || f.number < 1 || f.number > 4)
            continue;
        if (f.number == 1)
            name = topic_name(tvb, pinfo, pt, hf_gs_partial_topic, f.start, f.len);
        else
            proto_tree_add_item(pt, *fields[f.number - 2], tvb, f.start, f.len, ENC_NA);
    }
    proto_item_append_text(pi, ": %s", name);
    return name;
}

/* SubOpts { subscribe = 1; topicid = 2; requestsPartial = 3; supportsSendingPartial = 4 },
 * drawn; *subs and *unsubs count its subscribe flags. */
static void
gossipsub_subopts(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, int start, int len,
                  guint *subs, guint *unsubs)
{
    int so = start;
    p2pc_pb_field_t sub;
    proto_tree *st = p2pc_tree_room(tree, pinfo, tvb, SUB_ITEMS);
    while (p2pc_pb_next(tvb, &so, start + len, &sub)) {
        if (sub.number == 1 && sub.wire_type == 0) {
            proto_tree_add_boolean(st, hf_gs_subscribe, tvb, start, len, sub.value != 0);
            if (sub.value)
                (*subs)++;
            else
                (*unsubs)++;
        } else if (sub.number == 2 && sub.wire_type == 2) {
            proto_tree_add_item(st, hf_gs_topic, tvb, sub.start, sub.len, ENC_UTF_8);
        } else if ((sub.number == 3 || sub.number == 4) && sub.wire_type == 0) {
            proto_tree_add_boolean(st, sub.number == 3 ? hf_gs_requests_partial : hf_gs_supports_partial,
                                   tvb, start, len, sub.value != 0);
        }
    }
}

/* A ControlMessage: how many entries of each kind (also in info), and its extensions. */
static void
gossipsub_control(tvbuff_t *tvb, proto_tree *tree, int start, int len, wmem_strbuf_t *info)
{
    static const char *const names[] = { "IHAVE", "IWANT", "GRAFT", "PRUNE", "IDONTWANT" };
    static int *const counts[] = { &hf_gs_ihave, &hf_gs_iwant, &hf_gs_graft, &hf_gs_prune, &hf_gs_idontwant };
    int co = start;
    p2pc_pb_field_t sub;
    for (guint i = 0; i < G_N_ELEMENTS(counts); i++) {
        guint n = p2pc_pb_count(tvb, start, len, i + 1, P2PC_PB_ANY_WIRE_TYPE);
        proto_tree_add_uint(tree, *counts[i], tvb, start, len, n);
        if (n)
            wmem_strbuf_append_printf(info, ", %s %u", names[i], n);
    }
    while (p2pc_pb_next(tvb, &co, start + len, &sub))
        if (sub.number == 6 && sub.wire_type == 2)     /* ControlExtensions (v1.3) */
            gossipsub_extensions(tvb, tree, sub.start, sub.len, info);
}

static void
gossipsub_rpc(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, l2p_pipe_t *pipe, l2p_pdu_t *pdu)
{
    int len = (int)tvb_captured_length(tvb), off, end;
    guint used, nmsgs, msg_bytes = 0, subs = 0, unsubs = 0;
    guint64 rlen;
    p2pc_pb_field_t f;
    proto_item *ti;
    proto_tree *t;
    wmem_strbuf_t *info = wmem_strbuf_new(pinfo->pool, "");
    p2pc_gossip_rpc_t *parts;

    col_set_str(pinfo->cinfo, COL_PROTOCOL, "gossipsub");
    ti = proto_tree_add_item(tree, proto_gossipsub, tvb, 0, -1, ENC_NA);
    t = proto_item_add_subtree(ti, ett_gs);
    if (pdu->truncated)
        expert_add_info_format(pinfo, ti, &ei_eth2_truncated, "The stream closed after %d bytes of this RPC", len);
    parts = p2pc_gossip_rpc(tvb, len, pinfo);
    used = tvb_get_varint(tvb, 0, MIN(FT_VARINT_MAX_LEN, len), &rlen, ENC_VARINT_PROTOBUF);
    if (!used || rlen > (guint64)(len - (int)used)) {
        p2pc_budget_add(pinfo, "libp2p", P2PC_LAYER_GOSSIP, "rpc_without_message", (gint64)len + pdu->overhead);
        p2pc_gossip_queue(parts);
        return;
    }
    end = (int)used + (int)rlen;
    nmsgs = p2pc_pb_count(tvb, (int)used, (int)rlen, 2, P2PC_PB_ANY_WIRE_TYPE);
    off = (int)used;
    while (p2pc_pb_next(tvb, &off, end, &f))
        if (f.number == 2 && f.wire_type == 2)
            msg_bytes += f.len;
    off = (int)used;
    while (p2pc_pb_next(tvb, &off, end, &f)) {
        if (f.wire_type != 2)
            continue;
        if (f.number == 1) {
            gossipsub_subopts(tvb, pinfo, t, f.start, f.len, &subs, &unsubs);
        } else if (f.number == 2) {     /* Message */
            gossip_message(tvb, pinfo, p2pc_tree_room(t, pinfo, tvb, MSG_ITEMS), f.start, f.len,
                           len - msg_bytes + pdu->overhead, nmsgs, pipe, pdu, parts);
        } else if (f.number == 3) {
            gossipsub_control(tvb, t, f.start, f.len, info);
        } else if (f.number == GS_EXT_PARTIAL) {
            wmem_strbuf_append_printf(info, ", partial message %s", gossipsub_partial(tvb, pinfo, t, f.start, f.len));
        } else if (f.number == GS_EXT_TEST) {
            proto_tree_add_item(t, hf_gs_test_extension, tvb, f.start, f.len, ENC_NA);
            wmem_strbuf_append(info, ", test extension");
        }
    }
    p2pc_gossip_queue(parts);
    /* The budget (core/budget.h): the RPC's bytes no message record took, with the muxer
     * framing that carried them (a message's share of the RPC's own bytes is rounded down). */
    p2pc_budget_add(pinfo, "libp2p", P2PC_LAYER_GOSSIP, nmsgs ? "rpc_share_remainder" : "rpc_without_message",
                    nmsgs ? (len - msg_bytes + pdu->overhead) % nmsgs : (guint)len + pdu->overhead);
    /* An RPC without published messages is named by what it carries instead. */
    if (!nmsgs) {
        wmem_strbuf_t *all = wmem_strbuf_new(pinfo->pool, "");
        const char *what;
        if (subs)
            wmem_strbuf_append_printf(all, ", subscribe %u", subs);
        if (unsubs)
            wmem_strbuf_append_printf(all, ", unsubscribe %u", unsubs);
        wmem_strbuf_append(all, wmem_strbuf_get_str(info));
        what = wmem_strbuf_get_len(all) ? wmem_strbuf_get_str(all) + 2 : "empty";
        col_append_sep_fstr(pinfo->cinfo, COL_INFO, ", ", "gossipsub %s", what);
        proto_item_append_text(ti, ": %s", what);
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

/* A fork digest as the table takes it: 4 bytes, 8 hex digits. */
static char *
check_digest(const char *key)
{
    for (const char *c = key; *c; c++)
        if (!g_ascii_isxdigit(*c))
            return g_strdup_printf("\"%s\" is not hex: a fork digest is 8 hex digits (e.g. 6a95a1a9)", key);
    return strlen(key) == 8 ? NULL :
        g_strdup_printf("\"%s\": a fork digest is 8 hex digits (e.g. 6a95a1a9)", key);
}

/* Over 80 lines: the registration tables README.dissector asks for (fields, subtrees, expert
 * items, preferences), one entry each; cut up, they would only be harder to find. */
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
        { &hf_eth2_start_slot, { "Start slot", "eth2.range.start_slot", FT_UINT64, BASE_DEC, NULL, 0x0, "BeaconBlocksByRange, DataColumnSidecarsByRange: first slot asked for", HFILL } },
        { &hf_eth2_count, { "Count", "eth2.range.count", FT_UINT64, BASE_DEC, NULL, 0x0, "BeaconBlocksByRange, DataColumnSidecarsByRange: number of slots asked for", HFILL } },
        { &hf_eth2_column, { "Column index", "eth2.range.column", FT_UINT64, BASE_DEC, NULL, 0x0, "DataColumnSidecarsByRange: a column asked for", HFILL } },
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
            "SHA256(domain || uint64_le(len(topic)) || topic || data)[:20] (phase0 topics: SHA256(domain || data)[:20])", HFILL } },
        { &hf_gs_ihave, { "IHAVE", "gossipsub.control.ihave", FT_UINT32, BASE_DEC, NULL, 0x0, "IHAVE entries in the control message", HFILL } },
        { &hf_gs_iwant, { "IWANT", "gossipsub.control.iwant", FT_UINT32, BASE_DEC, NULL, 0x0, "IWANT entries in the control message", HFILL } },
        { &hf_gs_graft, { "GRAFT", "gossipsub.control.graft", FT_UINT32, BASE_DEC, NULL, 0x0, "GRAFT entries in the control message", HFILL } },
        { &hf_gs_prune, { "PRUNE", "gossipsub.control.prune", FT_UINT32, BASE_DEC, NULL, 0x0, "PRUNE entries in the control message", HFILL } },
        { &hf_gs_idontwant, { "IDONTWANT", "gossipsub.control.idontwant", FT_UINT32, BASE_DEC, NULL, 0x0, "IDONTWANT entries in the control message", HFILL } },
        { &hf_gs_requests_partial, { "Requests partial", "gossipsub.requests_partial", FT_BOOLEAN, BASE_NONE, NULL, 0x0, "SubOpts.requestsPartial: the sender prefers partial messages on the topic", HFILL } },
        { &hf_gs_supports_partial, { "Supports sending partial", "gossipsub.supports_sending_partial", FT_BOOLEAN, BASE_NONE, NULL, 0x0, "SubOpts.supportsSendingPartial: the sender can send partial messages on the topic", HFILL } },
        { &hf_gs_extensions, { "Extensions", "gossipsub.control.extensions", FT_NONE, BASE_NONE, NULL, 0x0, "ControlExtensions (gossipsub v1.3): the extensions the sender supports", HFILL } },
        { &hf_gs_ext_partial, { "Partial messages", "gossipsub.control.extensions.partial_messages", FT_BOOLEAN, BASE_NONE, NULL, 0x0, "ControlExtensions.partialMessages (field 10)", HFILL } },
        { &hf_gs_ext_test, { "Test extension", "gossipsub.control.extensions.test_extension", FT_BOOLEAN, BASE_NONE, NULL, 0x0, "ControlExtensions.testExtension (field 6492434)", HFILL } },
        { &hf_gs_ext_unknown, { "Unknown extension", "gossipsub.control.extensions.unknown", FT_UINT64, BASE_DEC, NULL, 0x0, "Field number of an extension no spec names (peers ignore it)", HFILL } },
        { &hf_gs_partial, { "Partial message", "gossipsub.partial", FT_NONE, BASE_NONE, NULL, 0x0, "RPC.partial: PartialMessagesExtension (field 10)", HFILL } },
        { &hf_gs_partial_topic, { "Topic", "gossipsub.partial.topic", FT_STRING, BASE_NONE, NULL, 0x0, "PartialMessagesExtension.topicID", HFILL } },
        { &hf_gs_partial_group, { "Group ID", "gossipsub.partial.group_id", FT_BYTES, BASE_NONE, NULL, 0x0, "PartialMessagesExtension.groupID: the application's name for the full message", HFILL } },
        { &hf_gs_partial_message, { "Partial message", "gossipsub.partial.message", FT_BYTES, BASE_NONE, NULL, 0x0, "PartialMessagesExtension.partialMessage: the parts sent", HFILL } },
        { &hf_gs_partial_metadata, { "Parts metadata", "gossipsub.partial.parts_metadata", FT_BYTES, BASE_NONE, NULL, 0x0, "PartialMessagesExtension.partsMetadata: the parts the sender has and wants", HFILL } },
        { &hf_gs_test_extension, { "Test extension", "gossipsub.test_extension", FT_NONE, BASE_NONE, NULL, 0x0, "RPC.testExtension (field 6492434): the Test Extension's message", HFILL } },
    };
    static gint *ett[] = { &ett_eth2, &ett_eth2_chunks, &ett_eth2_ssz, &ett_gs, &ett_gs_msg, &ett_gs_ext };
    static ei_register_info ei[] = {
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
    module = prefs_register_protocol(proto_eth2, NULL);
    fork_digests = p2pc_pairs_register(module, "fork_digests", "eth2_fork_digests",
        "Fork digests of other networks",
        "Fork digests (8 hex digits) and the fork each names, added to the mainnet ones: "
        "eth2.fork of a chunk's context or a gossip topic",
        "Fork digest", "4 bytes in hex, as in a gossip topic (e.g. 6a95a1a9)",
        "Fork", "The fork's name (phase0 ... fulu): its methods' bounds then apply", check_digest);
    /* The "digest=name,..." string of before: the table above replaced it (-o says so). */
    prefs_register_obsolete_preference(module, "extra_digests");
}

void
proto_reg_handoff_eth2(void)
{
    dissector_handle_t rr = create_dissector_handle(dissect_eth2_reqresp, proto_eth2);
    dissector_handle_t gs = create_dissector_handle(dissect_gossipsub, proto_gossipsub);
    for (size_t i = 0; i < G_N_ELEMENTS(eth2_methods); i++)
        if (i == 0 || strcmp(eth2_methods[i].method, eth2_methods[i - 1].method))
            dissector_add_string("multistream.protocol", wmem_strdup_printf(wmem_epan_scope(),
                                 "/eth2/beacon_chain/req/%s/ssz_snappy", eth2_methods[i].method), rr);
    dissector_add_string("multistream.protocol", "/meshsub/1.1.0", gs);
    dissector_add_string("multistream.protocol", "/meshsub/1.2.0", gs);
    dissector_add_string("multistream.protocol", "/meshsub/1.3.0", gs);
}
