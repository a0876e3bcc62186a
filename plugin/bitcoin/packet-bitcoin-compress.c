/* packet-bitcoin-compress.c
 * Bitcoin datastream compression (2015 BIP draft by Peter Tschipper, shipped in Bitcoin
 * Unlimited as BUIP017: ptschip/bitcoin branch BUIP017_compress, commit 292122e3b) on top of
 * Wireshark's own Bitcoin dissector.
 *
 *   cblock       LZO1X-compressed block            (receiver bound 16,000,000 bytes)
 *   ctxcat       LZO1X-compressed tx || tx || ...  (receiver bound  1,000,000 bytes)
 *   txcat        uncompressed tx || tx || ...
 *   cxthinblock  LZO1X-compressed xthinblock;  get_cxthin  LZO1X-compressed get_xthin
 *
 * A record's msg_type is the command when it is one of Bitcoin's (btc_command_names), and
 * "unknown" otherwise: a peer chooses its command bytes (core/msgtype.h).
 *
 * Xthin (BUIP010, Bitcoin Unlimited src/thinblock.h and main.cpp): an xthinblock is the block
 * header, a vector of 64-bit short transaction IDs (each txid's GetCheapHash(), its first 8
 * bytes read little-endian) and a vector of the transactions the requester's filter missed;
 * get_xthin is a CInv (MSG_XTHINBLOCK 5 or MSG_THINBLOCK 4) and a BIP 37 CBloomFilter
 * (vData, nHashFuncs u32, nTweak u32, nFlags u8).
 *
 * Negotiated by a service bit in both peers' `version` (NODE_COMPRESS = 1<<5; the 2015 test
 * builds reportedly used bit 28, so the bit is a preference).  The 2015 PR (bitcoin#6973) used
 * zlib instead of LZO: a payload that starts with a valid zlib header is decoded as zlib.
 * Header length and checksum cover the payload as sent, i.e. the compressed bytes.
 *
 * What this file adds to the stock dissector, without copying its handlers:
 * - its own TCP framing (heuristic and ports) that verifies the header checksum, which stock
 *   Wireshark does not, and emits one p2pc record per message;
 * - the five BUIP017 commands in the stock `bitcoin.command` table;
 * - a wrapper around every stock command handler, so Decode As "Bitcoin" (the stock framing)
 *   still yields one p2pc record per message;
 * - a segwit-aware transaction walker: batches have no count and no per-tx length, and
 *   Wireshark 4.0's own tx parser stops at the first segwit transaction.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/p2pc-compat.h"
#include "core/codecs.h"
#include "core/conn.h"
#include "core/heur.h"
#include "core/holes.h"
#include "core/msgtype.h"
#include "core/payload.h"
#include "core/prefs.h"
#include "core/record.h"
#include "core/spec.h"
#include "core/tree-room.h"
#include "bitcoin/bip324.h"

#include <epan/conversation.h>
#include <epan/exceptions.h>
#include <epan/expert.h>
#include <epan/prefs.h>
#include <epan/show_exception.h>
#include <epan/dissectors/packet-tcp.h>
#include <wsutil/pint.h>
#include <wsutil/to_str.h>
#include <wsutil/wsgcrypt.h>

void proto_register_btcc(void);
void proto_reg_handoff_btcc(void);

#define BTC_HEADER_LEN          24
#define BTC_HEADER_LEN_V0       20           /* no checksum field: see btc_header_len() */
#define BTC_MAX_PAYLOAD         0x02000000   /* Bitcoin Core MAX_SIZE */
#define BTCC_BLOCK_BOUND        16000000     /* BUIP017 receiver bound: cblock, cxthinblock */
#define BTCC_TXCAT_BOUND        1000000      /* BUIP017 receiver bound: ctxcat */
#define BTCC_DEFAULT_PORTS      "8333,18333,38333,48333,18444"

static int proto_btcc = -1;
static int proto_bitcoin = -1;

/* Stock fields, reused so `bitcoin.command` etc. filter as they always did. */
static int hf_bitcoin_magic = -1;
static int hf_bitcoin_command = -1;
static int hf_bitcoin_length = -1;
static int hf_bitcoin_checksum = -1;

static int hf_btcc_checksum_status = -1;
static int hf_btcc_codec = -1;
static int hf_btcc_compressed_len = -1;
static int hf_btcc_decompressed_len = -1;
static int hf_btcc_negotiated = -1;
static int hf_btcc_services_src = -1;
static int hf_btcc_services_dst = -1;
static int hf_btcc_version_frame_src = -1;
static int hf_btcc_version_frame_dst = -1;
static int hf_btcc_block_hash = -1;
static int hf_btcc_block_tx_count = -1;
static int hf_btcc_batch_count = -1;
static int hf_btcc_tx = -1;
static int hf_btcc_tx_index = -1;
static int hf_btcc_tx_offset = -1;
static int hf_btcc_tx_length = -1;
static int hf_btcc_tx_txid = -1;
static int hf_btcc_tx_segwit = -1;
static int hf_btcc_trailing = -1;
static int hf_btcc_continuation = -1;
static int hf_btcc_xthin_short_id_count = -1;
static int hf_btcc_xthin_short_id = -1;
static int hf_btcc_xthin_missing_count = -1;
static int hf_btcc_inv_type = -1;
static int hf_btcc_inv_hash = -1;
static int hf_btcc_bloom_data = -1;
static int hf_btcc_bloom_hash_funcs = -1;
static int hf_btcc_bloom_tweak = -1;
static int hf_btcc_bloom_flags = -1;

static gint ett_btcc = -1;
static gint ett_btcc_bitcoin = -1;
static gint ett_btcc_tx = -1;
static gint ett_btcc_txs = -1;
static gint ett_btcc_short_ids = -1;
static gint ett_btcc_bloom = -1;

static expert_field ei_btcc_decompress_failed = EI_INIT;
static expert_field ei_btcc_bound = EI_INIT;
static expert_field ei_btcc_trailing = EI_INIT;
static expert_field ei_btcc_negotiation_unseen = EI_INIT;
static expert_field ei_btcc_bad_checksum = EI_INIT;
static expert_field ei_btcc_bad_tx = EI_INIT;
static expert_field ei_btcc_length = EI_INIT;
static expert_field ei_btcc_resync = EI_INIT;
static expert_field ei_btcc_xthin = EI_INIT;

static dissector_handle_t btcc_handle;
static dissector_table_t bitcoin_command_table;
static dissector_handle_t stock_block_handle;
static dissector_handle_t stock_tx_handle;

#define BTCC_SERVICE_BIT_DEFAULT 5     /* NODE_COMPRESS */
static guint pref_service_bit = BTCC_SERVICE_BIT_DEFAULT;
static p2pc_bool_t pref_verify_checksum = TRUE;
static p2pc_bool_t pref_decompress = TRUE;
static p2pc_bool_t pref_stock_tx = TRUE;

static const value_string checksum_status_vals[] = {
    { PROTO_CHECKSUM_E_BAD,        "Bad" },
    { PROTO_CHECKSUM_E_GOOD,       "Good" },
    { PROTO_CHECKSUM_E_UNVERIFIED, "Unverified" },
    { PROTO_CHECKSUM_E_NOT_PRESENT, "Not present" },
    { 0, NULL }
};

/* CInv types a get_xthin may carry (protocol.h; BUIP010 adds 4 and 5). */
static const value_string inv_type_vals[] = {
    { 1, "MSG_TX" }, { 2, "MSG_BLOCK" }, { 3, "MSG_FILTERED_BLOCK" }, { 4, "MSG_THINBLOCK" },
    { 5, "MSG_XTHINBLOCK" },
    { 0, NULL }
};

/* Bitcoin's commands, the record's msg_type (core/msgtype.h): Bitcoin Core's
 * ALL_NET_MESSAGE_TYPES (src/protocol.h, v28), the ones earlier releases defined that
 * Wireshark's own dissector still registers (reject, alert, checkorder, submitorder, reply),
 * BUIP017's and Bitcoin Unlimited's Xthin commands. */
static const string_string btc_command_names[] = {
    { "version", "version" },           { "verack", "verack" },
    { "addr", "addr" },                 { "addrv2", "addrv2" },
    { "sendaddrv2", "sendaddrv2" },     { "inv", "inv" },
    { "getdata", "getdata" },           { "merkleblock", "merkleblock" },
    { "getblocks", "getblocks" },       { "getheaders", "getheaders" },
    { "tx", "tx" },                     { "headers", "headers" },
    { "block", "block" },               { "getaddr", "getaddr" },
    { "mempool", "mempool" },           { "ping", "ping" },
    { "pong", "pong" },                 { "notfound", "notfound" },
    { "filterload", "filterload" },     { "filteradd", "filteradd" },
    { "filterclear", "filterclear" },   { "sendheaders", "sendheaders" },
    { "feefilter", "feefilter" },       { "sendcmpct", "sendcmpct" },
    { "cmpctblock", "cmpctblock" },     { "getblocktxn", "getblocktxn" },
    { "blocktxn", "blocktxn" },         { "getcfilters", "getcfilters" },
    { "cfilter", "cfilter" },           { "getcfheaders", "getcfheaders" },
    { "cfheaders", "cfheaders" },       { "getcfcheckpt", "getcfcheckpt" },
    { "cfcheckpt", "cfcheckpt" },       { "wtxidrelay", "wtxidrelay" },
    { "sendtxrcncl", "sendtxrcncl" },
    { "reject", "reject" },             { "alert", "alert" },
    { "checkorder", "checkorder" },     { "submitorder", "submitorder" },
    { "reply", "reply" },
    { "cblock", "cblock" },             { "txcat", "txcat" },
    { "ctxcat", "ctxcat" },             { "cxthinblock", "cxthinblock" },
    { "get_cxthin", "get_cxthin" },
    { "xthinblock", "xthinblock" },     { "get_xthin", "get_xthin" },
    { "thinblock", "thinblock" },       { "xblocktx", "xblocktx" },
    { "get_xblocktx", "get_xblocktx" },
    { NULL, NULL }
};

/* Network magics as the bytes appear on the wire, read little-endian. */
static const guint32 btc_magics[] = {
    0xD9B4BEF9,  /* main      f9 be b4 d9 */
    0x0709110B,  /* testnet3  0b 11 09 07 */
    0x283F161C,  /* testnet4  1c 16 3f 28 */
    0x40CF030A,  /* signet    0a 03 cf 40 */
    0xDAB5BFFA,  /* regtest   fa bf b5 da */
};

typedef enum {
    CMD_STOCK = 0,      /* a stock handler, wrapped */
    CMD_VERSION,
    CMD_BLOCK,
    CMD_TX,
    CMD_CBLOCK,
    CMD_TXCAT,
    CMD_CTXCAT,
    CMD_CXTHINBLOCK,
    CMD_GET_CXTHIN,
} cmd_kind_t;

typedef struct {
    const char *name;
    cmd_kind_t kind;
    dissector_handle_t stock;   /* the handler we wrap, if any */
} cmd_entry_t;

/* Per-connection negotiation state (core/conn.h: it goes on across a live session reset): each
 * side's version services and the frame it came in, in the session it came in (frames are
 * numbered anew in each). */
typedef struct {
    address addr[2];
    guint32 port[2];
    guint64 services[2];
    guint32 version_frame[2];   /* 0 = not seen */
    guint version_session[2];
    gint32 nversion[2];         /* the version message's protocol version */
    gboolean v0_header[2];      /* the version message came without the checksum field */
} btcc_conv_t;

/* ---- helpers ---- */

static void
sha256d(const guint8 *data, size_t len, guint8 out[32])
{
    guint8 first[32];
    gcry_md_hash_buffer(GCRY_MD_SHA256, first, data, len);
    gcry_md_hash_buffer(GCRY_MD_SHA256, out, first, 32);
}

/* Bitcoin shows hashes byte-reversed. */
static const char *
hash_to_display(wmem_allocator_t *scope, const guint8 h[32])
{
    guint8 rev[32];
    char *s = (char *)wmem_alloc(scope, 65);
    for (int i = 0; i < 32; i++)
        rev[i] = h[31 - i];
    *bytes_to_hexstr(s, rev, 32) = '\0';
    return s;
}

/* CompactSize varint; FALSE when it does not fit before `end`. */
static gboolean
read_varint(tvbuff_t *tvb, guint *off, guint end, guint64 *v)
{
    guint8 b;
    if (*off + 1 > end)
        return FALSE;
    b = tvb_get_uint8(tvb, *off);
    if (b < 0xfd) {
        *v = b;
        *off += 1;
    } else if (b == 0xfd) {
        if (*off + 3 > end)
            return FALSE;
        *v = tvb_get_letohs(tvb, *off + 1);
        *off += 3;
    } else if (b == 0xfe) {
        if (*off + 5 > end)
            return FALSE;
        *v = tvb_get_letohl(tvb, *off + 1);
        *off += 5;
    } else {
        if (*off + 9 > end)
            return FALSE;
        *v = tvb_get_letoh64(tvb, *off + 1);
        *off += 9;
    }
    return TRUE;
}

static gboolean
skip_bytes(guint *off, guint end, guint64 n)
{
    if (n > end - *off)
        return FALSE;
    *off += (guint)n;
    return TRUE;
}

typedef struct {
    guint offset;
    guint length;
    gboolean segwit;
    guint io_start;     /* inputs/outputs: the part of the non-witness serialization between */
    guint io_end;       /* version and lock time (txid = SHA256d(version || io || locktime)) */
} tx_span_t;

/* Walk one serialized transaction at `off` (BIP 144 aware) without throwing. */
static gboolean
walk_tx(tvbuff_t *tvb, guint off, guint end, tx_span_t *tx)
{
    guint p = off;
    guint64 n_in, n_out, i;

    tx->offset = off;
    tx->segwit = FALSE;
    if (!skip_bytes(&p, end, 4))
        return FALSE;
    if (p + 2 <= end && tvb_get_uint8(tvb, p) == 0x00 && tvb_get_uint8(tvb, p + 1) == 0x01) {
        tx->segwit = TRUE;
        p += 2;
    }
    tx->io_start = p;
    if (!read_varint(tvb, &p, end, &n_in))
        return FALSE;
    /* A transaction has at least one input and one output (consensus rule); each input takes
     * at least 41 bytes, so a larger count is garbage, not a loop bound. */
    if (n_in == 0 || n_in > (end - p) / 41 + 1)
        return FALSE;
    for (i = 0; i < n_in; i++) {
        guint64 script_len;
        if (!skip_bytes(&p, end, 36) || !read_varint(tvb, &p, end, &script_len) ||
            !skip_bytes(&p, end, script_len) || !skip_bytes(&p, end, 4))
            return FALSE;
    }
    if (!read_varint(tvb, &p, end, &n_out))
        return FALSE;
    if (n_out == 0 || n_out > (end - p) / 9 + 1)
        return FALSE;
    for (i = 0; i < n_out; i++) {
        guint64 script_len;
        if (!skip_bytes(&p, end, 8) || !read_varint(tvb, &p, end, &script_len) ||
            !skip_bytes(&p, end, script_len))
            return FALSE;
    }
    tx->io_end = p;
    if (tx->segwit) {
        for (i = 0; i < n_in; i++) {
            guint64 items, j;
            if (!read_varint(tvb, &p, end, &items) || items > end - p)
                return FALSE;
            for (j = 0; j < items; j++) {
                guint64 item_len;
                if (!read_varint(tvb, &p, end, &item_len) || !skip_bytes(&p, end, item_len))
                    return FALSE;
            }
        }
    }
    if (!skip_bytes(&p, end, 4))
        return FALSE;
    tx->length = p - off;
    return TRUE;
}

static const char *
txid_display(tvbuff_t *tvb, const tx_span_t *tx, wmem_allocator_t *scope)
{
    gcry_md_hd_t md;
    guint8 first[32], h[32];
    guint io_len = tx->io_end - tx->io_start;

    if (gcry_md_open(&md, GCRY_MD_SHA256, 0) != 0)
        return "?";
    gcry_md_write(md, tvb_get_ptr(tvb, tx->offset, 4), 4);
    gcry_md_write(md, tvb_get_ptr(tvb, tx->io_start, io_len), io_len);
    gcry_md_write(md, tvb_get_ptr(tvb, tx->offset + tx->length - 4, 4), 4);
    memcpy(first, gcry_md_read(md, GCRY_MD_SHA256), 32);
    gcry_md_close(md);
    gcry_md_hash_buffer(GCRY_MD_SHA256, h, first, 32);
    return hash_to_display(scope, h);
}

/* Call a stock handler, drawing where its items (fewer than its bytes) fit in the frame's
 * tree; a malformed-packet exception in it, or a DissectorError, stays inside its own subtree. */
static void
call_stock(dissector_handle_t handle, tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree)
{
    proto_tree *room = p2pc_tree_room(tree, pinfo, tvb, tvb_captured_length(tvb));

    if (!handle)
        return;
    TRY {
        call_dissector(handle, tvb, pinfo, room);
    }
    CATCH_BOUNDS_AND_DISSECTOR_ERRORS {
        show_exception(tvb, pinfo, room, EXCEPT_CODE, GET_MESSAGE);
    }
    ENDTRY;
}

/* The items dissect_tx_sequence() draws for a transaction besides the stock parser's (which
 * call_stock() makes room for). */
#define TX_ITEMS 8

/* Walk tx || tx || ... in tvb[start, end).  Returns the number of whole transactions; shows
 * each as its own item (index, offset, length, txid) and, for batches, hands it to the stock
 * `tx` handler.  Bytes that do not parse as a transaction are flagged as trailing. */
static guint32
dissect_tx_sequence(tvbuff_t *tvb, guint start, guint end, guint64 expected, packet_info *pinfo,
                    proto_tree *tree, gboolean call_stock_tx)
{
    guint32 count = 0;
    guint off = start;
    proto_tree *txs_tree = NULL;
    proto_item *txs_item = NULL;

    if (tree) {
        txs_tree = proto_tree_add_subtree(tree, tvb, start, end - start, ett_btcc_txs, &txs_item,
                                          "Transactions");
    }
    while (off < end && (expected == 0 || count < expected)) {
        tx_span_t tx;
        proto_tree *room;
        if (!walk_tx(tvb, off, end, &tx))
            break;
        room = p2pc_tree_room(txs_tree, pinfo, tvb, TX_ITEMS);
        if (room) {
            proto_item *ti;
            proto_tree *tt;
            ti = proto_tree_add_item(room, hf_btcc_tx, tvb, tx.offset, tx.length, ENC_NA);
            proto_item_append_text(ti, " #%u%s", count, tx.segwit ? " (segwit)" : "");
            tt = proto_item_add_subtree(ti, ett_btcc_tx);
            proto_item_set_generated(proto_tree_add_uint(tt, hf_btcc_tx_index, tvb, tx.offset, tx.length, count));
            proto_item_set_generated(proto_tree_add_uint(tt, hf_btcc_tx_offset, tvb, tx.offset, tx.length, tx.offset - start));
            proto_item_set_generated(proto_tree_add_uint(tt, hf_btcc_tx_length, tvb, tx.offset, tx.length, tx.length));
            proto_item_set_generated(proto_tree_add_string(tt, hf_btcc_tx_txid, tvb, tx.offset, tx.length,
                                                           txid_display(tvb, &tx, pinfo->pool)));
            proto_item_set_generated(proto_tree_add_boolean(tt, hf_btcc_tx_segwit, tvb, tx.offset, tx.length, tx.segwit));
            /* Wireshark 4.0's tx parser cannot read segwit transactions. */
            if (call_stock_tx && pref_stock_tx && (!tx.segwit || P2PC_STOCK_BITCOIN_SEGWIT))
                call_stock(stock_tx_handle, tvb_new_subset_length(tvb, tx.offset, tx.length), pinfo, tt);
        }
        count++;
        off += tx.length;
    }
    if (txs_item)
        proto_item_append_text(txs_item, ": %u", count);
    if (off < end && expected == 0) {
        proto_item *ti = proto_tree_add_item(tree, hf_btcc_trailing, tvb, off, end - off, ENC_NA);
        expert_add_info_format(pinfo, ti, &ei_btcc_trailing,
                               "%u bytes after the last transaction do not parse as one", end - off);
    } else if (expected && count < expected) {
        expert_add_info_format(pinfo, txs_item, &ei_btcc_bad_tx,
                               "Transaction %u of %" G_GUINT64_FORMAT " does not parse", count, expected);
    }
    return count;
}

/* A serialized block: 80-byte header, varint tx count, transactions. */
static guint32
dissect_block_body(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree)
{
    guint len = tvb_captured_length(tvb);
    guint off = 80;
    guint64 n_tx = 0;
    guint32 count;
    gboolean any_segwit = FALSE;
    guint8 h[32];

    if (len < 81) {
        expert_add_info_format(pinfo, tree ? proto_tree_get_parent(tree) : NULL, &ei_btcc_bad_tx,
                               "Block shorter than its 80-byte header");
        return 0;
    }
    sha256d(tvb_get_ptr(tvb, 0, 80), 80, h);
    proto_item_set_generated(proto_tree_add_string(tree, hf_btcc_block_hash, tvb, 0, 80,
                                                   hash_to_display(pinfo->pool, h)));
    if (!read_varint(tvb, &off, len, &n_tx))
        return 0;
    proto_item_set_generated(proto_tree_add_uint64(tree, hf_btcc_block_tx_count, tvb, 80, off - 80, n_tx));
    count = dissect_tx_sequence(tvb, off, len, n_tx, pinfo, tree, FALSE);
    if (tree) {
        /* Hand the block to the stock handler where it can parse all of it. */
        guint p = off;
        for (guint32 i = 0; i < count && !any_segwit; i++) {
            tx_span_t tx;
            if (!walk_tx(tvb, p, len, &tx))
                break;
            any_segwit = tx.segwit;
            p += tx.length;
        }
        if (!any_segwit || P2PC_STOCK_BITCOIN_SEGWIT)
            call_stock(stock_block_handle, tvb, pinfo, tree);
        else
            proto_tree_add_subtree_format(tree, tvb, 0, 0, ett_btcc_txs, NULL,
                "Segwit block: transactions shown by the p2pc walker only (Wireshark %d.%d's block parser cannot read segwit)",
                WIRESHARK_VERSION_MAJOR, WIRESHARK_VERSION_MINOR);
    }
    return count;
}

/* An xthinblock: header, short transaction IDs, the missing transactions. */
static void
dissect_xthinblock_body(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree)
{
    guint len = tvb_captured_length(tvb);
    guint off = 80, start;
    guint64 n_ids = 0, n_missing = 0;
    guint32 count;
    proto_tree *st;
    guint8 h[32];

    if (len < 80 || !read_varint(tvb, &off, len, &n_ids) || n_ids > (len - off) / 8) {
        expert_add_info_format(pinfo, proto_tree_get_parent(tree), &ei_btcc_xthin,
                               "xthinblock: header or short ID list runs past the payload");
        return;
    }
    sha256d(tvb_get_ptr(tvb, 0, 80), 80, h);
    proto_item_set_generated(proto_tree_add_string(tree, hf_btcc_block_hash, tvb, 0, 80,
                                                   hash_to_display(pinfo->pool, h)));
    start = off;
    st = proto_tree_add_subtree_format(tree, tvb, 80, off - 80 + (guint)n_ids * 8, ett_btcc_short_ids, NULL,
                                       "Short transaction IDs: %" G_GUINT64_FORMAT, n_ids);
    proto_tree_add_uint64(st, hf_btcc_xthin_short_id_count, tvb, 80, start - 80, n_ids);
    for (guint64 i = 0; i < n_ids; i++, off += 8)
        proto_tree_add_item(st, hf_btcc_xthin_short_id, tvb, off, 8, ENC_LITTLE_ENDIAN);
    start = off;
    if (!read_varint(tvb, &off, len, &n_missing)) {
        expert_add_info_format(pinfo, proto_tree_get_parent(tree), &ei_btcc_xthin,
                               "xthinblock: the missing transaction count runs past the payload");
        return;
    }
    proto_tree_add_uint64(tree, hf_btcc_xthin_missing_count, tvb, start, off - start, n_missing);
    if (n_missing > n_ids)
        expert_add_info_format(pinfo, proto_tree_get_parent(tree), &ei_btcc_xthin,
                               "xthinblock: %" G_GUINT64_FORMAT " missing transactions of %" G_GUINT64_FORMAT,
                               n_missing, n_ids);
    /* Our walker only: the stock tx handler per transaction would nest a layer for each. */
    count = n_missing ? dissect_tx_sequence(tvb, off, len, n_missing, pinfo, tree, FALSE) : 0;
    if (count == n_missing) {
        guint p = off;
        for (guint32 i = 0; i < count; i++) {
            tx_span_t tx;
            if (!walk_tx(tvb, p, len, &tx))
                break;
            p += tx.length;
        }
        if (p < len) {
            proto_item *ti = proto_tree_add_item(tree, hf_btcc_trailing, tvb, p, len - p, ENC_NA);
            expert_add_info_format(pinfo, ti, &ei_btcc_trailing,
                                   "%u bytes after the last missing transaction", len - p);
        }
    }
}

/* A get_xthin: the block's CInv and the requester's bloom filter. */
static void
dissect_get_xthin_body(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree)
{
    guint len = tvb_captured_length(tvb);
    guint off = 36;
    guint64 n = 0;
    guint8 h[32];
    proto_tree *bt;

    if (len < 36 || !read_varint(tvb, &off, len, &n) || n > len - off || len - off - (guint)n < 9) {
        expert_add_info_format(pinfo, proto_tree_get_parent(tree), &ei_btcc_xthin,
                               "get_xthin: inventory or bloom filter runs past the payload");
        return;
    }
    proto_tree_add_item(tree, hf_btcc_inv_type, tvb, 0, 4, ENC_LITTLE_ENDIAN);
    tvb_memcpy(tvb, h, 4, 32);
    proto_tree_add_string(tree, hf_btcc_inv_hash, tvb, 4, 32, hash_to_display(pinfo->pool, h));
    bt = proto_tree_add_subtree(tree, tvb, 36, len - 36, ett_btcc_bloom, NULL, "Bloom filter");
    proto_tree_add_item(bt, hf_btcc_bloom_data, tvb, off, (gint)n, ENC_NA);
    off += (guint)n;
    proto_tree_add_item(bt, hf_btcc_bloom_hash_funcs, tvb, off, 4, ENC_LITTLE_ENDIAN);
    proto_tree_add_item(bt, hf_btcc_bloom_tweak, tvb, off + 4, 4, ENC_LITTLE_ENDIAN);
    proto_tree_add_item(bt, hf_btcc_bloom_flags, tvb, off + 8, 1, ENC_NA);
    off += 9;
    if (off < len) {
        proto_item *ti = proto_tree_add_item(tree, hf_btcc_trailing, tvb, off, len - off, ENC_NA);
        expert_add_info_format(pinfo, ti, &ei_btcc_trailing, "%u bytes after the bloom filter", len - off);
    }
}

static btcc_conv_t *
get_conv(packet_info *pinfo, int *dir)
{
    gboolean made;
    btcc_conv_t *bc = (btcc_conv_t *)p2pc_conn_state(pinfo, P2PC_SLOT_BITCOIN, sizeof(btcc_conv_t), &made);
    if (made) {
        wmem_allocator_t *pool = p2pc_conn_pool(p2pc_conn_get(pinfo));
        copy_address_wmem(pool, &bc->addr[0], &pinfo->src);
        bc->port[0] = pinfo->srcport;
        copy_address_wmem(pool, &bc->addr[1], &pinfo->dst);
        bc->port[1] = pinfo->destport;
    }
    *dir = p2pc_conn_dir(&bc->addr[0], bc->port[0], pinfo);
    return bc;
}

/* Negotiation as of this frame: both version messages seen at or before it. */
typedef enum { NEG_UNSEEN, NEG_NO, NEG_YES } neg_state_t;

/* Side d's version message came at or before `frame` of this session. */
static gboolean
version_seen(const btcc_conv_t *bc, int d, guint32 frame)
{
    return bc->version_frame[d] &&
           (bc->version_session[d] != p2pc_conn_session() || bc->version_frame[d] <= frame);
}

static neg_state_t
negotiation_state(const btcc_conv_t *bc, guint32 frame)
{
    guint64 bit = G_GUINT64_CONSTANT(1) << pref_service_bit;
    if (!version_seen(bc, 0, frame) || !version_seen(bc, 1, frame))
        return NEG_UNSEEN;
    return ((bc->services[0] & bit) && (bc->services[1] & bit)) ? NEG_YES : NEG_NO;
}

static void
add_negotiation(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, btcc_conv_t *bc, int dir,
                gboolean compressed_cmd)
{
    neg_state_t st = negotiation_state(bc, pinfo->num);
    proto_item *ti;

    if (version_seen(bc, dir, pinfo->num)) {
        proto_item_set_generated(proto_tree_add_uint64(tree, hf_btcc_services_src, tvb, 0, 0, bc->services[dir]));
        if (bc->version_session[dir] == p2pc_conn_session())
            proto_item_set_generated(proto_tree_add_uint(tree, hf_btcc_version_frame_src, tvb, 0, 0, bc->version_frame[dir]));
    }
    if (version_seen(bc, !dir, pinfo->num)) {
        proto_item_set_generated(proto_tree_add_uint64(tree, hf_btcc_services_dst, tvb, 0, 0, bc->services[!dir]));
        if (bc->version_session[!dir] == p2pc_conn_session())
            proto_item_set_generated(proto_tree_add_uint(tree, hf_btcc_version_frame_dst, tvb, 0, 0, bc->version_frame[!dir]));
    }
    if (st == NEG_UNSEEN) {
        if (compressed_cmd)
            expert_add_info(pinfo, proto_tree_get_parent(tree), &ei_btcc_negotiation_unseen);
        return;
    }
    ti = proto_tree_add_boolean(tree, hf_btcc_negotiated, tvb, 0, 0, st == NEG_YES);
    proto_item_set_generated(ti);
    if (compressed_cmd && st == NEG_NO)
        p2pc_spec(pinfo, ti, P2PC_SPEC_BUIP017_NOT_NEGOTIATED,
            "Compressed command on a conversation that did not negotiate compression "
            "(service bit %u not set by both peers)", pref_service_bit);
}

/* Decompress a BUIP017 payload (LZO1X, or zlib when it starts with a zlib header) through the
 * shared path (core/payload.h): bounded, its own tab, btcc.decompressed_len, and
 * btcc.decompress_failed / btcc.bound_exceeded on failure.  A raw LZO1X stream can start with
 * bytes that happen to pass the zlib header check, so zlib falls back to LZO1X.
 *
 * A compressed payload not smaller than its raw form is reported once, as the spec check
 * p2pc.spec.buip017.not_smaller (a warning, and an S line in -z p2pc,records): BUIP017 sends
 * such a message uncompressed, so here it is a peer breaking the protocol's rule, not the
 * codec's bad luck that p2pc.compressed_larger notes for FISCO.  spec_not_smaller keeps that
 * generic note out of the frame, which would name the larger case twice. */
static tvbuff_t *
decompress_payload(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, const char *cmd,
                   size_t protocol_bound, p2pc_record_t *rec)
{
    guint len = tvb_captured_length(tvb);
    p2pc_payload_codec_t how = { P2PC_CODEC_LZO1X, protocol_bound, NULL, &hf_btcc_decompressed_len, NULL,
                                 &ei_btcc_decompress_failed, P2PC_CODEC_NONE, &ei_btcc_bound, TRUE };
    p2pc_codec_t codec;
    tvbuff_t *out;
    proto_item *ti;
    gboolean bounded;

    rec->raw_len = len;     /* until decoded: nothing counted as saved */
    if (len >= 2 && p2pc_is_zlib_header(tvb_get_uint8(tvb, 0), tvb_get_uint8(tvb, 1))) {
        how.codec = P2PC_CODEC_ZLIB;
        how.fallback = P2PC_CODEC_LZO1X;
    }
    rec->codec = p2pc_codec_name(how.codec);
    if (!pref_decompress)
        return NULL;
    how.tab = wmem_strdup_printf(pinfo->pool, "Decompressed %s", cmd);
    /* Expert items go on the compressed length: what they are about. */
    ti = proto_tree_add_uint(tree, hf_btcc_compressed_len, tvb, 0, len, len);
    proto_item_set_generated(ti);
    out = p2pc_payload_decompress(&how, tvb, pinfo, tree, ti, &bounded, &codec);
    rec->codec = p2pc_codec_name(codec);
    proto_item_set_generated(proto_tree_add_string(tree, hf_btcc_codec, tvb, 0, len, rec->codec));
    if (bounded)
        p2pc_record_bound(rec);
    if (!out)
        return NULL;
    rec->raw_len = tvb_captured_length(out);
    if (tvb_captured_length(out) <= len)
        p2pc_spec(pinfo, ti, P2PC_SPEC_BUIP017_NOT_SMALLER,
            "Compressed payload (%u bytes) is not smaller than the raw one (%u bytes): BUIP017 sends it uncompressed",
            len, tvb_captured_length(out));
    col_append_fstr(pinfo->cinfo, COL_INFO, " [%s %u\xe2\x86\x92%u]", rec->codec, len,
                    tvb_captured_length(out));
    return out;
}

/* The first version message of direction `dir` (first pass): its protocol version and services,
 * and whether its header was the v0 one. */
static void
note_version(tvbuff_t *tvb, packet_info *pinfo, btcc_conv_t *bc, int dir, gboolean v0_header)
{
    bc->nversion[dir] = (gint32)tvb_get_letohl(tvb, 0);
    bc->services[dir] = tvb_get_letoh64(tvb, 4);
    bc->version_frame[dir] = pinfo->num;
    bc->version_session[dir] = p2pc_conn_session();
    bc->v0_header[dir] = v0_header;
}

/* The handler every command in bitcoin.command goes through (ours and the wrapped stock ones).
 * `data` is the record of the message when our framing (dissect_btcc_pdu) calls: the handler
 * fills it in and the framing emits it.  The stock framing passes NULL: the handler then emits
 * a record of its own. */
static int
dissect_btcc_command(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data, void *cb_data)
{
    const cmd_entry_t *cmd = (const cmd_entry_t *)cb_data;
    guint len = tvb_captured_length(tvb);
    gboolean own_framing = data != NULL;
    p2pc_record_t local, *rec;
    proto_item *bti;
    proto_tree *btree;
    tvbuff_t *body;
    btcc_conv_t *bc;
    int dir;
    gboolean compressed = cmd->kind == CMD_CBLOCK || cmd->kind == CMD_CTXCAT ||
                          cmd->kind == CMD_CXTHINBLOCK || cmd->kind == CMD_GET_CXTHIN;

    if (own_framing) {
        rec = (p2pc_record_t *)data;
    } else {
        rec = &local;
        p2pc_record_init(rec, "bitcoin", p2pc_msg_type_of(pinfo, tree, cmd->name, btc_command_names));
        rec->header_len = BTC_HEADER_LEN;
        rec->payload_len = tvb_reported_length(tvb);
        rec->raw_len = rec->payload_len;
        rec->wire_len = rec->header_len + rec->payload_len;
    }

    bti = proto_tree_add_item(tree, proto_btcc, tvb, 0, -1, ENC_NA);
    btree = proto_item_add_subtree(bti, ett_btcc);
    bc = get_conv(pinfo, &dir);

    /* A compressed command's body is its decompressed payload; nothing is dissected in it when
     * that fails (decompress_payload says why). */
    rec->raw_tvb = !compressed ? tvb :
        decompress_payload(tvb, pinfo, btree, cmd->name,
                           cmd->kind == CMD_CTXCAT ? BTCC_TXCAT_BOUND : BTCC_BLOCK_BOUND, rec);
    body = rec->raw_tvb;
    if (body) {
        switch (cmd->kind) {
        case CMD_VERSION:
            if (len >= 12 && !PINFO_FD_VISITED(pinfo) && !version_seen(bc, dir, pinfo->num))
                note_version(tvb, pinfo, bc, dir, own_framing && rec->header_len == BTC_HEADER_LEN_V0);
            call_stock(cmd->stock, tvb, pinfo, tree);
            break;
        case CMD_BLOCK:     /* a block is one item: its transactions were never separate messages */
        case CMD_CBLOCK:
            dissect_block_body(body, pinfo, btree);
            break;
        case CMD_TX:
            dissect_tx_sequence(tvb, 0, len, 1, pinfo, btree, FALSE);
            {
                tx_span_t tx;
                if (walk_tx(tvb, 0, len, &tx) && (!tx.segwit || P2PC_STOCK_BITCOIN_SEGWIT))
                    call_stock(cmd->stock, tvb, pinfo, tree);
            }
            break;
        case CMD_TXCAT:
        case CMD_CTXCAT:
            rec->batch_count = dissect_tx_sequence(body, 0, tvb_captured_length(body), 0, pinfo, btree, TRUE);
            proto_item_set_generated(proto_tree_add_uint(btree, hf_btcc_batch_count, tvb, 0, len, rec->batch_count));
            break;
        case CMD_CXTHINBLOCK:
            dissect_xthinblock_body(body, pinfo, btree);
            break;
        case CMD_GET_CXTHIN:
            dissect_get_xthin_body(body, pinfo, btree);
            break;
        case CMD_STOCK:
            call_stock(cmd->stock, tvb, pinfo, tree);
            break;
        }
    }
    add_negotiation(tvb, pinfo, btree, bc, dir, compressed);
    proto_item_append_text(bti, ": %s, %s", cmd->name, rec->codec);

    if (!own_framing)
        p2pc_record_add(tvb, 0, len, pinfo, tree, rec);
    return len;
}

/* ---- our framing ---- */

static gboolean
is_btc_magic(guint32 m)
{
    for (size_t i = 0; i < G_N_ELEMENTS(btc_magics); i++)
        if (btc_magics[i] == m)
            return TRUE;
    return FALSE;
}

/* A version payload as Bitcoin 0.3.x reads it (main.cpp ProcessMessage, "version"): nVersion,
 * nServices, nTime, addrMe (26 bytes: a CAddress at stream version 0 has no time); from
 * nVersion 106 addrFrom, nNonce and strSubVer; from 209 nStartingHeight; each group only if
 * bytes remain.  TRUE when tvb[off, off+len) is exactly that. */
static gboolean
v0_version_payload(tvbuff_t *tvb, guint off, guint len)
{
    guint end = off + len, p = off + 46;
    guint64 n;
    gint32 version;

    if (len < 46 || (version = (gint32)tvb_get_letohl(tvb, off)) == 0)
        return FALSE;
    if (p == end)
        return TRUE;
    if (version < 106 || !skip_bytes(&p, end, 34) || p == end)
        return p == end;
    if (!read_varint(tvb, &p, end, &n) || !skip_bytes(&p, end, n))
        return FALSE;
    return p == end || (version >= 209 && p + 4 == end);
}

/* The header length of the message at `offset`: 24, or 20 for a header without the checksum
 * field.  Bitcoin 0.3.x (net.h) serialises CMessageHeader's nChecksum only at stream version
 * 209 and up; a CNode's streams start at version 0 (before 20 Feb 2012, when they start at
 * 209), so its `version` goes without a checksum, and so does the `verack` it pushes on the
 * peer's version before setting its send stream to min(peer's nVersion, its own): the
 * messages after have a checksum iff that minimum is 209 or more.  Which a sender did is not
 * on the wire but in its bytes: a `version` is checksummed when its checksum verifies, else
 * without one when the 20-byte layout holds a 0.3.x version payload exactly; later messages
 * follow from the versions (btcc_conv_t). */
static guint
btc_header_len(packet_info *pinfo, tvbuff_t *tvb, int offset)
{
    guint8 cmd[12];
    guint32 len = tvb_get_letohl(tvb, offset + 16);
    gint avail = tvb_captured_length_remaining(tvb, offset);
    btcc_conv_t *bc;
    int dir;

    tvb_memcpy(tvb, cmd, offset + 4, 12);
    if (!memcmp(cmd, "version\0\0\0\0\0", 12)) {
        if (len > BTC_MAX_PAYLOAD)
            return BTC_HEADER_LEN;
        if ((guint)avail >= BTC_HEADER_LEN + len) {
            guint8 h[32];
            sha256d(tvb_get_ptr(tvb, offset + BTC_HEADER_LEN, len), len, h);
            if (!memcmp(h, tvb_get_ptr(tvb, offset + 20, 4), 4))
                return BTC_HEADER_LEN;
        }
        if ((guint)avail < BTC_HEADER_LEN_V0 + len)
            return BTC_HEADER_LEN_V0;       /* the shorter: TCP brings more, then we decide */
        return v0_version_payload(tvb, offset + BTC_HEADER_LEN_V0, len) ? BTC_HEADER_LEN_V0 : BTC_HEADER_LEN;
    }
    bc = get_conv(pinfo, &dir);
    if (!bc->v0_header[dir])
        return BTC_HEADER_LEN;
    if (!memcmp(cmd, "verack\0\0\0\0\0\0", 12))
        return BTC_HEADER_LEN_V0;
    return MIN(bc->nversion[dir], version_seen(bc, !dir, pinfo->num) ? bc->nversion[!dir] : G_MAXINT32) >= 209 ?
        BTC_HEADER_LEN : BTC_HEADER_LEN_V0;
}

static guint
get_btcc_pdu_len(packet_info *pinfo, tvbuff_t *tvb, int offset, void *data)
{
    return btc_header_len(pinfo, tvb, offset) + tvb_get_letohl(tvb, offset + 16);
}

static int
dissect_btcc_pdu(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    proto_item *ti;
    proto_tree *btree;
    const guint8 *command;
    guint32 payload_len = tvb_get_letohl(tvb, 16);
    guint avail = tvb_captured_length(tvb);
    /* The framing cut this message at its header and payload (btc_header_len()). */
    guint hdr_len = tvb_reported_length(tvb) - payload_len == BTC_HEADER_LEN_V0 ? BTC_HEADER_LEN_V0 : BTC_HEADER_LEN;
    tvbuff_t *payload;
    dissector_handle_t handle;
    p2pc_record_t rec;

    col_set_str(pinfo->cinfo, COL_PROTOCOL, "Bitcoin");
    /* A frame of thousands of messages draws as many as fit and counts them all. */
    ti = proto_tree_add_item(p2pc_tree_room(tree, pinfo, tvb, P2PC_TREE_MESSAGE_ITEMS), proto_bitcoin, tvb, 0, -1, ENC_NA);
    btree = proto_item_add_subtree(ti, ett_btcc_bitcoin);
    proto_tree_add_item(btree, hf_bitcoin_magic, tvb, 0, 4, ENC_BIG_ENDIAN);
    proto_tree_add_item_ret_string(btree, hf_bitcoin_command, tvb, 4, 12, ENC_ASCII | ENC_NA,
                                   pinfo->pool, &command);
    proto_tree_add_item(btree, hf_bitcoin_length, tvb, 16, 4, ENC_LITTLE_ENDIAN);
    proto_item_append_text(ti, ", %s", command);

    payload = tvb_new_subset_length(tvb, hdr_len, payload_len);
    if (hdr_len == BTC_HEADER_LEN_V0) {
        proto_item_set_generated(proto_tree_add_uint(btree, hf_btcc_checksum_status, tvb, 0, 0,
                                                     PROTO_CHECKSUM_E_NOT_PRESENT));
        proto_item_append_text(ti, " (header without checksum: sender's stream version < 209)");
    } else if (pref_verify_checksum && avail >= BTC_HEADER_LEN + payload_len) {
        guint8 h[32];
        sha256d(tvb_get_ptr(tvb, BTC_HEADER_LEN, payload_len), payload_len, h);
        proto_tree_add_checksum(btree, tvb, 20, hf_bitcoin_checksum, hf_btcc_checksum_status,
                                &ei_btcc_bad_checksum, pinfo, pntohu32(h), ENC_BIG_ENDIAN,
                                PROTO_CHECKSUM_VERIFY);
    } else {
        proto_tree_add_checksum(btree, tvb, 20, hf_bitcoin_checksum, hf_btcc_checksum_status,
                                NULL, pinfo, 0, ENC_BIG_ENDIAN, PROTO_CHECKSUM_NO_FLAGS);
    }
    if (payload_len > BTC_MAX_PAYLOAD)
        expert_add_info_format(pinfo, ti, &ei_btcc_length,
            "Payload length %u exceeds Bitcoin's MAX_SIZE (%u)", payload_len, BTC_MAX_PAYLOAD);

    col_append_sep_str(pinfo->cinfo, COL_INFO, ", ", (const char *)command);

    p2pc_record_init(&rec, "bitcoin", p2pc_msg_type_of(pinfo, ti, (const char *)command, btc_command_names));
    rec.header_len = hdr_len;
    rec.payload_len = payload_len;
    rec.raw_len = payload_len;
    rec.wire_len = hdr_len + (guint64)payload_len;
    handle = dissector_get_string_handle(bitcoin_command_table, (const char *)command);
    /* Whatever Wireshark throws in the command's handler, the message keeps its record. */
    if (handle) {
        TRY {
            call_dissector_only(handle, payload, pinfo, btree, &rec);
        }
        CATCH_BOUNDS_AND_DISSECTOR_ERRORS {
            show_exception(payload, pinfo, btree, EXCEPT_CODE, GET_MESSAGE);
        }
        ENDTRY;
    }
    p2pc_record_add(tvb, 0, -1, pinfo, tree, &rec);
    col_set_fence(pinfo->cinfo, COL_INFO);
    return tvb_captured_length(tvb);
}

/* Whether the bytes at offset can begin a message header: a network magic, then (with
 * `command`) a NUL-padded printable ASCII command, as far as the captured bytes go. */
static gboolean
btc_header_at(tvbuff_t *tvb, int offset, gboolean command)
{
    gint avail = tvb_captured_length_remaining(tvb, offset);

    if (avail < 4)
        return avail >= 0;
    if (!is_btc_magic(tvb_get_letohl(tvb, offset)))
        return FALSE;
    for (int i = 4; command && i < 16 && i < avail; i++) {
        guint8 c = tvb_get_uint8(tvb, offset + i);
        if (c == 0) {
            for (; i < 16 && i < avail; i++)
                if (tvb_get_uint8(tvb, offset + i) != 0)
                    return FALSE;
            break;
        }
        if (c < 0x20 || c > 0x7e)
            return FALSE;
    }
    return TRUE;
}

/* Why this session joined the connection's stream inside a message, when known: a session
 * reset dropped its state ("reset", core/conn.h). */
static const char *
joined_why(packet_info *pinfo)
{
    p2pc_conn_t *c = p2pc_conn_find(pinfo);
    return c ? p2pc_conn_dropped(c) : NULL;
}

static const p2pc_framing_t btcc_framing = { "bitcoin", BTC_HEADER_LEN_V0, get_btcc_pdu_len, dissect_btcc_pdu };

/* TCP hands us bytes at a message boundary unless the stream was joined inside a message: a
 * capture that starts mid-connection, a gap, or tshark's session reset (-M) that forgot the
 * connection (in `p2pc live`, a reset carries it over and core/holes.c finishes the message it
 * cut). The framing resumes at the next message header (a magic and a well-formed command, so
 * that a magic inside a payload is unlikely to pass); the bytes before it are shown as
 * continuation bytes, counted in an undecoded record.  core/holes.c counts the bytes TCP never
 * hands over. */
static int
dissect_btcc(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    gint len = (gint)tvb_captured_length(tvb), at, from;

    if (btc_bip324_direction(pinfo, data, btc_header_at(tvb, 0, TRUE)))
        return btc_bip324_dissect(tvb, pinfo, tree, data);
    col_clear(pinfo->cinfo, COL_INFO);
    at = from = (gint)p2pc_holes_enter(tvb, pinfo, tree, data, &btcc_framing);
    if (at < len && !btc_header_at(tvb, at, FALSE)) {
        proto_item *ti;
        for (at++; at + 4 <= len && !btc_header_at(tvb, at, TRUE); at++)
            ;
        if (at + 4 > len)
            at = len;
        col_set_str(pinfo->cinfo, COL_PROTOCOL, "Bitcoin");
        col_set_str(pinfo->cinfo, COL_INFO, "[Continuation]");
        ti = proto_tree_add_item(tree, hf_btcc_continuation, tvb, from, at - from, ENC_NA);
        expert_add_info_format(pinfo, ti, &ei_btcc_resync,
                               "%d bytes before the next message header (stream joined mid-message)", at - from);
        p2pc_record_undecoded(tvb, from, at - from, pinfo, tree, "bitcoin", (guint64)(at - from), joined_why(pinfo));
    }
    p2pc_holes_dissect_pdus(tvb, (guint)at, pinfo, tree, data, &btcc_framing);
    p2pc_holes_leave(tvb, pinfo, data);
    return len;
}

static p2pc_bool_t
dissect_btcc_heur(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data)
{
    conversation_t *conv;
    /* A network magic, a command, on no stock dissector's port (a magic is four bytes: the
     * capture may have joined the connection mid-stream, where a message starts a segment). */
    if (p2pc_holes_carried(pinfo) != &btcc_framing &&
        (tvb_captured_length(tvb) < 16 || !btc_header_at(tvb, 0, TRUE) || !p2pc_heur_may_claim(pinfo, btcc_handle)))
        return FALSE;
    conv = find_or_create_conversation(pinfo);
    conversation_set_dissector(conv, btcc_handle);
    dissect_btcc(tvb, pinfo, tree, data);
    return TRUE;
}

/* ---- registration ---- */

static cmd_entry_t btcc_commands[] = {
    { "cblock",      CMD_CBLOCK,            NULL },
    { "ctxcat",      CMD_CTXCAT,            NULL },
    { "txcat",       CMD_TXCAT,             NULL },
    { "cxthinblock", CMD_CXTHINBLOCK,       NULL },
    { "get_cxthin",  CMD_GET_CXTHIN,        NULL },
};

/* Commands of later Bitcoin Core and Bitcoin Unlimited releases that the stock table lacks:
 * framed and shown (payload as bytes) like the stock ones, and named in btc_command_names. */
static cmd_entry_t btcc_known_commands[] = {
    { "sendheaders", CMD_STOCK, NULL }, { "sendcmpct", CMD_STOCK, NULL },
    { "feefilter", CMD_STOCK, NULL },   { "cmpctblock", CMD_STOCK, NULL },
    { "getblocktxn", CMD_STOCK, NULL }, { "blocktxn", CMD_STOCK, NULL },
    { "wtxidrelay", CMD_STOCK, NULL },  { "sendaddrv2", CMD_STOCK, NULL },
    { "addrv2", CMD_STOCK, NULL },      { "getcfilters", CMD_STOCK, NULL },
    { "cfilter", CMD_STOCK, NULL },     { "getcfheaders", CMD_STOCK, NULL },
    { "cfheaders", CMD_STOCK, NULL },   { "getcfcheckpt", CMD_STOCK, NULL },
    { "cfcheckpt", CMD_STOCK, NULL },   { "xthinblock", CMD_STOCK, NULL },
    { "get_xthin", CMD_STOCK, NULL },   { "thinblock", CMD_STOCK, NULL },
    { "xblocktx", CMD_STOCK, NULL },    { "get_xblocktx", CMD_STOCK, NULL },
};

static void
wrap_stock_command(const gchar *table_name, ftenum_t selector_type, gpointer key, gpointer value,
                   gpointer user_data)
{
    GPtrArray *names = (GPtrArray *)user_data;
    g_ptr_array_add(names, g_strdup((const char *)key));
}

static void
add_command(cmd_entry_t *e)
{
    char *handle_name = g_strdup_printf("btcc.%s", e->name);
    dissector_add_string("bitcoin.command", e->name,
                         register_dissector_with_data(handle_name, dissect_btcc_command, proto_btcc, e));
    g_free(handle_name);
}

/* services is a 64-bit field: a bit number past 63 means nothing, and the default applies. */
static void
apply_prefs(void)
{
    if (pref_service_bit > 63)
        pref_service_bit = BTCC_SERVICE_BIT_DEFAULT;
}

/* Over 80 lines: the registration tables README.dissector asks for (fields, subtrees, expert
 * items, preferences), one entry each; cut up, they would only be harder to find. */
void
proto_register_btcc(void)
{
    static hf_register_info hf[] = {
        { &hf_btcc_checksum_status, { "Checksum status", "btcc.checksum.status", FT_UINT8, BASE_NONE,
            VALS(checksum_status_vals), 0x0, "Header checksum (SHA256d of the payload as sent) verified", HFILL } },
        { &hf_btcc_codec, { "Codec", "btcc.codec", FT_STRING, BASE_NONE, NULL, 0x0,
            "lzo1x (BUIP017) or zlib (2015 draft)", HFILL } },
        { &hf_btcc_compressed_len, { "Compressed length", "btcc.compressed_len", FT_UINT32, BASE_DEC, NULL, 0x0,
            "Payload bytes as sent (compressed)", HFILL } },
        { &hf_btcc_decompressed_len, { "Decompressed length", "btcc.decompressed_len", FT_UINT32, BASE_DEC, NULL, 0x0,
            "Payload bytes after decompression", HFILL } },
        { &hf_btcc_negotiated, { "Compression negotiated", "btcc.negotiated", FT_BOOLEAN, BASE_NONE, NULL, 0x0,
            "Both peers' version messages carry the compression service bit", HFILL } },
        { &hf_btcc_services_src, { "Sender's version services", "btcc.services.sender", FT_UINT64, BASE_HEX, NULL, 0x0,
            "services field of the sender's version message", HFILL } },
        { &hf_btcc_services_dst, { "Receiver's version services", "btcc.services.receiver", FT_UINT64, BASE_HEX, NULL, 0x0,
            "services field of the receiver's version message", HFILL } },
        { &hf_btcc_version_frame_src, { "Sender's version in frame", "btcc.version_frame.sender", FT_FRAMENUM, BASE_NONE, NULL, 0x0,
            "Frame of the sender's version message", HFILL } },
        { &hf_btcc_version_frame_dst, { "Receiver's version in frame", "btcc.version_frame.receiver", FT_FRAMENUM, BASE_NONE, NULL, 0x0,
            "Frame of the receiver's version message", HFILL } },
        { &hf_btcc_block_hash, { "Block hash", "btcc.block.hash", FT_STRING, BASE_NONE, NULL, 0x0,
            "SHA256d of the 80-byte header, byte-reversed as Bitcoin displays it", HFILL } },
        { &hf_btcc_block_tx_count, { "Transactions in block", "btcc.block.tx_count", FT_UINT64, BASE_DEC, NULL, 0x0,
            "Transaction count (CompactSize) after the 80-byte block header", HFILL } },
        { &hf_btcc_batch_count, { "Transactions in batch", "btcc.batch.count", FT_UINT32, BASE_DEC, NULL, 0x0,
            "Transactions carried by this batch message", HFILL } },
        { &hf_btcc_tx, { "Transaction", "btcc.tx", FT_NONE, BASE_NONE, NULL, 0x0,
            "One transaction of the block or batch", HFILL } },
        { &hf_btcc_tx_index, { "Index", "btcc.tx.index", FT_UINT32, BASE_DEC, NULL, 0x0,
            "Position in the block or batch", HFILL } },
        { &hf_btcc_tx_offset, { "Offset", "btcc.tx.offset", FT_UINT32, BASE_DEC, NULL, 0x0,
            "Byte offset within the (decompressed) transaction list", HFILL } },
        { &hf_btcc_tx_length, { "Length", "btcc.tx.length", FT_UINT32, BASE_DEC, NULL, 0x0,
            "Serialized size of the transaction in bytes", HFILL } },
        { &hf_btcc_tx_txid, { "TXID", "btcc.tx.txid", FT_STRING, BASE_NONE, NULL, 0x0,
            "SHA256d of the non-witness serialization, byte-reversed", HFILL } },
        { &hf_btcc_tx_segwit, { "Segwit", "btcc.tx.segwit", FT_BOOLEAN, BASE_NONE, NULL, 0x0,
            "BIP 144 serialization with witness data", HFILL } },
        { &hf_btcc_trailing, { "Trailing bytes", "btcc.trailing_bytes", FT_BYTES, BASE_NONE, NULL, 0x0,
            "Bytes after the last transaction that parse as none", HFILL } },
        { &hf_btcc_continuation, { "Continuation bytes", "btcc.continuation", FT_BYTES, BASE_NONE, NULL,
            0x0, "The rest of a message whose start was not captured or not kept", HFILL } },
        { &hf_btcc_xthin_short_id_count, { "Short transaction IDs", "btcc.xthin.short_id_count", FT_UINT64,
            BASE_DEC, NULL, 0x0, "Transactions in the block (xthinblock vTxHashes)", HFILL } },
        { &hf_btcc_xthin_short_id, { "Short transaction ID", "btcc.xthin.short_id", FT_UINT64, BASE_HEX, NULL, 0x0,
            "The txid's first 8 bytes, little-endian (GetCheapHash)", HFILL } },
        { &hf_btcc_xthin_missing_count, { "Missing transactions", "btcc.xthin.missing_count", FT_UINT64, BASE_DEC,
            NULL, 0x0, "Transactions sent whole: the requester's filter did not match them", HFILL } },
        { &hf_btcc_inv_type, { "Inventory type", "btcc.get_xthin.inv_type", FT_UINT32, BASE_DEC,
            VALS(inv_type_vals), 0x0, "CInv type of the block asked for (5: MSG_XTHINBLOCK)", HFILL } },
        { &hf_btcc_inv_hash, { "Block hash", "btcc.get_xthin.hash", FT_STRING, BASE_NONE, NULL, 0x0,
            "The block asked for (byte-reversed, as Bitcoin shows hashes)", HFILL } },
        { &hf_btcc_bloom_data, { "Filter data", "btcc.get_xthin.filter", FT_BYTES, BASE_NONE, NULL, 0x0,
            "The requester's mempool as a BIP 37 bloom filter", HFILL } },
        { &hf_btcc_bloom_hash_funcs, { "Hash functions", "btcc.get_xthin.hash_funcs", FT_UINT32, BASE_DEC, NULL,
            0x0, "Bloom filter nHashFuncs (MurmurHash3 seeds)", HFILL } },
        { &hf_btcc_bloom_tweak, { "Tweak", "btcc.get_xthin.tweak", FT_UINT32, BASE_DEC, NULL, 0x0,
            "Bloom filter nTweak (added to each hash function's seed)", HFILL } },
        { &hf_btcc_bloom_flags, { "Flags", "btcc.get_xthin.flags", FT_UINT8, BASE_HEX, NULL, 0x0,
            "Bloom filter nFlags (BIP 37 update mode)", HFILL } },
    };
    static gint *ett[] = { &ett_btcc, &ett_btcc_bitcoin, &ett_btcc_tx, &ett_btcc_txs, &ett_btcc_short_ids,
                           &ett_btcc_bloom };
    static ei_register_info ei[] = {
        { &ei_btcc_decompress_failed, { "btcc.decompress_failed", PI_MALFORMED, PI_ERROR,
            "Decompression failed", EXPFILL } },
        { &ei_btcc_bound, { "btcc.bound_exceeded", PI_MALFORMED, PI_ERROR,
            "Decompressed size exceeds the bound", EXPFILL } },
        { &ei_btcc_trailing, { "btcc.trailing", PI_MALFORMED, PI_WARN,
            "Bytes after the last transaction", EXPFILL } },
        { &ei_btcc_negotiation_unseen, { "btcc.negotiation_unseen", PI_SEQUENCE, PI_NOTE,
            "Compressed command, but the version exchange is not in the capture", EXPFILL } },
        { &ei_btcc_bad_checksum, { "btcc.bad_checksum", PI_CHECKSUM, PI_ERROR,
            "Header checksum mismatch", EXPFILL } },
        { &ei_btcc_bad_tx, { "btcc.bad_tx", PI_MALFORMED, PI_NOTE,
            "Transaction list problem", EXPFILL } },
        { &ei_btcc_xthin, { "btcc.xthin", PI_MALFORMED, PI_ERROR,
            "xthinblock or get_xthin does not parse", EXPFILL } },
        { &ei_btcc_length, { "btcc.length", PI_MALFORMED, PI_WARN,
            "Payload length out of range", EXPFILL } },
        { &ei_btcc_resync, { "btcc.resync", PI_SEQUENCE, PI_NOTE,
            "Stream joined mid-message", EXPFILL } },
    };
    module_t *module;
    expert_module_t *expert;

    proto_btcc = proto_register_protocol("Bitcoin Datastream Compression (BUIP017)", "BTCC", "btcc");
    proto_register_field_array(proto_btcc, hf, array_length(hf));
    proto_register_subtree_array(ett, array_length(ett));
    expert = expert_register_protocol(proto_btcc);
    expert_register_field_array(expert, ei, array_length(ei));
    btcc_handle = register_dissector("btcc", dissect_btcc, proto_btcc);

    module = prefs_register_protocol(proto_btcc, apply_prefs);
    prefs_register_uint_preference(module, "service_bit", "Compression service bit",
        "Bit of version.services that announces compression (0-63): 5 (NODE_COMPRESS, BUIP017) or 28 "
        "(the 2015 test builds). After 2017 bit 5 also means NODE_BITCOIN_CASH.",
        10, &pref_service_bit);
    prefs_register_bool_preference(module, "verify_checksum", "Verify header checksums",
        "Check each message's checksum (first 4 bytes of SHA256d of the payload as sent)",
        &pref_verify_checksum);
    prefs_register_bool_preference(module, "decompress", "Decompress payloads",
        "Decompress cblock/ctxcat/cxthinblock/get_cxthin payloads", &pref_decompress);
    prefs_register_bool_preference(module, "stock_tx", "Hand batched transactions to the Bitcoin tx dissector",
        "Show each transaction of a batch with Wireshark's own tx fields (non-segwit only before 4.4)",
        &pref_stock_tx);
}

void
proto_reg_handoff_btcc(void)
{
    GPtrArray *names;
    heur_dtbl_entry_t *stock_heur;

    proto_bitcoin = proto_get_id_by_filter_name("bitcoin");
    hf_bitcoin_magic = proto_registrar_get_id_byname("bitcoin.magic");
    hf_bitcoin_command = proto_registrar_get_id_byname("bitcoin.command");
    hf_bitcoin_length = proto_registrar_get_id_byname("bitcoin.length");
    hf_bitcoin_checksum = proto_registrar_get_id_byname("bitcoin.checksum");
    bitcoin_command_table = find_dissector_table("bitcoin.command");
    if (proto_bitcoin < 0 || !bitcoin_command_table)
        return;

    stock_block_handle = dissector_get_string_handle(bitcoin_command_table, "block");
    stock_tx_handle = dissector_get_string_handle(bitcoin_command_table, "tx");

    /* Wrap every stock command handler, then add the BUIP017 commands. */
    names = g_ptr_array_new_with_free_func(g_free);
    dissector_table_foreach("bitcoin.command", wrap_stock_command, names);
    for (guint i = 0; i < names->len; i++) {
        const char *name = (const char *)g_ptr_array_index(names, i);
        cmd_entry_t *e = g_new0(cmd_entry_t, 1);
        e->name = g_strdup(name);
        e->stock = dissector_get_string_handle(bitcoin_command_table, name);
        e->kind = !strcmp(name, "version") ? CMD_VERSION :
                  !strcmp(name, "block") ? CMD_BLOCK :
                  !strcmp(name, "tx") ? CMD_TX : CMD_STOCK;
        add_command(e);
    }
    g_ptr_array_free(names, TRUE);
    for (size_t i = 0; i < G_N_ELEMENTS(btcc_commands); i++)
        add_command(&btcc_commands[i]);
    for (size_t i = 0; i < G_N_ELEMENTS(btcc_known_commands); i++)
        if (!dissector_get_string_handle(bitcoin_command_table, btcc_known_commands[i].name))
            add_command(&btcc_known_commands[i]);

    /* Our framing replaces the stock heuristic (same magic test, plus checksum checks and records). */
    stock_heur = find_heur_dissector_by_unique_short_name("bitcoin_tcp");
    if (stock_heur)
        stock_heur->enabled = FALSE;
    heur_dissector_add("tcp", dissect_btcc_heur, "Bitcoin with BUIP017 compression over TCP",
                       "btcc_tcp", proto_btcc, HEURISTIC_ENABLE);
    dissector_add_uint_range_with_preference("tcp.port", BTCC_DEFAULT_PORTS, btcc_handle);
}
