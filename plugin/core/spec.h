/* spec.h
 * Conformance checks on the wire: a rule of a protocol's specification that a peer broke, shown
 * as an expert item of its own (p2pc.spec.*) whose blurb cites the rule.  The bytes are decoded
 * all the same: a peer that breaks a rule is exactly what an interop debugger looks for.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef P2PC_CORE_SPEC_H
#define P2PC_CORE_SPEC_H

#include "core/p2pc-compat.h"

/* The unsigned varint of `len` bytes at tvb[offset] (as tvb_get_varint read it) is longer than
 * its value needs (a last byte 0x00 after continuation bytes): p2pc.spec.varint on `item`.
 * multiformats unsigned-varint, which libp2p and Ethereum's req/resp length prefixes use,
 * allows the shortest form only. */
void p2pc_spec_varint(tvbuff_t *tvb, int offset, guint len, packet_info *pinfo, proto_item *item);

/* Registers the p2pc.spec.* expert items under `proto` (record.c). */
void p2pc_spec_register(int proto);

#endif /* P2PC_CORE_SPEC_H */
