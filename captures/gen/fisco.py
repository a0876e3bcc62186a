"""FISCO BCOS 2.x P2P: message encoding, the workloads, and the peer that plays them.

Wire format (FISCO-BCOS v2.0.0-rc1 ... v2.11.1; docs/fisco.md): a 16-byte big-endian header
(Length incl. header, Version with bit 15 = Snappy, GroupID, ModuleID, PacketType, Seq) and the
data.  Snappy (python-snappy: the raw block format with its varint length preamble, as libsnappy
writes it) is applied when enable_compress is on and the data is over 1024 bytes, and the output
is sent even when it is larger (P2PMessageRC2::compress).  The rc1 header is 12 bytes.

Payloads follow the 2.x source:
- transactions: Transaction::encodeRC2, RLP [nonce, gasPrice, gas, blockLimit, to, value, data,
  chainId, groupId, extraData, v, r, s], nonce a random 250-bit number as the SDKs make it;
- BlockSync (libsync/SyncMsgPacket.cpp): a type byte (SyncPacketType + 1) and an RLP list;
  Transactions = [TxsParallelParser bytes] (u32 count, count+1 u32 offsets, the txs; little-endian),
  Blocks = [block bytes ...] with Block::encodeRC2 [header, txs (TxsParallelParser), hash,
  sigList, receipts];
- PBFT (libconsensus/pbft/Common.h): [ string(packet_id, ttl, data) ], data = PBFTMsg::encode
  = [ string(height, view, idx, timestamp, block_hash, sig, sig2 [, block]) ];
- Topic (libp2p/P2PSession.cpp): SendTopicSeq heartbeats with seq 0, RequestTopics answered by
  SendTopics with ProtocolID -2 and the request's seq;
- AMOP: a channel message (42-byte header: length, type, 32-char seq, result) as payload.

Workloads model the seed's stress tests: serial Solidity transfers (PerformanceOk.trans, txs
broadcast one by one, then packed into PBFT blocks) and parallel precompiled transfers
(DagTransfer.userTransfer, txs broadcast in large batches and packed into blocks), block sync,
topic heartbeats/AMOP/Raft.  Everything is deterministic (seeded).

    python3 fisco.py SESSION a|b HOST PORT [CERTDIR [KEYLOG]]
"""
from __future__ import annotations

import random
import socket
import ssl
import struct
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import snappy

from peerio import connect_retry, recv_exact

COMPRESS_FLAG = 0x8000
THRESHOLD = 1024
AMOP, TOPIC, PBFT, BLOCKSYNC, RAFT = 1, 2, 8, 9, 11
SYNC_STATUS, SYNC_TXS, SYNC_BLOCKS, SYNC_REQ, SYNC_TXS_STATUS, SYNC_TXS_REQ = 1, 2, 3, 4, 5, 6
GROUP = 1


# ---- Keccak-256 (for ABI selectors and addresses; hashlib's sha3 is the NIST variant) ----
_RC = [0x0000000000000001, 0x0000000000008082, 0x800000000000808A, 0x8000000080008000,
       0x000000000000808B, 0x0000000080000001, 0x8000000080008081, 0x8000000000008009,
       0x000000000000008A, 0x0000000000000088, 0x0000000080008009, 0x000000008000000A,
       0x000000008000808B, 0x800000000000008B, 0x8000000000008089, 0x8000000000008003,
       0x8000000000008002, 0x8000000000000080, 0x000000000000800A, 0x800000008000000A,
       0x8000000080008081, 0x8000000000008080, 0x0000000080000001, 0x8000000080008008]
_ROT = [[0, 36, 3, 41, 18], [1, 44, 10, 45, 2], [62, 6, 43, 15, 61], [28, 55, 25, 21, 56],
        [27, 20, 39, 8, 14]]
_M = (1 << 64) - 1


def _rol(x: int, n: int) -> int:
    return ((x << n) | (x >> (64 - n))) & _M if n else x


def keccak256(data: bytes) -> bytes:
    rate = 136
    msg = bytearray(data) + b"\x01"
    msg += b"\0" * (-len(msg) % rate)
    msg[-1] |= 0x80
    s = [[0] * 5 for _ in range(5)]
    for off in range(0, len(msg), rate):
        for i in range(rate // 8):
            s[i % 5][i // 5] ^= int.from_bytes(msg[off + 8 * i: off + 8 * i + 8], "little")
        for rc in _RC:
            c = [s[x][0] ^ s[x][1] ^ s[x][2] ^ s[x][3] ^ s[x][4] for x in range(5)]
            d = [c[(x - 1) % 5] ^ _rol(c[(x + 1) % 5], 1) for x in range(5)]
            s = [[s[x][y] ^ d[x] for y in range(5)] for x in range(5)]
            b = [[0] * 5 for _ in range(5)]
            for x in range(5):
                for y in range(5):
                    b[y][(2 * x + 3 * y) % 5] = _rol(s[x][y], _ROT[x][y])
            s = [[b[x][y] ^ (~b[(x + 1) % 5][y] & b[(x + 2) % 5][y]) for y in range(5)] for x in range(5)]
            s[0][0] ^= rc
    return b"".join(s[i % 5][i // 5].to_bytes(8, "little") for i in range(4))


def selector(sig: str) -> bytes:
    return keccak256(sig.encode())[:4]


# ---- RLP ----
class Raw(bytes):
    """An already-encoded RLP item (RLPStream::appendRaw)."""


def rlp(x) -> bytes:
    if isinstance(x, Raw):
        return bytes(x)
    if isinstance(x, int):
        x = x.to_bytes((x.bit_length() + 7) // 8, "big") if x else b""
    if isinstance(x, str):
        x = x.encode()
    if isinstance(x, (bytes, bytearray)):
        if len(x) == 1 and x[0] < 0x80:
            return bytes(x)
        return _rlp_len(len(x), 0x80) + bytes(x)
    body = b"".join(rlp(i) for i in x)
    return _rlp_len(len(body), 0xC0) + body


def _rlp_len(n: int, base: int) -> bytes:
    if n <= 55:
        return bytes([base + n])
    b = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([base + 55 + len(b)]) + b


def txs_parallel(txs: list[bytes]) -> bytes:
    """TxsParallelParser::encode: count, count+1 offsets into the tx bytes, the txs (u32, host
    order: little-endian on x86)."""
    if not txs:
        return b""
    offs, o = [], 0
    for t in txs:
        offs.append(o)
        o += len(t)
    offs.append(o)
    return struct.pack(f"<I{len(offs)}I", len(txs), *offs) + b"".join(txs)


# ---- realistic 2.x content ----
SDK_GAS_PRICE = SDK_GAS = 300_000_000      # the SDKs' defaults
DAG_TRANSFER = (0x5002).to_bytes(20, "big")  # DagTransferPrecompiled
SEL_TRANS = selector("trans(uint256)")                        # PerformanceOk
SEL_USER_TRANSFER = selector("userTransfer(string,string,uint256)")


def _abi_string(s: str) -> bytes:
    b = s.encode()
    return len(b).to_bytes(32, "big") + b + b"\0" * (-len(b) % 32)


def tx(rng: random.Random, kind: str, height: int, contract: bytes) -> bytes:
    """One signed 2.x transaction (encodeRC2 with signature)."""
    if kind == "serial":       # PerformanceOk.trans(uint256 num) on a deployed Solidity contract
        to = contract
        data = SEL_TRANS + rng.randrange(1, 10**6).to_bytes(32, "big")
    else:                      # DagTransfer.userTransfer(string from, string to, uint256 amount)
        a, b = rng.sample(range(100000), 2)
        to = DAG_TRANSFER
        sa, sb = _abi_string(f"user{a:05d}"), _abi_string(f"user{b:05d}")
        data = (SEL_USER_TRANSFER + (96).to_bytes(32, "big") + (96 + len(sa)).to_bytes(32, "big")
                + rng.randrange(1, 1000).to_bytes(32, "big") + sa + sb)
    return rlp([rng.getrandbits(250), SDK_GAS_PRICE, SDK_GAS, height + 500, to, 0, data, 1, GROUP, b"",
                27 + rng.randrange(2), rng.randbytes(32), rng.randbytes(32)])


def receipt(rng: random.Random) -> bytes:
    """TransactionReceipt: [stateRoot, gasUsed, contractAddress, bloom, status, output, logs]."""
    return rlp([rng.randbytes(32), 21000 + rng.randrange(30000), b"\0" * 20, b"\0" * 256, 0,
                (0).to_bytes(32, "big"), []])


def block(rng: random.Random, number: int, txs: list[bytes], sealers: list[bytes], receipts: bool) -> bytes:
    """Block::encodeRC2: [header, txs (TxsParallelParser), hash, sigList, receipts]."""
    header = [rng.randbytes(32), rng.randbytes(32), rng.randbytes(32), rng.randbytes(32), rng.randbytes(32),
              b"\0" * 256, number, 300_000_000, 25_000 * len(txs), 1_600_000_000_000 + number * 1000, [],
              number % len(sealers), sealers]
    sigs = [[i, rng.randbytes(65)] for i in range(len(sealers))]
    rcpts = [Raw(receipt(rng)) for _ in txs] if receipts else []
    return rlp([header, txs_parallel(txs), rng.randbytes(32), sigs, rcpts])


def pbft(packet_id: int, ttl: int, fields: list, block_bytes: bytes | None = None) -> bytes:
    """PBFTMsgPacket around PBFTMsg/PrepareReq::encode."""
    inner = b"".join(rlp(f) for f in fields) + (rlp(block_bytes) if block_bytes is not None else b"")
    data = rlp([inner])
    return rlp([rlp(packet_id) + rlp(ttl) + rlp(data)])


def sync(kind: int, items: list) -> bytes:
    return bytes([kind]) + rlp(items)


# ---- messages ----
@dataclass
class Msg:
    side: str               # "a" or "b": who sends it
    module: int
    ptype: int
    data: bytes             # uncompressed payload
    expect: str             # the msg_type the dissector should show
    seq: int = 0            # filled in by Script (0 for heartbeats)
    group: int = GROUP
    response_to: int | None = None   # index of the request this answers (negative ProtocolID)
    batch: int = 1
    workload: str = ""
    force: bytes | None = None        # bytes to send instead (malformed cases)
    expert: str = ""

    @property
    def response(self) -> bool:
        return self.response_to is not None

    def wire(self, compress: bool, rc1: bool = False) -> tuple[bytes, bool, bytes]:
        """(message bytes, compressed?, payload as sent)"""
        if self.force is not None:
            return self.force, False, self.force[16:]
        payload, flag = self.data, False
        if rc1:
            pid = -self.module if self.response else (self.group << 8) | self.module
            return struct.pack(">IhHI", 12 + len(payload), pid, self.ptype, self.seq) + payload, False, payload
        if compress and len(payload) > THRESHOLD:
            payload, flag = snappy.compress(payload), True
        pid = struct.pack(">i", -self.module) if self.response else struct.pack(">hH", self.group, self.module)
        hdr = struct.pack(">IH", 16 + len(payload), COMPRESS_FLAG if flag else 0) + pid + \
            struct.pack(">HI", self.ptype, self.seq)
        return hdr + payload, flag, payload


class Script:
    """The exchange both peers play; each side numbers its own messages from 2 (newSeq())."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.msgs: list[Msg] = []
        self.next_seq = {"a": 2, "b": 2}
        self.contract = keccak256(b"PerformanceOk" + self.rng.randbytes(8))[12:]
        self.sealers = [self.rng.randbytes(64) for _ in range(4)]
        self.height = 100

    def add(self, m: Msg, workload: str, heartbeat: bool = False) -> int:
        m.workload = workload
        if m.response:
            m.seq = self.msgs[m.response_to].seq
        elif not heartbeat:
            m.seq = self.next_seq[m.side]
            self.next_seq[m.side] += 1
        self.msgs.append(m)
        return len(self.msgs) - 1

    # -- workloads --
    def topics(self, w: str = "topic") -> None:
        self.add(Msg("a", TOPIC, 1, b"1", "Topic.SendTopicSeq"), w, heartbeat=True)
        self.add(Msg("b", TOPIC, 1, b"3", "Topic.SendTopicSeq"), w, heartbeat=True)
        # A has not seen B's topic seq 3 yet: it asks; B answers with -2 and A's seq.
        req = self.add(Msg("a", TOPIC, 2, b"", "Topic.RequestTopics"), w)
        self.add(Msg("b", TOPIC, 3, b"3\tfisco.amop.demo\tprice-feed\tsettlement", "Topic.SendTopics.Response",
                     response_to=req), w)
        # B asks too: the same seq value, the other direction.
        req = self.add(Msg("b", TOPIC, 2, b"", "Topic.RequestTopics"), w)
        self.add(Msg("a", TOPIC, 3, b"1\tprice-feed", "Topic.SendTopics.Response", response_to=req), w)

    def amop(self, w: str = "topic") -> None:
        rng = self.rng
        for k, data in enumerate([b'{"symbol":"FISCO","price":"%d"}' % rng.randrange(10**6),
                                  b"price-feed update;" * 90,
                                  rng.randbytes(3000)]):   # a private topic's encrypted payload
            chan = struct.pack(">IH", 42 + len(data), 0x30) + ("%032x" % rng.getrandbits(128)).encode() + \
                struct.pack(">i", 0) + data
            self.add(Msg("a" if k < 2 else "b", AMOP, k % 2, chan, "AMOP.Multicast" if k % 2 else "AMOP.Unicast"), w)

    def raft(self, w: str = "topic") -> None:
        self.add(Msg("b", RAFT, 0, rlp(2) + rlp(rlp([self.height, self.rng.randbytes(64)])), "Raft.HeartBeat"), w)
        self.add(Msg("a", RAFT, 0, rlp(3) + rlp(rlp([self.height, 1])), "Raft.HeartBeatResp"), w)

    def transactions(self, side: str, txs: list[bytes], w: str) -> None:
        # packetType 1: the txs came in over RPC (SyncTransactionsPacket::toMessage).
        self.add(Msg(side, BLOCKSYNC, 1, sync(SYNC_TXS, [txs_parallel(txs)]), "BlockSync.Transactions",
                     batch=len(txs)), w)

    def pbft_round(self, leader: str, txs: list[bytes], w: str) -> None:
        rng, h = self.rng, self.height + 1
        blk = block(rng, h, txs, self.sealers, receipts=False)
        bhash = keccak256(blk)
        ts = 1_600_000_000_000 + h * 1000
        self.add(Msg(leader, PBFT, 0, pbft(0, 2, [h, 0, 0, ts, bhash, rng.randbytes(65), rng.randbytes(65)], blk),
                     "PBFT.Prepare"), w)
        for name, pid in (("Sign", 1), ("Commit", 2)):
            for side in ("a", "b"):
                idx = 0 if side == leader else 1
                self.add(Msg(side, PBFT, 0, pbft(pid, 2, [h, 0, idx, ts, bhash, rng.randbytes(65), rng.randbytes(65)]),
                             f"PBFT.{name}"), w)
        self.height = h

    def serial(self, n_txs: int, per_block: int, w: str = "serial") -> None:
        """PerformanceOk: the SDK sends txs one at a time; the node forwards each as it comes."""
        pending: list[bytes] = []
        for i in range(n_txs):
            t = tx(self.rng, "serial", self.height, self.contract)
            self.transactions("a", [t], w)
            pending.append(t)
            if len(pending) == per_block:
                self.pbft_round("a" if (i // per_block) % 2 == 0 else "b", pending, w)
                pending = []

    def parallel(self, batches: int, size: int, w: str = "parallel") -> None:
        """DagTransfer: bursts of parallel txs, forwarded in batches and packed into blocks."""
        for k in range(batches):
            side = "a" if k % 2 == 0 else "b"
            txs = [tx(self.rng, "parallel", self.height, self.contract) for _ in range(size)]
            self.transactions(side, txs, w)
            self.pbft_round(side, txs, w)

    def blocksync(self, blocks: int, size: int, w: str = "sync") -> None:
        rng = self.rng
        genesis = rng.randbytes(32)
        ts = 1_600_000_000_000
        self.add(Msg("a", BLOCKSYNC, 0, sync(SYNC_STATUS, [self.height, genesis, rng.randbytes(32), ts]),
                     "BlockSync.Status"), w)
        self.add(Msg("b", BLOCKSYNC, 0, sync(SYNC_STATUS, [self.height + blocks, genesis, rng.randbytes(32), ts]),
                     "BlockSync.Status"), w)
        self.add(Msg("a", BLOCKSYNC, 0, sync(SYNC_REQ, [self.height + 1, blocks]), "BlockSync.ReqBlocks"), w)
        blks = [block(rng, self.height + 1 + k, [tx(rng, "parallel" if k % 2 else "serial", self.height, self.contract)
                                                 for _ in range(size)], self.sealers, receipts=True)
                for k in range(blocks)]
        self.add(Msg("b", BLOCKSYNC, 0, sync(SYNC_BLOCKS, blks), "BlockSync.Blocks"), w)
        self.height += blocks
        hashes = [rng.randbytes(32) for _ in range(40)]
        self.add(Msg("b", BLOCKSYNC, 0, sync(SYNC_TXS_STATUS, [self.height, hashes]), "BlockSync.TxsStatus"), w)
        self.add(Msg("a", BLOCKSYNC, 0, sync(SYNC_TXS_REQ, [hashes[:25]]), "BlockSync.TxsRequest"), w)


def workload(name: str) -> list[Msg]:
    s = Script(seed={"serial": 2001, "parallel": 2002, "sync": 2003, "topic": 2004, "mixed": 2005}[name])
    if name == "serial":
        s.topics("serial")
        s.serial(n_txs=120, per_block=40)
    elif name == "parallel":
        s.topics("parallel")
        s.parallel(batches=3, size=250)
    elif name == "sync":
        s.blocksync(blocks=3, size=120)
    elif name == "topic":
        s.topics()
        s.amop()
        s.raft()
        s.add(Msg("a", TOPIC, 1, b"1", "Topic.SendTopicSeq"), "topic", heartbeat=True)
        s.add(Msg("b", TOPIC, 1, b"3", "Topic.SendTopicSeq"), "topic", heartbeat=True)
    elif name == "mixed":      # a little of everything: the TLS twin and the truncated capture
        s.topics("topic")
        s.serial(n_txs=20, per_block=20)
        s.parallel(batches=2, size=120)
        s.blocksync(blocks=2, size=60)
        s.amop()
        s.raft()
    return s.msgs


def malformed() -> list[Msg]:
    s = Script(seed=404)
    txs = [tx(s.rng, "parallel", 100, s.contract) for _ in range(120)]
    good = sync(SYNC_TXS, [txs_parallel(txs)])

    def hdr(length: int, version: int, module: int, ptype: int, seq: int, group: int = GROUP) -> bytes:
        return struct.pack(">IHhHHI", length, version, group, module, ptype, seq)

    c = bytearray(snappy.compress(good))
    for pos in range(40, len(c), 997):
        c[pos] ^= 0x5A
    corrupt = hdr(16 + len(c), COMPRESS_FLAG, BLOCKSYNC, 1, 3) + bytes(c)
    small = sync(SYNC_TXS, [txs_parallel(txs[:1])])
    sc = snappy.compress(small)
    bad_offsets = bytearray(txs_parallel(txs[:3]))
    bad_offsets[8:12] = struct.pack("<I", 0xFFFF)          # the second tx "starts" past the end
    bad_pbft = b"\xf9\x40\x00" + rlp(b"\x05" * 40)          # a list that claims 16 KB and holds 41 bytes
    over = hdr(100 * 1024 * 1024 + 1, 0, BLOCKSYNC, 0, 11) + b"\0" * 64
    cases = [
        (corrupt, "Snappy data with bytes flipped every 997", "fisco.decompress_failed"),
        (hdr(16 + len(sc), COMPRESS_FLAG, BLOCKSYNC, 1, 4) + sc, "a compressed payload of 1024 bytes or less",
         "p2pc.spec.fisco.threshold"),
        (hdr(20, 0, 42, 0, 5) + b"\0\1\2\3", "module 42", "p2pc.unknown_msg_type"),
        (hdr(16 + 1, 0x0001, TOPIC, 1, 0) + b"7", "Version 0x0001", "fisco.version.unknown"),
        (hdr(16 + len(bad_pbft), 0, PBFT, 0, 6) + bad_pbft, "PBFT payload without its RLP list",
         "fisco.rlp"),
        (hdr(16 + 1 + len(rlp([bytes(bad_offsets)])), 0, BLOCKSYNC, 1, 7) + sync(SYNC_TXS, [bytes(bad_offsets)]),
         "TxsParallelParser offsets that do not add up", "fisco.rlp"),
        (hdr(8, 0, BLOCKSYNC, 0, 8), "Length 8, below the header size", "fisco.length.invalid"),
        (over, "Length 100 MiB + 1, over the limit (last: it swallows the rest of its segment)",
         "fisco.length.invalid"),
    ]
    s.add(Msg("a", TOPIC, 1, b"1", "Topic.SendTopicSeq"), "malformed", heartbeat=True)
    for raw, note, expert in cases:
        s.add(Msg("a", struct.unpack(">H", raw[8:10])[0], struct.unpack(">H", raw[10:12])[0], b"", note,
                  force=raw, expert=expert), "malformed", heartbeat=True)
    return s.msgs


def sessions() -> dict:
    out = {}
    for w, desc in (("serial", "serial Solidity transfers: txs one by one, 3 PBFT rounds of 40-tx blocks"),
                    ("parallel", "parallel DagTransfer transfers: 3 batches of 250 txs, each packed into a block"),
                    ("sync", "block sync: Status, ReqBlocks, 3 blocks of 120 txs with receipts, TxsStatus/Request"),
                    ("topic", "topic heartbeats and exchanges, AMOP (one incompressible), Raft heartbeat")):
        out[f"fisco-{w}-on"] = dict(msgs=lambda w=w: workload(w), compress=True, desc=f"enable_compress on; {desc}")
        out[f"fisco-{w}-off"] = dict(msgs=lambda w=w: workload(w), compress=False, desc=f"enable_compress off; {desc}")
    out["fisco-mixed-on"] = dict(msgs=lambda: workload("mixed"), compress=True,
                                 desc="enable_compress on; a little of every workload (the TLS twin)")
    out["fisco-tls"] = dict(msgs=lambda: workload("mixed"), compress=True, tls=True,
                            desc="fisco-mixed-on inside TLS 1.2 (ECDHE secp256k1, mutual certificates), "
                                 "key log embedded (editcap --inject-secrets)")
    out["fisco-rc1"] = dict(msgs=lambda: [m for m in workload("topic") if m.module == TOPIC], compress=False,
                            rc1=True, desc="v2.0.0-rc1 12-byte headers (detected; -o fisco.rc1:TRUE forces it)")
    out["fisco-malformed"] = dict(msgs=malformed, compress=True,
                                  desc="corrupted Snappy, small compressed payload, unknown module, unknown "
                                       "Version bits, bad RLP, bad tx offsets, Length 8, Length over 100 MiB")
    return out


# ---- the peer ----
def tls_context(side: str, server: bool, certdir: Path, keylog: Path | None, fisco2: bool = True) -> ssl.SSLContext:
    """Node `side`'s TLS 1.2 context with mutual certificates on secp256k1, as FISCO nodes run it.
    2.x also pins ECDHE-ECDSA AES-GCM; 3.x's gateway keeps OpenSSL's cipher list (bcos-boostssl
    context/ContextBuilder.cpp: a boost `context::tlsv12`, verify_peer | verify_fail_if_no_peer_cert,
    no cipher list).  The group is secp256k1 for both: stock OpenSSL 3 offers no group an ECDSA
    certificate on secp256k1 can sign with (no shared cipher)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER if server else ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_REQUIRED   # mutual certificates, as FISCO nodes use
    ctx.load_verify_locations(certdir / "ca.crt")
    ctx.load_cert_chain(certdir / f"node{side}.crt", certdir / f"node{side}.key")
    if fisco2:
        ctx.set_ciphers("ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384")
    ctx.set_ecdh_curve("secp256k1")       # FISCO's non-SM curve
    if keylog:
        ctx.keylog_filename = str(keylog)
    return ctx


def peer(name: str, side: str, host: str, port: int, certdir: str | None, keylog: str | None) -> None:
    s = sessions()[name]
    msgs = s["msgs"]()
    rc1 = s.get("rc1", False)
    if side == "b":
        srv = socket.create_server(("0.0.0.0", port))
        sock, _ = srv.accept()
        srv.close()
    else:
        sock = connect_retry(host, port)
    if certdir:
        ctx = tls_context(side, side == "b", Path(certdir), Path(keylog) if keylog and side == "a" else None)
        sock = ctx.wrap_socket(sock, server_side=(side == "b"))
    hlen = 12 if rc1 else 16
    for m in msgs:
        if m.side == side:
            sock.sendall(m.wire(s["compress"], rc1)[0])
        elif m.force is None:
            hdr = recv_exact(sock, hlen)
            recv_exact(sock, struct.unpack(">I", hdr[:4])[0] - hlen)
    # A closes after its last message; B reads what is left until A has closed, then closes.
    try:
        if side == "a":
            time.sleep(0.3)
            if certdir:
                sock = sock.unwrap()      # close_notify both ways, then FIN
        else:
            while sock.recv(65536):
                pass
            if certdir:
                sock = sock.unwrap()
        sock.close()
    except (OSError, ssl.SSLError):
        pass


if __name__ == "__main__":
    peer(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]),
         sys.argv[5] if len(sys.argv) > 5 and sys.argv[5] != "-" else None,
         sys.argv[6] if len(sys.argv) > 6 else None)
