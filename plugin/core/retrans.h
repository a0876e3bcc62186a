/* retrans.h
 * Retransmissions whose bytes differ from those first sent, in every TCP connection the ledger
 * holds (ledger.h): the p2pc.check_retransmissions preference and the p2pc.retransmission_differs
 * expert item.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef P2PC_RETRANS_H
#define P2PC_RETRANS_H

#include "core/p2pc-compat.h"

#include <epan/prefs.h>

/* Registers the preference in `module` and the expert item under `proto` (record.c's "p2pc"),
 * and its part of the TCP layer's one postdissector (post.h). */
void p2pc_retrans_register(int proto, module_t *module);

#endif /* P2PC_RETRANS_H */
