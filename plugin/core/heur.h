/* heur.h
 * What every p2pc TCP heuristic checks before it looks at the bytes (docs/heuristics.md): a
 * heuristic never takes a connection that a stock dissector owns by its port or its
 * conversation.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef P2PC_HEUR_H
#define P2PC_HEUR_H

#include "core/p2pc-compat.h"

/* True when neither TCP port has a dissector other than `own` in the tcp.port table (stock's
 * registrations, and the user's Decode As) and no other dissector owns the conversation.  (A
 * connection a live session reset carried over is the protocol's that had it: each heuristic
 * resumes its own before asking this.) */
gboolean p2pc_heur_may_claim(packet_info *pinfo, dissector_handle_t own);

#endif /* P2PC_HEUR_H */
