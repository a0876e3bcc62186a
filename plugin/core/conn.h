/* conn.h
 * A connection's state that p2pc keeps, and what of it outlives tshark's session reset.
 *
 * Every dissector that keeps state per connection keeps it in the connection's p2pc_conn_t:
 * one slot per part (the TCP ledger, the libp2p connection), allocated from the connection's
 * pool.  Normally that pool is file scope, and nothing changes at the end of a session.
 *
 * With the p2pc.live_state_mib preference above 0 (p2pc live sets it: its tshark resets its
 * session every N packets with -M, on one packet stream that goes on), a connection a
 * protocol asked to carry (p2pc_conn_carry()) has a pool of its own, which a session reset does
 * not free.  At the reset the connections carried stay in a table keyed by their two endpoints,
 * most recently used first, as long as their state fits in the budget.  The state of the
 * others (evicted), and of the ones a layer said cannot go on (p2pc_conn_stay(), such as TLS,
 * whose state is Wireshark's), is freed; their endpoints stay for one more session, so that
 * their bytes are counted as undecoded with the reason (p2pc_conn_dropped()).  The ones that
 * ended (a FIN each way, or a RST) are freed.  In the next session the first frame of
 * a carried connection finds it again (p2pc_conn_get()), and each part goes on where it was.
 * Nothing kept by a frame (per-frame data, the replay cache) may be reachable from a carried
 * pool: a session reset frees every frame.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef P2PC_CONN_H
#define P2PC_CONN_H

#include "core/p2pc-compat.h"

typedef struct p2pc_conn p2pc_conn_t;

/* What each part keeps in a connection. */
typedef enum {
    P2PC_SLOT_LEDGER,           /* core/ledger.c: p2pc_tcp_t */
    P2PC_SLOT_RETRANS,          /* core/retrans.c: each direction's segments first sent */
    P2PC_SLOT_LIBP2P,           /* libp2p/packet-libp2p-tcp.c: the connection's root pipes */
    P2PC_SLOT_ENGINE,           /* libp2p/engine.c: the pipes' buffers holding bytes */
    P2PC_SLOT_HOLES,            /* core/holes.c: the framing of a tcp_dissect_pdus protocol */
    P2PC_SLOT_TRANSPORT,        /* core/transport.c: the frames' bytes before the claim */
    P2PC_SLOT_BITCOIN,          /* bitcoin/: the version messages' services */
    P2PC_SLOT_BIP324,           /* bitcoin/packet-bip324.c: which directions are BIP324 */
    P2PC_SLOT_FISCO,            /* fisco/packet-fisco.c: the header variant, who spoke first */
    P2PC_SLOT_FISCO3,           /* fisco/packet-fisco3.c: the handshakes' versions */
    P2PC_SLOTS
} p2pc_conn_slot_t;

/* The direction pinfo's sender sends in a connection whose direction 0 is the one `first`
 * (an address and port) sends: 0 or 1.  Every part numbers a connection's directions so. */
int p2pc_conn_dir(const address *first, guint32 first_port, const packet_info *pinfo);

/* This session saw the start (the SYN) of this frame's TCP connection (TCP's conversation
 * data).  A heuristic that could match bytes in the middle of a stream claims only connections
 * it sees start: one whose start this session did not see (a capture, or a live session reset,
 * in its middle) is left to its port, Decode As or earlier state, never to a guess. */
gboolean p2pc_conn_start_seen(packet_info *pinfo);

/* Registers the preference under the p2pc module (p2pc.c). */
void p2pc_conn_register(module_t *module);

/* First pass: this frame's TCP or UDP connection's state, made at the first call (in this
 * session, or found carried over from the last). */
p2pc_conn_t *p2pc_conn_get(packet_info *pinfo);

/* The same, or NULL when no part made it. */
p2pc_conn_t *p2pc_conn_find(packet_info *pinfo);

/* Where the connection's state is allocated: file scope, or its own pool when carried. */
wmem_allocator_t *p2pc_conn_pool(const p2pc_conn_t *c);

void *p2pc_conn_slot(const p2pc_conn_t *c, p2pc_conn_slot_t slot);
void p2pc_conn_set_slot(p2pc_conn_t *c, p2pc_conn_slot_t slot, void *data);

/* This frame's connection's `slot`: `size` zeroed bytes in its pool at the first call, with
 * *made TRUE (made may be NULL).  For a part's per-connection state in place of conversation
 * data, so that it goes on with the connection. */
void *p2pc_conn_state(packet_info *pinfo, p2pc_conn_slot_t slot, size_t size, gboolean *made);

/* Carry mode is on (p2pc.live_state_mib > 0): a part keeps what a reset would otherwise lose. */
gboolean p2pc_conn_carry_mode(void);

/* The session (0 for the first, one more at each reset): a part that keeps numbers of the
 * session (TCP's relative sequence numbers) notes it, and relearns them in a later one. */
guint p2pc_conn_session(void);

/* A part asks for the connection to outlive session resets (when the preference is on). */
void p2pc_conn_carry(p2pc_conn_t *c);

/* A connection a part asked to carry whose state a reset dropped: "evicted" (the budget was
 * spent on connections used more recently) or "reset" (a layer's state is not p2pc's,
 * p2pc_conn_stay()); NULL otherwise.  Its endpoints are remembered for the session after that
 * reset, with empty slots: the part that asked claims its bytes and counts them as undecoded,
 * for that reason. */
const char *p2pc_conn_dropped(const p2pc_conn_t *c);

/* A dropped connection's part had filled `slot` before the reset: the part claims its bytes. */
gboolean p2pc_conn_had(const p2pc_conn_t *c, p2pc_conn_slot_t slot);

/* The connection ended (a FIN each way, or a RST): it is freed at the next reset. */
void p2pc_conn_ended(p2pc_conn_t *c);

/* At a session reset: why the reset cuts the connection (it has not ended, and its state does
 * not go on), the reason of what it holds, undecoded: "evicted" (over the budget) or "reset"
 * (not carried, or a layer's state is not p2pc's), or why an earlier reset dropped it; NULL when
 * it is not cut. */
const char *p2pc_conn_cut(const p2pc_conn_t *c);

/* At a session reset (from its cleanup routines): the connection's state goes on in the next
 * session.  The budget's choice is made at the first call of a reset. */
gboolean p2pc_conn_goes_on(const p2pc_conn_t *c);

/* Carry mode: a new connection on its endpoints (its SYN) took the connection's place in this
 * session.  It does not go on, and no reset cuts it: its state is freed at the end of this
 * session, and what it holds is a tail of the capture, printed at the capture's end as when the
 * capture is read without a reset (p2pc_conn_on_retire(), record.h: p2pc_tail_keep()). */
gboolean p2pc_conn_retired(const p2pc_conn_t *c);

/* For a tail function (record.h): whether the tail of what `c` (NULL: no connection's) holds is
 * printed now, and *why, its undecoded reason.  Not a retired connection's (it was kept when it
 * was retired), nor, at a reset, one whose state goes on; at a reset, why the reset cuts it
 * (p2pc_conn_cut()), "reset" without a connection; at the end of the capture, NULL. */
gboolean p2pc_conn_tail_now(const p2pc_conn_t *c, gboolean at_reset, const char **why);

/* Some connection carried into this session had `slot` filled at the reset: a part whose
 * connections would otherwise all enter it anew in this session cannot skip a frame unseen. */
gboolean p2pc_conn_carried_any(p2pc_conn_slot_t slot);

/* A layer whose state is not p2pc's (Wireshark's TLS) cannot go on after a reset: the
 * connection is freed at the next one. */
void p2pc_conn_stay(p2pc_conn_t *c);

/* Bytes of state outside the pool (buffers, held segments) added (or, negative, released). */
void p2pc_conn_charge(p2pc_conn_t *c, gint64 bytes);

/* A part's function called when a carried connection's pool is about to be freed (an eviction
 * or its end), for what it keeps outside the pool. */
typedef void (*p2pc_conn_free_fn)(p2pc_conn_t *c);
void p2pc_conn_on_free(p2pc_conn_free_fn fn);

/* A part's function called when a new connection retires one (p2pc_conn_retired()), its state
 * as the connection left it: for the tails it keeps for the capture's end. */
void p2pc_conn_on_retire(p2pc_conn_free_fn fn);

/* A function called at a session reset with the endpoints of each connection whose state goes
 * on in the next session (the records tap tells its reader: #CARRIED). */
typedef void (*p2pc_conn_carried_fn)(const address *a, guint32 port_a, const address *b, guint32 port_b);
void p2pc_conn_on_carried(p2pc_conn_carried_fn fn);

#endif /* P2PC_CONN_H */
