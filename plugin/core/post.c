/* post.c
 * The one postdissector of p2pc's TCP layer (post.h).  Its handle's protocol is a name only
 * under p2pc (enabled with it, listed in no frame); each part is called through its own handle,
 * so that disabling the part's protocol turns it off and the frame lists the protocols of the
 * parts that took it, as when each was a postdissector.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/post.h"
#include "core/frame-data.h"

#include <epan/proto_data.h>

#define PARTS_MAX   4

static int proto_p2pc = -1;
static dissector_handle_t parts[PARTS_MAX];
static guint n_parts;

void
p2pc_post_handed(packet_info *pinfo)
{
    p_add_proto_data(pinfo->pool, pinfo, proto_p2pc, P2PC_KEY_HANDED, GUINT_TO_POINTER(1));
}

static int
dissect_post(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, void *data _U_)
{
    p2pc_post_frame_t f = { p_get_proto_data(pinfo->pool, pinfo, proto_p2pc, P2PC_KEY_HANDED) != NULL };
    int took = 0;

    for (guint i = 0; i < n_parts; i++)
        took |= call_dissector_only(parts[i], tvb, pinfo, tree, &f);
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
    int pino;

    proto_p2pc = proto;
    pino = proto_register_protocol_in_name_only("P2PC TCP layer", "P2PC TCP", "p2pc.tcp", proto, FT_PROTOCOL);
    register_postdissector(create_dissector_handle(dissect_post, pino));
}
