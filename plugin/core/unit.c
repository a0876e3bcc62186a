/* unit.c
 * The attribution unit the layers hand up (unit.h): per packet, in pinfo's proto data.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/unit.h"
#include "core/frame-data.h"

#include <epan/exceptions.h>
#include <epan/proto_data.h>

static int proto_p2pc = -1;

p2pc_unit_t
p2pc_unit_get(packet_info *pinfo)
{
    const p2pc_unit_t *u = (const p2pc_unit_t *)p_get_proto_data(pinfo->pool, pinfo, proto_p2pc, P2PC_KEY_UNIT);
    p2pc_unit_t none = { FALSE, FALSE, 0 };
    return u ? *u : none;
}

void
p2pc_unit_call(packet_info *pinfo, p2pc_unit_t u, p2pc_call_fn call, void *ctx)
{
    p2pc_unit_t *cur = (p2pc_unit_t *)p_get_proto_data(pinfo->pool, pinfo, proto_p2pc, P2PC_KEY_UNIT);
    p2pc_unit_t was = { FALSE, FALSE, 0 };

    if (!cur) {
        cur = wmem_new(pinfo->pool, p2pc_unit_t);
        p_add_proto_data(pinfo->pool, pinfo, proto_p2pc, P2PC_KEY_UNIT, cur);
    } else
        was = *cur;
    *cur = u;
    TRY {
        call(ctx);
    }
    FINALLY {
        *cur = was;
    }
    ENDTRY;
}

p2pc_unit_t
p2pc_unit_before(p2pc_unit_t u, guint64 k)
{
    if (u.set && u.identity)
        u.end -= MIN(u.end, k);
    return u;
}

p2pc_unit_t
p2pc_unit_opaque(p2pc_unit_t u)
{
    u.identity = FALSE;
    return u;
}

void
p2pc_unit_register(int proto)
{
    proto_p2pc = proto;
}
