/* fisco3.h
 * What the FISCO BCOS 2.x dissector needs of the 3.x one: both generations listen on port
 * 30300, and a connection's first message says which one it speaks.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef P2PC_FISCO3_H
#define P2PC_FISCO3_H

#include "core/p2pc-compat.h"

/* True when tvb[offset..] starts a plausible 3.x gateway header: Length in range, Version V0 to
 * V3, a known packet type, and only the defined Ext flags. */
gboolean fisco3_plausible(tvbuff_t *tvb, int offset);

#endif /* P2PC_FISCO3_H */
