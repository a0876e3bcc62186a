/* tree-room.h
 * What still fits in the frame's tree.  Wireshark calls more than gui.max_tree_items items in
 * one dissection of a frame a dissector bug (proto.c throws DissectorError from the item that
 * would pass it), and the records tap always builds a tree, hidden or not: one message of a
 * million wantlist entries, subscriptions or transactions would end in that exception before
 * its record was made.  So every drawing of an unbounded list asks here first: past the room,
 * the rest of the message is decoded and counted with no tree, and the frame says once that
 * its tree was cut (p2pc.tree_cut), as libp2p.not_drawn does for PDUs past L2P_PDUS_DRAWN.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef P2PC_TREE_ROOM_H
#define P2PC_TREE_ROOM_H

#include "core/p2pc-compat.h"

/* Items left below gui.max_tree_items for what is drawn after a cut without asking here:
 * the expert item itself, each message's record, the items TCP adds after its payload. */
#define P2PC_TREE_RESERVE 1000

/* The items one message draws besides its lists (which ask for their own): what a protocol whose
 * frames can hold thousands of messages (Bitcoin's, FISCO's: tcp_dissect_pdus hands each) asks
 * for before drawing each. */
#define P2PC_TREE_MESSAGE_ITEMS 64

/* Registers the expert item under `proto` (record.c's "p2pc"). */
void p2pc_tree_room_register(int proto);

/* `tree` when `need` more items fit in this dissection of the frame (leaving
 * P2PC_TREE_RESERVE, or half of a smaller gui.max_tree_items), else NULL, having added
 * p2pc.tree_cut on `tree` the first time in the frame; NULL for a NULL tree. */
proto_tree *p2pc_tree_room(proto_tree *tree, packet_info *pinfo, tvbuff_t *tvb, guint64 need);

#endif /* P2PC_TREE_ROOM_H */
