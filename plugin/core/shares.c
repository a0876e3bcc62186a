/* shares.c
 * A layer's bytes shared out over the records above it (shares.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/shares.h"
#include "core/prefs.h"

void
p2pc_record_shares_append(wmem_array_t *shares, p2pc_record_t **recs, guint n, guint64 bytes,
                          p2pc_share_by_t by)
{
    guint64 total = 0, given = 0;

    for (guint i = 0; i < n; i++)
        total += by == P2PC_SHARE_BY_RAW ? recs[i]->raw_len : recs[i]->wire_len;
    for (guint i = 0; i < n; i++) {
        guint64 weight = by == P2PC_SHARE_BY_RAW ? recs[i]->raw_len : recs[i]->wire_len;
        /* bytes < 2^33 and a record's lengths < 2^25 (L2P_MAX_PDU): no overflow */
        guint64 share = i == n - 1 ? bytes - given : total ? bytes * weight / total : 0;
        given += share;
        wmem_array_append_one(shares, share);
    }
}

wmem_array_t *
p2pc_record_shares(packet_info *pinfo, p2pc_record_t **recs, guint n, guint64 bytes, p2pc_share_by_t by)
{
    wmem_array_t *shares = wmem_array_sized_new(p2pc_replay_scope(pinfo), sizeof(guint64), n);

    p2pc_replay_charge(pinfo, n * sizeof(guint64));
    p2pc_record_shares_append(shares, recs, n, bytes, by);
    return shares;
}

guint64
p2pc_record_share(wmem_array_t *shares, guint i)
{
    return shares && i < wmem_array_get_count(shares) ? *(guint64 *)wmem_array_index(shares, i) : 0;
}

guint64
p2pc_record_shares_sum(wmem_array_t *shares)
{
    guint64 sum = 0;
    for (guint i = 0; shares && i < wmem_array_get_count(shares); i++)
        sum += *(guint64 *)wmem_array_index(shares, i);
    return sum;
}

void
p2pc_record_give_framing(packet_info *pinfo, p2pc_record_t **recs, guint n, guint64 *unattributed,
                         wmem_array_t **shares)
{
    if (n == 0)
        return;
    if (unattributed) {
        *shares = p2pc_record_shares(pinfo, recs, n, *unattributed, P2PC_SHARE_BY_WIRE);
        *unattributed = 0;
    }
    for (guint i = 0; i < n; i++) {
        guint64 share = p2pc_record_share(*shares, i);
        recs[i]->header_len += share;
        recs[i]->wire_len += share;
    }
}
