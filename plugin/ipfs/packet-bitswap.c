/* packet-bitswap.c
 * Bitswap, IPFS's block exchange (https://specs.ipfs.tech/bitswap-protocol/; the protobuf:
 * ipfs/boxo bitswap/message/pb/message.proto), versions 1.0.0, 1.1.0 and 1.2.0 on their
 * libp2p protocol IDs.  Each message is a uvarint length, then a protobuf Message:
 *
 *   Message { Wantlist wantlist = 1; repeated bytes blocks = 2 (1.0.0);
 *             repeated Block payload = 3 (1.1.0+); repeated BlockPresence blockPresences = 4
 *             (1.2.0); int32 pendingBytes = 5 (1.2.0) }
 *   Wantlist { repeated Entry entries = 1; bool full = 2 }
 *   Entry { bytes block = 1 (a CID); int32 priority = 2; bool cancel = 3;
 *           WantType wantType = 4 (Block 0, Have 1); bool sendDontHave = 5 }
 *   Block { bytes prefix = 1 (CID version, codec, multihash type and length); bytes data = 2 }
 *   BlockPresence { bytes cid = 1; BlockPresenceType type = 2 (Have 0, DontHave 1) }
 *
 * A block carries no CID: 1.0.0's is the CIDv0 of its data, 1.1.0's is made of its prefix and
 * the multihash of its data, so the dissector hashes each block (sha2-256, libgcrypt) to name
 * it as the peers do.  A message is a batch: its record counts one item per wantlist entry,
 * block and presence, and names what it carries (msg_type "blocks", "wantlist", "presences",
 * or those joined by "+").
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/p2pc-compat.h"
#include "core/cid.h"
#include "core/record.h"
#include "core/tree-room.h"
#include "libp2p/engine.h"

#include <epan/expert.h>
#include <wsutil/wsgcrypt.h>

void proto_register_bitswap(void);
void proto_reg_handoff_bitswap(void);

static int proto_bitswap = -1;
static int hf_bs_length = -1;
static int hf_bs_wantlist = -1;
static int hf_bs_full = -1;
static int hf_bs_entry = -1;
static int hf_bs_entry_cid = -1;
static int hf_bs_entry_priority = -1;
static int hf_bs_entry_cancel = -1;
static int hf_bs_entry_want_type = -1;
static int hf_bs_entry_send_dont_have = -1;
static int hf_bs_block = -1;
static int hf_bs_block_cid = -1;
static int hf_bs_block_prefix = -1;
static int hf_bs_block_version = -1;
static int hf_bs_block_codec = -1;
static int hf_bs_block_mh_type = -1;
static int hf_bs_block_data = -1;
static int hf_bs_block_size = -1;
static int hf_bs_presence = -1;
static int hf_bs_presence_cid = -1;
static int hf_bs_presence_type = -1;
static int hf_bs_pending_bytes = -1;
static int hf_bs_entries = -1;
static int hf_bs_blocks = -1;
static int hf_bs_presences = -1;
static gint ett_bs = -1;
static gint ett_bs_wantlist = -1;
static gint ett_bs_item = -1;
static expert_field ei_bs_malformed = EI_INIT;
static expert_field ei_bs_cid = EI_INIT;
static expert_field ei_bs_hash = EI_INIT;
static expert_field ei_bs_truncated = EI_INIT;

#define BS_WANT_BLOCK 0
#define BS_WANT_HAVE 1
static const value_string want_types[] = {
    { BS_WANT_BLOCK, "want-block" },
    { BS_WANT_HAVE, "want-have" },
    { 0, NULL }
};

static const value_string presence_types[] = {
    { 0, "have" },
    { 1, "dont-have" },
    { 0, NULL }
};

/* The multicodecs of IPFS blocks (multiformats/multicodec table.csv). */
static const val64_string codecs[] = {
    { 0x55, "raw" },
    { P2PC_CODEC_DAG_PB, "dag-pb" },
    { 0x71, "dag-cbor" },
    { 0x0129, "dag-json" },
    { 0, NULL }
};

/* msg_type by what a message carries (bit 0 blocks, bit 1 wantlist entries, bit 2 presences):
 * a bounded set, so that a report has at most these eight rows for Bitswap. */
#define BS_HAS_BLOCKS 1
#define BS_HAS_WANTS 2
#define BS_HAS_PRESENCES 4
static const char *const msg_types[] = {
    "empty", "blocks", "wantlist", "blocks+wantlist", "presences", "blocks+presences",
    "wantlist+presences", "blocks+wantlist+presences",
};

/* The most items an entry or a presence (ENTRY_ITEMS) and a block (BLOCK_ITEMS) draw, expert
 * items included: each asks p2pc_tree_room() for them, so a message of a million entries is
 * counted whole and drawn as far as gui.max_tree_items goes. */
#define ENTRY_ITEMS 12
#define BLOCK_ITEMS 16

/* What a message carries, counted as it is drawn. */
typedef struct {
    guint entries, blocks, presences;
} bs_counts_t;

static gint64
bitswap_len(l2p_pipe_t *pipe, const guint8 *p, guint avail)
{
    return p2pc_uvarint_prefixed(p, avail, L2P_MAX_PDU);
}

/* A CID field tvb[start, start + len): its string, or an expert item when it is no CID. */
static void
add_cid(tvbuff_t *tvb, packet_info *pinfo, proto_tree *t, int hf, int start, int len)
{
    p2pc_cid_t cid;
    if (p2pc_cid_parse(tvb_get_ptr(tvb, start, len), (size_t)len, &cid))
        proto_tree_add_string(t, hf, tvb, start, len, p2pc_cid_string(pinfo->pool, &cid));
    else
        proto_tree_add_expert(t, pinfo, &ei_bs_cid, tvb, start, len);
}

/* The end of a protobuf message walked with p2pc_pb_next(): it stops early on a malformed field. */
static void
check_end(tvbuff_t *tvb, packet_info *pinfo, proto_tree *t, int off, int end)
{
    if (off < end)
        proto_tree_add_expert(t, pinfo, &ei_bs_malformed, tvb, off, end - off);
}

static void
draw_entry(tvbuff_t *tvb, packet_info *pinfo, proto_tree *wt, int start, int end)
{
    proto_item *ti = proto_tree_add_item(wt, hf_bs_entry, tvb, start, end - start, ENC_NA);
    proto_tree *t = proto_item_add_subtree(ti, ett_bs_item);
    guint64 want_type = BS_WANT_BLOCK;
    gint32 priority = 0;
    gboolean cancel = FALSE;
    int off = start;
    p2pc_pb_field_t f;

    int at = off;   /* where the field read by p2pc_pb_next() starts (its tag) */
    while (p2pc_pb_next(tvb, &off, end, &f)) {
        if (f.number == 1 && f.wire_type == 2) {
            add_cid(tvb, pinfo, t, hf_bs_entry_cid, f.start, f.len);
        } else if (f.number == 2 && f.wire_type == 0) {
            priority = (gint32)f.value;     /* int32 on the wire: a negative one is 10 bytes */
            proto_tree_add_int(t, hf_bs_entry_priority, tvb, at, off - at, priority);
        } else if (f.number == 3 && f.wire_type == 0) {
            cancel = f.value != 0;
            proto_tree_add_boolean(t, hf_bs_entry_cancel, tvb, at, off - at, cancel);
        } else if (f.number == 4 && f.wire_type == 0) {
            want_type = f.value;
            proto_tree_add_uint(t, hf_bs_entry_want_type, tvb, at, off - at, (guint32)f.value);
        } else if (f.number == 5 && f.wire_type == 0) {
            proto_tree_add_boolean(t, hf_bs_entry_send_dont_have, tvb, at, off - at, f.value != 0);
        }
        at = off;
    }
    check_end(tvb, pinfo, t, off, end);
    proto_item_append_text(ti, ": %s, priority %d", cancel ? "cancel" :
                           val_to_str_const((guint32)want_type, want_types, "want-?"), priority);
}

static void
draw_wantlist(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, int start, int end, bs_counts_t *n)
{
    proto_item *ti = proto_tree_add_item(tree, hf_bs_wantlist, tvb, start, end - start, ENC_NA);
    proto_tree *t = proto_item_add_subtree(ti, ett_bs_wantlist);
    int off = start, at = start;
    p2pc_pb_field_t f;

    while (p2pc_pb_next(tvb, &off, end, &f)) {
        if (f.number == 1 && f.wire_type == 2) {
            draw_entry(tvb, pinfo, p2pc_tree_room(t, pinfo, tvb, ENTRY_ITEMS), f.start, f.start + f.len);
            n->entries++;
        } else if (f.number == 2 && f.wire_type == 0) {
            proto_tree_add_boolean(t, hf_bs_full, tvb, at, off - at, f.value != 0);
        }
        at = off;
    }
    check_end(tvb, pinfo, t, off, end);
    proto_item_append_text(ti, ": %u entries", n->entries);
}

/* A block: `prefix` (1.1.0+; -1 for 1.0.0's bare data, a CIDv0) and its data.  The CID is the
 * prefix's version and codec with the multihash of the data. */
static void
draw_block(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, int start, int end,
           int prefix, int prefix_len, int data, int data_len)
{
    proto_item *ti = proto_tree_add_item(tree, hf_bs_block, tvb, start, end - start, ENC_NA);
    proto_tree *t = proto_item_add_subtree(ti, ett_bs_item);
    guint64 version = 0, codec = P2PC_CODEC_DAG_PB, mh_code = P2PC_MH_SHA2_256, mh_len = 32;
    guint8 digest[32];
    p2pc_cid_t cid;

    if (prefix >= 0) {
        int off = prefix, end_p = prefix + prefix_len;
        guint64 *parts[] = { &version, &codec, &mh_code, &mh_len };
        int *hfs[] = { &hf_bs_block_version, &hf_bs_block_codec, &hf_bs_block_mh_type, NULL };
        proto_tree *pt;
        proto_item *pi = proto_tree_add_item(t, hf_bs_block_prefix, tvb, prefix, prefix_len, ENC_NA);
        pt = proto_item_add_subtree(pi, ett_bs_item);
        for (guint i = 0; i < G_N_ELEMENTS(parts); i++) {
            guint used = off < end_p ? tvb_get_varint(tvb, off, MIN(FT_VARINT_MAX_LEN, end_p - off), parts[i],
                                                      ENC_VARINT_PROTOBUF) : 0;
            if (!used) {
                proto_tree_add_expert_format(pt, pinfo, &ei_bs_cid, tvb, prefix, prefix_len,
                                             "The CID prefix is cut short");
                goto data;
            }
            if (hfs[i])
                proto_tree_add_uint64(pt, *hfs[i], tvb, off, used, *parts[i]);
            off += used;
        }
        if (off != end_p || version > 1 || (version == 0 && (codec != P2PC_CODEC_DAG_PB || mh_len != 32))) {
            proto_tree_add_expert_format(pt, pinfo, &ei_bs_cid, tvb, prefix, prefix_len,
                                         "The CID prefix is no CIDv0 or CIDv1 prefix");
            goto data;
        }
    }
    if (mh_code != P2PC_MH_SHA2_256 || mh_len > 32) {
        proto_tree_add_expert_format(t, pinfo, &ei_bs_hash, tvb, start, end - start,
                                     "Multihash 0x%" PRIx64 " of %" PRIu64 " bytes: the CID is not computed",
                                     mh_code, mh_len);
        goto data;
    }
    gcry_md_hash_buffer(GCRY_MD_SHA256, digest, tvb_get_ptr(tvb, data, data_len), data_len);
    cid.version = version;
    cid.codec = codec;
    cid.mh_code = mh_code;
    cid.digest = digest;
    cid.digest_len = mh_len;    /* a shorter length is a truncated sha2-256 (multihash) */
    proto_item_set_generated(proto_tree_add_string(t, hf_bs_block_cid, tvb, data, data_len,
                                                   p2pc_cid_string(pinfo->pool, &cid)));
data:
    proto_tree_add_item(t, hf_bs_block_data, tvb, data, data_len, ENC_NA);
    proto_item_set_generated(proto_tree_add_uint(t, hf_bs_block_size, tvb, data, data_len, data_len));
    proto_item_append_text(ti, ": %d bytes", data_len);
}

static void
draw_payload(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, int start, int end)
{
    int off = start, prefix = -1, prefix_len = 0, data = start, data_len = 0;
    p2pc_pb_field_t f;
    while (p2pc_pb_next(tvb, &off, end, &f)) {
        if (f.number == 1 && f.wire_type == 2) {
            prefix = f.start;
            prefix_len = f.len;
        } else if (f.number == 2 && f.wire_type == 2) {
            data = f.start;
            data_len = f.len;
        }
    }
    check_end(tvb, pinfo, tree, off, end);
    if (prefix < 0) {
        proto_tree_add_expert_format(tree, pinfo, &ei_bs_cid, tvb, start, end - start,
                                     "A payload block without its CID prefix");
        return;
    }
    draw_block(tvb, pinfo, tree, start, end, prefix, prefix_len, data, data_len);
}

static void
draw_presence(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, int start, int end)
{
    proto_item *ti = proto_tree_add_item(tree, hf_bs_presence, tvb, start, end - start, ENC_NA);
    proto_tree *t = proto_item_add_subtree(ti, ett_bs_item);
    guint64 type = 0;
    int off = start, at = start;
    p2pc_pb_field_t f;
    while (p2pc_pb_next(tvb, &off, end, &f)) {
        if (f.number == 1 && f.wire_type == 2) {
            add_cid(tvb, pinfo, t, hf_bs_presence_cid, f.start, f.len);
        } else if (f.number == 2 && f.wire_type == 0) {
            type = f.value;
            proto_tree_add_uint(t, hf_bs_presence_type, tvb, at, off - at, (guint32)type);
        }
        at = off;
    }
    check_end(tvb, pinfo, t, off, end);
    proto_item_append_text(ti, ": %s", val_to_str_const((guint32)type, presence_types, "?"));
}

/* One message, tvb = uvarint length + protobuf; `pdu` (NULL: drawn without its stream) as the
 * muxed stream `pipe` cut it. */
static void
draw_message(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, const l2p_pipe_t *pipe, const l2p_pdu_t *pdu)
{
    guint32 overhead = pdu ? pdu->overhead : 0;
    gboolean truncated = pdu && pdu->truncated;
    proto_item *ti = proto_tree_add_item(tree, proto_bitswap, tvb, 0, -1, ENC_NA);
    proto_tree *t = proto_item_add_subtree(ti, ett_bs);
    int len = (int)tvb_captured_length(tvb), off, at, end;
    guint used;
    guint64 n;
    bs_counts_t count = { 0, 0, 0 };
    p2pc_pb_field_t f;
    p2pc_record_t rec;
    guint mask;

    col_set_str(pinfo->cinfo, COL_PROTOCOL, "Bitswap");
    if (truncated)
        expert_add_info(pinfo, ti, &ei_bs_truncated);
    used = tvb_get_varint(tvb, 0, MIN(FT_VARINT_MAX_LEN, len), &n, ENC_VARINT_PROTOBUF);
    if (!used) {
        proto_tree_add_expert(t, pinfo, &ei_bs_malformed, tvb, 0, len);
        p2pc_record_undecoded(tvb, 0, len, pinfo, tree, "bitswap", (guint64)len + overhead, NULL);
        return;
    }
    proto_tree_add_uint64(t, hf_bs_length, tvb, 0, used, n);
    off = at = (int)used;
    end = (int)MIN((guint64)len, used + n);
    while (p2pc_pb_next(tvb, &off, end, &f)) {
        if (f.number == 1 && f.wire_type == 2) {
            draw_wantlist(tvb, pinfo, t, f.start, f.start + f.len, &count);
        } else if (f.number == 2 && f.wire_type == 2) {
            draw_block(tvb, pinfo, p2pc_tree_room(t, pinfo, tvb, BLOCK_ITEMS), f.start, f.start + f.len, -1, 0,
                       f.start, f.len);
            count.blocks++;
        } else if (f.number == 3 && f.wire_type == 2) {
            draw_payload(tvb, pinfo, p2pc_tree_room(t, pinfo, tvb, BLOCK_ITEMS), f.start, f.start + f.len);
            count.blocks++;
        } else if (f.number == 4 && f.wire_type == 2) {
            draw_presence(tvb, pinfo, p2pc_tree_room(t, pinfo, tvb, ENTRY_ITEMS), f.start, f.start + f.len);
            count.presences++;
        } else if (f.number == 5 && f.wire_type == 0) {
            proto_tree_add_int(t, hf_bs_pending_bytes, tvb, at, off - at, (gint32)f.value);
        }
        at = off;
    }
    check_end(tvb, pinfo, t, off, end);
    proto_item_set_generated(proto_tree_add_uint(t, hf_bs_entries, tvb, 0, 0, count.entries));
    proto_item_set_generated(proto_tree_add_uint(t, hf_bs_blocks, tvb, 0, 0, count.blocks));
    proto_item_set_generated(proto_tree_add_uint(t, hf_bs_presences, tvb, 0, 0, count.presences));

    mask = (count.blocks ? BS_HAS_BLOCKS : 0) | (count.entries ? BS_HAS_WANTS : 0) |
           (count.presences ? BS_HAS_PRESENCES : 0);
    proto_item_append_text(ti, ": %s (%u entries, %u blocks, %u presences)", msg_types[mask],
                           count.entries, count.blocks, count.presences);
    col_append_sep_str(pinfo->cinfo, COL_INFO, ", ", wmem_strdup_printf(pinfo->pool, "Bitswap %s", msg_types[mask]));
    p2pc_record_init(&rec, "bitswap", msg_types[mask]);
    rec.header_len = used + overhead;
    rec.payload_len = (guint64)(len - (int)used);
    rec.raw_len = rec.payload_len;
    rec.wire_len = rec.header_len + rec.payload_len;
    rec.batch_count = MAX(1, count.entries + count.blocks + count.presences);
    rec.raw_tvb = tvb_new_subset_remaining(tvb, (int)used);
    if (pipe)
        l2p_record_framing(&rec, pipe, pdu);
    p2pc_record_add(tvb, 0, len, pinfo, t, &rec);
}

static void
bitswap_pdu(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, l2p_pipe_t *pipe, l2p_pdu_t *pdu)
{
    draw_message(tvb, pinfo, tree, pipe, pdu);
}

static int
dissect_bitswap(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    l2p_pipe_t *pipe = (l2p_pipe_t *)data;
    if (pipe)
        l2p_dissect_pdus(tvb, pinfo, tree, pipe, bitswap_len, bitswap_pdu);
    else
        draw_message(tvb, pinfo, tree, NULL, NULL);
    return tvb_captured_length(tvb);
}

void
proto_register_bitswap(void)
{
    static hf_register_info hf[] = {
        { &hf_bs_length, { "Length", "bitswap.length", FT_UINT64, BASE_DEC, NULL, 0x0,
            "Length of the protobuf Message (uvarint prefix)", HFILL } },
        { &hf_bs_wantlist, { "Wantlist", "bitswap.wantlist", FT_NONE, BASE_NONE, NULL, 0x0,
            "The sender's wants (Message.wantlist)", HFILL } },
        { &hf_bs_full, { "Full", "bitswap.wantlist.full", FT_BOOLEAN, BASE_NONE, NULL, 0x0,
            "The wantlist replaces the sender's previous one (else it updates it)", HFILL } },
        { &hf_bs_entry, { "Entry", "bitswap.wantlist.entry", FT_NONE, BASE_NONE, NULL, 0x0,
            "A wantlist entry", HFILL } },
        { &hf_bs_entry_cid, { "CID", "bitswap.wantlist.entry.cid", FT_STRING, BASE_NONE, NULL, 0x0,
            "The block wanted or cancelled", HFILL } },
        { &hf_bs_entry_priority, { "Priority", "bitswap.wantlist.entry.priority", FT_INT32, BASE_DEC, NULL, 0x0,
            "Higher is sent first", HFILL } },
        { &hf_bs_entry_cancel, { "Cancel", "bitswap.wantlist.entry.cancel", FT_BOOLEAN, BASE_NONE, NULL, 0x0,
            "The entry revokes an earlier want", HFILL } },
        { &hf_bs_entry_want_type, { "Want type", "bitswap.wantlist.entry.want_type", FT_UINT32, BASE_DEC,
            VALS(want_types), 0x0, "want-block (the block) or want-have (whether the peer has it; 1.2.0)", HFILL } },
        { &hf_bs_entry_send_dont_have, { "Send DONT_HAVE", "bitswap.wantlist.entry.send_dont_have", FT_BOOLEAN,
            BASE_NONE, NULL, 0x0, "The peer should say so when it does not have the block (1.2.0)", HFILL } },
        { &hf_bs_block, { "Block", "bitswap.block", FT_NONE, BASE_NONE, NULL, 0x0,
            "A block (1.0.0 blocks, 1.1.0+ payload)", HFILL } },
        { &hf_bs_block_cid, { "CID", "bitswap.block.cid", FT_STRING, BASE_NONE, NULL, 0x0,
            "The block's CID: its prefix (1.0.0: CIDv0) with the sha2-256 multihash of its data", HFILL } },
        { &hf_bs_block_prefix, { "CID prefix", "bitswap.block.prefix", FT_BYTES, BASE_NONE, NULL, 0x0,
            "CID version, codec, multihash type and length (1.1.0+)", HFILL } },
        { &hf_bs_block_version, { "CID version", "bitswap.block.cid_version", FT_UINT64, BASE_DEC, NULL, 0x0,
            NULL, HFILL } },
        { &hf_bs_block_codec, { "Codec", "bitswap.block.codec", FT_UINT64, BASE_HEX | BASE_VAL64_STRING,
            VALS64(codecs), 0x0, "The block's multicodec", HFILL } },
        { &hf_bs_block_mh_type, { "Multihash type", "bitswap.block.mh_type", FT_UINT64, BASE_HEX, NULL, 0x0,
            "The multihash function (0x12 sha2-256)", HFILL } },
        { &hf_bs_block_data, { "Data", "bitswap.block.data", FT_BYTES, BASE_NONE, NULL, 0x0,
            NULL, HFILL } },
        { &hf_bs_block_size, { "Size", "bitswap.block.size", FT_UINT32, BASE_DEC, NULL, 0x0,
            "The block's bytes", HFILL } },
        { &hf_bs_presence, { "Block presence", "bitswap.presence", FT_NONE, BASE_NONE, NULL, 0x0,
            "Whether the sender has a block (1.2.0)", HFILL } },
        { &hf_bs_presence_cid, { "CID", "bitswap.presence.cid", FT_STRING, BASE_NONE, NULL, 0x0,
            NULL, HFILL } },
        { &hf_bs_presence_type, { "Type", "bitswap.presence.type", FT_UINT32, BASE_DEC, VALS(presence_types), 0x0,
            NULL, HFILL } },
        { &hf_bs_pending_bytes, { "Pending bytes", "bitswap.pending_bytes", FT_INT32, BASE_DEC, NULL, 0x0,
            "Bytes of blocks the sender still has queued for the receiver (1.2.0)", HFILL } },
        { &hf_bs_entries, { "Entries", "bitswap.entries", FT_UINT32, BASE_DEC, NULL, 0x0,
            "Wantlist entries in the message", HFILL } },
        { &hf_bs_blocks, { "Blocks", "bitswap.blocks", FT_UINT32, BASE_DEC, NULL, 0x0,
            "Blocks in the message", HFILL } },
        { &hf_bs_presences, { "Presences", "bitswap.presences", FT_UINT32, BASE_DEC, NULL, 0x0,
            "Block presences in the message", HFILL } },
    };
    static gint *ett[] = { &ett_bs, &ett_bs_wantlist, &ett_bs_item };
    static ei_register_info ei[] = {
        { &ei_bs_malformed, { "bitswap.malformed", PI_MALFORMED, PI_ERROR,
            "Not a well-formed protobuf field", EXPFILL } },
        { &ei_bs_cid, { "bitswap.bad_cid", PI_MALFORMED, PI_WARN,
            "Not a CIDv0 or CIDv1", EXPFILL } },
        { &ei_bs_hash, { "bitswap.hash_unsupported", PI_UNDECODED, PI_NOTE,
            "A multihash p2pc does not compute", EXPFILL } },
        { &ei_bs_truncated, { "bitswap.truncated", PI_MALFORMED, PI_WARN,
            "The stream closed inside a message", EXPFILL } },
    };
    expert_module_t *expert;

    proto_bitswap = proto_register_protocol("IPFS Bitswap", "Bitswap", "bitswap");
    proto_register_field_array(proto_bitswap, hf, array_length(hf));
    proto_register_subtree_array(ett, array_length(ett));
    expert = expert_register_protocol(proto_bitswap);
    expert_register_field_array(expert, ei, array_length(ei));
}

void
proto_reg_handoff_bitswap(void)
{
    static const char *const ids[] = {
        "/ipfs/bitswap", "/ipfs/bitswap/1.0.0", "/ipfs/bitswap/1.1.0", "/ipfs/bitswap/1.2.0",
    };
    dissector_handle_t h = register_dissector("bitswap", dissect_bitswap, proto_bitswap);
    for (guint i = 0; i < G_N_ELEMENTS(ids); i++)
        dissector_add_string("multistream.protocol", ids[i], h);
}
