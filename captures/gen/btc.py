"""Bitcoin v1 messages with BUIP017 datastream compression, two peers, and the capture sessions.

Wire format: ../../docs/bitcoin.md (BUIP017, ptschip/bitcoin branch BUIP017_compress).  LZO1X
comes from liblzo2 itself (ctypes: raw lzo1x_1/lzo1x_999 output, no header, as BUIP017 sends
it); zlib from Python's zlib (level 6, as the 2015 PR).

Each session is built deterministically from the real blocks in captures/data/bitcoin, so the
generator's truth file and both peers agree on every byte.

    python3 btc.py peer-b SESSION PORT          # listener, in namespace B
    python3 btc.py peer-a SESSION HOST PORT     # connector and sender, in namespace A
"""
from __future__ import annotations

import bz2
import math
import ctypes
import hashlib
import random
import socket
import struct
import sys
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from peerio import connect_retry, recv_exact as _recv_exact

DATA = Path(__file__).resolve().parents[1] / "data" / "bitcoin"
MAGIC_MAIN = bytes.fromhex("f9beb4d9")
NODE_NETWORK = 1
NODE_COMPRESS = 1 << 5          # BUIP017
NODE_COMPRESS_2015 = 1 << 28    # the 2015 test builds (unverified, per the BIP draft thread)
MSG_TX, MSG_BLOCK = 1, 2
MSG_XTHINBLOCK = 5              # BUIP010 (MSG_THINBLOCK 4)

# ---- LZO1X through liblzo2 ----
_lzo = ctypes.CDLL("liblzo2.so.2")
_LZO1X_1_MEM = 16384 * ctypes.sizeof(ctypes.c_void_p)
_LZO1X_999_MEM = 14 * 16384 * ctypes.sizeof(ctypes.c_short)


def _lzo_call(fn, mem: int, data: bytes) -> bytes:
    out = ctypes.create_string_buffer(len(data) + len(data) // 16 + 64 + 3)
    out_len = ctypes.c_ulong(0)
    wrk = ctypes.create_string_buffer(mem)
    rc = fn(data, ctypes.c_ulong(len(data)), out, ctypes.byref(out_len), wrk)
    if rc != 0:
        raise RuntimeError(f"lzo compress failed: {rc}")
    return out.raw[:out_len.value]


def lzo1x_1(data: bytes) -> bytes:
    return _lzo_call(_lzo.lzo1x_1_compress, _LZO1X_1_MEM, data)


def lzo1x_999(data: bytes) -> bytes:
    return _lzo_call(_lzo.lzo1x_999_compress, _LZO1X_999_MEM, data)


def lzo1x_decompress(data: bytes, bound: int) -> bytes:
    out = ctypes.create_string_buffer(bound)
    out_len = ctypes.c_ulong(bound)
    rc = _lzo.lzo1x_decompress_safe(data, ctypes.c_ulong(len(data)), out, ctypes.byref(out_len), None)
    if rc != 0:
        raise ValueError(f"lzo1x_decompress_safe: {rc}")
    return out.raw[:out_len.value]


# ---- serialization ----
def sha256d(b: bytes) -> bytes:
    return hashlib.sha256(hashlib.sha256(b).digest()).digest()


def varint(n: int) -> bytes:
    if n < 0xfd:
        return bytes([n])
    if n <= 0xffff:
        return b"\xfd" + struct.pack("<H", n)
    if n <= 0xffffffff:
        return b"\xfe" + struct.pack("<I", n)
    return b"\xff" + struct.pack("<Q", n)


def message(command: str, payload: bytes, checksum: bytes | None = None) -> bytes:
    ck = sha256d(payload)[:4] if checksum is None else checksum
    return MAGIC_MAIN + command.encode().ljust(12, b"\0") + struct.pack("<I", len(payload)) + ck + payload


def version_payload(services: int, nonce: int) -> bytes:
    addr = struct.pack("<Q", services) + b"\0" * 10 + b"\xff\xff" + bytes([192, 0, 2, 1]) + struct.pack(">H", 8333)
    ua = b"/p2pc-gen:0.1/"
    return (struct.pack("<iQq", 70012, services, 1_700_000_000) + addr + addr
            + struct.pack("<Q", nonce) + varint(len(ua)) + ua + struct.pack("<i", 413567) + b"\x01")


def inv_payload(items: list[tuple[int, bytes]]) -> bytes:
    return varint(len(items)) + b"".join(struct.pack("<I", t) + h for t, h in items)


def _rd_varint(b: bytes, o: int) -> tuple[int, int]:
    x = b[o]
    if x < 0xfd:
        return x, o + 1
    n = {0xfd: 2, 0xfe: 4, 0xff: 8}[x]
    return int.from_bytes(b[o + 1:o + 1 + n], "little"), o + 1 + n


_split_cache: dict[bytes, list[bytes]] = {}


def split_txs(block: bytes) -> list[bytes]:
    """The block's transactions (BIP 144 aware)."""
    key = sha256d(block[:80])
    if key not in _split_cache:
        _split_cache[key] = _split_txs(block)
    return _split_cache[key]


def _walk_tx(b: bytes, o: int) -> tuple[int, int, int, bool]:
    """One serialized transaction at o (BIP 144 aware): (end, inputs/outputs start, their end,
    segwit).  txid = SHA256d(version || inputs/outputs || locktime)."""
    o += 4
    segwit = b[o] == 0 and b[o + 1] == 1
    if segwit:
        o += 2
    io_start = o
    n_in, o = _rd_varint(b, o)
    for _ in range(n_in):
        o += 36
        k, o = _rd_varint(b, o)
        o += k + 4
    n_out, o = _rd_varint(b, o)
    for _ in range(n_out):
        o += 8
        k, o = _rd_varint(b, o)
        o += k
    io_end = o
    if segwit:
        for _ in range(n_in):
            items, o = _rd_varint(b, o)
            for _ in range(items):
                k, o = _rd_varint(b, o)
                o += k
    return o + 4, io_start, io_end, segwit


def _split_txs(block: bytes) -> list[bytes]:
    n, o = _rd_varint(block, 80)
    txs = []
    for _ in range(n):
        end = _walk_tx(block, o)[0]
        txs.append(block[o:end])
        o = end
    assert o == len(block)
    return txs


def txid(tx: bytes) -> bytes:
    """Internal byte order (as in inv); display order is reversed."""
    end, io_start, io_end, _ = _walk_tx(tx, 0)
    return sha256d(tx[:4] + tx[io_start:io_end] + tx[end - 4:end])


def display(h: bytes) -> str:
    return h[::-1].hex()


def load_block(name: str) -> bytes:
    return (DATA / name).read_bytes()


def mainnet_block(height: int) -> bytes:
    """A block from blocks1-255_framed.bz2 (blk*.dat framing: magic, LE32 length, block)."""
    d = bz2.decompress((DATA / "blocks1-255_framed.bz2").read_bytes())
    o, h = 0, 1
    while o < len(d):
        n = struct.unpack_from("<I", d, o + 4)[0]
        if h == height:
            return d[o + 8:o + 8 + n]
        o += 8 + n
        h += 1
    raise KeyError(height)


# ---- sessions ----
@dataclass
class Step:
    kind: str                    # "inv" (inv -> getdata -> messages), "send" (messages now), "ping"
    inv: list[tuple[int, bytes]]
    messages: list[tuple[str, bytes, bytes | None]]   # command, payload, forced checksum
    truth: list[dict]
    reply: tuple[str, bytes] | None = None   # what B answers the inv with instead of getdata


@dataclass
class Session:
    name: str
    services_a: int
    services_b: int
    steps: list[Step] = field(default_factory=list)
    description: str = ""


def _compress(codec: str, raw: bytes) -> bytes:
    return {"lzo1x": lzo1x_1, "lzo1x-999": lzo1x_999, "zlib": lambda b: zlib.compress(b, 6)}[codec](raw)


def _block_step(source: str, block: bytes, compress: str | None) -> Step:
    h = sha256d(block[:80])
    truth = {"source": source, "block_hash": display(h), "raw_len": len(block)}
    if compress:
        c = _compress(compress, block)
        if len(c) < len(block):
            truth.update(command="cblock", codec=compress.replace("-999", ""), payload_len=len(c))
            return Step("inv", [(MSG_BLOCK, h)], [("cblock", c, None)], [truth])
        truth["note"] = "compressed form not smaller: BUIP017 falls back to block"
    truth.update(command="block", codec="none", payload_len=len(block))
    return Step("inv", [(MSG_BLOCK, block[:0] + h)], [("block", block, None)], [truth])


def _tx_truth(source: str, idx: list[int], txs: list[bytes]) -> list[dict]:
    return [{"source": source, "index": i, "txid": display(txid(t)), "segwit": t[4] == 0 and t[5] == 1}
            for i, t in zip(idx, txs)]


def _batch_step(source: str, block: bytes, idx: list[int], compress: str | None) -> Step:
    """BUIP017 batching: txcat below 500 B or when compression does not shrink, else ctxcat.
    Without compression each transaction goes as its own `tx` (the baseline)."""
    all_txs = split_txs(block)
    txs = [all_txs[i] for i in idx]
    inv = [(MSG_TX, txid(t)) for t in txs]
    raw = b"".join(txs)
    items = _tx_truth(source, idx, txs)
    if compress is None:
        return Step("inv", inv, [("tx", t, None) for t in txs],
                    [{"command": "tx", "codec": "none", "payload_len": len(t), "raw_len": len(t),
                      "txs": [it]} for t, it in zip(txs, items)])
    c = _compress(compress, raw)
    if len(raw) >= 500 and len(c) < len(raw):
        return Step("inv", inv, [("ctxcat", c, None)],
                    [{"command": "ctxcat", "codec": compress, "payload_len": len(c), "raw_len": len(raw), "txs": items}])
    return Step("inv", inv, [("txcat", raw, None)],
                [{"command": "txcat", "codec": "none", "payload_len": len(raw), "raw_len": len(raw), "txs": items}])


def _single_tx_step(source: str, block: bytes, i: int) -> Step:
    t = split_txs(block)[i]
    return Step("inv", [(MSG_TX, txid(t))], [("tx", t, None)],
                [{"command": "tx", "codec": "none", "payload_len": len(t), "raw_len": len(t),
                  "txs": _tx_truth(source, [i], [t])}])


def _ping_step(nonce: int) -> Step:
    p = struct.pack("<Q", nonce)
    return Step("ping", [], [("ping", p, None)], [{"command": "ping", "codec": "none", "payload_len": 8, "raw_len": 8}])


def _workload(compress: str | None, big: bool = True) -> list[Step]:
    old = load_block("block413567.raw")
    seg = load_block("block702861_segwit.raw")
    tn = load_block("testnet3_block924634.raw")
    steps: list[Step] = []
    if big:
        steps.append(_block_step("block413567.raw", old, compress))
        steps.append(_block_step("block702861_segwit.raw", seg, compress))
    steps.append(_block_step("testnet3_block924634.raw", tn, compress))
    steps.append(_block_step("blocks1-255_framed.bz2#1", mainnet_block(1), compress))
    steps.append(_batch_step("block413567.raw", old, list(range(1, 41)), compress))
    steps.append(_batch_step("block702861_segwit.raw", seg, list(range(1, 61)), compress))
    # A small batch (< 500 B): txcat even when compressing.
    seg_txs = split_txs(seg)
    small = sorted(range(1, len(seg_txs)), key=lambda i: len(seg_txs[i]))[:2]
    steps.append(_batch_step("block702861_segwit.raw", seg, sorted(small), compress))
    # A batch of 500 B or more that LZO1X does not shrink (signatures and hashes): txcat.
    # (No real block in captures/data fails to shrink under LZO1X-1, so the block fallback
    # shows only in the generator's logic, not in the captures.)
    i = next(i for i in range(100, len(seg_txs) - 1)
             if len(seg_txs[i]) + len(seg_txs[i + 1]) >= 500
             and len(lzo1x_1(seg_txs[i] + seg_txs[i + 1])) >= len(seg_txs[i]) + len(seg_txs[i + 1]))
    steps.append(_batch_step("block702861_segwit.raw", seg, [i, i + 1], compress))
    for i in (41, 42):
        steps.append(_single_tx_step("block413567.raw", old, i))
    steps.append(_single_tx_step("block702861_segwit.raw", seg, 61))
    steps.append(_ping_step(0x70327063))
    return steps


def _malformed_steps() -> list[Step]:
    old = load_block("block413567.raw")
    seg = load_block("block702861_segwit.raw")
    txs = split_txs(seg)
    rng = random.Random(17)
    steps = []

    def send(cmd: str, payload: bytes, what: str, expect: str, checksum: bytes | None = None, **t):
        steps.append(Step("send", [], [(cmd, payload, checksum)],
                          [{"command": cmd, "payload_len": len(payload), "malformed": what, "expert": expect, **t}]))

    c = lzo1x_1(load_block("testnet3_block924634.raw"))
    send("cblock", c[:len(c) // 3], "truncated LZO1X (a third of the stream)", "btcc.decompress_failed",
         source="testnet3_block924634.raw")
    bad = bytearray(c)
    for pos in range(100, len(bad), 397):
        bad[pos] ^= 0xA5
    send("cblock", bytes(bad), "corrupted LZO1X (bytes flipped)", "btcc.decompress_failed|btcc.bad_tx",
         source="testnet3_block924634.raw")
    send("ctxcat", lzo1x_1(b"\0" * 2_000_000), "decompression bomb: 2,000,000 bytes > ctxcat bound 1,000,000",
         "btcc.bound_exceeded")
    send("cblock", lzo1x_1(b"\0" * 17_000_000), "decompression bomb: 17,000,000 bytes > cblock bound 16,000,000",
         "btcc.bound_exceeded")
    batch = b"".join(txs[1:6])
    garbage = bytes(rng.randrange(256) for _ in range(37))
    send("txcat", batch + garbage, "37 garbage bytes after 5 txs", "btcc.trailing",
         txs=_tx_truth("block702861_segwit.raw", list(range(1, 6)), txs[1:6]), garbage_len=37)
    batch2 = b"".join(txs[6:26])
    send("ctxcat", lzo1x_1(batch2 + garbage), "37 garbage bytes after 20 txs (inside the LZO stream)",
         "btcc.trailing", txs=_tx_truth("block702861_segwit.raw", list(range(6, 26)), txs[6:26]),
         garbage_len=37, raw_len=len(batch2) + 37)
    send("ping", struct.pack("<Q", 1), "header checksum mismatch", "btcc.bad_checksum", checksum=b"\xde\xad\xbe\xef")
    tiny = txs[min(range(1, len(txs)), key=lambda i: len(txs[i]))]
    tc = lzo1x_1(tiny)
    assert len(tc) >= len(tiny)
    send("ctxcat", tc, "compressed payload not smaller than the raw one", "p2pc.spec.buip017.not_smaller",
         raw_len=len(tiny))
    return steps


# ---- BUIP010 Xtreme Thinblocks, compressed by BUIP017 (cxthinblock, get_cxthin) ----
# Bitcoin Unlimited src/thinblock.h: CXThinBlock = header, vector<uint64_t> vTxHashes (each
# txid's GetCheapHash(): its first 8 bytes, little-endian), vector<CTransaction> vMissingTx (the
# transactions the requester's filter does not match).  get_xthin = CInv (MSG_XTHINBLOCK, block
# hash) and the requester's mempool as a BIP 37 CBloomFilter (vData, nHashFuncs, nTweak, nFlags).
def bloom_filter(items: list[bytes], n_elements: int, fp_rate: float, tweak: int) -> tuple[bytes, int]:
    """A BIP 37 filter sized for n_elements holding `items`: vData and nHashFuncs (CBloomFilter's
    sizing, capped at 36,000 bytes and 50 functions; MurmurHash3 from mmh3)."""
    import mmh3  # here, not at the top: tools/craft.py reuses message() where mmh3 is not installed
    n_bytes = min(int(-1 / math.log(2) ** 2 * n_elements * math.log(fp_rate) / 8), 36000)
    n_funcs = min(int(n_bytes * 8 / n_elements * math.log(2)), 50)
    bits = bytearray(n_bytes)
    for item in items:
        for i in range(n_funcs):
            b = mmh3.hash(item, (i * 0xFBA4C795 + tweak) & 0xFFFFFFFF, signed=False) % (n_bytes * 8)
            bits[b >> 3] |= 1 << (b & 7)
    return bytes(bits), n_funcs


def bloom_contains(vdata: bytes, n_funcs: int, tweak: int, item: bytes) -> bool:
    import mmh3
    for i in range(n_funcs):
        b = mmh3.hash(item, (i * 0xFBA4C795 + tweak) & 0xFFFFFFFF, signed=False) % (len(vdata) * 8)
        if not vdata[b >> 3] & (1 << (b & 7)):
            return False
    return True


def _xthin_step(source: str, block: bytes, every: int, tweak: int) -> Step:
    """B has every transaction but the coinbase and every `every`-th in its mempool: it asks
    for the block with get_cxthin (its mempool's filter), A answers with a cxthinblock.  The
    filter is sized for 8 times the transactions it holds (a mempool with room to grow): a
    filter at full density is random bits, which LZO1X cannot shrink, and BUIP017 would send
    a plain get_xthin."""
    h = sha256d(block[:80])
    txs = split_txs(block)
    ids = [txid(t) for t in txs]
    mempool = [ids[i] for i in range(1, len(txs)) if i % every]
    vdata, n_funcs = bloom_filter(mempool, 8 * len(mempool), 0.001, tweak)
    get_xthin = struct.pack("<I", MSG_XTHINBLOCK) + h + varint(len(vdata)) + vdata + struct.pack("<IIB", n_funcs, tweak, 1)
    missing = [i for i, t in enumerate(ids) if not bloom_contains(vdata, n_funcs, tweak, t)]
    xthin = (block[:80] + varint(len(ids)) + b"".join(t[:8] for t in ids)
             + varint(len(missing)) + b"".join(txs[i] for i in missing))
    cg, cx = lzo1x_1(get_xthin), lzo1x_1(xthin)
    assert len(cg) < len(get_xthin) and len(cx) < len(xthin)
    truth = [{"side": "b", "command": "get_cxthin", "codec": "lzo1x", "payload_len": len(cg), "raw_len": len(get_xthin),
              "inv_type": MSG_XTHINBLOCK, "block_hash": display(h), "filter_bytes": len(vdata),
              "hash_funcs": n_funcs, "tweak": tweak, "flags": 1},
             {"command": "cxthinblock", "codec": "lzo1x", "payload_len": len(cx), "raw_len": len(xthin),
              "source": source, "block_hash": display(h), "short_ids": [t[:8][::-1].hex() for t in ids],
              "missing": [{"index": i, "txid": display(ids[i])} for i in missing]}]
    return Step("inv", [(MSG_BLOCK, h)], [("cxthinblock", cx, None)], truth, reply=("get_cxthin", cg))


def sessions() -> dict[str, "callable"]:
    """Session builders by name (built on demand: each peer builds only its own)."""
    both = NODE_NETWORK | NODE_COMPRESS
    s = {
        "btc-compressed": lambda: Session("btc-compressed", both, both, _workload("lzo1x"),
                                  "both peers set NODE_COMPRESS (bit 5): cblock, ctxcat, txcat (small, and not shrinking), tx"),
        "btc-baseline": lambda: Session("btc-baseline", NODE_NETWORK, NODE_NETWORK, _workload(None),
                                "the same workload, compression off on both sides: block and single tx"),
        "btc-oneside": lambda: Session("btc-oneside", both, NODE_NETWORK, _workload(None, big=False),
                               "only the sender sets NODE_COMPRESS: nothing is compressed"),
        "btc-zlib2015": lambda: Session("btc-zlib2015", NODE_NETWORK | NODE_COMPRESS_2015, NODE_NETWORK | NODE_COMPRESS_2015,
                                [_block_step("block413567.raw", load_block("block413567.raw"), "zlib"),
                                 _batch_step("block702861_segwit.raw", load_block("block702861_segwit.raw"),
                                             list(range(1, 61)), "zlib"), _ping_step(2015)],
                                "2015 draft: zlib level 6 payloads, service bit 28"),
        "btc-small": lambda: Session("btc-small", both, both,
                                     [_block_step("testnet3_block924634.raw", load_block("testnet3_block924634.raw"), "lzo1x"),
                                      _batch_step("block413567.raw", load_block("block413567.raw"), list(range(1, 11)), "lzo1x"),
                                      _ping_step(7)],
                                     "a small negotiated session for hand-checked analyzer figures"),
        "btc-xthin": lambda: Session("btc-xthin", both, both,
                                     [_xthin_step("block413567.raw", load_block("block413567.raw"), 3, 9),
                                      _xthin_step("block702861_segwit.raw", load_block("block702861_segwit.raw"), 10, 5),
                                      _ping_step(10)],
                                     "BUIP010 thin blocks under BUIP017: B asks with get_cxthin, A sends cxthinblock"),
        "btc-malformed": lambda: Session("btc-malformed", both, both, _malformed_steps(),
                                 "negotiated connection carrying malformed BUIP017 messages"),
        "btc-not-negotiated": lambda: Session("btc-not-negotiated", NODE_NETWORK, NODE_NETWORK,
                                      [Step("send", [], [("cblock", lzo1x_1(load_block("testnet3_block924634.raw")), None)],
                                            [{"command": "cblock", "malformed": "cblock without negotiation",
                                              "expert": "p2pc.spec.buip017.not_negotiated", "source": "testnet3_block924634.raw"}]),
                                       _ping_step(3)],
                                      "neither peer sets the bit, yet a cblock is sent"),
    }
    return s


# ---- the peers ----
def recv_message(sock: socket.socket) -> tuple[str, bytes]:
    hdr = _recv_exact(sock, 24)
    n = struct.unpack_from("<I", hdr, 16)[0]
    return hdr[4:16].rstrip(b"\0").decode(), _recv_exact(sock, n)


def peer_b(session: Session, port: int) -> None:
    srv = socket.create_server(("0.0.0.0", port))
    conn, _ = srv.accept()
    cmd, _ = recv_message(conn)
    assert cmd == "version"
    conn.sendall(message("version", version_payload(session.services_b, 0xB)) + message("verack", b""))
    try:
        while True:
            cmd, payload = recv_message(conn)
            if cmd == "inv":
                step = next((st for st in session.steps if st.kind == "inv" and inv_payload(st.inv) == payload), None)
                if step is not None and step.reply:
                    conn.sendall(message(*step.reply))
                else:
                    conn.sendall(message("getdata", payload))
            elif cmd == "ping":
                conn.sendall(message("pong", payload))
    except (EOFError, ConnectionResetError):
        pass
    conn.close()


def peer_a(session: Session, host: str, port: int) -> None:
    sock = connect_retry(host, port)
    sock.sendall(message("version", version_payload(session.services_a, 0xA)))
    seen = set()
    while not {"version", "verack"} <= seen:
        seen.add(recv_message(sock)[0])
    sock.sendall(message("verack", b""))
    for step in session.steps:
        if step.kind == "inv":
            sock.sendall(message("inv", inv_payload(step.inv)))
            answer = step.reply[0] if step.reply else "getdata"
            while recv_message(sock)[0] != answer:
                pass
        for cmd, payload, ck in step.messages:
            sock.sendall(message(cmd, payload, ck))
        if step.kind == "ping":
            while recv_message(sock)[0] != "pong":
                pass
        elif step.kind == "send":
            time.sleep(0.3)     # > RTT: Nagle sends each malformed message in segments of its own
    # Close cleanly: stop sending, read what B still sends (pongs) until it closes too.
    sock.shutdown(socket.SHUT_WR)
    try:
        while sock.recv(65536):
            pass
    except OSError:
        pass
    sock.close()


if __name__ == "__main__":
    role, name = sys.argv[1], sys.argv[2]
    sess = sessions()[name]()
    if role == "peer-b":
        peer_b(sess, int(sys.argv[3]))
    else:
        peer_a(sess, sys.argv[3], int(sys.argv[4]))
