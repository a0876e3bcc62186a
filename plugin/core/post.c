/* post.c
 * The one postdissector of p2pc's TCP layer (post.h).  Its handle's protocol is a name only
 * under p2pc (enabled with it, listed in no frame); each part is called through its own handle,
 * so that disabling the part's protocol turns it off and the frame lists the protocols of the
 * parts that took it, as when each was a postdissector.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/post.h"

#define PARTS_MAX   4

static dissector_handle_t parts[PARTS_MAX];
static guint n_parts;

static int
dissect_post(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data _U_)
{
    int took = 0;

    for (guint i = 0; i < n_parts; i++)
        took |= call_dissector_only(parts[i], tvb, pinfo, tree, NULL);
    return took ? (int)tvb_captured_length(tvb) : 0;
}

void
p2pc_post_add(dissector_handle_t part)
{
    DISSECTOR_ASSERT(n_parts < PARTS_MAX);
    parts[n_parts++] = part;
}

void
p2pc_post_register(int proto)
{
    int pino = proto_register_protocol_in_name_only("P2PC TCP layer", "P2PC TCP", "p2pc.tcp", proto, FT_PROTOCOL);
    register_postdissector(create_dissector_handle(dissect_post, pino));
}
