/* gossip.h
 * Where a gossipsub RPC's bytes went: each part of it (a published message, a subscription, a
 * control entry, the framing around them) summed by kind and topic, and queued on the
 * "p2pc_gossip" tap (-z p2pc,records prints each as a G line: the analyzer's gossip section,
 * docs/tap-format.md).  Gossip control is no message of the common record (record.h): this is
 * how its bytes are counted, as the clients count them.
 *
 * Source: libp2p/specs pubsub/README.md and gossipsub-v1.1/v1.2 (rpc.proto: RPC, SubOpts,
 * Message, ControlMessage with IHAVE 1, IWANT 2, GRAFT 3, PRUNE 4, IDONTWANT 5), gossipsub-v1.3
 * (ControlExtensions, field 6) and go-libp2p-pubsub pb/rpc.proto (RPC.partial, field 10).
 * `count` is counted as go-libp2p-pubsub's tracer (trace.go, traceRPCMeta) and Prysm's
 * p2p_pubsub_rpc_sent_total{control_message} count: one per control entry, SubOpts or Message.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef P2PC_CORE_GOSSIP_H
#define P2PC_CORE_GOSSIP_H

#include "core/record.h"

/* Field numbers of the gossipsub v1.3 extensions: libp2p/specs
 * pubsub/gossipsub/extensions/extensions.proto (testExtension) and go-libp2p-pubsub pb/rpc.proto
 * (partialMessages, the Partial Messages extension of libp2p/specs PR 685, which
 * consensus-specs specs/fulu/partial-columns/p2p-interface.md uses for data columns). */
#define GS_EXT_PARTIAL 10               /* ControlExtensions.partialMessages, RPC.partial */
#define GS_EXT_TEST 6492434             /* ControlExtensions.testExtension, RPC.testExtension */

/* What the "p2pc_gossip" tap carries: one kind and topic of one RPC. */
typedef struct {
    const char *kind;           /* publish, subscribe, ..., rpc_framing, other (gossip.c) */
    const char *topic;          /* as sent; "" when the part names none */
    guint32 count;              /* entries (publish: Messages; subscribe: SubOpts; rpc_framing: RPCs) */
    guint64 message_ids;        /* message IDs the entries carry (IHAVE, IWANT, IDONTWANT) */
    guint64 bytes;              /* protobuf bytes: each field's tag, length and body */
    /* publish: one part per Message, its message ID in hex (the topic's rule: the dissector's,
     * p2pc_gossip_message_id(); else go-libp2p's default, from || seqno); "" when it has none.
     * ihave, iwant, idontwant: the message IDs its entries carry, each in hex, comma-separated
     * (so a peer's IDONTWANT pairs with the publishes it names) */
    const char *message_id;
    wmem_strbuf_t *ids;         /* ihave, iwant, idontwant: its message_id while the RPC is read */
    int msg_start;              /* publish: where the Message's bytes start in the RPC's tvb */
    p2pc_where_t at;
} p2pc_gossip_part_t;

/* The parts of one RPC, kept until p2pc_gossip_queue(). */
typedef struct p2pc_gossip_rpc p2pc_gossip_rpc_t;

/* Account the gossipsub RPC tvb[0, len): its uvarint length prefix and the protobuf RPC after it
 * (len may be short of it: the stream closed inside the RPC).  The parts' bytes add up to len. */
p2pc_gossip_rpc_t *p2pc_gossip_rpc(tvbuff_t *tvb, int len, packet_info *pinfo);

/* The message ID of the Message whose bytes start at msg_start, by its topic's rule (eth2's:
 * the dissector knows it), replacing go-libp2p's default. */
void p2pc_gossip_message_id(p2pc_gossip_rpc_t *rpc, int msg_start, const guint8 *id, guint id_len);

/* Queue the RPC's parts on the "p2pc_gossip" tap. */
void p2pc_gossip_queue(p2pc_gossip_rpc_t *rpc);

/* Registers the "p2pc_gossip" tap (p2pc.c). */
void p2pc_gossip_register(void);

#endif /* P2PC_CORE_GOSSIP_H */
