#!/usr/bin/env python3
"""Make the libp2p compression-transport captures in captures/libp2p-compression/.

Peers from adlrocha's go-libp2p fork (captures/gen/compression/, pinned as
go-libp2p-compression-examples pins them, built with `go build`): plaintext security, then
/compression/gzip, /compression/cbrotli or no compression layer, then yamux.  On one connection the dialer runs
the echo example and then sends four real files, each on its own /p2pc/file/1.0.0 stream; the
listener answers each with its sha256.  A fourth session offers gzip to a listener that only
has /compression/none (the fallback: "na", then none).  rust-libp2p's deprecated
/deflate/1.0.0 comes from two rust-libp2p 0.52 hosts pinging each other (compression/deflate/,
built with cargo).  Copies of the gzip capture with one of
the dialer's data segments removed (the gap case) and with one byte of its compressed stream
flipped (the corrupt case) come last.  The Bitswap sessions are the seed's file exchange over
the same peers: go-bitswap v0.2.20 (as the examples' bitswap example pins it) with the
compression transport off, gzip and cbrotli; the provider imports two texts as UnixFS DAGs and
the fetcher walks them, and each peer writes every Bitswap message it received.  Over netem.py's emulated
link (60 ms each way, 20 Mbit/s, MTU 1500).  Needs root, Go (cgo and libbrotli-dev for
cbrotli) and cargo.

    sudo python3 captures/gen/make_compression.py            # all
    sudo python3 captures/gen/make_compression.py gzip       # one session (and the gap copy)
    sudo python3 captures/gen/make_compression.py bitswap-gzip
"""
from __future__ import annotations

import bz2
import hashlib
import json
import os
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from golib import WORK, go_build, listener_addr  # noqa: E402
from netem import EmulatedLink  # noqa: E402

OUT = HERE.parent / "libp2p-compression"
DATA = HERE.parent / "data"
DELAY_MS, RATE_KBIT, PORT = 60, 20000, 9100
ECHO = "Hello, world!\n"
DEFLATE_KEEP = 800      # frames of the /deflate/1.0.0 run kept (see make_deflate)
# capture -> (dialer's offer, listener's offer, the files sent: indexes into payload_files())
SESSIONS = {
    "gzip": ("gzip", "gzip", None),
    "cbrotli": ("cbrotli", "cbrotli", None),
    # The uncompressed twin: the same workload with no compression layer (NoCompression).
    "none": ("off", "off", None),
    # go-libp2p's default offer in these forks (gzip, then none) to a peer that only has none:
    # "na" to gzip, then /compression/none, then the muxer as usual.
    "fallback": ("gzip,none", "none", [1, 3]),
}

# Bitswap capture -> the compression transport both peers use ("off": no compression layer)
BITSWAP_SESSIONS = {"bitswap-off": "off", "bitswap-gzip": "gzip", "bitswap-cbrotli": "cbrotli"}
# What the provider serves (captures/data), the texts of the boxo captures (make_bitswap.py).
BITSWAP_FILES = ["text/golang_Isaac.Newton-Opticks.txt", "text/klauspost_Mark.Twain-Tom.Sawyer.txt"]


def build() -> Path:
    return go_build("compression", "comppeers")


def build_deflate() -> Path:
    """rust-libp2p peers for /deflate/1.0.0 (compression/deflate/, cargo, locked versions)."""
    target = WORK / "cargo-target"
    subprocess.run(["cargo", "build", "--release", "--locked", "-q"], cwd=HERE / "compression" / "deflate",
                   check=True, env=dict(os.environ, CARGO_TARGET_DIR=str(target)))
    return target / "release" / "deflatepeers"


def make_deflate(pings: int = 5) -> dict:
    """comp-deflate: two rust-libp2p 0.52 hosts, /plaintext/2.0.0, /deflate/1.0.0, yamux, and
    libp2p ping both ways until the dialer has `pings` answers; the capture keeps the start."""
    exe = build_deflate()
    full = WORK / "comp-deflate-full.pcapng"
    cap = OUT / "comp-deflate.pcapng"
    idfile = WORK / "comp-deflate.id"
    idfile.unlink(missing_ok=True)
    with EmulatedLink(delay_ms=DELAY_MS, rate_kbit=RATE_KBIT, capture=full) as link:
        b = link.popen("b", [str(exe), "listen", str(idfile), "0"], stdout=subprocess.PIPE, text=True)
        addr = listener_addr(idfile, link.addr_b)
        res = link.run("a", [str(exe), "dial", addr, str(pings)], capture_output=True, text=True, timeout=60)
        time.sleep(3 * DELAY_MS / 1000)     # A's FIN reaches B; then B is stopped (see main.rs)
        b.terminate()
        b_out, _ = b.communicate(timeout=10)
    if res.stdout.count("ping rtt") != pings or b_out.count("ping rtt") < pings - 1:
        raise SystemExit(f"{cap.name}: pongs A {res.stdout.count('ping rtt')}, B {b_out.count('ping rtt')}")
    b_answered = b_out.count("ping rtt")
    # libp2p-deflate sync-flushes on every poll_flush, even with nothing written: each side
    # sends a 5-byte empty stored block whenever yamux polls it, thousands a second.  Keep the
    # start (negotiations and the first ping each way) and say what the whole run looked like.
    rows = subprocess.run(["tshark", "-n", "-r", str(full), "-Y", "tcp.len > 0", "-T", "fields", "-e", "ip.src",
                           "-e", "tcp.len", "-e", "frame.time_relative"], capture_output=True, text=True,
                          check=True).stdout.splitlines()
    segs = [r.split("\t") for r in rows]
    stats = {src: {"data_segments": sum(1 for s_, _, _ in segs if s_ == src),
                   "empty_flush_segments": sum(1 for s_, n, _ in segs if s_ == src and n == "5"),
                   "tcp_payload": sum(int(n) for s_, n, _ in segs if s_ == src)}
             for src in (EmulatedLink.addr_a, EmulatedLink.addr_b)}
    subprocess.run(["editcap", "-r", str(full), str(cap), f"1-{DEFLATE_KEEP}"], check=True)
    truth = {
        "capture": cap.name,
        "implementation": "rust-libp2p 0.52.4 (libp2p-deflate 0.40.1, flate2 on zlib), captures/gen/compression/deflate",
        "offered": {"a": ["/deflate/1.0.0"], "b": ["/deflate/1.0.0"]},
        "compression": "/deflate/1.0.0",
        "codec": "deflate-stream",
        "security": "/plaintext/2.0.0",
        "muxer": "/yamux/1.0.0",
        "link": {"delay_ms_each_way": DELAY_MS, "rate_kbit": RATE_KBIT, "mtu": 1500,
                 "addr_a": EmulatedLink.addr_a, "addr_b": EmulatedLink.addr_b, "port_b": PORT},
        # libp2p ping: each side sends 32 random bytes on its own /ipfs/ping/1.0.0 stream every
        # 300 ms and the other side sends them back; A stops after `pings` answers.
        "ping": {"protocol": "/ipfs/ping/1.0.0", "payload_bytes": 32, "answered": {"a": pings, "b": b_answered}},
        "kept_frames": DEFLATE_KEEP,
        "measured": {"whole_run": stats, "seconds": round(float(segs[-1][2]), 3),
                     "note": "this run's numbers, not inputs, over the whole run of which the capture "
                             "keeps the first kept_frames frames; empty_flush_segments carry only "
                             "00 00 00 ff ff (an empty stored block: the sync flush)"},
    }
    (OUT / "comp-deflate.truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    print(f"{cap.name}: {cap.stat().st_size} bytes")
    return truth


def payload_files() -> list[tuple[Path, str]]:
    """The files the dialer sends, in order, with where each came from (captures/data)."""
    d = bz2.decompress((DATA / "bitcoin" / "block277647_framed.dat.bz2").read_bytes())
    blk = WORK / "block277647.raw"
    blk.write_bytes(d[8:8 + int.from_bytes(d[4:8], "little")])   # blk*.dat: magic, LE32 length, block
    return [
        (blk, "bitcoin/block277647_framed.dat.bz2 (the block inside its blk*.dat framing)"),
        (DATA / "bitcoin" / "testnet3_block924634.raw", "bitcoin/testnet3_block924634.raw"),
        (DATA / "ethereum" / "eth_mainnet_SignedBeaconBlock_capella_slot6507058.ssz",
         "ethereum/eth_mainnet_SignedBeaconBlock_capella_slot6507058.ssz"),
        (DATA / "text" / "golang_Isaac.Newton-Opticks.txt", "text/golang_Isaac.Newton-Opticks.txt"),
    ]


def wire_bytes(cap: Path) -> dict:
    """TCP payload bytes and frames per direction, and the frames' total length."""
    out = subprocess.run(["tshark", "-n", "-r", str(cap), "-T", "fields", "-e", "ip.src", "-e", "tcp.len",
                          "-e", "frame.len"], capture_output=True, text=True, check=True).stdout
    res = {}
    for line in out.splitlines():
        src, tlen, flen = line.split("\t")
        if not src:
            continue    # ARP
        r = res.setdefault(src, {"frames": 0, "frame_bytes": 0, "tcp_payload": 0})
        r["frames"] += 1
        r["frame_bytes"] += int(flen)
        r["tcp_payload"] += int(tlen or 0)
    return res


def make(session: str, exe: Path, all_files: list[tuple[Path, str]]) -> dict:
    dial_offer, listen_offer, which = SESSIONS[session]
    files = all_files if which is None else [all_files[i] for i in which]
    cap = OUT / f"comp-{session}.pcapng"
    idfile = WORK / f"comp-{session}.id"
    idfile.unlink(missing_ok=True)
    with EmulatedLink(delay_ms=DELAY_MS, rate_kbit=RATE_KBIT, capture=cap) as link:
        b = link.popen("b", [str(exe), "-role", "listen", "-comp", listen_offer, "-idfile", str(idfile),
                             "-seed", "2", "-files", str(len(files)), "-listen", f"/ip4/0.0.0.0/tcp/{PORT}"])
        addr = listener_addr(idfile, link.addr_b)
        res = link.run("a", [str(exe), "-role", "dial", "-comp", dial_offer, "-peer", addr, "-seed", "1",
                             *(str(f) for f, _ in files)], capture_output=True, text=True, timeout=120)
        b.wait(60)
    report = json.loads(res.stdout.strip().splitlines()[-1])
    transfers = []
    for (path, source), t in zip(files, report["transfers"], strict=True):
        data = path.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        # The listener's reply is its own sha256 of what it read: a check on the peers themselves.
        if t["sha256"] != digest or t["reply"] != digest + "\n":
            raise SystemExit(f"{cap.name}: {path.name}: the listener read something else ({t['reply']!r})")
        transfers.append({"name": path.name, "source": f"captures/data/{source}", "bytes": len(data),
                          "sha256": digest, "reply": t["reply"], "seconds": round(t["seconds"], 3)})
    if report["echo_reply"] != ECHO:
        raise SystemExit(f"{cap.name}: echo came back as {report['echo_reply']!r}")
    everything = b"".join(f.read_bytes() for f, _ in files)
    agreed = next((c for c in dial_offer.split(",") if c in listen_offer.split(",")), "off")
    truth = {
        "capture": cap.name,
        # What each side offered (multistream-select, dialer's order) and what they agreed on.
        "offered": {"a": [f"/compression/{c}" for c in dial_offer.split(",") if c != "off"],
                    "b": [f"/compression/{c}" for c in listen_offer.split(",") if c != "off"]},
        "compression": None if agreed == "off" else f"/compression/{agreed}",
        "codec": {"gzip": "gzip-stream", "cbrotli": "brotli-stream"}.get(agreed, "none"),
        "security": "/plaintext/2.0.0",
        "muxer": "/yamux/1.0.0",
        "link": {"delay_ms_each_way": DELAY_MS, "rate_kbit": RATE_KBIT, "mtu": 1500,
                 "addr_a": EmulatedLink.addr_a, "addr_b": EmulatedLink.addr_b, "port_b": PORT},
        "peers": {"a": "dialer: echo, then the files", "b": "listener: echo reply, one sha256 line per file",
                  "b_id": addr.rsplit("/", 1)[1]},
        # A sends ECHO on /echo/1.0.0; B writes the same line back and closes the stream.
        "echo": {"protocol": "/echo/1.0.0", "sent": ECHO, "reply": report["echo_reply"]},
        # A sends each file on its own /p2pc/file/1.0.0 stream, in this order; B replies per file.
        "transfers": transfers,
        "file": {"protocol": "/p2pc/file/1.0.0", "bytes": len(everything),
                 "sha256": hashlib.sha256(everything).hexdigest(),
                 "note": "all transfers' bytes concatenated in order"},
        "measured": {"wire": wire_bytes(cap), "echo_seconds": round(report["echo_seconds"], 3),
                     "note": "this run's numbers, not inputs: bytes per source address, seconds "
                             "from opening a stream to its reply"},
    }
    (OUT / f"comp-{session}.truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    print(f"{cap.name}: {cap.stat().st_size} bytes; " +
          ", ".join(f"{src}: {w['tcp_payload']} B payload" for src, w in truth["measured"]["wire"].items()))
    return truth


def make_bitswap(session: str, exe: Path) -> dict:
    """comp-<session>: provider B imports BITSWAP_FILES and serves them over go-bitswap, fetcher
    A walks both DAGs; the truth is what each peer's Bitswap received and B's blocks."""
    comp = BITSWAP_SESSIONS[session]
    cap = OUT / f"comp-{session}.pcapng"
    idx, truth_a, truth_b = (WORK / f"comp-{session}.{n}.json" for n in ("idx", "a", "b"))
    for f in (idx, truth_a, truth_b):
        f.unlink(missing_ok=True)
    with EmulatedLink(delay_ms=DELAY_MS, rate_kbit=RATE_KBIT, capture=cap) as link:
        b = link.popen("b", [str(exe), "-role", "provide", "-comp", comp, "-idx", str(idx), "-truth", str(truth_b),
                             "-seed", "2", "-listen", f"/ip4/0.0.0.0/tcp/{PORT}",
                             *(str(DATA / f) for f in BITSWAP_FILES)])
        deadline = time.monotonic() + 30
        while not (idx.exists() and idx.read_text().endswith("\n")) and time.monotonic() < deadline:
            time.sleep(0.1)
        ident = json.loads(idx.read_text())
        for wildcard in ("/ip4/0.0.0.0/", "/ip4/127.0.0.1/"):
            ident["addr"] = ident["addr"].replace(wildcard, f"/ip4/{link.addr_b}/")
        idx.write_text(json.dumps(ident) + "\n")
        link.run("a", [str(exe), "-role", "fetch", "-comp", comp, "-idx", str(idx), "-truth", str(truth_a),
                       "-seed", "1"], check=True, timeout=120)
        b.wait(30)
    a, bt = json.loads(truth_a.read_text()), json.loads(truth_b.read_text())
    got = {blk["cid"] for m in a["received"] for blk in m["blocks"]}
    served = {blk["cid"] for r in ident["roots"] for blk in r["blocks"]}
    if got != served:
        raise SystemExit(f"{cap.name}: A received {len(got)} of the {len(served)} blocks B serves")
    truth = {
        "capture": cap.name,
        "implementation": "go-bitswap v0.2.20 on adlrocha's go-libp2p v0.11 fork (captures/gen/compression)",
        "protocol": "/ipfs/bitswap/1.2.0",
        "offered": {side: [] if comp == "off" else [f"/compression/{comp}"] for side in ("a", "b")},
        "compression": None if comp == "off" else f"/compression/{comp}",
        "codec": {"gzip": "gzip-stream", "cbrotli": "brotli-stream"}.get(comp, "none"),
        "security": "/plaintext/2.0.0",
        "muxer": "/yamux/1.0.0",
        "link": {"delay_ms_each_way": DELAY_MS, "rate_kbit": RATE_KBIT, "mtu": 1500,
                 "addr_a": EmulatedLink.addr_a, "addr_b": EmulatedLink.addr_b, "port_b": PORT},
        "peers": {"a": {"role": "fetcher", "id": a["peer"]}, "b": {"role": "provider", "id": bt["peer"]}},
        # UnixFS DAGs of 16 KiB chunks: raw CIDv1 leaves, a CIDv0 dag-pb root each.
        "files": [{**r, "file": f"captures/data/{BITSWAP_FILES[i]}"} for i, r in enumerate(ident["roots"])],
        # Each message a peer received, as go-bitswap decoded it (lists in no particular order
        # within a message: go-bitswap keeps them in maps), with its protobuf size.
        "received_by_a": a["received"],
        "received_by_b": bt["received"],
        "measured": {"wire": wire_bytes(cap),
                     "note": "this run's numbers, not inputs: bytes per source address"},
    }
    (OUT / f"comp-{session}.truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    print(f"{cap.name}: {cap.stat().st_size} bytes; A received {len(a['received'])} messages, "
          f"B {len(bt['received'])}")
    return truth


def gap_variant() -> None:
    """comp-gzip-gap: comp-gzip without one full-size data segment from the dialer, half way
    through its data, so B's later replies come after the hole."""
    src = OUT / "comp-gzip.pcapng"
    rows = subprocess.run(["tshark", "-n", "-r", str(src), "-Y", f"ip.src=={EmulatedLink.addr_a} && tcp.len==1448",
                           "-T", "fields", "-e", "frame.number"], capture_output=True, text=True,
                          check=True).stdout.split()
    victim = int(rows[len(rows) // 2])
    dst = OUT / "comp-gzip-gap.pcapng"
    subprocess.run(["editcap", str(src), str(dst), str(victim)], check=True)
    (OUT / "comp-gzip-gap.truth.json").write_text(json.dumps(
        {"capture": dst.name, "source": src.name, "removed_frame": victim,
         "note": f"editcap {src.name} {dst.name} {victim}: frames after it are renumbered one down, "
                 "so the frame after the hole is number removed_frame"}, indent=1) + "\n")
    print(f"{dst.name}: {src.name} without frame {victim}; {dst.stat().st_size} bytes")


def _pcapng_packets(data: bytes):
    """(offset of the packet bytes, their length) of every Enhanced Packet Block, in order
    (little-endian pcapng as dumpcap writes it)."""
    off = 0
    while off < len(data):
        btype, blen = struct.unpack_from("<II", data, off)
        if btype == 6:
            caplen = struct.unpack_from("<I", data, off + 20)[0]
            yield off + 28, caplen
        off += blen


def corrupt_variant() -> None:
    """comp-gzip-corrupt: comp-gzip with one byte of the dialer's compressed stream flipped, at
    a place where zlib itself rejects the stream, so the decoder must stop that direction."""
    src = OUT / "comp-gzip.pcapng"
    a = EmulatedLink.addr_a
    rows = subprocess.run(["tshark", "-n", "-r", str(src), "-Y", f"ip.src=={a} && tcp.len > 0", "-T", "fields",
                           "-e", "frame.number", "-e", "tcp.payload"], capture_output=True, text=True,
                          check=True).stdout.splitlines()
    segs = [(int(f), bytes.fromhex(p)) for f, p in (r.split("\t") for r in rows)]
    stream = b"".join(p for _, p in segs)
    start = stream.index(bytes.fromhex("1f8b08000000000000ff"))   # the gzip stream of A

    def fails_in(flip_at: int) -> int | None:
        """The frame where zlib stops on A's stream with the byte at flip_at flipped."""
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        pos = 0
        for frame, p in segs:
            chunk = bytearray(p)
            if pos <= flip_at < pos + len(p):
                chunk[flip_at - pos] ^= 0xFF
            lo = max(0, start - pos)
            pos += len(p)
            try:
                d.decompress(bytes(chunk[lo:]))
            except zlib.error:
                return frame
        return None

    # A full-size segment a third of the way into A's data, and the first byte in it whose
    # flip zlib rejects in that same segment (most flips only garble the output, or are caught
    # much later, by the trailer's CRC).
    full = [i for i, (_, p) in enumerate(segs) if len(p) == 1448]
    idx = full[len(full) // 3]
    frame = segs[idx][0]
    seg_start = sum(len(p) for _, p in segs[:idx])
    for k in range(1448):
        failed = fails_in(seg_start + k)
        if failed == frame:
            break
    else:
        raise SystemExit("no byte of the chosen segment makes zlib fail there")
    data = bytearray(src.read_bytes())
    pkt_off, caplen = list(_pcapng_packets(bytes(data)))[frame - 1]
    pkt = bytes(data[pkt_off:pkt_off + caplen])
    ihl = (pkt[14] & 0x0F) * 4
    tcp_hdr = (pkt[14 + ihl + 12] >> 4) * 4
    payload_at = pkt_off + 14 + ihl + tcp_hdr
    assert bytes(data[payload_at:payload_at + 1448]) == segs[idx][1]
    data[payload_at + k] ^= 0xFF
    dst = OUT / "comp-gzip-corrupt.pcapng"
    dst.write_bytes(bytes(data))
    (OUT / "comp-gzip-corrupt.truth.json").write_text(json.dumps(
        {"capture": dst.name, "source": src.name, "flipped_frame": frame, "flipped_payload_offset": k,
         "zlib_fails_in_frame": failed,
         "note": "one byte of A's TCP payload XOR 0xff (TCP checksum left as it was); zlib "
                 "(inflate of A's gzip stream) rejects the stream in zlib_fails_in_frame"}, indent=1) + "\n")
    print(f"{dst.name}: byte {k} of frame {frame}'s payload flipped; zlib fails in frame {failed}")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    exe = build()
    files = payload_files()
    sessions = sys.argv[1:] or [*SESSIONS, "deflate", *BITSWAP_SESSIONS]
    for session in sessions:
        if session == "deflate":
            make_deflate()
        elif session in BITSWAP_SESSIONS:
            make_bitswap(session, exe)
        else:
            make(session, exe, files)
    if "gzip" in sessions:
        gap_variant()
        corrupt_variant()


if __name__ == "__main__":
    main()
