/* prefs.h
 * The preferences every p2pc protocol shares (the "p2pc" module).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef P2PC_PREFS_H
#define P2PC_PREFS_H

#include "core/p2pc-compat.h"

#include <epan/prefs.h>

/* Registers the shared preferences under `proto` (record.c's "p2pc"); returns their module. */
module_t *p2pc_prefs_register(int proto);

/* min(protocol_bound, the p2pc.max_decompressed_mib cap): the output bound every dissector
 * passes to a decoder. */
size_t p2pc_bound(size_t protocol_bound);

/* Whether this frame keeps what it decodes for re-dissection (the GUI, sharkd, tshark -2): TRUE
 * unless the p2pc.keep_replay preference is off (p2pc analyze turns it off for its one-pass
 * runs), the process is tshark without -2 (no frame is dissected twice), or the
 * p2pc.max_replay_mib budget ran out before this frame. */
gboolean p2pc_keep_replay(packet_info *pinfo);

/* "kept", "one-pass" (tshark without -2: nothing is dissected twice, so nothing is kept) or
 * "off" (the preference): what the records tap's #END line reports. */
const char *p2pc_replay_mode(void);

/* Where a frame's decoding results live: file scope when kept for re-dissection, else the
 * packet's own pool. */
wmem_allocator_t *p2pc_replay_scope(packet_info *pinfo);

/* Counts `bytes` the first pass keeps in this frame for re-dissection (the real size of what
 * is copied, the fixed structures approximately) against the p2pc.max_replay_mib budget; the
 * frame that uses it up keeps what it decodes, and the frames after it keep nothing.  Nothing is
 * counted when the frame keeps nothing. */
void p2pc_replay_charge(packet_info *pinfo, size_t bytes);

/* Gives back what p2pc_replay_charge counted for something this frame kept and then freed. */
void p2pc_replay_release(packet_info *pinfo, size_t bytes);

/* The first frame that kept nothing because the budget ran out (0: it has not), for the
 * records tap's #END line. */
guint32 p2pc_replay_cut(void);

/* On a later pass of a frame that kept nothing because the budget ran out: adds the
 * p2pc.replay_not_kept expert item (the budget, and the frame where it ran out) and returns
 * TRUE. */
gboolean p2pc_replay_missing(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree);

/* A "key=value,key=value" string preference as a new table of its pairs (keys and values
 * trimmed; keys lowercased when fold_case; both freed with the table). */
GHashTable *p2pc_pref_pairs(const char *text, gboolean fold_case);

#endif /* P2PC_PREFS_H */
