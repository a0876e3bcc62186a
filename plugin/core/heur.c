/* heur.c
 * What every p2pc TCP heuristic checks first (heur.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/heur.h"

#include <epan/conversation.h>

static gboolean
port_free(dissector_table_t table, guint32 port, dissector_handle_t own)
{
    dissector_handle_t h = port ? dissector_get_uint_handle(table, port) : NULL;
    return !h || h == own;
}

gboolean
p2pc_heur_may_claim(packet_info *pinfo, dissector_handle_t own)
{
    dissector_table_t tcp_port = find_dissector_table("tcp.port");
    conversation_t *conv = find_conversation_pinfo(pinfo, 0);
    dissector_handle_t owner = conv ? conversation_get_dissector(conv, pinfo->num) : NULL;

    return port_free(tcp_port, pinfo->srcport, own) && port_free(tcp_port, pinfo->destport, own) &&
           (!owner || owner == own);
}
