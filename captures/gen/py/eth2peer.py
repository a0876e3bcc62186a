"""A py-libp2p peer speaking eth2peers' req/resp workload, for p2pc's interop captures.

  python eth2peer.py --role listen --muxer yamux --security plaintext --block F --idfile F --truth F
  python eth2peer.py --role dial --peer /ip4/192.0.2.2/tcp/9000/p2p/<id> --block F --truth F

py-libp2p 0.8.1 (requirements.txt) over TCP, plaintext (/plaintext/2.0.0), Noise or TLS 1.3
(/tls/1.0.0, as new_host() makes it: ALPN `libp2p` only, so the muxer is agreed by
multistream-select; its secrets go to $SSLKEYLOGFILE through the transport's own
IdentityConfig(key_log_writer=...), Python's ssl keylog_filename), with yamux or mplex.  The listener serves status, ping, metadata, beacon_blocks_by_range (the block, then a
ResourceUnavailable chunk) and goodbye; the dialer calls them in that order.  Snappy is cramjam's
(the snap crate): framed for req/resp, the block format for gossip.  The truth (--truth) is what
this peer sent and received, as eth2peer.mjs writes it.

--gossip-plan FILE (eth2peers' plan.go, written by make_interop.py) runs py-libp2p's gossipsub
(GossipSub and Pubsub of libp2p.pubsub) as eth2 wants it: the Altair message-id, no signing,
and messages without from, seqno, signature or key (the StrictNoSign policy go-libp2p-pubsub
enforces).  Pubsub.publish() always sets from and seqno (pubsub.py), which the go peer rejects
(RejectUnexpectedAuthInfo): so this peer builds the Message itself and hands it to
Pubsub.push_msg(), where publish() ends too.  --publish-api (not used by make_interop.py) uses
publish() instead, to see the go peer drop them.  This peer publishes first, after blocks by
range; the go peer publishes once this one's have come.  py-libp2p's router sends only the first
message without from and seqno it sees (its equivocation check keys messages by from + seqno):
the truth lists each later one this peer published as "dropped", not "sent".
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
from contextlib import asynccontextmanager
from importlib.metadata import version
from pathlib import Path

import cramjam
import multiaddr
import trio
from libp2p import new_host
from libp2p.crypto.ed25519 import create_new_key_pair
from libp2p.crypto.x25519 import create_new_key_pair as create_x25519_key_pair
from libp2p.network.stream.exceptions import StreamEOF
from libp2p.peer.peerinfo import info_from_p2p_addr
from libp2p.pubsub.gossipsub import PROTOCOL_ID as MESHSUB_10
from libp2p.pubsub.gossipsub import PROTOCOL_ID_V11 as MESHSUB_11
from libp2p.pubsub.gossipsub import PROTOCOL_ID_V12 as MESHSUB_12
from libp2p.pubsub.gossipsub import GossipSub
from libp2p.pubsub.pb import rpc_pb2
from libp2p.pubsub.pubsub import Pubsub
from libp2p.security.insecure.transport import PLAINTEXT_PROTOCOL_ID, InsecureTransport
from libp2p.security.noise.transport import PROTOCOL_ID as NOISE_ID
from libp2p.security.noise.transport import Transport as NoiseTransport
from libp2p.security.tls.transport import PROTOCOL_ID as TLS_ID
from libp2p.security.tls.transport import IdentityConfig, TLSTransport
from libp2p.stream_muxer.mplex.mplex import MPLEX_PROTOCOL_ID, Mplex
from libp2p.stream_muxer.yamux.yamux import PROTOCOL_ID as YAMUX_ID
from libp2p.stream_muxer.yamux.yamux import Yamux
from libp2p.tools.anyio_service import background_trio_service

REQ = "/eth2/beacon_chain/req/"
P = {name: f"{REQ}{name}/ssz_snappy" for name in
     ("status/1", "ping/1", "metadata/2", "goodbye/1", "beacon_blocks_by_range/2")}
CAPELLA = bytes.fromhex("bba4da96")
ERROR_MESSAGE = b"blocks beyond the three real ones are not served"
truth: list[dict] = []
connections: list[dict] = []


def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def read_uvarint(buf: bytes, pos: int) -> tuple[int, int] | None:
    n = shift = 0
    while pos < len(buf):
        b = buf[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n, pos
    return None


def unframe(buf: bytes, pos: int, want: int) -> tuple[bytes, int] | None:
    """Snappy frames from pos until `want` bytes came out: (data, end) or None."""
    out = bytearray()
    while len(out) < want or (want == 0 and pos < len(buf) and buf[pos] == 0xFF):
        if pos + 4 > len(buf):
            return None
        kind, length = buf[pos], int.from_bytes(buf[pos + 1:pos + 4], "little")
        body = buf[pos + 4:pos + 4 + length]
        if len(body) < length:
            return None
        pos += 4 + length
        if kind == 0x00:
            out += bytes(cramjam.snappy.decompress_raw(body[4:]))
        elif kind == 0x01:
            out += body[4:]
    return bytes(out), pos


def request(ssz: bytes) -> bytes:
    return uvarint(len(ssz)) + bytes(cramjam.snappy.compress(ssz))


def chunk(result: int, ctx: bytes, ssz: bytes) -> bytes:
    return bytes([result]) + ctx + request(ssz)


def u64(v: int) -> bytes:
    return v.to_bytes(8, "little")


def status() -> bytes:
    return CAPELLA + b"\x11" * 32 + u64(203000) + b"\x22" * 32 + u64(6507058)


def short(proto: str) -> str:
    return proto.removeprefix(REQ).removesuffix("/ssz_snappy")


def record(proto: str, buf: bytes, response: bool, direction: str) -> None:
    """Records the request (uvarint, frames) or the response chunks in buf."""
    pos = 0
    while pos < len(buf):
        m: dict = {"protocol": short(proto), "kind": "response" if response else "request", "dir": direction}
        if response:
            m["result"] = buf[pos]
            pos += 1
            if proto == P["beacon_blocks_by_range/2"] and m["result"] == 0:
                m["context"] = buf[pos:pos + 4].hex()
                pos += 4
        v = read_uvarint(buf, pos)
        if v is None:
            return
        u = unframe(buf, v[1], v[0])
        if u is None:
            return
        m.update(ssz_len=v[0], ssz_sha256=hashlib.sha256(u[0]).hexdigest(), framed_len=u[1] - v[1])
        truth.append(m)
        pos = u[1]
        if not response:
            return


def message_id(msg: rpc_pb2.Message) -> bytes:
    """The Altair message-id: SHA256(MESSAGE_DOMAIN_VALID_SNAPPY || uint64_le(len(topic)) ||
    topic || the Snappy-decompressed data)[:20] (0x00000000 and the raw data if not Snappy)."""
    topic = msg.topicIDs[0].encode()
    try:
        domain, data = b"\x01\x00\x00\x00", bytes(cramjam.snappy.decompress_raw(msg.data))
    except Exception:
        domain, data = b"\x00\x00\x00\x00", msg.data
    return hashlib.sha256(domain + u64(len(topic)) + topic + data).digest()[:20]


def record_gossip(msg: rpc_pb2.Message, direction: str) -> None:
    topic = msg.topicIDs[0]
    m = {"protocol": f"gossip {topic.split('/')[3]}", "kind": "gossip", "dir": direction, "topic": topic,
         "msg_id": message_id(msg).hex(), "data_len": len(msg.data)}
    try:
        ssz = bytes(cramjam.snappy.decompress_raw(msg.data))
        m.update(ssz_len=len(ssz), ssz_sha256=hashlib.sha256(ssz).hexdigest())
    except Exception:
        pass
    truth.append(m)


class Gossip:
    """py-libp2p's gossipsub with the plan's topics joined: receives (and records) every message
    from the other peer, publishes this role's."""

    def __init__(self, h, plan: dict, role: str, publish_api: bool):
        # The meshsub versions go-libp2p-pubsub v0.15.0 and the eth2 spec share, newest first.
        self.router = GossipSub(protocols=[MESHSUB_12, MESHSUB_11, MESHSUB_10], degree=8, degree_low=6,
                                degree_high=12, heartbeat_interval=1)
        self.pubsub = Pubsub(h, self.router, strict_signing=False, msg_id_constructor=message_id)
        self.plan, self.role, self.publish_api = plan, role, publish_api
        self.received = 0
        self.own: set[bytes] = set()
        self.arrived = trio.Event()

    def expected(self) -> int:
        return len(self.plan["listener" if self.role == "dial" else "dialer"])

    async def run(self, nursery) -> None:
        """Subscribes to the plan's topics; to be called inside the two services."""
        await self.pubsub.wait_until_ready()
        for topic in self.plan["topics"]:
            sub = await self.pubsub.subscribe(topic)
            nursery.start_soon(self.receive, sub)

    async def receive(self, sub) -> None:
        async for msg in sub:
            # Pubsub hands this peer's own messages to its subscriptions too; a message without
            # from says not whose it is, so this peer's are known by their message-ids.
            if message_id(msg) in self.own:
                continue
            record_gossip(msg, "received")
            self.received += 1
            if self.received == self.expected():
                self.arrived.set()

    async def publish(self, peer) -> None:
        msgs = self.plan["dialer" if self.role == "dial" else "listener"]
        for m in msgs:
            await self.pubsub.wait_for_subscription(peer, m["topic"], timeout=30)
        await trio.sleep(1.5)
        for m in msgs:
            data = bytes(cramjam.snappy.compress_raw(Path(m["file"]).read_bytes()))
            msg = rpc_pb2.Message(data=data, topicIDs=[m["topic"]])
            self.own.add(message_id(msg))
            # GossipSub.publish() drops a message whose from + seqno it has seen with other data
            # or topics (_check_equivocation, gossipsub.py): without from and seqno, every
            # message after the first this router saw.  Read from the router's own table, as
            # that check does, so that the truth says which never went out.
            seen = self.router.equivocation_detection.get(msg.from_id + msg.seqno)
            if not self.publish_api and seen is not None and (seen.data, list(seen.topicIDs)) != (msg.data, [m["topic"]]):
                record_gossip(msg, "dropped")
                truth[-1]["why"] = "GossipSub._check_equivocation: the from + seqno key b'' is an earlier message's"
            else:
                record_gossip(msg, "sent")
            if self.publish_api:
                await self.pubsub.publish(m["topic"], data)
            else:
                await self.pubsub.push_msg(self.pubsub.my_id, msg)
            await trio.sleep(0.3)

    async def await_other(self) -> None:
        with trio.fail_after(60):
            await self.arrived.wait()


async def read_until(stream, whole) -> bytes:
    """The stream until whole(bytes so far) or the remote closes its end.  A request is read
    until its uvarint length is met, as Lodestar reads one: py-libp2p 0.8.1 does not end the read
    of a stream whose remote closed right behind a go-libp2p dialer's lazy proposal and request."""
    buf = b""
    while not whole(buf):
        try:
            data = await stream.read()
        except StreamEOF:
            break
        if not data:
            break
        buf += data
    return buf


def whole_request(buf: bytes) -> bool:
    v = read_uvarint(buf, 0)
    return v is not None and unframe(buf, v[1], v[0]) is not None


def host(args):
    key = create_new_key_pair(bytes([int(args.seed)]) * 32)
    # The Noise static key is an X25519 key of its own, as new_host() makes one.
    if args.security == "noise":
        sec = {NOISE_ID: NoiseTransport(key, noise_privkey=create_x25519_key_pair().private_key)}
    elif args.security == "tls":
        keylog = os.environ.get("SSLKEYLOGFILE")
        sec = {TLS_ID: TLSTransport(key, identity_config=IdentityConfig(key_log_writer=keylog) if keylog else None)}
    else:
        sec = {PLAINTEXT_PROTOCOL_ID: InsecureTransport(key)}
    mux = {MPLEX_PROTOCOL_ID: Mplex} if args.muxer == "mplex" else {YAMUX_ID: Yamux}
    return new_host(key_pair=key, sec_opt=sec, muxer_opt=mux)


def note_connection(h, args) -> None:
    """Each connection as the swarm holds it: security as chosen, the muxer it runs."""
    for c in h.get_network().get_connections():
        connections.append({"transport": "tcp", "security": args.security_id,
                            "muxer": MPLEX_PROTOCOL_ID if isinstance(c.muxed_conn, Mplex) else YAMUX_ID})


async def listen(args) -> None:
    h = host(args)
    block = Path(args.block).read_bytes()
    bye = trio.Event()
    served = {
        P["status/1"]: [chunk(0, b"", status())],
        P["ping/1"]: [chunk(0, b"", u64(7))],
        P["metadata/2"]: [chunk(0, b"", u64(7) + b"\xff" * 8 + b"\x0f")],
        P["beacon_blocks_by_range/2"]: [chunk(0, CAPELLA, block), chunk(3, b"", ERROR_MESSAGE)],
        P["goodbye/1"]: [],
    }

    def handler(proto):
        async def serve(stream):
            if proto != P["metadata/2"]:
                record(proto, await read_until(stream, whole_request), False, "received")
            for c in served[proto]:
                record(proto, c, True, "sent")
                await stream.write(c)
            await stream.close()
            if proto == P["goodbye/1"]:
                bye.set()
            if proto == P["beacon_blocks_by_range/2"]:
                range_served.set()
        return serve

    gossip = Gossip(h, args.plan, "listen", args.publish_api) if args.plan else None
    range_served = trio.Event()

    async def publish_after_the_range() -> None:
        """This peer publishes first (the go peer once this one's have come): after blocks by
        range, so that no gossip goes out between response chunks."""
        await range_served.wait()
        await gossip.publish(h.get_network().get_connections()[0].muxed_conn.peer_id)

    async with h.run(listen_addrs=[multiaddr.Multiaddr(args.listen)]), gossiping(gossip) as nursery:
        for proto in served:
            h.set_stream_handler(proto, handler(proto))
        if gossip:
            nursery.start_soon(publish_after_the_range)
        addr = next(a for a in h.get_addrs() if "/tcp/" in str(a))
        Path(args.idfile).write_text(str(addr))
        await bye.wait()
        note_connection(h, args)
        await trio.sleep(2)
        nursery.cancel_scope.cancel()


async def dial(args) -> None:
    h = host(args)
    info = info_from_p2p_addr(multiaddr.Multiaddr(args.peer))
    gossip = Gossip(h, args.plan, "dial", args.publish_api) if args.plan else None
    async with h.run(listen_addrs=[]), gossiping(gossip) as nursery:
        await h.connect(info)
        note_connection(h, args)

        async def call(proto: str, req: bytes | None) -> None:
            stream = await h.new_stream(info.peer_id, [proto])
            if req is not None:
                record(proto, req, False, "sent")
                await stream.write(req)
            await stream.close_write()
            record(proto, await read_until(stream, lambda buf: False), True, "received")
            await stream.close()

        await call(P["status/1"], request(status()))
        await call(P["ping/1"], request(u64(3)))
        await call(P["metadata/2"], None)
        await call(P["beacon_blocks_by_range/2"], request(u64(6507058) + u64(8) + u64(1)))
        if gossip:
            await gossip.publish(info.peer_id)
            await gossip.await_other()
            await trio.sleep(1)
        await call(P["goodbye/1"], request(u64(1)))
        await trio.sleep(0.5)
        nursery.cancel_scope.cancel()


@asynccontextmanager
async def gossiping(gossip):
    """A nursery, with py-libp2p's Pubsub and GossipSub services running when there is a plan."""
    async with trio.open_nursery() as nursery:
        if gossip is None:
            yield nursery
            return
        async with background_trio_service(gossip.pubsub), background_trio_service(gossip.router):
            await gossip.run(nursery)
            yield nursery


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    for opt, default in (("role", "listen"), ("muxer", "yamux"), ("security", "plaintext"),
                         ("listen", "/ip4/0.0.0.0/tcp/9000"), ("peer", None), ("block", None), ("gossip", "0"),
                         ("seed", "1"), ("idfile", None), ("truth", None), ("gossip-plan", None)):
        ap.add_argument(f"--{opt}", default=default)
    ap.add_argument("--publish-api", action="store_true")
    args = ap.parse_args()
    args.plan = json.loads(Path(args.gossip_plan).read_text()) if args.gossip_plan else None
    args.security_id = {"noise": NOISE_ID, "tls": TLS_ID}.get(args.security, PLAINTEXT_PROTOCOL_ID)
    trio.run(listen if args.role == "listen" else dial, args)
    if args.truth:
        Path(args.truth).write_text(json.dumps({
            "stack": "py-libp2p", "version": version("libp2p"), "role": args.role,
            "snappy": f"cramjam {version('cramjam')} (the snap crate), framed", "connections": connections,
            "messages": truth,
            **({"gossipsub": {"meshsub_offered": [MESHSUB_12, MESHSUB_11, MESHSUB_10], "strict_signing": False,
                              "published_with": "Pubsub.publish" if args.publish_api else "Pubsub.push_msg"}}
               if args.plan else {})}, indent=1))
