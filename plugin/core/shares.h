/* shares.h
 * A transport's or security layer's bytes shared out over the records the layers above it added
 * (the libp2p compression transport's flush units, Noise's and TLS's framing), kept for
 * re-dissection so that every pass gives each record the same.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef P2PC_SHARES_H
#define P2PC_SHARES_H

#include "core/record.h"

/* A transport's bytes (its framing, or all it sent) shared out over the n records the layers
 * above it added in one frame, in proportion to each record's wire_len (P2PC_SHARE_BY_WIRE) or
 * raw_len (P2PC_SHARE_BY_RAW); the last takes what the rounding left.  The shares are kept for
 * re-dissection (p2pc_replay_scope), so that every pass gives each record the same; a record
 * past the end of `shares` (or NULL) gets 0. */
typedef enum { P2PC_SHARE_BY_WIRE, P2PC_SHARE_BY_RAW } p2pc_share_by_t;
wmem_array_t *p2pc_record_shares(packet_info *pinfo, p2pc_record_t **recs, guint n, guint64 bytes,
                                 p2pc_share_by_t by);
/* The same split appended to `shares` (guint64s), the caller keeping and charging them: a
 * layer that shares out several budgets over groups of its records (compression's flush units). */
void p2pc_record_shares_append(wmem_array_t *shares, p2pc_record_t **recs, guint n, guint64 bytes,
                               p2pc_share_by_t by);
guint64 p2pc_record_share(wmem_array_t *shares, guint i);
guint64 p2pc_record_shares_sum(wmem_array_t *shares);
/* A security layer's framing given to the n records the layers above added for one of its
 * records (Noise's and TLS's adjust callbacks): on the first pass (`unattributed` not NULL) the
 * framing bytes not yet given are shared out by wire_len into *shares and *unattributed is
 * zeroed; on every pass each record's share is added to its header_len and wire_len. */
void p2pc_record_give_framing(packet_info *pinfo, p2pc_record_t **recs, guint n, guint64 *unattributed,
                              wmem_array_t **shares);

#endif /* P2PC_SHARES_H */
