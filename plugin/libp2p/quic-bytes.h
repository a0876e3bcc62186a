/* quic-bytes.h
 * A libp2p QUIC datagram's bytes in the byte budget (core/budget.h) that are not its streams'
 * bytes, by layer and kind, every length one of Wireshark's own QUIC fields (never re-parsed
 * here), so that a QUIC direction's records and B lines add up to its frames' bytes:
 *   link_ip headers          frame.len less the UDP datagram (link and IP headers, trailers)
 *   udp_header fixed         its 8-byte UDP header
 *   security quic_long_header, quic_short_header   each packet's quic.packet_length less its
 *                            payload (quic.payload, quic.protected_payload): the packet header
 *   security quic_tag        the payloads less their frames (quic.frame): the AEAD tag (the
 *                            header protection sample is inside the payload)
 *   security quic_coalesced_padding   the UDP payload after the datagram's last packet
 *   security quic_padding, quic_ping, quic_ack, quic_new_token, quic_new_connection_id,
 *            quic_retire_connection_id, quic_path_challenge, quic_path_response,
 *            quic_connection_close, quic_handshake_done, quic_other   those frames, whole
 *   negotiation quic_crypto  CRYPTO frames, whole: the TLS handshake
 *   muxer quic_stream_header STREAM frames less their data (type, stream id, offset, length)
 *   muxer quic_reset_stream, quic_stop_sending, quic_max_data, quic_max_stream_data,
 *         quic_max_streams, quic_data_blocked, quic_stream_data_blocked, quic_streams_blocked
 *                            QUIC's stream control, whole (QUIC is libp2p's muxer here)
 *   retransmission quic_stream_data   STREAM data the streams did not take (they had it)
 * A datagram with a packet Wireshark did not decrypt has only its link_ip and udp_header here:
 * its UDP payload is the `quic (encrypted)` record's (packet-libp2p-quic.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef P2PC_LIBP2P_QUIC_BYTES_H
#define P2PC_LIBP2P_QUIC_BYTES_H

#include "core/p2pc-compat.h"

/* The parts a datagram's bytes are counted in, a budget layer and kind each (quic-bytes.c). */
enum {
    QB_LINK_IP, QB_UDP, QB_LONG_HEADER, QB_SHORT_HEADER, QB_TAG, QB_COALESCED, QB_STREAM_HEADER,
    QB_UNDECRYPTED,     /* a datagram not decrypted before the connection was known to be libp2p's */
    /* frames, whole, by type (RFC 9000 19) */
    QB_PADDING, QB_PING, QB_ACK, QB_RESET_STREAM, QB_STOP_SENDING, QB_CRYPTO, QB_NEW_TOKEN,
    QB_MAX_DATA, QB_MAX_STREAM_DATA, QB_MAX_STREAMS, QB_DATA_BLOCKED, QB_STREAM_DATA_BLOCKED,
    QB_STREAMS_BLOCKED, QB_NEW_CONNECTION_ID, QB_RETIRE_CONNECTION_ID, QB_PATH_CHALLENGE,
    QB_PATH_RESPONSE, QB_CONNECTION_CLOSE, QB_HANDSHAKE_DONE, QB_OTHER,
    QB_PARTS
};

/* One datagram's parts, those that are not zero (file scope, kept for later passes). */
typedef struct {
    guint8 n;
    struct {
        guint8 part;
        gint32 bytes;
    } item[];
} l2p_quic_bytes_t;

/* Looks up the QUIC and UDP fields it reads and adds them to the postdissector's `wanted`. */
void l2p_quic_bytes_handoff(GArray *wanted);

/* First pass: adds the datagram's bytes by part, read from the tree, to `parts` (QB_PARTS),
 * but the STREAM data; only link_ip and udp_header (and, if `undecrypted_part`, the UDP payload
 * as QB_UNDECRYPTED) when `decrypted` is FALSE. */
void l2p_quic_bytes_read(packet_info *pinfo, proto_tree *tree, gboolean decrypted, gboolean undecrypted_part,
                         gint64 *parts);

/* `parts` without its zeros, in `scope`. */
l2p_quic_bytes_t *l2p_quic_bytes_keep(wmem_allocator_t *scope, const gint64 *parts);

/* Reports each part to the budget, for pinfo's sender (or its receiver if `reverse`). */
void l2p_quic_bytes_report(packet_info *pinfo, const gint64 *parts, gboolean reverse);
void l2p_quic_bytes_report_kept(packet_info *pinfo, const l2p_quic_bytes_t *b);

/* Every pass: `retransmitted` bytes of STREAM data the streams did not take. */
void l2p_quic_bytes_report_retransmitted(packet_info *pinfo, gint64 retransmitted);

#endif /* P2PC_LIBP2P_QUIC_BYTES_H */
