#!/usr/bin/env python3
"""A libp2p-over-QUIC capture with many streams (issue #40, finding 7): a real QUIC connection
between two aioquic endpoints (client 192.0.2.1, server 192.0.2.2, ALPN "libp2p"), run in one
process on a simulated clock, every datagram written as a UDP packet, the TLS secrets the client
logged embedded in the pcapng (editcap --inject-secrets), so stock tshark and tshark with p2pc
decrypt the same capture with no preference.

Each stream is an Ethereum consensus ping (consensus-specs p2p-interface.md, req/resp over
libp2p): the client sends the multistream-select header, the protocol ID and the request (a
uint64, ssz_snappy: uvarint length, Snappy frames), the server the same two messages and the
response (result 0, then the same encoding); the uint64 is the stream's index.  Two kinds:

  churn   every stream ends (both sides send FIN) before the next batch opens: `streams`
          streams, `batch` open at once (what a busy peer does over a long connection)
  open    `streams` streams, none ever ended: the client's first message only, no FIN, no
          answer (a peer that opens streams and never closes them)
  reset   as churn, but the client sends its request short of its last CUT bytes, the server
          answers in full, and then the client resets the stream (RESET_STREAM) and asks the
          server to stop sending (STOP_SENDING), which aioquic answers with RESET_STREAM
          (RFC 9000 3.5): both directions end with no FIN

aioquic has no setting for the number of streams it lets its peer open (RFC 9000
initial_max_streams_bidi, 128): the "open" kind raises the server's limit before the handshake.

    PYTHONPATH=analyzer python3 tools/quic_churn.py OUT.pcapng --streams 20000 [--kind open] [--late-copy]
"""
from __future__ import annotations

import argparse
import datetime
import io
import os
import struct
import subprocess
import tempfile
from pathlib import Path

import snappy
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.connection import QuicConnection
from aioquic.quic.events import StreamDataReceived
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

CLIENT, SERVER = ("192.0.2.1", 40001), ("192.0.2.2", 4001)
PING = "/eth2/beacon_chain/req/ping/1/ssz_snappy"


def ms(text: str) -> bytes:
    """One multistream-select message: uvarint length (here under 128), text, newline."""
    body = text.encode() + b"\n"
    return bytes([len(body)]) + body


HELLO = ms("/multistream/1.0.0") + ms(PING)
CUT = 2     # bytes of its request the client never sends on a stream it resets


def ping(index: int, response: bool) -> bytes:
    """The ssz_snappy ping request (or response) carrying `index`: [result 0,] uvarint(8), the
    8 bytes in Snappy's framing format."""
    return (b"\x00" if response else b"") + b"\x08" + snappy.StreamCompressor().add_chunk(struct.pack("<Q", index))


def certificate() -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "p2pc quic churn")])
    now = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=3650))
            .sign(key, hashes.SHA256()))
    return cert, key


def udp_frame(src: tuple[str, int], dst: tuple[str, int], payload: bytes, ident: int) -> bytes:
    """Ethernet + IPv4 + UDP (checksum 0: none) around payload."""
    udp = struct.pack(">HHHH", src[1], dst[1], 8 + len(payload), 0) + payload
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), ident & 0xFFFF, 0, 64, 17, 0,
                     bytes(map(int, src[0].split("."))), bytes(map(int, dst[0].split("."))))
    return b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip + udp


class Link:
    """The two endpoints and the packets between them, on a clock that moves 50 us a datagram."""

    def __init__(self, open_streams: int):
        cert, key = certificate()
        self.keys = io.StringIO()
        ccfg = QuicConfiguration(is_client=True, alpn_protocols=["libp2p"], secrets_log_file=self.keys)
        ccfg.verify_mode = 0    # ssl.CERT_NONE: the self-signed certificate above
        scfg = QuicConfiguration(is_client=False, alpn_protocols=["libp2p"], certificate=cert, private_key=key)
        self.now = 1_767_225_600.0
        self.frames: list[tuple[float, bytes]] = []
        self.client = QuicConnection(configuration=ccfg)
        self.client.connect(SERVER, now=self.now)
        self.server: QuicConnection | None = None
        self.scfg, self.open_streams = scfg, open_streams

    def _server(self, dcid: bytes) -> QuicConnection:
        if self.server is None:
            self.server = QuicConnection(configuration=self.scfg, original_destination_connection_id=dcid)
            if self.open_streams:
                self.server._local_max_streams_bidi.value = self.open_streams + 16
        return self.server

    def pump(self) -> list[StreamDataReceived]:
        """Move datagrams both ways (and fire due timers) until neither side has any to send;
        the stream data the server received."""
        got = []
        while True:
            moved = False
            for data, _ in self.client.datagrams_to_send(now=self.now):
                self.frames.append((self.now, udp_frame(CLIENT, SERVER, data, len(self.frames))))
                if self.server is None:
                    self._server(data[6:6 + data[5]])       # the client's first DCID (RFC 9000 17.2)
                self.server.receive_datagram(data, CLIENT, now=self.now)
                self.now += 50e-6
                moved = True
            if self.server is not None:
                for data, _ in self.server.datagrams_to_send(now=self.now):
                    self.frames.append((self.now, udp_frame(SERVER, CLIENT, data, len(self.frames))))
                    self.client.receive_datagram(data, SERVER, now=self.now)
                    self.now += 50e-6
                    moved = True
                while (ev := self.server.next_event()) is not None:
                    if isinstance(ev, StreamDataReceived):
                        got.append(ev)
            while self.client.next_event() is not None:
                pass
            if moved:
                continue
            # Nothing to send: let the earliest timer (a delayed ACK) fire, if it is soon.
            timers = [t for t in (self.client.get_timer(), self.server and self.server.get_timer()) if t]
            if not timers or min(timers) > self.now + 1.0:
                return got
            self.now = max(self.now, min(timers))
            self.client.handle_timer(now=self.now)
            if self.server is not None:
                self.server.handle_timer(now=self.now)

    def write(self, path: Path) -> int:
        """pcapng of the frames with the client's key log embedded (editcap --inject-secrets);
        the UDP payload bytes it holds."""
        out = bytearray(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for ts, f in self.frames:
            sec = int(ts)
            out += struct.pack("<IIII", sec, int((ts - sec) * 1e6), len(f), len(f)) + f
        with tempfile.TemporaryDirectory() as tmp:
            raw, keys = Path(tmp) / "raw.pcap", Path(tmp) / "keys"
            raw.write_bytes(bytes(out))
            keys.write_text(self.keys.getvalue())
            subprocess.run(["editcap", "--inject-secrets", f"tls,{keys}", str(raw), str(path)], check=True)
        return sum(len(f) - 42 for _, f in self.frames)     # Ethernet, IPv4 and UDP headers


def generate(path: Path, streams: int, kind: str = "churn", batch: int = 50, late_copy: bool = False) -> int:
    """Write the capture; returns the number of streams the server received data on."""
    link, received = run(streams, kind, batch, late_copy)
    link.write(path)
    return received


def run(streams: int, kind: str = "churn", batch: int = 50, late_copy: bool = False) -> tuple[Link, int]:
    """The connection's packets, and the number of streams the server received data on.  Stream
    index i is QUIC stream id 4 * i (the client's bidirectional streams, RFC 9000 2.1).  With
    late_copy, the packet that carried the first stream's request is sent again at the end (a
    retransmission that comes after every stream ended)."""
    link = Link(streams if kind == "open" else 0)
    link.pump()
    first = len(link.frames)        # the next frame: the client's, with stream 0's request
    seen = set()
    done = 0
    while done < streams:
        ids = []
        for _ in range(min(batch if kind != "open" else 1000, streams - done)):
            sid = link.client.get_next_available_stream_id()
            request = HELLO + ping(sid // 4, False)
            link.client.send_stream_data(sid, request[:-CUT] if kind == "reset" else request,
                                         end_stream=kind == "churn")
            ids.append(sid)
        done += len(ids)
        for ev in link.pump():
            seen.add(ev.stream_id)
            if kind == "churn" and ev.end_stream:
                link.server.send_stream_data(ev.stream_id, HELLO + ping(ev.stream_id // 4, True), end_stream=True)
        if kind == "reset":
            for sid in ids:
                link.server.send_stream_data(sid, HELLO + ping(sid // 4, True))
            link.pump()
            for sid in ids:
                link.client.reset_stream(sid, 0)
                link.client.stop_stream(sid, 0)
        link.pump()
    if late_copy:
        link.frames.append((link.now + 1.0, link.frames[first][1]))
    return link, len(seen)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--streams", type=int, default=20000)
    ap.add_argument("--kind", choices=("churn", "open", "reset"), default="churn")
    ap.add_argument("--batch", type=int, default=50)
    ap.add_argument("--late-copy", action="store_true", help="the first stream's request packet again at the end")
    args = ap.parse_args()
    n = generate(args.out, args.streams, args.kind, args.batch, args.late_copy)
    print(f"{args.out}: {n} streams ({args.kind}), {os.path.getsize(args.out)} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
