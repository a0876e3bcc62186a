/* frame-data.c
 * The `p2pc` protocol's per-frame data (frame-data.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/frame-data.h"

#include <epan/proto_data.h>

void *
p2pc_frame_data(wmem_allocator_t *scope, packet_info *pinfo, int proto, p2pc_key_t key, size_t size, gboolean *made)
{
    void *data = p_get_proto_data(scope, pinfo, proto, key);
    if (made)
        *made = !data;
    if (!data) {
        data = wmem_alloc0(scope, size);
        p_add_proto_data(scope, pinfo, proto, key, data);
    }
    return data;
}
