/* tree-room.c
 * What still fits in the frame's tree (tree-room.h says why).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/tree-room.h"
#include "core/frame-data.h"

#include <epan/expert.h>
#include <epan/prefs.h>

static int proto_p2pc = -1;
static expert_field ei_tree_cut = EI_INIT;

void
p2pc_tree_room_register(int proto)
{
    static ei_register_info ei[] = {
        { &ei_tree_cut, { "p2pc.tree_cut", PI_UNDECODED, PI_NOTE,
            "This frame's tree reached gui.max_tree_items: the rest is decoded and counted, not drawn",
            EXPFILL } },
    };

    proto_p2pc = proto;
    expert_register_field_array(expert_register_protocol(proto), ei, array_length(ei));
}

proto_tree *
p2pc_tree_room(proto_tree *tree, packet_info *pinfo, tvbuff_t *tvb, guint64 need)
{
    guint64 max = prefs.gui_max_tree_items;
    gboolean *said;

    if (!tree)
        return NULL;
    /* The count is the whole dissection's, shown items and hidden ones alike (proto.c). */
    if ((guint64)PTREE_DATA(tree)->count + need + MIN(P2PC_TREE_RESERVE, max / 2) <= max)
        return tree;
    said = (gboolean *)p2pc_frame_data(pinfo->pool, pinfo, proto_p2pc, P2PC_KEY_TREE_CUT, sizeof *said, NULL);
    if (!*said) {
        *said = TRUE;
        proto_tree_add_expert_format(tree, pinfo, &ei_tree_cut, tvb, 0, 0, "This frame's tree reached "
                                     "gui.max_tree_items (%" G_GUINT64_FORMAT "): the rest is decoded and "
                                     "counted, not drawn", max);
    }
    return NULL;
}
