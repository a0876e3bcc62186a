/* stats-tree.c
 * Statistics ▸ P2P Compression ▸ Messages and Bytes (tshark -z p2pc,tree): messages and bytes
 * on the wire, sent and uncompressed, per protocol and message type, from the "p2pc" tap.
 * stats_tree counters are 32-bit: exact 64-bit totals are the records printer's (printers.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/record.h"
#include "core/taps.h"

#include <epan/stats_tree.h>

void register_tap_listener_p2pc_stats_tree(void);

static const char st_messages[] = "P2P messages";
static const char st_wire[] = "Bytes on the wire";
static const char st_payload[] = "Payload bytes sent";
static const char st_raw[] = "Payload bytes uncompressed";
static int st_node_messages = -1;
static int st_node_wire = -1;
static int st_node_payload = -1;
static int st_node_raw = -1;

static void
p2pc_stats_tree_init(stats_tree *st)
{
    st_node_messages = stats_tree_create_node(st, st_messages, 0, STAT_DT_INT, TRUE);
    st_node_wire = stats_tree_create_node(st, st_wire, 0, STAT_DT_INT, TRUE);
    st_node_payload = stats_tree_create_node(st, st_payload, 0, STAT_DT_INT, TRUE);
    st_node_raw = stats_tree_create_node(st, st_raw, 0, STAT_DT_INT, TRUE);
}

static void
stats_add(stats_tree *st, int root, const char *root_name, const p2pc_record_t *r, gint value)
{
    int proto_node;
    increase_stat_node(st, root_name, 0, FALSE, value);
    proto_node = increase_stat_node(st, r->proto, root, TRUE, value);
    increase_stat_node(st, r->msg_type, proto_node, FALSE, value);
}

static tap_packet_status
p2pc_stats_tree_packet(stats_tree *st, packet_info *pinfo, epan_dissect_t *edt,
                       const void *p, tap_flags_t flags)
{
    for (guint i = 0; i < P2PC_BATCH_COUNT(p); i++) {
        const p2pc_record_t *r = (const p2pc_record_t *)P2PC_BATCH_ITEM(p, i);
        /* stats_tree counters are 32-bit: exact 64-bit totals are in -z p2pc,records. */
        stats_add(st, st_node_messages, st_messages, r, 1);
        stats_add(st, st_node_wire, st_wire, r, (gint)MIN(r->wire_len, G_MAXINT));
        stats_add(st, st_node_payload, st_payload, r, (gint)MIN(r->payload_len, G_MAXINT));
        stats_add(st, st_node_raw, st_raw, r, (gint)MIN(r->raw_len, G_MAXINT));
    }
    return TAP_PACKET_REDRAW;
}

void
register_tap_listener_p2pc_stats_tree(void)
{
    stats_tree_register_plugin("p2pc", "p2pc", "P2P Compression/Messages and Bytes", 0,
                               p2pc_stats_tree_packet, p2pc_stats_tree_init, NULL);
}
