/* budget.h
 * Where a connection direction's bytes went that no message record carries: each layer's own
 * bytes (a multistream line, a Noise handshake message, a yamux window update, a gossipsub RPC
 * of control only), reported by the layer that consumed them, summed per frame, direction,
 * layer and kind, and queued on the "p2pc_budget" tap (-z p2pc,records prints each as a B line:
 * the analyzer's budget section, docs/tap-format.md and docs/savings-model.md).  Bytes a message
 * record's wire_len already counts (the muxer header and the security framing its header model
 * gives it) are not reported again: a direction's records and B lines add up to what it sent.
 *
 * Below the stream, the transport's own bytes of each frame of a P2P TCP connection (link, IP
 * and TCP headers, frames without payload, retransmitted payload) are reported the same way by
 * core/transport.c, and those of a libp2p QUIC datagram (UDP, QUIC's packets and frames but the
 * STREAM data) by libp2p/quic-bytes.c, so that a connection's records and B lines add up to its
 * frames' bytes.
 * One seam for every layer: a layer is a name of the fixed list below, a kind is the layer's
 * own word for the part.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef P2PC_CORE_BUDGET_H
#define P2PC_CORE_BUDGET_H

#include "core/record.h"
#include "core/unit.h"

/* The layers (a bounded set: the metrics' `layer` label). */
#define P2PC_LAYER_NEGOTIATION "negotiation"    /* multistream lines, security handshakes */
#define P2PC_LAYER_SECURITY "security"          /* security framing no message carries */
#define P2PC_LAYER_MUXER "muxer"                /* muxer frames that carry no message bytes */
#define P2PC_LAYER_GOSSIP "gossip"              /* gossipsub RPCs that publish no message */
#define P2PC_LAYER_LINK_IP "link_ip"           /* a frame's bytes before its TCP or UDP header and
                                                   after its payload: link and IP headers, trailers */
#define P2PC_LAYER_TCP_HEADER "tcp_header"      /* TCP headers of frames with payload */
#define P2PC_LAYER_UDP_HEADER "udp_header"      /* UDP headers (libp2p over QUIC) */
#define P2PC_LAYER_ACK "ack"                    /* whole frames without payload */
#define P2PC_LAYER_RETRANSMISSION "retransmission"  /* payload TCP calls a retransmission, STREAM
                                                       data a QUIC stream had already */
#define P2PC_LAYER_UNDECODED "undecoded"        /* as the records p2pc could not decode or decrypt */

/* What the "p2pc_budget" tap carries: one layer and kind of one direction in one frame. */
typedef struct {
    const char *proto;          /* the record's proto of that connection: "libp2p" */
    const char *layer;          /* P2PC_LAYER_* */
    const char *kind;           /* the layer's part: "multistream", "window_update", ... */
    gint64 bytes;               /* < 0: bytes reported before (in this frame or an earlier one)
                                   that this frame's messages took into their wire_len */
    p2pc_where_t at;
} p2pc_budget_t;

/* `bytes` of `layer`'s part `kind` consumed in this frame, in the direction of pinfo's
 * endpoints (strings static).  Called on every pass where the bytes are dissected, as records
 * are.  A layer whose bytes a message may take later (a muxer header the engine hands to the
 * next PDU as its overhead, a security framing shared out by p2pc_record_give_framing())
 * reports them all when it consumes them and, where a message takes them, the same kind
 * negative: the sum over a direction is what no message carried. */
void p2pc_budget_add(packet_info *pinfo, const char *proto, const char *layer, const char *kind,
                     gint64 bytes);

/* The same for the bytes the other side of pinfo's connection sent, told in this frame (the
 * transport's bytes of frames before the connection was known to be P2P). */
void p2pc_budget_add_reverse(packet_info *pinfo, const char *proto, const char *layer, const char *kind,
                             gint64 bytes);

/* call(ctx) with nothing reported by what it calls, also when it throws: a transport that
 * re-encodes every byte above it and shares them all out over the messages (the libp2p
 * compression transport) calls the layers above so, their own bytes not being wire bytes. */
void p2pc_budget_call_muted(packet_info *pinfo, p2pc_call_fn call, void *ctx);

/* Registers the "p2pc_budget" tap (p2pc.c). */
void p2pc_budget_register(int proto);

#endif /* P2PC_CORE_BUDGET_H */
