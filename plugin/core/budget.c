/* budget.c
 * A layer's own bytes, per frame, direction, layer and kind, for the "p2pc_budget" tap
 * (budget.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/budget.h"
#include "core/taps.h"

#include <epan/exceptions.h>
#include <epan/proto_data.h>

static int budget_tap = -1;
static int proto_p2pc = -1;

/* The frame's item of this direction (pinfo's sender's, or its receiver's if `reverse`), layer
 * and kind (a frame adds few: a linear look-up). */
static p2pc_budget_t *
item_of(packet_info *pinfo, gboolean reverse, const char *proto, const char *layer, const char *kind)
{
    /* The frame's batch, once p2pc_batch_queue() made it. */
    const p2pc_batch_t *b = (const p2pc_batch_t *)p_get_proto_data(pinfo->pool, pinfo, proto_p2pc, P2PC_KEY_BATCH_BUDGET);
    p2pc_where_t at;
    p2pc_budget_t *it;

    p2pc_where_of(pinfo, &at);
    if (reverse) {
        address a = at.src;
        guint32 port = at.srcport;
        at.src = at.dst;
        at.srcport = at.dstport;
        at.dst = a;
        at.dstport = port;
    }
    for (guint i = 0; b && i < P2PC_BATCH_COUNT(b); i++) {
        it = (p2pc_budget_t *)P2PC_BATCH_ITEM(b, i);
        if (!strcmp(it->layer, layer) && !strcmp(it->kind, kind) && !strcmp(it->proto, proto) &&
            it->at.srcport == at.srcport && addresses_equal(&it->at.src, &at.src))
            return it;
    }
    it = wmem_new0(pinfo->pool, p2pc_budget_t);
    it->proto = proto;
    it->layer = layer;
    it->kind = kind;
    it->at = at;
    p2pc_batch_queue(budget_tap, P2PC_KEY_BATCH_BUDGET, pinfo, it);
    return it;
}

void
p2pc_budget_add(packet_info *pinfo, const char *proto, const char *layer, const char *kind, gint64 bytes)
{
    if (bytes && !p_get_proto_data(pinfo->pool, pinfo, proto_p2pc, P2PC_KEY_BUDGET_MUTED))
        item_of(pinfo, FALSE, proto, layer, kind)->bytes += bytes;
}

void
p2pc_budget_add_reverse(packet_info *pinfo, const char *proto, const char *layer, const char *kind, gint64 bytes)
{
    if (bytes && !p_get_proto_data(pinfo->pool, pinfo, proto_p2pc, P2PC_KEY_BUDGET_MUTED))
        item_of(pinfo, TRUE, proto, layer, kind)->bytes += bytes;
}

void
p2pc_budget_call_muted(packet_info *pinfo, p2pc_call_fn call, void *ctx)
{
    /* Muted calls nest: the outermost unmutes. */
    gboolean outer = !p_get_proto_data(pinfo->pool, pinfo, proto_p2pc, P2PC_KEY_BUDGET_MUTED);
    if (outer)
        p_add_proto_data(pinfo->pool, pinfo, proto_p2pc, P2PC_KEY_BUDGET_MUTED, GINT_TO_POINTER(1));
    TRY {
        call(ctx);
    }
    FINALLY {
        if (outer)
            p_remove_proto_data(pinfo->pool, pinfo, proto_p2pc, P2PC_KEY_BUDGET_MUTED);
    }
    ENDTRY;
}

void
p2pc_budget_register(int proto)
{
    proto_p2pc = proto;
    budget_tap = register_tap("p2pc_budget");
}
