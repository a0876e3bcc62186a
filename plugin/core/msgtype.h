/* msgtype.h
 * What a record's msg_type may be.  A message's type comes from the wire (a Bitcoin command, a
 * FISCO module and packet type, a gossip topic, a multistream protocol ID), and each distinct
 * msg_type is a row of every report and a label set of every metric: a peer that makes up
 * 20,000 names would make 20,000 of each.  So a record names only its protocol's own message
 * types, looked up in that protocol's table, and reports any other as "unknown", with an
 * expert note (p2pc.unknown_msg_type); the name as sent stays in the protocol's own field of
 * the packet tree.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef P2PC_MSGTYPE_H
#define P2PC_MSGTYPE_H

#include "core/p2pc-compat.h"

#define P2PC_MSG_TYPE_UNKNOWN "unknown"

/* Registers the expert item under `proto` (record.c's "p2pc"). */
void p2pc_msg_type_register(int proto);

/* P2PC_MSG_TYPE_UNKNOWN, with the note on `item` saying (printf) what was sent. */
const char *p2pc_msg_type_unknown(packet_info *pinfo, proto_item *item, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);

/* The msg_type `names` gives the name as sent (a string_string: name on the wire -> msg_type,
 * a static string), or p2pc_msg_type_unknown() naming it. */
const char *p2pc_msg_type_of(packet_info *pinfo, proto_item *item, const char *name,
                             const string_string *names);

#endif /* P2PC_MSGTYPE_H */
