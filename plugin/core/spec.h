/* spec.h
 * Conformance checks on the wire: a rule of a protocol's specification that a peer broke, shown
 * as an expert item of its own (p2pc.spec.*) whose blurb cites the rule, and queued on the
 * "p2pc_spec" tap (-z p2pc,records prints it as an S line: the analyzer's conformance
 * section).  Every check goes through here, so the expert items and the counts are one list.
 * The bytes are decoded all the same: a peer that breaks a rule is exactly what an interop
 * debugger looks for.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef P2PC_CORE_SPEC_H
#define P2PC_CORE_SPEC_H

#include "core/p2pc-compat.h"

/* The checks; spec.c names each (its filter) and cites its clause. */
typedef enum {
    P2PC_SPEC_VARINT,               /* multiformats unsigned-varint: minimal encoding */
    P2PC_SPEC_SNAPPY_STREAM_ID,     /* framing_format.txt 4.1: the stream identifier first */
    P2PC_SPEC_SNAPPY_CHUNK_LEN,     /* framing_format.txt 4.2, 4.3: <= 65,536 bytes a chunk */
    P2PC_SPEC_SNAPPY_CRC,           /* framing_format.txt 3: masked CRC-32C */
    P2PC_SPEC_SNAPPY_UNSKIPPABLE,   /* framing_format.txt 4.5: reserved unskippable chunk */
    P2PC_SPEC_ETH2_LENGTH,          /* p2p-interface.md: the prefix is the SSZ length */
    P2PC_SPEC_ETH2_TOO_LONG,        /* p2p-interface.md: within the SSZ type's bounds */
    P2PC_SPEC_ETH2_TOO_SHORT,
    P2PC_SPEC_ETH2_COMPRESSED_LEN,  /* p2p-interface.md: at most max_compressed_len(n) */
    P2PC_SPEC_ETH2_CONTEXT,         /* p2p-interface.md: context bytes of the method */
    P2PC_SPEC_ETH2_RESULT,          /* p2p-interface.md: result codes [4, 127] reserved */
    P2PC_SPEC_ETH2_REQUEST_LIMIT,   /* p2p-interface.md: count <= MAX_REQUEST_BLOCKS */
    P2PC_SPEC_GOSSIP_SIZE,          /* p2p-interface.md: gossip data <= MAX_PAYLOAD_SIZE */
    P2PC_SPEC_GOSSIP_NO_SIGN,       /* p2p-interface.md: StrictNoSign, no from/seqno/sig/key */
    P2PC_SPEC_BUIP017_NOT_NEGOTIATED, /* BUIP017: compression only after the service bit */
    P2PC_SPEC_BUIP017_NOT_SMALLER,  /* BUIP017: a compressed message is smaller */
    P2PC_SPEC_FISCO_THRESHOLD,      /* FISCO BCOS: compressed only above the threshold */
    P2PC_SPEC_FISCO_FLAG,           /* FISCO BCOS 3.x: the compressed flag from V2 on only */
    P2PC_SPEC_YAMUX_VERSION,        /* yamux spec.md, Version Field: always 0 */
    P2PC_SPEC_YAMUX_FLAGS,          /* Flag Field: SYN, ACK, FIN, RST only */
    P2PC_SPEC_YAMUX_SESSION_ID,     /* StreamID Field: 0 is the session's, Ping and Go Away's */
    P2PC_SPEC_YAMUX_STREAM_ID,      /* StreamID Field: the client odd ids, the server even */
    P2PC_SPEC_YAMUX_SYN,            /* Opening a stream: SYN opens a new StreamID */
    P2PC_SPEC_YAMUX_ACK,            /* Opening a stream: the receiver replies with ACK */
    P2PC_SPEC_YAMUX_AFTER_FIN,      /* Closing a stream: FIN, the sender sends no further data */
    P2PC_SPEC_YAMUX_WINDOW,         /* Flow Control: Data within the receiver's window */
    P2PC_SPEC_YAMUX_GO_AWAY,        /* Session termination: Go Away codes 0, 1, 2 */
    P2PC_SPEC_MPLEX_FLAG,           /* libp2p/specs mplex, Flag Values: 0-6 */
    P2PC_SPEC_MPLEX_NEW_STREAM,     /* Opening a new stream: a newly allocated stream ID */
    P2PC_SPEC_MPLEX_STREAM,         /* Writing to a stream: an open one, not after its Close */
    P2PC_SPEC_MPLEX_CLOSE_BODY,     /* Closing, Resetting a stream: a zero length body */
    P2PC_SPEC_N
} p2pc_spec_t;

/* A set of checks, one bit per check (a muxer's frame or undecoded bytes: engine.h). */
#define P2PC_SPEC_BIT(check) (G_GUINT64_CONSTANT(1) << (check))

/* `check` failed at `item` (its expert item, the text formatted from `format`; NULL: the
 * check's blurb), and the tap is told. */
void p2pc_spec(packet_info *pinfo, proto_item *item, p2pc_spec_t check, const char *format, ...)
    G_GNUC_PRINTF(4, 5);

/* The unsigned varint of `len` bytes at tvb[offset] (as tvb_get_varint read it) is longer than
 * its value needs (a last byte 0x00 after continuation bytes): P2PC_SPEC_VARINT on `item`. */
void p2pc_spec_varint(tvbuff_t *tvb, int offset, guint len, packet_info *pinfo, proto_item *item);

/* proto_tree_add_checksum() of a framed Snappy chunk's masked CRC-32C, verified: a mismatch is
 * P2PC_SPEC_SNAPPY_CRC. */
proto_item *p2pc_spec_snappy_crc(proto_tree *tree, tvbuff_t *tvb, int offset, int hf, int hf_status,
                                 packet_info *pinfo, guint32 computed);

/* What the "p2pc_spec" tap carries: the frame and the check's filter name. */
typedef struct {
    guint32 frame;
    const char *check;
} p2pc_spec_hit_t;

/* Registers the p2pc.spec.* expert items and the "p2pc_spec" tap under `proto` (record.c). */
void p2pc_spec_register(int proto);

#endif /* P2PC_CORE_SPEC_H */
