/* unit.h
 * The attribution unit: where the bytes the layers hand up now end, in the numbering of the
 * lowest layer that knows it (a record's unit_end, record.h; docs/tap-format.md).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef P2PC_UNIT_H
#define P2PC_UNIT_H

#include "core/p2pc-compat.h"

/* A call a layer makes with something set around it (a unit, a hold, a muted budget). */
typedef void (*p2pc_call_fn)(void *ctx);

/* The unit the layers are handing up now, in the numbering of the lowest layer that knows it:
 * `end` is where the bytes of the current call end (a pipe call's tvb, a PDU) and, when
 * `identity`, each of those bytes is one byte of that numbering, so a PDU ending k bytes before
 * the call's end ends at end - k; otherwise (a decrypted record) every byte inside maps to
 * `end`.  The libp2p TCP feeder starts it (TCP payload bytes of the direction), the libp2p
 * engine narrows it to each PDU, Noise and TLS make it opaque inside a record, and the
 * compression layer numbers its output and maps back to flush units (docs/tap-format.md,
 * unit_end).  pinfo-scoped; a layer changes it only for the call that hands its bytes up
 * (p2pc_unit_call()). */
typedef struct {
    gboolean set;
    gboolean identity;
    guint64 end;
} p2pc_unit_t;
p2pc_unit_t p2pc_unit_get(packet_info *pinfo);
/* call(ctx) with `u` as the unit, the one before put back when it returns or throws: the one
 * way a layer hands bytes up under a unit of its own. */
void p2pc_unit_call(packet_info *pinfo, p2pc_unit_t u, p2pc_call_fn call, void *ctx);
/* The unit of the bytes that end k bytes before u's end: u narrowed when it numbers its bytes
 * one to one (identity), else u itself (an unset or opaque unit has nothing finer). */
p2pc_unit_t p2pc_unit_before(p2pc_unit_t u, guint64 k);
/* u made opaque: every byte inside maps to u's end (a decrypted record's plaintext). */
p2pc_unit_t p2pc_unit_opaque(p2pc_unit_t u);

/* The unit's per-packet data (p2pc.c). */
void p2pc_unit_register(int proto);

#endif /* P2PC_UNIT_H */
