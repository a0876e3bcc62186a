/* p2pc.c
 * The `p2pc` protocol: registered here, its id handed to each core part that hangs fields,
 * expert items, preferences or taps on it: the record (record.c), the shared preferences
 * (prefs.c), the one postdissector of its TCP layer (post.c), the retransmission check (retrans.c), the connections' state and what of it a
 * session reset keeps (conn.c), a frame's TCP segment read from its own
 * headers (segment.c), the TCP ledger and its p2pc.hole (ledger.c), the count of bytes lost
 * to holes in the capture (holes.c), the
 * conformance checks (spec.c), the note on a message type its protocol does not define
 * (msgtype.c), the one on a compressed payload larger than its output (payload.c) and the one
 * on a frame whose tree reached gui.max_tree_items (tree-room.c).  No
 * part calls another to register.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/budget.h"
#include "core/conn.h"
#include "core/gossip.h"
#include "core/holes.h"
#include "core/ledger.h"
#include "core/msgtype.h"
#include "core/payload.h"
#include "core/post.h"
#include "core/prefs.h"
#include "core/record.h"
#include "core/retrans.h"
#include "core/segment.h"
#include "core/spec.h"
#include "core/taps.h"
#include "core/transport.h"
#include "core/tree-room.h"
#include "core/unit.h"

void proto_register_p2pc(void);
void proto_reg_handoff_p2pc(void);

void
proto_register_p2pc(void)
{
    int proto = proto_register_protocol("P2P Compression Accounting", "P2PC", "p2pc");
    module_t *module;

    p2pc_record_register(proto);
    p2pc_taps_register(proto);
    p2pc_unit_register(proto);
    module = p2pc_prefs_register(proto);
    p2pc_post_register(proto);
    p2pc_retrans_register(proto, module);
    p2pc_conn_register(module);
    p2pc_segment_register(proto);
    p2pc_ledger_register(proto);
    p2pc_holes_register(proto);
    p2pc_transport_register(proto);
    p2pc_spec_register(proto);
    p2pc_gossip_register();
    p2pc_budget_register(proto);
    p2pc_msg_type_register(proto);
    p2pc_payload_register(proto);
    p2pc_tree_room_register(proto);
}

void
proto_reg_handoff_p2pc(void)
{
    /* After every protocol registered its parts of the TCP layer's postdissector. */
    p2pc_transport_handoff();
}
