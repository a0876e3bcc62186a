/* ledger.h
 * The TCP ledger: what the capture holds of each direction of a TCP connection a p2pc protocol
 * was handed, one per connection, in TCP's own sequence numbers, for every protocol alike:
 *   - the difference between the sequence numbers in the TCP headers and TCP's own (relative
 *     by default), learnt from the first bytes TCP hands over;
 *   - every segment of the connection, from the frame's own headers (segment.h: TCP hands some
 *     to no protocol): the highest byte captured, and the holes before it;
 *   - the receiver's highest acknowledgement (bytes it acknowledges that were never captured
 *     are a hole as well);
 *   - segments that a protocol feeding its bytes in order (libp2p: TCP hands them over as they
 *     come) holds, copied, until the bytes before them arrive;
 *   - the cursor: how far the direction's bytes have been handed on, to the protocol or counted
 *     as undecoded.  One protocol moves it: the connection's claimant (below).
 * Each frame keeps, for the parts of the TCP layer's postdissector (post.h), what its segment
 * brought (p2pc_ledger_frame_fresh()) and where its direction's captured bytes ended before it
 * (p2pc_ledger_frame_seen(): retrans.c compares the bytes before that mark with the segments
 * first sent, and keeps those past it).
 * One claimant a connection: the protocol whose entry first brings bytes to the ledger, either
 * framed by tcp_dissect_pdus() (holes.h: Bitcoin, BIP324, FISCO) or fed in order (libp2p).  A
 * protocol of the other kind that TCP hands the same connection later (a second heuristic, Decode
 * As) gets no ledger: it decodes what TCP hands it, and p2pc counts no hole and carries no
 * message for it; the directions it is handed start in the ledger all the same, so that their
 * retransmissions are checked.  A claimant that lets go (a heuristic's wrong guess,
 * p2pc_ledger_let_go()) clears the cursors, and the next protocol to enter claims it anew.
 * A protocol that TCP's sequence numbers never reach (FISCO inside TLS) watches the connection
 * (p2pc_ledger_watch()): each direction starts at its first segment, in the headers' numbers.
 * A hole is in the capture, not in the network, once it is confirmed: the receiver acknowledged
 * bytes past it, P2PC_HOLD_MAX bytes were captured past it (a capture of one direction has no
 * acknowledgements), or TCP went on after it.  Each protocol says what becomes of the bytes
 * around a confirmed hole (holes.h for those framed by tcp_dissect_pdus(), libp2p's feeder), and
 * shows it with the one expert item, p2pc.hole.
 * The ledger is built on the first pass; what a frame adds to a protocol is kept by the frame.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef P2PC_LEDGER_H
#define P2PC_LEDGER_H

#include "core/p2pc-compat.h"
#include "core/conn.h"
#include "core/record.h"

#define P2PC_HOLD_MAX   (1024 * 1024)   /* bytes captured past a hole that confirm it */

#define P2PC_SEQ_LT(a, b) ((gint32)((a) - (b)) < 0)
#define P2PC_SEQ_GT(a, b) ((gint32)((a) - (b)) > 0)

/* Bytes of a direction the capture does not hold, [start, end). */
typedef struct p2pc_hole {
    guint32 start;
    guint32 end;
    gboolean confirmed;
    struct p2pc_hole *next;     /* by start */
} p2pc_hole_t;

/* A segment held ahead of the bytes expected, its bytes after it in one allocation. */
typedef struct p2pc_held {
    guint32 seq;
    guint32 len;
    guint32 frame;
    guint8 *data;               /* within the bytes that follow */
    struct p2pc_held *next;     /* by seq */
} p2pc_held_t;

/* One direction.  Its numbers are TCP's of the session that started it: after a session reset
 * (a connection carried over, conn.h) TCP numbers the bytes anew, and `shift` turns them into
 * the ledger's (p2pc_ledger_seq()). */
typedef struct {
    gboolean started;           /* a protocol was handed bytes of it, or its connection is
                                   watched: `base` is known */
    guint32 base;               /* a sequence number in the TCP header less the ledger's */
    gboolean shifted;           /* `shift` was learnt, in session `session` */
    guint session;
    guint32 shift;              /* the ledger's sequence number less TCP's in that session */
    guint32 cap_end;            /* one past the highest byte captured */
    gboolean ack_known;
    guint32 acked;              /* the receiver's highest acknowledgement */
    gboolean fin;               /* a FIN was captured, at sequence number fin_at */
    guint32 fin_at;
    p2pc_hole_t *holes;
    p2pc_held_t *held;
    guint32 held_bytes;
    p2pc_record_t last;         /* where and when its last segment was captured */
    gboolean handing;           /* the claimant was handed bytes of it: `handed` is set */
    guint32 handed;             /* the cursor: the bytes before it were handed on */
} p2pc_tcp_dir_t;

/* Who moves a connection's cursors (above). */
typedef enum {
    P2PC_CLAIM_NONE,
    P2PC_CLAIM_FRAMED,          /* a protocol framed by tcp_dissect_pdus() (holes.h) */
    P2PC_CLAIM_FED              /* a protocol fed in order (libp2p) */
} p2pc_claim_t;

/* A TCP connection: direction 0 is that of the first bytes a protocol was handed. */
typedef struct {
    p2pc_conn_t *conn;          /* what it is part of: its allocations are in its pool */
    address addr0;
    guint32 port0;
    p2pc_claim_t claim;
    gboolean watched;           /* p2pc_ledger_watch() */
    const char *proto;          /* the proto of the first claimant's records ("libp2p",
                                   "bitcoin", ...): that of the connection's transport bytes */
    p2pc_tcp_dir_t dir[2];
} p2pc_tcp_t;

/* Registers the expert item under `proto` (p2pc.c). */
void p2pc_ledger_register(int proto);

/* First pass, the TCP entry of a protocol of kind `who`, whose records' proto is `proto`
 * (static): the ledger of this frame's connection (made at the first call), the direction of
 * `tvb` started when its bytes are the frame's own (TCP's sequence number `seq`), and this
 * frame's segment and acknowledgement in it.  NULL if not TCP, or when a protocol of the other
 * kind claimed the connection (its directions start all the same). */
p2pc_tcp_t *p2pc_ledger_enter(tvbuff_t *tvb, packet_info *pinfo, guint32 seq, p2pc_claim_t who,
                              const char *proto);

/* First pass, a protocol that TCP's sequence numbers do not reach (it is handed TLS's decrypted
 * bytes): this frame's connection gets a ledger, unclaimed, whose directions each start at
 * their first segment. */
void p2pc_ledger_watch(packet_info *pinfo);

/* The claimant lets go of the connection: no direction has been handed bytes. */
void p2pc_ledger_let_go(p2pc_tcp_t *l);

/* First pass, a postdissector: the ledger of this frame's connection, if a protocol entered
 * or watched it, with this frame's segment and acknowledgement in it. */
p2pc_tcp_t *p2pc_ledger_find(packet_info *pinfo);

/* The proto of the first protocol that claimed this frame's connection (ledger.h's `proto`), NULL
 * when none did (in a later pass: none did in the first); the frame is not noted in the ledger. */
const char *p2pc_ledger_claimant(packet_info *pinfo);

/* First pass, after a ledger noted this frame: the bytes of its segment the capture did not
 * hold before (past the highest captured, or filling a hole not confirmed) and that the cursor
 * has not passed: those the claimant accounts, whatever TCP's analysis calls the segment.  0
 * if no ledger noted it. */
guint32 p2pc_ledger_frame_fresh(packet_info *pinfo);

/* First pass, after a ledger noted this frame's segment (with bytes, of a started direction):
 * one past the highest byte of its direction captured before it, in the ledger's numbers
 * (those of p2pc_ledger_frame_bytes()).  FALSE if no ledger noted one. */
gboolean p2pc_ledger_frame_seen(packet_info *pinfo, guint32 *seen);

/* The bytes of this frame's own TCP segment (segment.h) from pinfo's sender on `l`, which TCP
 * may have handed to no protocol: where they start in the frame, how many, and, once that
 * direction started, the ledger's sequence number of the first.  FALSE: the frame carries no
 * segment of it. */
gboolean p2pc_ledger_frame_bytes(const p2pc_tcp_t *l, packet_info *pinfo, guint32 *at, guint32 *len, guint32 *seq);

/* Whether this frame's sender dialed, from the TCP handshake: 1 yes, 0 no, -1 the handshake is
 * not in the capture. */
int p2pc_tcp_sender_dialed(packet_info *pinfo);

/* TCP's sequence number `seq` (relative, TCP's default, or absolute) is the first byte the
 * frame's sender sent after its SYN (or SYN-ACK), and this session saw the connection start. */
gboolean p2pc_tcp_at_start(packet_info *pinfo, guint32 seq);

/* TCP's sequence number `seq` of this session in the ledger's numbers (known once a protocol
 * entered the ledger with the direction's bytes in this session: `shifted`). */
guint32 p2pc_ledger_seq(const p2pc_tcp_dir_t *d, guint32 seq);

/* The direction pinfo's sender sends. */
int p2pc_ledger_dir(const p2pc_tcp_t *l, const packet_info *pinfo);

/* Confirms the holes of `d` before `upto`: the bytes they miss (0: none was confirmed now), and
 * in *first where the first of them starts. */
guint32 p2pc_ledger_confirm(p2pc_tcp_dir_t *d, guint32 upto, guint32 *first);

/* P2PC_HOLD_MAX bytes are captured past the first unconfirmed hole of `d`. */
gboolean p2pc_ledger_held_past(const p2pc_tcp_dir_t *d);

/* The first confirmed hole of `d` that ends after `seq` and starts at or before it: its end,
 * or `seq` when the bytes at `seq` are not known to be missing.  Confirmed holes that end
 * before it are forgotten. */
guint32 p2pc_ledger_skip(p2pc_tcp_dir_t *d, guint32 seq);

/* The bytes of [a, b) of `d` the capture holds. */
guint32 p2pc_ledger_captured(const p2pc_tcp_dir_t *d, guint32 a, guint32 b);

/* Holding (first pass): a segment ahead of `next` is copied into `d` of `l`;
 * p2pc_ledger_drain() moves those that now follow `*next` onto the list at `tail` (advancing
 * *next) and returns the new tail.  Copies are in the connection's pool: p2pc_ledger_free()
 * frees a list nothing keeps. */
void p2pc_ledger_hold(const p2pc_tcp_t *l, p2pc_tcp_dir_t *d, guint32 seq, const guint8 *p, guint32 len,
                      guint32 frame);
p2pc_held_t **p2pc_ledger_drain(const p2pc_tcp_t *l, p2pc_tcp_dir_t *d, guint32 *next, p2pc_held_t **tail);
void p2pc_ledger_free(const p2pc_tcp_t *l, p2pc_held_t *h);

/* p2pc.hole, on `tvb` of this frame, in the protocol's words. */
void p2pc_ledger_show_hole(tvbuff_t *tvb, packet_info *pinfo, proto_tree *tree, const char *format, ...)
    G_GNUC_PRINTF(4, 5);

#endif /* P2PC_LEDGER_H */
