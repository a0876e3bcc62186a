/* prefs.c
 * The preferences every p2pc protocol shares.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/prefs.h"
#include "core/frame-data.h"

#include <string.h>

#include <epan/expert.h>
#include <epan/prefs.h>
#include <epan/proto_data.h>
#include <epan/uat.h>

/* Cap on any one decompression, in MiB (each protocol's own limit applies beneath it). */
#define MAX_DECOMPRESSED_MIB_DEFAULT 128
#define MAX_DECOMPRESSED_MIB_MIN     1
#define MAX_DECOMPRESSED_MIB_MAX     4096
static guint pref_max_decompressed_mib = MAX_DECOMPRESSED_MIB_DEFAULT;

/* Budget, in MiB, for the output of every decompression of one capture file, every protocol's
 * together.  In one pass nothing decompressed is kept (see max_replay_mib for what is), so the
 * budget bounds the work a capture can ask for, not memory; the default is the most one
 * decompression may produce under p2pc.max_decompressed_mib. */
#define MAX_CAPTURE_MIB_DEFAULT 4096
#define MAX_CAPTURE_MIB_MIN     1
#define MAX_CAPTURE_MIB_MAX     1048576
static guint pref_max_capture_mib = MAX_CAPTURE_MIB_DEFAULT;

/* Output per input byte a stream (a compressed direction, or a message decoded on its own)
 * may reach.  Real traffic stays far below: eth2 blocks 2-3x, comp-gzip's SSZ block 2.3x,
 * Snappy cannot pass about 21x; only zeros and the like come near deflate's 1032x, and brotli
 * and zstd have no such ceiling (bomb-comp-brotli: 200,000x).  Below RATIO_FLOOR of output
 * the ratio is not checked: a stream's first few bytes say nothing. */
#define MAX_RATIO_DEFAULT 256
#define MAX_RATIO_MIN     2
#define MAX_RATIO_MAX     1000000
#define RATIO_FLOOR       (1024 * 1024)
static guint pref_max_ratio = MAX_RATIO_DEFAULT;
static p2pc_bool_t pref_keep_replay = TRUE;

/* Budget, in MiB, for everything every p2pc layer keeps for re-dissection over the whole file.
 * The default keeps about 400 MB of P2P traffic whole (tools/bench.py's 1 GB mix: its first
 * 433 MB) and bounds `tshark -2` or the GUI on anything larger. */
#define MAX_REPLAY_MIB_DEFAULT 256
#define MAX_REPLAY_MIB_MIN     1
#define MAX_REPLAY_MIB_MAX     65536
static guint pref_max_replay_mib = MAX_REPLAY_MIB_DEFAULT;

/* What the file's frames have kept so far, and the first frame that keeps nothing because the
 * budget ran out in the frame before it (0: it has not).  The first pass visits frames in
 * order, so every frame before it keeps all its layers' state, and every frame from it on none:
 * a frame is replayed whole or not at all. */
static guint64 replay_kept;
static guint32 replay_cut;

/* The capture's decompression budget (first pass): what was spent before the frame being
 * decoded (budget_frame) and in it, and the frame where it ran out (0: it has not) with what
 * was left at that frame's start.  A later pass gives frames before it no capture bound, frames
 * after it none of the budget, and that frame what was left, spent in the same order. */
static guint64 budget_spent;
static guint64 budget_frame_start;
static guint32 budget_frame;
static guint32 budget_cut;
static guint64 budget_cut_left;

/* The "p2pc" protocol (record.c's) the preferences hang on. */
static int prefs_proto = -1;
static expert_field ei_replay_not_kept = EI_INIT;
static expert_field ei_bound_ratio = EI_INIT;
static expert_field ei_bound_capture = EI_INIT;

/* Whether the program keeps the file's frames, and so may dissect them again in any order
 * (Wireshark, sharkd, tshark -2), or dissects each once and forgets it (tshark's one pass, where
 * what is kept for re-dissection would only cost memory).  Wireshark says the first only once
 * the sequential pass is over (the postseq cleanup routines), too late for what that pass
 * keeps; its frame store says it from the start: found on the first frame with an earlier one
 * that tshark's one pass would not hold anyway (see p2pc_session_has_frame), frames before it
 * keep their state as if frames were kept. */
static enum { FRAMES_UNKNOWN, FRAMES_KEPT, FRAMES_GONE } frames_state;

/* Whether the program has finished its sequential first pass through the file (the postseq
 * cleanup routines ran: the GUI and sharkd once a file is loaded, tshark -2 between its passes;
 * tshark's one pass never), so that a frame may now be dissected again. */
static gboolean sequential_done;

static void
sequential_pass_done(void)
{
    sequential_done = TRUE;
}

/* The one-pass test, on the first frame that can answer it: frame num - 2 is neither the
 * previous captured frame nor (when it is not) the reference or previous displayed one, which
 * tshark's one pass holds too. */
static gboolean
frames_are_kept(packet_info *pinfo)
{
    guint32 probe = pinfo->num - 2;
    if (frames_state == FRAMES_UNKNOWN && pinfo->num > 3 && probe != pinfo->fd->frame_ref_num &&
        probe != pinfo->fd->prev_dis_num)
        frames_state = p2pc_session_has_frame(pinfo->epan, probe) ? FRAMES_KEPT : FRAMES_GONE;
    return frames_state != FRAMES_GONE;
}

gboolean
p2pc_keep_replay(packet_info *pinfo)
{
    return pref_keep_replay && frames_are_kept(pinfo) && (!replay_cut || pinfo->num < replay_cut);
}

const char *
p2pc_replay_mode(void)
{
    if (!pref_keep_replay)
        return "off";
    return sequential_done ? "kept" : "one-pass";
}

wmem_allocator_t *
p2pc_replay_scope(packet_info *pinfo)
{
    return p2pc_keep_replay(pinfo) ? wmem_file_scope() : pinfo->pool;
}

void
p2pc_replay_charge(packet_info *pinfo, size_t bytes)
{
    if (PINFO_FD_VISITED(pinfo) || !p2pc_keep_replay(pinfo))
        return;
    replay_kept += bytes;
    if (!replay_cut && replay_kept >= (guint64)pref_max_replay_mib * 1024 * 1024)
        replay_cut = pinfo->num + 1;
}

void
p2pc_replay_release(packet_info *pinfo, size_t bytes)
{
    if (PINFO_FD_VISITED(pinfo) || !p2pc_keep_replay(pinfo))
        return;
    replay_kept -= MIN(bytes, replay_kept);
}

guint64
p2pc_replay_kept(void)
{
    return replay_kept;
}

guint32
p2pc_replay_cut(void)
{
    /* Only a later pass misses what the frames past the cut did not keep. */
    return sequential_done ? replay_cut : 0;
}

gboolean
p2pc_replay_missing(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree)
{
    if (!PINFO_FD_VISITED(pinfo) || !replay_cut || pinfo->num < replay_cut)
        return FALSE;
    proto_tree_add_expert_format(tree, pinfo, &ei_replay_not_kept, tvb, 0, 0,
        "Not kept for re-dissection: the p2pc.max_replay_mib budget (%u MiB) ran out in frame %u, "
        "so from frame %u on p2pc decoded each frame in the first pass only", pref_max_replay_mib,
        replay_cut - 1, replay_cut);
    return TRUE;
}

static void
replay_reset(void)
{
    replay_kept = 0;
    replay_cut = 0;
    budget_spent = budget_frame_start = budget_cut_left = 0;
    budget_frame = budget_cut = 0;
    frames_state = FRAMES_UNKNOWN;
    sequential_done = FALSE;
}

/* Bytes charged in this dissection of the frame so far. */
static guint64 *
dissection_spent(packet_info *pinfo)
{
    return (guint64 *)p2pc_frame_data(pinfo->pool, pinfo, prefs_proto, P2PC_KEY_BUDGET_SPENT, sizeof(guint64), NULL);
}

/* What is left of the capture's budget for this frame's next decompression. */
static guint64
budget_left(packet_info *pinfo)
{
    guint64 budget = (guint64)pref_max_capture_mib * 1024 * 1024;
    if (!PINFO_FD_VISITED(pinfo))
        return budget_spent < budget ? budget - budget_spent : 0;
    if (!budget_cut || pinfo->num < budget_cut)
        return G_MAXUINT64;
    if (pinfo->num > budget_cut)
        return 0;
    return budget_cut_left - MIN(*dissection_spent(pinfo), budget_cut_left);
}

p2pc_bound_t
p2pc_bound(packet_info *pinfo, size_t protocol_bound, guint64 in_total, guint64 out_total)
{
    p2pc_bound_t b = { MIN(protocol_bound, (size_t)pref_max_decompressed_mib * 1024 * 1024), P2PC_LIMIT_OWN };
    guint64 ratio = MAX((guint64)RATIO_FLOOR, MIN(in_total, G_MAXUINT64 / pref_max_ratio) * pref_max_ratio);
    guint64 left = ratio > out_total ? ratio - out_total : 0;
    if (left < b.bound) {
        b.bound = (size_t)left;
        b.by = P2PC_LIMIT_RATIO;
    }
    left = budget_left(pinfo);
    if (left <= b.bound) {      /* a tie is the capture's: its budget is what is spent */
        b.bound = (size_t)left;
        b.by = P2PC_LIMIT_CAPTURE;
    }
    return b;
}

gboolean
p2pc_bound_charge(packet_info *pinfo, const p2pc_bound_t *b, size_t out_len, gboolean at_bound)
{
    if (at_bound)
        out_len = b->bound;
    *dissection_spent(pinfo) += out_len;
    if (!PINFO_FD_VISITED(pinfo)) {
        if (budget_frame != pinfo->num) {
            budget_frame = pinfo->num;
            budget_frame_start = budget_spent;
        }
        budget_spent += out_len;
        if (!budget_cut && (at_bound && b->by == P2PC_LIMIT_CAPTURE)) {
            budget_cut = pinfo->num;
            budget_cut_left = (guint64)pref_max_capture_mib * 1024 * 1024 - MIN(budget_frame_start,
                              (guint64)pref_max_capture_mib * 1024 * 1024);
        }
    }
    return at_bound && b->by != P2PC_LIMIT_OWN;
}

void
p2pc_bound_expert(packet_info *pinfo, proto_item *item, p2pc_limit_t by)
{
    if (by == P2PC_LIMIT_RATIO)
        expert_add_info_format(pinfo, item, &ei_bound_ratio,
            "Decompressed output past %u times its input (p2pc.max_decompression_ratio): the rest "
            "of this stream is counted as undecoded", pref_max_ratio);
    else if (by == P2PC_LIMIT_CAPTURE)
        expert_add_info_format(pinfo, item, &ei_bound_capture,
            "The capture's decompression budget (p2pc.max_capture_decompressed_mib, %u MiB) is "
            "spent: from here on compressed bytes are counted as undecoded", pref_max_capture_mib);
}

/* Wireshark checks only that a uint preference parses: out of range, the nearest limit applies
 * (and the preference shows it). */
static void
apply_prefs(void)
{
    pref_max_decompressed_mib = CLAMP(pref_max_decompressed_mib, MAX_DECOMPRESSED_MIB_MIN,
                                      MAX_DECOMPRESSED_MIB_MAX);
    pref_max_replay_mib = CLAMP(pref_max_replay_mib, MAX_REPLAY_MIB_MIN, MAX_REPLAY_MIB_MAX);
    pref_max_capture_mib = CLAMP(pref_max_capture_mib, MAX_CAPTURE_MIB_MIN, MAX_CAPTURE_MIB_MAX);
    pref_max_ratio = CLAMP(pref_max_ratio, MAX_RATIO_MIN, MAX_RATIO_MAX);
}

/* One row of a p2pc_pairs_t table. */
typedef struct {
    char *key;
    char *value;
} pair_rec_t;

struct p2pc_pairs {
    pair_rec_t *recs;           /* the UAT's own array, num rows */
    guint num;
    p2pc_pairs_check_fn check_key;
    uat_field_t fields[3];
};

UAT_CSTRING_CB_DEF(pair_rec, key, pair_rec_t)
UAT_CSTRING_CB_DEF(pair_rec, value, pair_rec_t)

static void *
pair_rec_copy(void *dest, const void *src, size_t len _U_)
{
    pair_rec_t *d = (pair_rec_t *)dest;
    const pair_rec_t *s = (const pair_rec_t *)src;
    d->key = g_strdup(s->key);
    d->value = g_strdup(s->value);
    return d;
}

static void
pair_rec_free(void *r)
{
    pair_rec_t *rec = (pair_rec_t *)r;
    g_free(rec->key);
    g_free(rec->value);
}

/* A row as it is read (file, -o uat:, the dialog): trimmed, neither side empty. */
static p2pc_bool_t
pair_rec_update(void *r, char **err)
{
    pair_rec_t *rec = (pair_rec_t *)r;
    if (rec->key)
        g_strstrip(rec->key);
    if (rec->value)
        g_strstrip(rec->value);
    if (!rec->key || !*rec->key || !rec->value || !*rec->value) {
        *err = g_strdup("Neither side of a row may be empty");
        return FALSE;
    }
    return TRUE;
}

/* The key field's check: the table's own rule (chk_data is the table). */
static p2pc_bool_t
pair_key_check(void *r _U_, const char *ptr, unsigned len, const void *chk_data, const void *fld_data _U_,
               char **err)
{
    const p2pc_pairs_t *pairs = (const p2pc_pairs_t *)chk_data;
    gchar *key;
    if (!pairs->check_key)
        return TRUE;
    key = g_strstrip(g_strndup(ptr, len));
    *err = pairs->check_key(key);
    g_free(key);
    return *err == NULL;
}

p2pc_pairs_t *
p2pc_pairs_register(module_t *module, const char *pref_name, const char *name, const char *title,
                    const char *description, const char *key_title, const char *key_desc,
                    const char *value_title, const char *value_desc, p2pc_pairs_check_fn check_key)
{
    p2pc_pairs_t *pairs = g_new0(p2pc_pairs_t, 1);
    uat_field_t key = { "key", key_title, PT_TXTMOD_STRING,
                        { pair_key_check, pair_rec_key_set_cb, pair_rec_key_tostr_cb },
                        { pairs, NULL, NULL }, NULL, key_desc, FLDFILL };
    uat_field_t value = { "value", value_title, PT_TXTMOD_STRING,
                          { uat_fld_chk_str, pair_rec_value_set_cb, pair_rec_value_tostr_cb },
                          { NULL, NULL, NULL }, NULL, value_desc, FLDFILL };
    uat_field_t end = UAT_END_FIELDS;
    uat_t *uat;

    pairs->check_key = check_key;
    pairs->fields[0] = key;
    pairs->fields[1] = value;
    pairs->fields[2] = end;
    uat = uat_new(title, sizeof(pair_rec_t), name, TRUE, &pairs->recs, &pairs->num,
                  UAT_AFFECTS_DISSECTION, NULL, pair_rec_copy, pair_rec_update, pair_rec_free,
                  NULL, NULL, pairs->fields);
    prefs_register_uat_preference(module, pref_name, title, description, uat);
    return pairs;
}

const char *
p2pc_pairs_lookup(const p2pc_pairs_t *pairs, const char *key, gboolean fold_case)
{
    for (guint i = pairs->num; i-- > 0; )
        if (fold_case ? !g_ascii_strcasecmp(pairs->recs[i].key, key) : !strcmp(pairs->recs[i].key, key))
            return pairs->recs[i].value;
    return NULL;
}

module_t *
p2pc_prefs_register(int proto)
{
    static ei_register_info ei[] = {
        { &ei_replay_not_kept, { "p2pc.replay_not_kept", PI_UNDECODED, PI_WARN,
            "Not kept for re-dissection: the p2pc.max_replay_mib budget ran out", EXPFILL } },
        { &ei_bound_ratio, { "p2pc.bound.ratio", PI_UNDECODED, PI_WARN,
            "Decompressed output past p2pc.max_decompression_ratio times its input: counted as undecoded", EXPFILL } },
        { &ei_bound_capture, { "p2pc.bound.capture", PI_UNDECODED, PI_WARN,
            "The capture's decompression budget is spent: counted as undecoded", EXPFILL } },
    };
    module_t *module;

    prefs_proto = proto;
    expert_register_field_array(expert_register_protocol(proto), ei, array_length(ei));
    module = prefs_register_protocol(proto, apply_prefs);
    prefs_register_uint_preference(module, "max_decompressed_mib",
        "Maximum decompressed size (MiB)",
        "Cap on the output of any one decompression, over every protocol's own limit "
        "(" G_STRINGIFY(MAX_DECOMPRESSED_MIB_MIN) "-" G_STRINGIFY(MAX_DECOMPRESSED_MIB_MAX) ")",
        10, &pref_max_decompressed_mib);
    prefs_register_uint_preference(module, "max_capture_decompressed_mib",
        "Decompressed per capture (MiB)",
        "Budget for the output of every decompression of one capture file, over every protocol "
        "(" G_STRINGIFY(MAX_CAPTURE_MIB_MIN) "-" G_STRINGIFY(MAX_CAPTURE_MIB_MAX) "). Once it is "
        "spent, compressed bytes are counted as undecoded (reason bound, p2pc.bound.capture)",
        10, &pref_max_capture_mib);
    prefs_register_uint_preference(module, "max_decompression_ratio",
        "Maximum decompression ratio",
        "Output a compressed stream (a direction of the libp2p compression transport, or a "
        "message decoded on its own) may reach per input byte, once past 1 MiB "
        "(" G_STRINGIFY(MAX_RATIO_MIN) "-" G_STRINGIFY(MAX_RATIO_MAX) "). Past it the rest of the "
        "stream is counted as undecoded (reason bound, p2pc.bound.ratio)", 10, &pref_max_ratio);
    prefs_register_bool_preference(module, "keep_replay", "Keep decoded data for re-dissection",
        "Each frame keeps what the stateful layers (libp2p streams, the compression transport) "
        "decoded in it, so that re-dissecting it (the GUI, sharkd, tshark -2) shows the same. Off, "
        "memory stays flat over any capture but only the first pass decodes. Where frames are "
        "not dissected again (tshark without -2) nothing is kept either way",
        &pref_keep_replay);
    prefs_register_uint_preference(module, "max_replay_mib", "Kept for re-dissection (MiB)",
        "Budget, over the whole capture and every p2pc layer, for what is kept for re-dissection "
        "(" G_STRINGIFY(MAX_REPLAY_MIB_MIN) "-" G_STRINGIFY(MAX_REPLAY_MIB_MAX) "). Once it is used "
        "up, the frames that follow are decoded in the first pass only, and say so when dissected "
        "again (p2pc.replay_not_kept)", 10, &pref_max_replay_mib);
    register_init_routine(replay_reset);
    register_postseq_cleanup_routine(sequential_pass_done);
    return module;
}
