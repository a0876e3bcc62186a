"""FISCO BCOS 2.x P2P messages, two peers, and the capture sessions.

Wire format: docs/fisco.md (FISCO-BCOS v2.x libp2p/P2PMessageRC2): a 16-byte big-endian header
(Length incl. header, Version with bit 15 = Snappy, GroupID, ModuleID, PacketType, Seq) and the
data; Snappy (python-snappy: the raw block format with its varint length, as libsnappy) when
compression is on and the data is over 1024 bytes, sent even when larger.  Transactions use
FISCO 2.x's RLP encoding (nonce, gasPrice, gas, to, value, data, blockLimit, chainId, groupId,
extraData, v, r, s), with deterministic pseudo-random nonces and signatures.

    python3 fisco.py peer SESSION a|b HOST PORT [tls]
"""
from __future__ import annotations

import hashlib
import random
import socket
import ssl
import struct
import sys
from dataclasses import dataclass
from pathlib import Path

import snappy

from peerio import connect_retry, recv_exact as _recv_exact

COMPRESS_FLAG = 0x8000
THRESHOLD = 1024
AMOP, TOPIC, PBFT, BLOCKSYNC, RAFT = 1, 2, 8, 9, 11


# ---- RLP ----
def rlp(x) -> bytes:
    if isinstance(x, int):
        x = x.to_bytes((x.bit_length() + 7) // 8, "big") if x else b""
    if isinstance(x, bytes):
        if len(x) == 1 and x[0] < 0x80:
            return x
        return _rlp_len(len(x), 0x80) + x
    body = b"".join(rlp(i) for i in x)
    return _rlp_len(len(body), 0xC0) + body


def _rlp_len(n: int, base: int) -> bytes:
    if n <= 55:
        return bytes([base + n])
    b = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([base + 55 + len(b)]) + b


# ---- realistic 2.x content ----
def tx(rng: random.Random, i: int, contract: bytes) -> bytes:
    to = rng.randbytes(20) if i % 7 == 0 else contract
    selector = bytes.fromhex("a9059cbb")   # transfer(address,uint256)
    data = selector + b"\0" * 12 + rng.randbytes(20) + rng.randrange(1, 10**9).to_bytes(32, "big")
    return rlp([rng.getrandbits(250), 30_000_000, 30_000_000, to, 0, data, 500 + i // 50, 1, 1, b"",
                0x1B + rng.randrange(2), rng.randbytes(32), rng.randbytes(32)])


def block(rng: random.Random, number: int, txs: list[bytes], sealers: list[bytes]) -> bytes:
    header = [rng.randbytes(32), rng.randbytes(32), rng.randbytes(32), rng.randbytes(32), b"\0" * 256,
              number, 300_000_000, 21_000 * len(txs), 1_600_000_000_000 + number * 1000, [], 0,
              sealers]
    return rlp([header, [_raw(t) for t in txs], rng.randbytes(32), [[i, rng.randbytes(65)] for i in range(len(sealers))]])


class _raw(bytes):
    """An already-encoded RLP item."""


_rlp_plain = rlp


def rlp(x) -> bytes:  # noqa: F811 - extend the encoder with pre-encoded items
    if isinstance(x, _raw):
        return bytes(x)
    if isinstance(x, list):
        body = b"".join(rlp(i) for i in x)
        return _rlp_len(len(body), 0xC0) + body
    return _rlp_plain(x)


# ---- messages ----
@dataclass
class Msg:
    side: str               # "a" or "b": who sends it
    module: int
    ptype: int
    seq: int
    data: bytes             # uncompressed payload
    group: int = 1
    response: bool = False  # negative ProtocolID (-module)
    expect: str = ""        # the msg_type the dissector should show
    batch: int = 1
    force: bytes | None = None   # bytes to send instead (malformed cases)
    note: str = ""

    def wire(self, compress: bool, rc1: bool = False) -> tuple[bytes, bool, bytes]:
        payload, flag = self.data, False
        if rc1:
            pid = -self.module if self.response else (self.group << 8) | self.module
            return struct.pack(">IhHI", 12 + len(payload), pid, self.ptype, self.seq) + payload, False, payload
        if compress and len(payload) > THRESHOLD:
            payload, flag = snappy.compress(payload), True
        if self.response:
            gm = struct.pack(">i", -self.module)
        else:
            gm = struct.pack(">hH", self.group, self.module)
        hdr = struct.pack(">IH", 16 + len(payload), COMPRESS_FLAG if flag else 0) + gm + struct.pack(">HI", self.ptype, self.seq)
        return hdr + payload, flag, payload


def pbft(packet_id: int, ttl: int, data: bytes) -> bytes:
    return rlp([rlp(packet_id) + rlp(ttl) + rlp(data)])


def workload(seed: int = 2011) -> list[Msg]:
    rng = random.Random(seed)
    contract = rng.randbytes(20)
    sealers = [rng.randbytes(64) for _ in range(4)]
    seq = iter(range(2, 1_000_000))
    msgs: list[Msg] = []
    # Topic heartbeats and topic exchange.
    msgs.append(Msg("a", TOPIC, 1, 0, b"3", expect="Topic.SendTopicSeq"))
    msgs.append(Msg("b", TOPIC, 1, 0, b"5", expect="Topic.SendTopicSeq"))
    s = next(seq)
    msgs.append(Msg("a", TOPIC, 2, s, b"", expect="Topic.RequestTopics"))
    msgs.append(Msg("b", TOPIC, 3, s, b"5\tfisco.amop.demo\tprice-feed\tsettlement", response=True,
                    expect="Topic.SendTopics.Response"))
    # Serial transfers: transactions arriving one by one.
    for i in range(60):
        t = tx(rng, i, contract)
        msgs.append(Msg("a", BLOCKSYNC, 0, next(seq), bytes([2]) + rlp([_raw(t)]), expect="BlockSync.Transactions"))
    # Parallel bulk transfers: large transaction batches.
    for b in range(4):
        txs = [tx(rng, 1000 + b * 200 + i, contract) for i in range(200)]
        msgs.append(Msg("a" if b % 2 == 0 else "b", BLOCKSYNC, 0, next(seq), bytes([2]) + rlp([_raw(t) for t in txs]),
                        expect="BlockSync.Transactions", batch=200))
    # Block sync: status, request, blocks.
    msgs.append(Msg("b", BLOCKSYNC, 0, next(seq), bytes([1]) + rlp([100, rng.randbytes(32), rng.randbytes(32)]),
                    expect="BlockSync.Status"))
    msgs.append(Msg("a", BLOCKSYNC, 0, next(seq), bytes([4]) + rlp([101, 3]), expect="BlockSync.ReqBlocks"))
    blocks = [_raw(block(rng, 101 + k, [tx(rng, 5000 + k * 100 + i, contract) for i in range(100)], sealers))
              for k in range(3)]
    msgs.append(Msg("b", BLOCKSYNC, 0, next(seq), bytes([3]) + rlp(blocks), expect="BlockSync.Blocks"))
    # PBFT rounds.
    for r in range(3):
        prep = block(rng, 104 + r, [tx(rng, 9000 + r * 50 + i, contract) for i in range(50)], sealers)
        msgs.append(Msg("a", PBFT, 0, next(seq), pbft(0, 2, prep), expect="PBFT.Prepare"))
        for side in ("a", "b"):
            msgs.append(Msg(side, PBFT, 0, next(seq), pbft(1, 2, rlp([104 + r, rng.randbytes(32), rng.randbytes(65)])),
                            expect="PBFT.Sign"))
        for side in ("a", "b"):
            msgs.append(Msg(side, PBFT, 0, next(seq), pbft(2, 2, rlp([104 + r, rng.randbytes(32), rng.randbytes(65)])),
                            expect="PBFT.Commit"))
    msgs.append(Msg("b", PBFT, 0, next(seq), pbft(3, 2, rlp([7, 107, rng.randbytes(65)])), expect="PBFT.ViewChange"))
    # AMOP channel messages (42-byte channel header + data).
    for k in range(2):
        data = b"price-feed update " * (10 + 80 * k)
        chan = struct.pack(">IH", 42 + len(data), 0x30) + ("%032x" % rng.getrandbits(128)).encode() + struct.pack(">i", 0) + data
        msgs.append(Msg("a", AMOP, k % 2, next(seq), chan, expect="AMOP.Unicast" if k % 2 == 0 else "AMOP.Multicast"))
    # Raft heartbeat.
    msgs.append(Msg("b", RAFT, 0, next(seq), rlp(2) + rlp(rlp([108, rng.randbytes(64)])), expect="Raft.HeartBeat"))
    msgs.append(Msg("a", TOPIC, 1, 0, b"3", expect="Topic.SendTopicSeq"))
    return msgs


def malformed() -> list[Msg]:
    rng = random.Random(404)
    contract = rng.randbytes(20)
    txs = [tx(rng, i, contract) for i in range(120)]
    good = bytes([2]) + rlp([_raw(t) for t in txs])
    c = bytearray(snappy.compress(good))
    for pos in range(40, len(c), 997):
        c[pos] ^= 0x5A
    corrupt = struct.pack(">IHhHHI", 16 + len(c), COMPRESS_FLAG, 1, BLOCKSYNC, 0, 7) + bytes(c)
    small = bytes([2]) + rlp([_raw(txs[0])])
    sc = snappy.compress(small)
    small_msg = struct.pack(">IHhHHI", 16 + len(sc), COMPRESS_FLAG, 1, BLOCKSYNC, 0, 8) + sc
    unknown = struct.pack(">IHhHHI", 16 + 4, 0, 1, 42, 0, 9) + b"\0\1\2\3"
    bad_len = struct.pack(">IHhHHI", 8, 0, 1, BLOCKSYNC, 0, 10)
    return [
        Msg("a", TOPIC, 1, 0, b"3", expect="Topic.SendTopicSeq"),
        Msg("a", BLOCKSYNC, 0, 7, good, force=corrupt, note="Snappy data with flipped bytes", expect="fisco.decompress_failed"),
        Msg("a", BLOCKSYNC, 0, 8, small, force=small_msg, note="compressed payload of 1024 bytes or less",
            expect="fisco.small_compressed"),
        Msg("a", 42, 0, 9, b"\0\1\2\3", force=unknown, note="module 42", expect="fisco.unknown_module"),
        Msg("a", BLOCKSYNC, 0, 10, b"", force=bad_len, note="Length 8, below the header size", expect="fisco.length.invalid"),
    ]


def sessions() -> dict:
    return {
        "fisco-compressed": dict(msgs=workload, compress=True, desc="enable_compress on: every workload"),
        "fisco-plain": dict(msgs=workload, compress=False, desc="enable_compress off: the same workload"),
        "fisco-tls": dict(msgs=workload, compress=True, tls=True,
                          desc="the compressed workload inside TLS 1.2, key log embedded (editcap --inject-secrets)"),
        "fisco-rc1": dict(msgs=lambda: [m for m in workload() if m.module in (TOPIC, BLOCKSYNC)][:12], compress=False,
                          rc1=True, desc="v2.0.0-rc1 12-byte headers (open with -o fisco.rc1:TRUE)"),
        "fisco-malformed": dict(msgs=malformed, compress=True, desc="corrupted Snappy, small compressed payload, "
                                "unknown module, a Length below the header size"),
    }


# ---- peers ----
def tls_context(side: str, certdir: Path, keylog: Path | None) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT if side == "a" else ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_REQUIRED   # mutual certificates, as FISCO nodes use
    ctx.load_verify_locations(certdir / "ca.crt")
    ctx.load_cert_chain(certdir / f"node{side}.crt", certdir / f"node{side}.key")
    ctx.set_ciphers("ECDHE-ECDSA-AES128-GCM-SHA256")
    if keylog:
        ctx.keylog_filename = str(keylog)
    return ctx


def peer(name: str, side: str, host: str, port: int, certdir: str | None, keylog: str | None) -> None:
    s = sessions()[name]
    msgs = s["msgs"]()
    if side == "b":
        srv = socket.create_server(("0.0.0.0", port))
        sock, _ = srv.accept()
    else:
        sock = connect_retry(host, port)
    if certdir:
        ctx = tls_context(side, Path(certdir), Path(keylog) if keylog and side == "a" else None)
        sock = ctx.wrap_socket(sock, server_side=(side == "b"))
    hlen = 12 if s.get("rc1") else 16
    for m in msgs:
        if m.side == side:
            sock.sendall(m.force if m.force is not None else m.wire(s["compress"], s.get("rc1", False))[0])
        elif m.force is None:
            hdr = _recv_exact(sock, hlen)
            _recv_exact(sock, struct.unpack(">I", hdr[:4])[0] - hlen)
    # A closes after its last message; B reads whatever is left until A has closed.
    try:
        if side == "a":
            import time
            time.sleep(0.5)
        else:
            while sock.recv(65536):
                pass
        sock.close()
    except OSError:
        pass


if __name__ == "__main__":
    peer(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]),
         sys.argv[5] if len(sys.argv) > 5 and sys.argv[5] != "-" else None,
         sys.argv[6] if len(sys.argv) > 6 else None)
