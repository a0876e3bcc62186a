"""FISCO BCOS 3.x P2P: message encoding, the session, and the peer that plays it.

Wire format (FISCO-BCOS v3.16.4; docs/fisco.md), all big-endian:
- bcos-gateway/libp2p/P2PMessage.cpp: Length u32 (the whole message) | Version u16 |
  PacketType u16 | Seq u32 | Ext u16, then for PeerToPeerMessage (5) and BroadcastMessage (6)
  the options: groupID (u16 length + bytes), src nodeID (u16 length + bytes), dst count u8 and
  that many dst nodeIDs (each of the src's length), moduleID u16; then the payload.  With
  compression on, a payload over c_compressThreshold (1024 B) of a message of Version >= V2 is
  replaced by ZSTD_compress(level c_zstdCompressLevel = 1) output and Ext gets COMPRESS (0x10),
  whatever the output's size.  Only the payload is compressed.
- bcos-gateway/libp2p/P2PMessageV2.cpp: from Version V1 on, the 14-byte header is followed by
  TTL i16 (10), srcP2PNodeID and dstP2PNodeID (u16 length + bytes each).  Which IDs go there is
  ServiceV2::resetP2pID's choice, by the session's negotiated version: below V3 the raw P2P ID
  (the gateway's public key as hex text, 128 characters), from V3 the short one
  (GatewayConfig::calculateShortNodeID: the 32-byte hash of that text; SM3 here, the national-
  crypto hash, which Python's hashlib has; keccak256 otherwise).
- bcos-front/FrontMessage.cpp: the payload of messages 5 and 6 is moduleID u16 | uuid (u8
  length + bytes) | ext u16 (Response 0x0001) | the module's payload.
- Module payloads: bcos-txpool TxsSync.proto TxsSyncMessage{version, type, txsData, txsHash}
  (txsData a tars Block of the transactions), bcos-sync BlockSync.proto BlockSyncMessage
  (status: number, hash, genesisHash; blocks: blocksData, tars Blocks); tars structs from
  bcos-tars-protocol/tars/{Block,Transaction,ProtocolInfo}.tars.  protobuf is Google's library;
  tars has no Python library, so TarsOutputStream's rules are written out below.
- Handshake (packet type 2) goes first at Version V0 with a tars ProtocolInfo{moduleID,
  minVersion, maxVersion}; Service::onReceiveProtocol negotiates min(local max, peer's max)
  (v3.16.4's gateway: V0..V3, GlobalConfig.h; older gateways stop at V1 or V2).  Messages sent
  through Service::sendMessageToSession then carry the negotiated version; heartbeats
  (P2PSession::heartBeat) stay at V0, and so do PBFT broadcasts (Gateway::broadcastMessage, the
  coroutine path: a fresh V0 message, Ext = the node type, never compressed, sent through
  Session::fastSendMessage).

Over TLS (`fisco3-tls`), as production gateways run (bcos-boostssl ContextBuilder.cpp: TLS 1.2,
mutual certificates, OpenSSL's defaults otherwise; the SM variant, TASSL/Tongsuo's NTLS, is not
made here: docs/libp2p-decryption.md), with Python's ssl (OpenSSL) writing the NSS key log
(`SSLContext.keylog_filename`).  There node a listens and speaks first, and the writes vary in
size (`write_plan`): several messages in one write, one message cut into three writes (its
header split), and messages over TLS's 16 KiB record, which OpenSSL cuts.

    python3 fisco3.py SESSION a|b HOST PORT [hold]   (hold: a connects, then waits for a line on stdin)
    python3 fisco3.py SESSION a|b HOST PORT tls CERTDIR KEYLOG|-   (a listens, b dials)
"""
from __future__ import annotations

import hashlib
import random
import socket
import struct
import sys
from dataclasses import dataclass
from pathlib import Path

import zstandard
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from fisco import tls_context
from peerio import connect_retry, recv_exact

HEADER = struct.Struct(">IHHIH")
COMPRESS, RESPONSE, CONSENSUS_NODE = 0x10, 0x01, 0x02
THRESHOLD = 1024
ZSTD_LEVEL = 1
HEARTBEAT, HANDSHAKE, P2P, BROADCAST, ROUTER_SEQ = 0x1, 0x2, 0x5, 0x6, 0xa
PBFT, BLOCKSYNC, TXSSYNC = 1000, 2000, 2001
GATEWAY_TYPES = {0x1: "Heartbeat", 0x2: "Handshake", 0x3: "RequestNodeStatus", 0x4: "ResponseNodeStatus",
                 0x5: "PeerToPeerMessage", 0x6: "BroadcastMessage", 0x7: "AMOPMessageType",
                 0x8: "WSMessageType", 0x9: "SyncNodeSeq", 0xa: "RouterTableSyncSeq",
                 0xb: "RouterTableResponse", 0xc: "RouterTableRequest", 0xd: "ForwardMessage"}
MODULES = {PBFT: "PBFT", BLOCKSYNC: "BlockSync", TXSSYNC: "TxsSync"}
GROUP = b"group0"
TTL = 10
GATEWAY_SERVICE = 1       # ProtocolModuleID::GatewayService
HASH_NODEID_MAX_SIZE = 33  # GatewayTypeDef.h: longer P2P IDs are raw (ServiceV2 isRawP2pID)


# ---- tars (TarsOutputStream): head = tag << 4 | type (tag >= 15: 0xF0 | type, then tag) ----
def _head(tag: int, typ: int) -> bytes:
    return bytes([tag << 4 | typ]) if tag < 15 else bytes([0xF0 | typ, tag])


def t_int(tag: int, v: int) -> bytes:
    if v == 0:
        return _head(tag, 12)
    for typ, fmt, lo in ((0, ">b", -0x80), (1, ">h", -0x8000), (2, ">i", -0x80000000)):
        if lo <= v < -lo:
            return _head(tag, typ) + struct.pack(fmt, v)
    return _head(tag, 3) + struct.pack(">q", v)


def t_str(tag: int, s: str) -> bytes:
    b = s.encode()
    return (_head(tag, 6) + bytes([len(b)]) if len(b) <= 255 else _head(tag, 7) + struct.pack(">I", len(b))) + b


def t_bytes(tag: int, b: bytes) -> bytes:
    """vector<byte>: SimpleList (13), a char head, the length as int tag 0, the bytes."""
    return _head(tag, 13) + _head(0, 0) + t_int(0, len(b)) + b


def t_list(tag: int, items: list[bytes]) -> bytes:
    """vector<T>: list (9), the count as int tag 0, each element written with tag 0."""
    return _head(tag, 9) + t_int(0, len(items)) + b"".join(items)


def t_struct(tag: int, body: bytes) -> bytes:
    return _head(tag, 10) + body + _head(0, 11)


# ---- protobuf messages, built from their .proto definitions ----
def _proto_classes():
    f = descriptor_pb2.FileDescriptorProto(name="fisco3.proto", package="bcos.sync", syntax="proto3")
    T = descriptor_pb2.FieldDescriptorProto
    specs = {"TxsSyncMessage": [("version", 1, T.TYPE_INT32, 1), ("type", 2, T.TYPE_INT32, 1),
                                ("txsData", 3, T.TYPE_BYTES, 1), ("txsHash", 4, T.TYPE_BYTES, 3)],
             "BlockSyncMessage": [("version", 1, T.TYPE_INT32, 1), ("packetType", 2, T.TYPE_INT32, 1),
                                  ("number", 3, T.TYPE_INT64, 1), ("hash", 4, T.TYPE_BYTES, 1),
                                  ("genesisHash", 5, T.TYPE_BYTES, 1), ("size", 6, T.TYPE_INT64, 1),
                                  ("blocksData", 7, T.TYPE_BYTES, 3), ("time", 8, T.TYPE_INT64, 1)]}
    for name, fields in specs.items():
        m = f.message_type.add(name=name)
        for fname, num, typ, label in fields:
            m.field.add(name=fname, number=num, type=typ, label=label)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    return {n: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"bcos.sync.{n}")) for n in specs}


PB = _proto_classes()
TXS_PACKET, TXS_STATUS = 0, 1
BLOCK_STATUS, BLOCK_RESPONSE = 0, 2   # bcos-sync/utilities/Common.h BlockSyncPacketType


def make_tx(rng: random.Random, nonce: int) -> bytes:
    """A tars Transaction as the SDKs submit one: a transfer call to a Solidity contract."""
    to = "0x%040x" % rng.getrandbits(160)
    selector = bytes.fromhex("a9059cbb")  # transfer(address,uint256)
    call = selector + bytes(12) + rng.getrandbits(160).to_bytes(20, "big") + rng.randrange(1, 10**6).to_bytes(32, "big")
    data = (t_int(1, 1) + t_str(2, "chain0") + t_str(3, GROUP.decode()) + t_int(4, 500 + nonce // 50)
            + t_str(5, str(rng.getrandbits(250))) + t_str(6, to) + t_bytes(7, call))
    return t_struct(0, t_struct(1, data) + t_bytes(2, rng.randbytes(32)) + t_bytes(3, rng.randbytes(65))
                    + t_int(4, 1716800000000 + nonce) + t_bytes(7, rng.randbytes(20)))


def tars_block(txs: list[bytes], number: int, rng: random.Random) -> bytes:
    """A tars Block: header (number, roots, timestamp, sealer) and the transactions."""
    hdr = t_struct(1, t_int(2, 0x03100400) + t_bytes(4, rng.randbytes(32)) + t_bytes(5, rng.randbytes(32))
                   + t_bytes(6, rng.randbytes(32)) + t_int(7, number) + t_int(9, 1716800000000 + number)
                   + t_int(10, number % 4))
    return t_int(1, 0x03100400) + t_struct(3, hdr + t_bytes(2, rng.randbytes(32))) + t_list(4, txs)


@dataclass
class Msg:
    side: str
    ptype: int
    payload: bytes          # the gateway payload before compression (a front message for 5/6)
    module: int | None = None
    seq: int = 0
    version: int = 2
    ext: int = 0            # before COMPRESS
    dst: int = 1            # dst nodeIDs in the options (0 for a broadcast)
    packet: str | None = None   # the module's packet type (TxsSyncPacketType, BlockSyncPacketType)
    batch: int = 1          # transactions a TxsPacket carries
    max_version: int | None = None  # a handshake's ProtocolInfo maxVersion

    @property
    def msg_type(self) -> str:
        if self.module is None:
            return GATEWAY_TYPES[self.ptype]
        return f"{MODULES[self.module]}.{self.packet}" if self.packet else MODULES[self.module]


class Node:
    def __init__(self, rng: random.Random):
        self.node_id = rng.randbytes(64)          # the group node's public key
        self.p2p_id = rng.randbytes(64).hex()     # the gateway's, as P2P node IDs are hex strings
        self.short_p2p_id = hashlib.new("sm3", self.p2p_id.encode()).digest()

    def p2p_id_for(self, negotiated: int) -> bytes:
        """ServiceV2::resetP2pID: the raw ID below V3, the short one from V3."""
        return self.short_p2p_id if negotiated >= 3 else self.p2p_id.encode()


def front(module: int, payload: bytes, uuid: str = "", response: bool = False) -> bytes:
    u = uuid.encode()
    return struct.pack(">HB", module, len(u)) + u + struct.pack(">H", RESPONSE if response else 0) + payload


def encode(m: Msg, src: Node, dst: Node, compress: bool, negotiated: int) -> tuple[bytes, int, bytes]:
    """The message on the wire, its header length (header, V1 fields, options) and the payload as sent."""
    ext = m.ext
    payload = m.payload
    if compress and m.version >= 2 and len(payload) > THRESHOLD:
        payload = zstandard.ZstdCompressor(level=ZSTD_LEVEL).compress(payload)
        ext |= COMPRESS
    extra = b""
    if m.version >= 1:
        sp, dp = src.p2p_id_for(negotiated), dst.p2p_id_for(negotiated)
        extra += struct.pack(">hH", TTL, len(sp)) + sp + struct.pack(">H", len(dp)) + dp
    if m.ptype in (P2P, BROADCAST):
        dsts = [dst.node_id] * m.dst
        extra += (struct.pack(">H", len(GROUP)) + GROUP + struct.pack(">H", len(src.node_id)) + src.node_id
                  + bytes([len(dsts)]) + b"".join(dsts) + struct.pack(">H", m.module))
    hlen = HEADER.size + len(extra)
    return HEADER.pack(hlen + len(payload), m.version, m.ptype, m.seq, ext) + extra + payload, hlen, payload


def protocol_info(max_version: int) -> bytes:
    """The handshake's payload: tars ProtocolInfo{moduleID, minVersion, maxVersion} (ProtocolInfo.tars),
    its fields written straight into the stream (ProtocolInfoCodecImpl::encode: writeTo, no struct head)."""
    return t_int(1, GATEWAY_SERVICE) + t_int(2, 0) + t_int(3, max_version)


def session(max_a: int, max_b: int, pbft: bool, rounds: int = 4, seed: int = 3016) -> list[Msg]:
    """Both handshakes, then `rounds` rounds of the session at the negotiated version; with `pbft`,
    a PBFT broadcast per round the way v3.16.4 sends one (Version V0, Ext CONSENSUS_NODE, never
    compressed).  `seed` picks the transactions, hashes and blocks."""
    rng = random.Random(seed)
    pbft_rng = random.Random(seed - 2016)
    nonce = 0
    v = min(max_a, max_b)
    # Heartbeats go straight to the session (P2PSession::heartBeat), not through
    # Service::sendMessageToSession: they keep the factory's Version V0, like the handshake.
    out = [Msg("a", HANDSHAKE, protocol_info(max_a), version=0, seq=1, max_version=max_a),
           Msg("b", HANDSHAKE, protocol_info(max_b), version=0, seq=1, max_version=max_b),
           Msg("a", HEARTBEAT, b"", version=0, seq=2), Msg("b", ROUTER_SEQ, struct.pack(">I", 7), version=v, seq=2)]
    seq = 10
    genesis = rng.randbytes(32)
    for rnd in range(rounds):
        for n in (1, 3, 30 + 20 * rnd):
            txs = [make_tx(rng, nonce + k) for k in range(n)]
            nonce += n
            pb = PB["TxsSyncMessage"](version=0, type=TXS_PACKET, txsData=tars_block(txs, 0, rng)).SerializeToString()
            out.append(Msg("a", BROADCAST, front(TXSSYNC, pb), module=TXSSYNC, seq=seq, dst=0,
                           packet="TxsPacket", batch=n, version=v))
            seq += 1
        hashes = [rng.randbytes(32) for _ in range(60)]
        pb = PB["TxsSyncMessage"](version=0, type=TXS_STATUS, txsHash=hashes).SerializeToString()
        out.append(Msg("b", P2P, front(TXSSYNC, pb), module=TXSSYNC, seq=seq, packet="TxsStatusPacket", version=v))
        pb = PB["BlockSyncMessage"](version=0, packetType=BLOCK_STATUS, number=100 + rnd, hash=rng.randbytes(32),
                                    genesisHash=genesis, time=1716800000000 + rnd).SerializeToString()
        out.append(Msg("b", BROADCAST, front(BLOCKSYNC, pb), module=BLOCKSYNC, seq=seq + 1, dst=0,
                       packet="BlockStatusPacket", version=v))
        blocks = [tars_block([make_tx(rng, nonce + k) for k in range(40)], 100 + rnd, rng)]
        nonce += 40
        pb = PB["BlockSyncMessage"](version=0, packetType=BLOCK_RESPONSE, number=100 + rnd, size=1,
                                    blocksData=blocks).SerializeToString()
        uuid = "%08x-%04x-%04x-%04x-%012x" % (rng.getrandbits(32), rng.getrandbits(16), rng.getrandbits(16),
                                              rng.getrandbits(16), rng.getrandbits(48))
        out.append(Msg("b", P2P, front(BLOCKSYNC, pb, uuid, response=True), module=BLOCKSYNC, seq=seq + 2,
                       ext=RESPONSE, packet="BlockResponsePacket", version=v))
        out.append(Msg("a", HEARTBEAT, b"", version=0, seq=seq + 3))
        seq += 4
        if pbft:
            out.append(Msg("a", BROADCAST, front(PBFT, pbft_rng.randbytes(600 + 700 * rnd)), module=PBFT,
                           seq=seq, dst=0, ext=CONSENSUS_NODE, version=0))
            seq += 1
    return out


def nodes() -> dict[str, Node]:
    rng = random.Random(33)
    return {"a": Node(rng), "b": Node(rng)}


def sessions() -> dict[str, dict]:
    """Each capture: compression, the two gateways' ProtocolInfo maxVersion, PBFT broadcasts."""
    return {"fisco3-on": {"compress": True, "max": (2, 2), "pbft": False,
                          "desc": "3.x gateways at V2, enable_compress on: zstd over 1024 B"},
            "fisco3-off": {"compress": False, "max": (2, 2), "pbft": False,
                           "desc": "the same session with compression off"},
            "fisco3-v0": {"compress": True, "max": (3, 0), "pbft": True,
                          "desc": "a v3.16.4 gateway (V0..V3) and one that speaks V0 only: negotiated V0, "
                                  "no P2P IDs, no compression"},
            "fisco3-v1": {"compress": True, "max": (3, 1), "pbft": True,
                          "desc": "a v3.16.4 gateway and one that stops at V1: negotiated V1, raw P2P IDs "
                                  "(128 hex characters), no compression"},
            "fisco3-v3": {"compress": True, "max": (3, 3), "pbft": True,
                          "desc": "two v3.16.4 gateways: negotiated V3, short P2P IDs (32-byte SM3), zstd"},
            "fisco3-tls": {"compress": True, "max": (3, 3), "pbft": True, "tls": True,
                           "desc": "fisco3-v3's session inside TLS 1.2 (mutual secp256k1 certificates, OpenSSL's "
                                   "defaults as the gateway's boost tlsv12 context), node a listening and speaking "
                                   "first, writes of varied size; key log fisco3-tls.keys (Python ssl's "
                                   "keylog_filename)"}}


# ---- a multi-node layout: four nodes on one host, as build_chain.sh lays them out ----
# tools/BcosAirBuilder/build_chain.sh (deploy_nodes): node i of a host listens on
# p2p_listen_port + i (30300 + i by default), and every node's nodes.json lists every node of the
# chain.  Service::heartBeat (bcos-gateway/libp2p/Service.cpp) dials each listed node it has no
# session with, and Service::onConnect drops a second connection to a peer (DuplicatePeer): one
# session per pair survives, dialled by whichever node reached the other first.  The nodes here
# run three gateway releases (a rolling upgrade): two v3.16.4 gateways (V0..V3), one that stops
# at V2 and one that stops at V1, so the six pairs negotiate V3, V2 and V1 (and every session
# sends V0 handshakes, heartbeats and PBFT broadcasts).  Of each pair, the node listed first
# dials: low ports dial high ones and high ports low ones.
LAYOUT_PORT = 30300
LAYOUT_MAX = (3, 2, 3, 1)                       # node i's ProtocolInfo maxVersion
LAYOUT_PAIRS = ((0, 1), (2, 0), (0, 3), (1, 2), (3, 1), (3, 2))   # (dialer, listener)
LAYOUT_ROUNDS = 2


def layout_nodes() -> list[Node]:
    rng = random.Random(30300)
    return [Node(rng) for _ in LAYOUT_MAX]


def layout_sessions() -> dict[str, dict]:
    """The layout's sessions, named by dialer and listener: the dialer plays side a."""
    out = {}
    for k, (d, l) in enumerate(LAYOUT_PAIRS):
        out[f"layout-{d}-{l}"] = {"compress": True, "max": (LAYOUT_MAX[d], LAYOUT_MAX[l]), "pbft": True,
                                  "nodes": (d, l), "rounds": LAYOUT_ROUNDS, "seed": 3016 + k,
                                  "port": LAYOUT_PORT + l}
    return out


def spec_of(name: str) -> dict:
    return sessions().get(name) or layout_sessions()[name]


def session_nodes(name: str) -> dict[str, Node]:
    """Side a's and side b's identities: the two-peer captures' pair, or the layout's nodes."""
    spec = spec_of(name)
    if "nodes" not in spec:
        return nodes()
    n = layout_nodes()
    return {"a": n[spec["nodes"][0]], "b": n[spec["nodes"][1]]}


def wire_messages(name: str) -> list[tuple[Msg, bytes, int, bytes]]:
    spec = spec_of(name)
    n = session_nodes(name)
    max_a, max_b = spec["max"]
    msgs = session(max_a, max_b, spec["pbft"], spec.get("rounds", 4), spec.get("seed", 3016))
    return [(m, *encode(m, n[m.side], n["b" if m.side == "a" else "a"], spec["compress"], min(max_a, max_b)))
            for m in msgs]


def write_plan(msgs: list[tuple[Msg, bytes, int, bytes]], side: str) -> list[tuple[int, list[bytes]]]:
    """The writes of side's messages, each after the peer's messages before it are read: (index of
    the message the write ends with, the writes).  Past the handshakes (each sent whole: the
    connection's first bytes say its version), every third message of a run goes out with the
    next one in one write and every third after that in three writes, its header cut after 7
    bytes."""
    plan, pending = [], b""
    for i, (m, wire, _, _) in enumerate(msgs):
        if m.side != side:
            continue
        pending += wire
        joined = i + 1 < len(msgs) and msgs[i + 1][0].side == side and m.ptype != HANDSHAKE
        if joined and i % 3 == 2:
            continue
        if m.ptype != HANDSHAKE and i % 3 == 1 and len(pending) > 14:
            plan.append((i, [pending[:7], pending[7:len(pending) // 2], pending[len(pending) // 2:]]))
        else:
            plan.append((i, [pending]))
        pending = b""
    return plan


def accept_one(port: int) -> socket.socket:
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("0.0.0.0", port))
    srv.listen(1)
    print("listening", flush=True)     # a layout's dialer starts now: no refused SYN first
    sock, (_, peer_port) = srv.accept()
    # The port is free for the next session a layout node accepts; say whose this one is.
    srv.close()
    print(f"accepted {peer_port}", flush=True)
    return sock


def peer_tls(name: str, side: str, host: str, port: int, certdir: Path, keylog: Path | None) -> None:
    """A TLS session: a listens (the TLS server), b dials; both read until the other has closed."""
    sock = accept_one(port) if side == "a" else connect_retry(host, port)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock = tls_context(side, side == "a", certdir, keylog, fisco2=False).wrap_socket(sock, server_side=side == "a")
    msgs = wire_messages(name)
    read = 0
    for upto, writes in write_plan(msgs, side):
        for m, wire, _, _ in msgs[read:upto]:
            if m.side != side:
                length = HEADER.unpack(recv_exact(sock, HEADER.size))[0]
                recv_exact(sock, length - HEADER.size)
        read = upto + 1
        for w in writes:
            sock.sendall(w)
    for m, _, _, _ in msgs[read:]:
        if m.side != side:
            length = HEADER.unpack(recv_exact(sock, HEADER.size))[0]
            recv_exact(sock, length - HEADER.size)
    sock = sock.unwrap()                # close_notify both ways, then FIN
    sock.close()


def peer(name: str, side: str, host: str, port: int, hold: bool = False) -> None:
    if side == "b":
        sock = accept_one(port)
    else:
        sock = connect_retry(host, port)
        if hold:    # a layout's sessions start together, once every node has connected
            sys.stdin.readline()
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    for m, wire, _, _ in wire_messages(name):
        if m.side == side:
            sock.sendall(wire)
        else:
            length = HEADER.unpack(recv_exact(sock, HEADER.size))[0]
            recv_exact(sock, length - HEADER.size)
    sock.shutdown(socket.SHUT_WR)
    while sock.recv(4096):
        pass
    sock.close()


if __name__ == "__main__":
    if sys.argv[5:6] == ["tls"]:
        peer_tls(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), Path(sys.argv[6]),
                 None if sys.argv[7] == "-" else Path(sys.argv[7]))
    else:
        peer(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5:] == ["hold"])
