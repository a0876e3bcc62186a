"""Lumen, the example protocol of lua/examples/lumen.lua: its encoding, the session, and the peer.

Lumen is a toy chain's P2P protocol written for the p2pc Lua API (docs/lua-api.md): framed,
compressed and batched.  Every message is a 16-byte big-endian header and a payload:

    magic "LUMN" | version u8 (1) | type u8 | codec u8 | flags u8 (0) | length u32 | raw_len u32

length is the payload as sent, raw_len the payload before compression.  Types: 1 tx (one
transaction), 2 txbatch (u16 count, then count x (u16 len, tx)), 3 block (u64 height, u16 count,
count x (u16 len, tx)), 4 ping (u64 nonce).  Codecs: 0 none, 1 snappy (raw block,
python-snappy as libsnappy writes it), 2 zstd (one frame, zstandard), 3 deflate-stream (one raw
deflate stream per direction, Z_SYNC_FLUSH after each message's payload).

    python3 lumen.py a|b HOST PORT
"""
from __future__ import annotations

import json
import random
import socket
import struct
import sys
import zlib
from dataclasses import dataclass

import snappy
import zstandard

from peerio import connect_retry, recv_exact

MAGIC = b"LUMN"
HEADER = struct.Struct(">4sBBBBII")
TX, TXBATCH, BLOCK, PING = 1, 2, 3, 4
NONE, SNAPPY, ZSTD, DEFLATE_STREAM = 0, 1, 2, 3
TYPE_NAMES = {TX: "tx", TXBATCH: "txbatch", BLOCK: "block", PING: "ping"}
CODEC_NAMES = {NONE: "none", SNAPPY: "snappy", ZSTD: "zstd", DEFLATE_STREAM: "deflate-stream"}
# The example's bound on a message's decompressed payload (lumen.lua's MAX_RAW).
MAX_RAW = 1 << 20


def make_tx(rng: random.Random, i: int) -> bytes:
    """A transfer as the toy chain serialises it: a small JSON object (compressible, as real
    JSON-RPC-era chains' payloads are)."""
    return json.dumps({"from": "0x%040x" % rng.getrandbits(160), "to": "0x%040x" % rng.getrandbits(160),
                       "value": rng.randrange(1, 10**9), "nonce": i, "gas": 21000,
                       "memo": rng.choice(["", "rent", "salary", "coffee", "refund"])},
                      separators=(",", ":")).encode()


def items(txs: list[bytes]) -> bytes:
    return struct.pack(">H", len(txs)) + b"".join(struct.pack(">H", len(t)) + t for t in txs)


@dataclass
class Msg:
    side: str               # who sends it: "a" or "b"
    mtype: int
    codec: int
    raw: bytes              # the payload before compression
    batch: int = 1
    expect: str = "ok"      # "ok", or the failure the dissector must report ("corrupt", "bound")


class Encoder:
    """One direction's encoder: the deflate stream lives as long as the connection."""

    def __init__(self) -> None:
        self.deflate = zlib.compressobj(6, zlib.DEFLATED, -15)

    def payload(self, m: Msg) -> bytes:
        if m.codec == NONE:
            return m.raw
        if m.codec == SNAPPY:
            out = snappy.compress(m.raw)
            if m.expect == "corrupt":
                # After the length preamble (a varint), a copy whose offset reaches before the
                # start of the output: libsnappy rejects it.
                n = next(i for i, b in enumerate(out) if not b & 0x80) + 1
                out = out[:n] + bytes([0x02 | (3 << 2), 0xff, 0xff]) + out[n:]
            return out
        if m.codec == ZSTD:
            return zstandard.ZstdCompressor(level=3).compress(m.raw)
        return self.deflate.compress(m.raw) + self.deflate.flush(zlib.Z_SYNC_FLUSH)

    def frame(self, m: Msg) -> tuple[bytes, bytes]:
        """The message on the wire, and its payload as sent."""
        p = self.payload(m)
        return HEADER.pack(MAGIC, 1, m.mtype, m.codec, 0, len(p), len(m.raw)) + p, p


def session() -> list[Msg]:
    """The workload, in the order the peers send it (deterministic)."""
    rng = random.Random(1717)
    nonce = 0
    out: list[Msg] = [Msg("a", PING, NONE, struct.pack(">Q", rng.getrandbits(64))),
                      Msg("b", PING, NONE, struct.pack(">Q", rng.getrandbits(64)))]
    for round_ in range(6):
        # Single transactions, uncompressed (too small to gain), and one per round compressed.
        for _ in range(3):
            out.append(Msg("a", TX, NONE, make_tx(rng, nonce)))
            nonce += 1
        txs = [make_tx(rng, nonce + k) for k in range(40 + 10 * round_)]
        nonce += len(txs)
        out.append(Msg("a", TXBATCH, ZSTD, items(txs), batch=len(txs)))
        # The stream codec: each batch continues the direction's one deflate stream.
        txs = [make_tx(rng, nonce + k) for k in range(25)]
        nonce += len(txs)
        out.append(Msg("a", TXBATCH, DEFLATE_STREAM, items(txs), batch=len(txs)))
        block_txs = [make_tx(rng, nonce + k) for k in range(120)]
        nonce += len(block_txs)
        out.append(Msg("b", BLOCK, SNAPPY, struct.pack(">Q", 1000 + round_) + items(block_txs)))
        out.append(Msg("b", TXBATCH, DEFLATE_STREAM, items([make_tx(rng, nonce)]), batch=1))
        nonce += 1
    # Errors the dissector must report without stopping: a corrupt Snappy block, and a zstd
    # payload that would decompress past the example's bound (a bomb: 2 MiB of zeros).
    out.append(Msg("b", BLOCK, SNAPPY, struct.pack(">Q", 2000) + items([make_tx(rng, 0)]), expect="corrupt"))
    out.append(Msg("a", TXBATCH, ZSTD, bytes(2 * MAX_RAW), expect="bound"))
    out.append(Msg("a", PING, NONE, struct.pack(">Q", rng.getrandbits(64))))
    return out


def wire_messages() -> list[tuple[Msg, bytes, bytes]]:
    """Every message with its bytes on the wire and its payload as sent, each side's deflate
    stream encoded in order."""
    enc = {"a": Encoder(), "b": Encoder()}
    return [(m, *enc[m.side].frame(m)) for m in session()]


def peer(side: str, host: str, port: int) -> None:
    if side == "b":
        srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(("0.0.0.0", port))
        srv.listen(1)
        sock, _ = srv.accept()
    else:
        sock = connect_retry(host, port)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    # Both sides know the whole session: each sends its own messages and reads the other's,
    # in order, so each message goes out after the one before it arrived.
    for m, wire, _ in wire_messages():
        if m.side == side:
            sock.sendall(wire)
        else:
            hdr = recv_exact(sock, HEADER.size)
            recv_exact(sock, HEADER.unpack(hdr)[5])
    sock.shutdown(socket.SHUT_WR)
    while sock.recv(4096):
        pass
    sock.close()


if __name__ == "__main__":
    peer(sys.argv[1], sys.argv[2], int(sys.argv[3]))
