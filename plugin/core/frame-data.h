/* frame-data.h
 * The `p2pc` protocol's per-frame data (p_add_proto_data()): one list of keys, so that no two
 * core parts take the same one in the same scope, and the one get-or-create.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef P2PC_FRAME_DATA_H
#define P2PC_FRAME_DATA_H

#include "core/p2pc-compat.h"

typedef enum {
    /* This dissection of the frame (pinfo->pool). */
    P2PC_KEY_HOLD,              /* record.c: the records p2pc_record_hold() holds */
    P2PC_KEY_UNIT,              /* unit.c: the unit being handed up (p2pc_unit_t) */
    P2PC_KEY_BATCH_RECORDS,     /* record.c: the frame's batch for the p2pc tap */
    P2PC_KEY_BATCH_SPEC,        /* spec.c: ... for the p2pc_spec tap */
    P2PC_KEY_BATCH_GOSSIP,      /* gossip.c: ... for the p2pc_gossip tap */
    P2PC_KEY_BATCH_BUDGET,      /* budget.c: ... for the p2pc_budget tap */
    P2PC_KEY_BUDGET_MUTED,      /* budget.c: inside p2pc_budget_call_muted() */
    P2PC_KEY_HOLES_FRAME,       /* holes.c: the connection its entry ran for, resuming directions */
    P2PC_KEY_HANDED,            /* post.c: TCP handed the frame's bytes to a p2pc protocol */
    P2PC_KEY_SEGMENT,           /* segment.c: the frame's TCP segment */
    P2PC_KEY_BUDGET_SPENT,      /* prefs.c: decompressed bytes charged to the capture's budget */
    P2PC_KEY_NOTED,             /* ledger.c: the ledger that noted the frame */
    P2PC_KEY_TREE_CUT,          /* tree-room.c: p2pc.tree_cut is in the tree */
    /* Every dissection of the frame (file scope). */
    P2PC_KEY_DIFFERS,           /* retrans.c: a retransmission that differs */
    P2PC_KEY_EVENTS,            /* holes.c: undecoded bytes and holes shown in the frame */
    P2PC_KEY_RESUMED,           /* holes.c: a message a session reset cut, finished here */
    P2PC_KEY_RETRANSMITTED      /* transport.c: the retransmitted bytes of the frame's segment */
} p2pc_key_t;

/* The frame's data `key` of protocol `proto` in `scope`: `size` zeroed bytes made at the first
 * call (*made TRUE then; made may be NULL). */
void *p2pc_frame_data(wmem_allocator_t *scope, packet_info *pinfo, int proto, p2pc_key_t key, size_t size,
                      gboolean *made);

#endif /* P2PC_FRAME_DATA_H */
