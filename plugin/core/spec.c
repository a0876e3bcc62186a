/* spec.c
 * Conformance checks on the wire (spec.h): one expert item per check, p2pc.spec.*, each blurb
 * citing the rule, and the "p2pc_spec" tap every hit is queued on.
 *
 * Sources: multiformats/unsigned-varint README; google/snappy framing_format.txt;
 * ethereum/consensus-specs specs/phase0/p2p-interface.md ("The Req/Resp domain", "The gossip
 * domain: gossipsub"); BUIP017 (Bitcoin Unlimited datastream compression); FISCO BCOS
 * bcos-gateway and FISCO-BCOS 2.x P2P (docs/fisco.md); hashicorp/yamux spec.md (which libp2p's
 * yamux spec adopts); libp2p/specs mplex/README.md.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "core/spec.h"
#include "core/record.h"
#include "core/taps.h"

#include <epan/expert.h>

G_STATIC_ASSERT(P2PC_SPEC_N <= 64);     /* P2PC_SPEC_BIT() sets fit a guint64 */

static expert_field ei_spec[P2PC_SPEC_N];
static int spec_tap = -1;

/* Each check's filter name, severity and blurb (the rule it cites), in p2pc_spec_t's order. */
static const struct {
    const char *name;
    int group;
    int severity;
    const char *blurb;
} checks[P2PC_SPEC_N] = {
    [P2PC_SPEC_VARINT] = { "p2pc.spec.varint", PI_PROTOCOL, PI_WARN,
        "A varint longer than its value needs (multiformats unsigned-varint: \"integers are "
        "minimally encoded\"); decoded all the same" },
    [P2PC_SPEC_SNAPPY_STREAM_ID] = { "p2pc.spec.snappy.stream_identifier", PI_PROTOCOL, PI_WARN,
        "A framed Snappy stream that does not start with the stream identifier (framing_format.txt "
        "4.1: \"The stream identifier is always the first element in the stream\")" },
    [P2PC_SPEC_SNAPPY_CHUNK_LEN] = { "p2pc.spec.snappy.chunk_length", PI_PROTOCOL, PI_WARN,
        "A framed Snappy data chunk of more than 65,536 uncompressed bytes (framing_format.txt "
        "4.2, 4.3: \"The uncompressed data in a chunk must be no longer than 65536 bytes\")" },
    [P2PC_SPEC_SNAPPY_CRC] = { "p2pc.spec.snappy.crc", PI_CHECKSUM, PI_ERROR,
        "Masked CRC-32C mismatch (framing_format.txt 3: each data chunk carries the masked "
        "CRC-32C of its uncompressed data)" },
    [P2PC_SPEC_SNAPPY_UNSKIPPABLE] = { "p2pc.spec.snappy.unskippable", PI_MALFORMED, PI_ERROR,
        "A reserved unskippable Snappy chunk (framing_format.txt 4.5: chunk types 0x02-0x7f; "
        "\"a decoder [...] must return an error\")" },
    [P2PC_SPEC_ETH2_LENGTH] = { "p2pc.spec.eth2.length", PI_MALFORMED, PI_ERROR,
        "The uvarint length prefix differs from the SSZ length decompressed (p2p-interface.md, "
        "Encoding strategies: the prefix is \"the length of the SSZ-encoded object\"; readers MUST "
        "check it)" },
    [P2PC_SPEC_ETH2_TOO_LONG] = { "p2pc.spec.eth2.too_long", PI_PROTOCOL, PI_WARN,
        "SSZ length over MAX_PAYLOAD_SIZE or the type's largest size (p2p-interface.md: \"validate "
        "that the length-prefix is within the expected size bounds derived from the payload SSZ type\")" },
    [P2PC_SPEC_ETH2_TOO_SHORT] = { "p2pc.spec.eth2.too_short", PI_PROTOCOL, PI_WARN,
        "SSZ length under the type's smallest size (p2p-interface.md: \"validate that the "
        "length-prefix is within the expected size bounds derived from the payload SSZ type\")" },
    [P2PC_SPEC_ETH2_COMPRESSED_LEN] = { "p2pc.spec.eth2.compressed_length", PI_PROTOCOL, PI_WARN,
        "Compressed bytes over 32 + n + n/6 (p2p-interface.md: a reader MUST stop after "
        "max_compressed_len(n) bytes)" },
    [P2PC_SPEC_ETH2_CONTEXT] = { "p2pc.spec.eth2.context", PI_MALFORMED, PI_ERROR,
        "A success response chunk of a method with context bytes that has none (p2p-interface.md, "
        "Messages: \"the context bytes MUST be ... the ForkDigest\" of each success chunk)" },
    [P2PC_SPEC_ETH2_RESULT] = { "p2pc.spec.eth2.result", PI_PROTOCOL, PI_WARN,
        "A response result code no spec defines (p2p-interface.md, Responding side: 0-3 are "
        "defined, \"the range [4, 127] is RESERVED for future usages\")" },
    [P2PC_SPEC_ETH2_REQUEST_LIMIT] = { "p2pc.spec.eth2.request_limit", PI_PROTOCOL, PI_WARN,
        "A request for more than MAX_REQUEST_BLOCKS (1024) blocks (p2p-interface.md, "
        "BeaconBlocksByRange: \"count ... MUST NOT exceed MAX_REQUEST_BLOCKS\")" },
    [P2PC_SPEC_GOSSIP_SIZE] = { "p2pc.spec.gossip.size", PI_PROTOCOL, PI_WARN,
        "A gossip message over MAX_PAYLOAD_SIZE (10 MiB) uncompressed (p2p-interface.md, The gossip "
        "domain: \"the uncompressed payload in the data field ... MUST NOT exceed\" it)" },
    [P2PC_SPEC_GOSSIP_NO_SIGN] = { "p2pc.spec.gossip.strict_no_sign", PI_PROTOCOL, PI_WARN,
        "A gossip message on an eth2 topic with from, seqno, signature or key (p2p-interface.md, "
        "StrictNoSign: \"The from, signature, seqno and key fields MUST be absent\")" },
    [P2PC_SPEC_BUIP017_NOT_NEGOTIATED] = { "p2pc.spec.buip017.not_negotiated", PI_PROTOCOL, PI_WARN,
        "A compressed command on a conversation whose version messages did not both set the "
        "compression service bit (BUIP017: compression is used only when both peers advertise it)" },
    [P2PC_SPEC_BUIP017_NOT_SMALLER] = { "p2pc.spec.buip017.not_smaller", PI_PROTOCOL, PI_WARN,
        "A compressed payload not smaller than the raw one (BUIP017: \"if the compressed data is "
        "not smaller, the message is sent uncompressed\")" },
    [P2PC_SPEC_FISCO_THRESHOLD] = { "p2pc.spec.fisco.threshold", PI_PROTOCOL, PI_WARN,
        "A compressed payload at or below the compression threshold (FISCO BCOS: payloads over "
        "1,024 bytes only are compressed, docs/fisco.md)" },
    [P2PC_SPEC_FISCO_FLAG] = { "p2pc.spec.fisco.compressed_flag", PI_PROTOCOL, PI_WARN,
        "The compressed flag on a message below Version V2 (FISCO BCOS 3.x bcos-gateway: "
        "compression exists from protocol V2 on, docs/fisco.md)" },
    [P2PC_SPEC_YAMUX_VERSION] = { "p2pc.spec.yamux.version", PI_MALFORMED, PI_ERROR,
        "A yamux frame header whose version is not 0 (yamux spec, Version Field: \"the field is "
        "always set to 0\"); its bytes are undecoded" },
    [P2PC_SPEC_YAMUX_FLAGS] = { "p2pc.spec.yamux.flags", PI_PROTOCOL, PI_WARN,
        "A yamux flag bit no spec defines (yamux spec, Flag Field: SYN 0x1, ACK 0x2, FIN 0x4, "
        "RST 0x8 are \"the following flags\" supported)" },
    [P2PC_SPEC_YAMUX_SESSION_ID] = { "p2pc.spec.yamux.session_id", PI_PROTOCOL, PI_WARN,
        "A Data or Window Update frame on stream 0, or a Ping or Go Away on another (yamux spec, "
        "StreamID Field: \"the 0 ID is reserved to represent the session\"; \"Both Ping and Go "
        "Away messages should always use the 0 StreamID\")" },
    [P2PC_SPEC_YAMUX_STREAM_ID] = { "p2pc.spec.yamux.stream_id", PI_PROTOCOL, PI_WARN,
        "A stream opened (SYN) with the other side's parity (yamux spec, StreamID Field: \"The "
        "client side should use odd ID's, and the server even\"; in libp2p the dialer is the client)" },
    [P2PC_SPEC_YAMUX_SYN] = { "p2pc.spec.yamux.syn", PI_PROTOCOL, PI_WARN,
        "SYN on a stream already open (yamux spec, Opening a stream: \"an initial data or window "
        "update frame is sent with a new StreamID. The SYN flag should be set\")" },
    [P2PC_SPEC_YAMUX_ACK] = { "p2pc.spec.yamux.ack", PI_PROTOCOL, PI_WARN,
        "ACK from the side that opened the stream (yamux spec, Opening a stream: \"The receiver "
        "must then reply [...] with the ACK flag to accept the stream\")" },
    [P2PC_SPEC_YAMUX_AFTER_FIN] = { "p2pc.spec.yamux.after_fin", PI_PROTOCOL, PI_WARN,
        "Data on a stream its sender already closed with FIN (yamux spec, Closing a stream: "
        "FIN is \"a half-close indicating the sender will send no further data\")" },
    [P2PC_SPEC_YAMUX_WINDOW] = { "p2pc.spec.yamux.window", PI_PROTOCOL, PI_ERROR,
        "A Data frame longer than the stream's flow-control window (yamux spec, Flow Control: each "
        "stream starts \"with a 256KB window size\", widened by Window Update; libp2p yamux: a "
        "sender must not exceed it); its bytes are undecoded" },
    [P2PC_SPEC_YAMUX_GO_AWAY] = { "p2pc.spec.yamux.go_away", PI_PROTOCOL, PI_WARN,
        "A Go Away code no spec defines (yamux spec, Session termination: 0x0 normal, 0x1 "
        "protocol error, 0x2 internal error)" },
    [P2PC_SPEC_MPLEX_FLAG] = { "p2pc.spec.mplex.flag", PI_MALFORMED, PI_ERROR,
        "An mplex flag of 7 (libp2p/specs mplex, Flag Values: NewStream 0 to ResetInitiator 6); "
        "the rest of the connection direction is undecoded" },
    [P2PC_SPEC_MPLEX_NEW_STREAM] = { "p2pc.spec.mplex.new_stream", PI_PROTOCOL, PI_WARN,
        "NewStream for a stream ID already open (libp2p/specs mplex, Opening a new stream: \"first "
        "allocate a new stream ID\")" },
    [P2PC_SPEC_MPLEX_STREAM] = { "p2pc.spec.mplex.stream", PI_PROTOCOL, PI_WARN,
        "A message on a stream its sender never opened (NewStream) or already closed (libp2p/specs "
        "mplex, Closing a stream: \"Writing to a stream after it has been closed should result in "
        "an error\")" },
    [P2PC_SPEC_MPLEX_CLOSE_BODY] = { "p2pc.spec.mplex.close_body", PI_PROTOCOL, PI_WARN,
        "A Close or Reset with data (libp2p/specs mplex, Closing a stream, Resetting a stream: "
        "\"send a message with a zero length body\")" },
};

void
p2pc_spec(packet_info *pinfo, proto_item *item, p2pc_spec_t check, const char *format, ...)
{
    p2pc_spec_hit_t *hit = wmem_new(pinfo->pool, p2pc_spec_hit_t);
    if (format) {
        va_list ap;
        char *text;
        va_start(ap, format);
        text = wmem_strdup_vprintf(pinfo->pool, format, ap);
        va_end(ap);
        expert_add_info_format(pinfo, item, &ei_spec[check], "%s", text);
    } else {
        expert_add_info(pinfo, item, &ei_spec[check]);
    }
    hit->frame = pinfo->num;
    hit->check = checks[check].name;
    p2pc_batch_queue(spec_tap, P2PC_KEY_BATCH_SPEC, pinfo, hit);
}

void
p2pc_spec_varint(tvbuff_t *tvb, int offset, guint len, packet_info *pinfo, proto_item *item)
{
    if (len > 1 && tvb_get_uint8(tvb, offset + (int)len - 1) == 0)
        p2pc_spec(pinfo, item, P2PC_SPEC_VARINT,
                  "Non-canonical varint: %u bytes where fewer would do (multiformats "
                  "unsigned-varint: \"integers are minimally encoded\")", len);
}

proto_item *
p2pc_spec_snappy_crc(proto_tree *tree, tvbuff_t *tvb, int offset, int hf, int hf_status,
                     packet_info *pinfo, guint32 computed)
{
    /* Verified here, not by the checksum API, so that a mismatch is this check's expert item. */
    proto_item *ti = proto_tree_add_checksum(tree, tvb, offset, hf, -1, NULL, pinfo, computed,
                                             ENC_LITTLE_ENDIAN, PROTO_CHECKSUM_NO_FLAGS);
    guint32 stored = tvb_get_letohl(tvb, offset);
    proto_item *status = proto_tree_add_uint(tree, hf_status, tvb, offset, 4,
                                             stored == computed ? PROTO_CHECKSUM_E_GOOD : PROTO_CHECKSUM_E_BAD);
    proto_item_set_generated(status);
    if (stored != computed)
        p2pc_spec(pinfo, ti, P2PC_SPEC_SNAPPY_CRC, "Masked CRC-32C 0x%08x, computed 0x%08x", stored, computed);
    return ti;
}

void
p2pc_spec_register(int proto)
{
    static ei_register_info ei[P2PC_SPEC_N];
    for (int i = 0; i < P2PC_SPEC_N; i++) {
        expert_field unregistered = EI_INIT;
        ei_register_info e = { &ei_spec[i], { checks[i].name, checks[i].group, checks[i].severity,
                                              checks[i].blurb, EXPFILL } };
        ei_spec[i] = unregistered;
        ei[i] = e;
    }
    expert_register_field_array(expert_register_protocol(proto), ei, array_length(ei));
    spec_tap = register_tap("p2pc_spec");
}
