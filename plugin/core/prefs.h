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

/* What limits one decompression: the protocol's own bound or the p2pc.max_decompressed_mib
 * cap (OWN), the ratio of output to input (RATIO), or the capture's budget (CAPTURE). */
typedef enum { P2PC_LIMIT_OWN, P2PC_LIMIT_RATIO, P2PC_LIMIT_CAPTURE } p2pc_limit_t;

typedef struct {
    size_t bound;               /* what the decoder may produce */
    p2pc_limit_t by;            /* the least of the limits */
} p2pc_bound_t;

/* The output bound every dissector passes to a decoder: the least of protocol_bound, the
 * p2pc.max_decompressed_mib cap, what the ratio bound leaves a stream that has taken in_total
 * compressed bytes (this input's included) and given out_total (p2pc.max_decompression_ratio
 * times in_total, never less than 1 MiB; a message decoded on its own is a stream of one
 * input: in_total its length, out_total 0), and what is left of the capture's budget
 * (p2pc.max_capture_decompressed_mib, over every decompression of the file).  The budget is
 * spent on the first pass; a later pass of a frame gets the bounds the first pass had. */
p2pc_bound_t p2pc_bound(packet_info *pinfo, size_t protocol_bound, guint64 in_total, guint64 out_total);

/* Charges what a decompression under `b` produced to the capture's budget: out_len bytes, or
 * the whole bound when it stopped there (`at_bound`: the decoder said P2PC_DC_BOUND).  Returns
 * TRUE when that bound was the ratio's or the capture budget's: the bytes are then undecoded,
 * reason "bound" (p2pc_record_bound()), and p2pc_bound_expert() says why. */
gboolean p2pc_bound_charge(packet_info *pinfo, const p2pc_bound_t *b, size_t out_len, gboolean at_bound);

/* The expert item of a decompression a ratio or capture bound stopped (p2pc.bound.ratio or
 * p2pc.bound.capture), on `item`. */
void p2pc_bound_expert(packet_info *pinfo, proto_item *item, p2pc_limit_t by);

/* Whether this frame keeps what it decodes for re-dissection (the GUI, sharkd, tshark -2): TRUE
 * unless the p2pc.keep_replay preference is off (p2pc analyze and p2pc live turn it off for
 * their one-pass runs), the program keeps no frames (tshark's one pass, found from its frame
 * store by the fourth frame or so: nothing will dissect a frame twice), or the
 * p2pc.max_replay_mib budget ran out before this frame. */
gboolean p2pc_keep_replay(packet_info *pinfo);

/* "kept" (the program finished its sequential pass and may dissect frames again: Wireshark,
 * sharkd, tshark -2), "one-pass" (no such end of a first pass: tshark without -2, which kept
 * nothing past the frames before its one-pass test) or "off" (the preference): what the records
 * tap's #END line reports. */
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

/* The bytes the file's frames keep for re-dissection, as counted against p2pc.max_replay_mib,
 * for the records tap's #END line. */
guint64 p2pc_replay_kept(void);

/* The first frame that kept nothing because the budget ran out (0: it has not, or no pass can
 * follow the first, so nothing is missing), for the records tap's #END line. */
guint32 p2pc_replay_cut(void);

/* On a later pass of a frame that kept nothing because the budget ran out: adds the
 * p2pc.replay_not_kept expert item (the budget, and the frame where it ran out) and returns
 * TRUE. */
gboolean p2pc_replay_missing(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree);

/* A table of pairs the user edits (a key, the value it maps to): a UAT, so a file named `name`
 * in the profile, a button in the protocol's preferences (Preferences > Protocols) and, on
 * tshark's command line, -o 'uat:NAME:"key","value"' (one row a flag).  Keys and values are
 * trimmed; a row with either empty is refused, and so is a key `check_key` (may be NULL)
 * refuses: it returns why, a g_malloc'ed string, or NULL.  Registered as the preference
 * `pref_name` of `module`; the table lives as long as the program. */
typedef struct p2pc_pairs p2pc_pairs_t;
typedef char *(*p2pc_pairs_check_fn)(const char *key);

p2pc_pairs_t *p2pc_pairs_register(module_t *module, const char *pref_name, const char *name,
                                  const char *title, const char *description,
                                  const char *key_title, const char *key_desc,
                                  const char *value_title, const char *value_desc,
                                  p2pc_pairs_check_fn check_key);

/* The value of `key` in the table (the last row that names it), compared ignoring ASCII case
 * when fold_case; NULL when no row names it.  Valid until the user next edits the table. */
const char *p2pc_pairs_lookup(const p2pc_pairs_t *pairs, const char *key, gboolean fold_case);

#endif /* P2PC_PREFS_H */
