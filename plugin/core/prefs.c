/* prefs.c
 * The preferences every p2pc protocol shares.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/prefs.h"

#include <epan/column-utils.h>
#include <epan/frame_data.h>
#include <epan/prefs.h>
#include <epan/proto_data.h>
#include <wsutil/wslog.h>

/* Cap on any one decompression, in MiB (each protocol's own limit applies beneath it). */
#define MAX_DECOMPRESSED_MIB_DEFAULT 128
#define MAX_DECOMPRESSED_MIB_MIN     1
#define MAX_DECOMPRESSED_MIB_MAX     4096
static guint pref_max_decompressed_mib = MAX_DECOMPRESSED_MIB_DEFAULT;
static p2pc_bool_t pref_keep_replay = TRUE;

/* The "p2pc" protocol (record.c's) the preferences hang on; its packet data key 1 marks a frame
 * whose replay is suspended (key 0 is record.c's hold). */
static int prefs_proto = -1;
#define P2PC_NO_REPLAY_KEY 1

/* Whether the session re-dissects frames at all, found once per capture file. */
static enum { FRAMES_UNKNOWN, FRAMES_KEPT, FRAMES_GONE } frames_state;

/* Whether the session can still give frame `num`'s time stamp.  No API asks this directly
 * (epan_get_frame_ts is not exported); frame_data_compare's COL_DELTA_TIME reads it for the
 * frame before its first argument, and counts a missing one as a delta of 0: a probe stamped
 * far before any real frame has a delta of 0 only when the frame is gone. */
static gboolean
session_has_frame(packet_info *pinfo, guint32 num)
{
    frame_data probe, first;
    enum ws_log_level level = ws_log_get_level();
    int order;

    memset(&probe, 0, sizeof probe);
    memset(&first, 0, sizeof first);
    probe.num = num + 1;
    probe.abs_ts.secs = -((time_t)1 << 40);
    first.num = 1;                  /* no frame before it: its delta is 0 */
    /* 4.0 logs a warning for a frame that is gone (later versions a debug message): the
     * answer is expected here, so the log hears nothing of it. */
    ws_log_set_level(LOG_LEVEL_CRITICAL);
    order = frame_data_compare(pinfo->epan, &probe, &first, COL_DELTA_TIME);
    ws_log_set_level(level);
    return order < 0;
}

/* Wireshark, sharkd and tshark -2 keep every frame, and dissect frames again (a click, the
 * second pass); tshark's one pass keeps none, only the reference, the previous captured and
 * the previous displayed frame.  So two earlier frames that are neither of those tell. */
static gboolean
frames_are_kept(packet_info *pinfo)
{
    if (frames_state == FRAMES_UNKNOWN && pinfo->num >= 5)
        frames_state = session_has_frame(pinfo, pinfo->num - 2) && session_has_frame(pinfo, pinfo->num - 3) ?
                       FRAMES_KEPT : FRAMES_GONE;
    return frames_state != FRAMES_GONE;
}

gboolean
p2pc_keep_replay(packet_info *pinfo)
{
    return pref_keep_replay && frames_are_kept(pinfo) &&
           !p_get_proto_data(pinfo->pool, pinfo, prefs_proto, P2PC_NO_REPLAY_KEY);
}

const char *
p2pc_replay_mode(void)
{
    if (!pref_keep_replay)
        return "off";
    return frames_state == FRAMES_GONE ? "one-pass" : "kept";
}

gboolean
p2pc_replay_suspend(packet_info *pinfo, gboolean suspend)
{
    gboolean was = p_get_proto_data(pinfo->pool, pinfo, prefs_proto, P2PC_NO_REPLAY_KEY) != NULL;
    if (suspend != was) {
        if (suspend)
            p_add_proto_data(pinfo->pool, pinfo, prefs_proto, P2PC_NO_REPLAY_KEY, GUINT_TO_POINTER(1));
        else
            p_remove_proto_data(pinfo->pool, pinfo, prefs_proto, P2PC_NO_REPLAY_KEY);
    }
    return was;
}

wmem_allocator_t *
p2pc_replay_scope(packet_info *pinfo)
{
    return p2pc_keep_replay(pinfo) ? wmem_file_scope() : pinfo->pool;
}

size_t
p2pc_bound(size_t protocol_bound)
{
    size_t cap = (size_t)pref_max_decompressed_mib * 1024 * 1024;
    return protocol_bound < cap ? protocol_bound : cap;
}

/* Wireshark checks only that a uint preference parses: out of range, the nearest limit applies
 * (and the preference shows it). */
static void
apply_prefs(void)
{
    pref_max_decompressed_mib = CLAMP(pref_max_decompressed_mib, MAX_DECOMPRESSED_MIB_MIN,
                                      MAX_DECOMPRESSED_MIB_MAX);
}

GHashTable *
p2pc_pref_pairs(const char *text, gboolean fold_case)
{
    GHashTable *pairs = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    gchar **items = g_strsplit(text ? text : "", ",", -1);
    for (gchar **item = items; *item; item++) {
        gchar **kv = g_strsplit(*item, "=", 2);
        if (kv[0] && kv[1] && *g_strstrip(kv[0]) && *g_strstrip(kv[1]))
            g_hash_table_replace(pairs, fold_case ? g_ascii_strdown(kv[0], -1) : g_strdup(kv[0]),
                                 g_strdup(kv[1]));
        g_strfreev(kv);
    }
    g_strfreev(items);
    return pairs;
}

static void
forget_frames_state(void)
{
    frames_state = FRAMES_UNKNOWN;
}

void
p2pc_prefs_register(int proto)
{
    module_t *module;

    prefs_proto = proto;
    module = prefs_register_protocol(proto, apply_prefs);
    prefs_register_uint_preference(module, "max_decompressed_mib",
        "Maximum decompressed size (MiB)",
        "Cap on the output of any one decompression, over every protocol's own limit "
        "(" G_STRINGIFY(MAX_DECOMPRESSED_MIB_MIN) "-" G_STRINGIFY(MAX_DECOMPRESSED_MIB_MAX) ")",
        10, &pref_max_decompressed_mib);
    prefs_register_bool_preference(module, "keep_replay", "Keep decoded data for re-dissection",
        "Each frame keeps what the stateful layers (libp2p streams, the compression transport) "
        "decoded in it, so that re-dissecting it (the GUI, tshark -2) shows the same. Off, memory "
        "stays flat over any capture but only the first pass decodes: for tshark one-pass runs "
        "(p2pc analyze turns it off). tshark's one pass, which keeps no frame, never keeps them",
        &pref_keep_replay);
    register_init_routine(forget_frames_state);
}
