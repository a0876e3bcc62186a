"""libp2p Noise decrypted from a key log, by the real tshark, on captures of real go-libp2p hosts
(captures/gen/make_eth2.py, patched to write their keys).  Expected values come from the source
block files, the generator's truth files and its identity keys; the damaged variants are made
here from the committed captures (editcap, one flipped ciphertext byte)."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest

from conftest import CAPTURES, DATA, dialer_listener
from test_libp2p import base58btc, ed25519_public, peer_id

ETH = CAPTURES / "eth2"
# eth2-noise-yamux-lf: captured where the listener's multistream header is the first payload.
NOISE = ["eth2-noise-yamux", "eth2-noise-mplex", "eth2-noise-yamux-lf"]
ABOVE = "multistream || yamux || mplex || eth2 || gossipsub || libp2p_app"


def truth(name: str) -> dict:
    return json.loads((ETH / f"{name}.truth.json").read_text())


def source(name: str) -> bytes:
    return (DATA / "ethereum" / name).read_bytes()


def keylog(tshark, path) -> list[str]:
    return ["-o", f"libp2p_noise.keylog_file:{tshark.ws.readable(path)}"]


def keyed(tshark, name: str, side: str = "dialer") -> list[str]:
    return keylog(tshark, ETH / truth(name)["keys"][side])


@pytest.mark.parametrize("side", ["dialer", "listener"])
@pytest.mark.parametrize("name", NOISE)
def test_either_sides_keys_decrypt_the_blocks_to_the_source(tshark, name, side):
    """Decrypted, then decompressed: the SSZ of every block equals the source file's."""
    t = truth(name)
    pl = tshark.payloads(ETH / f"{name}.pcapng", extra=keyed(tshark, name, side))
    got = [hashlib.sha256(raw).hexdigest() for _, mtype, raw in pl
           if mtype == "beacon_blocks_by_range/2 response" and len(raw) > 1000]
    want = [hashlib.sha256(source(b["file"])).hexdigest() for b in t["blocks_by_range"]]
    assert want == [b["sha256"] for b in t["blocks_by_range"]]
    assert got == want
    gossip = [hashlib.sha256(raw).hexdigest() for _, mtype, raw in pl if mtype == "gossip beacon_block"]
    assert gossip == [hashlib.sha256(source(f)).hexdigest() for f in t["gossip"]["blocks"]]


@pytest.mark.parametrize("name", NOISE)
def test_gossip_message_ids_over_noise(tshark, name):
    """message-id = SHA256(0x01000000 || uint64_le(len(topic)) || topic || ssz)[:20], here."""
    t = truth(name)
    topic = t["gossip"]["topic"].encode()
    want = [hashlib.sha256(b"\x01\x00\x00\x00" + struct.pack("<Q", len(topic)) + topic + source(f)).hexdigest()[:40]
            for f in t["gossip"]["blocks"]]
    rows = tshark.fields(ETH / f"{name}.pcapng", ["eth2.gossip.message_id"], dfilter="eth2.gossip.message_id",
                         extra=keyed(tshark, name))
    assert [m for r in rows for m in r[0].split("|")] == want


@pytest.mark.parametrize("name", NOISE)
def test_handshake_payload_names_both_peers(tshark, name):
    """Message 2 carries the listener's identity, message 3 the dialer's: peer IDs from the
    generator's Ed25519 seeds, the signatures of the Noise static keys verified."""
    t = truth(name)
    rows = tshark.fields(ETH / f"{name}.pcapng",
                         ["ip.src", "libp2p_noise.handshake", "libp2p_noise.key_type", "libp2p_noise.key",
                          "libp2p_noise.peer_id", "libp2p_noise.signature_valid", "libp2p_noise.keys_of"],
                         dfilter="libp2p_noise.handshake >= 2", extra=keyed(tshark, name))
    assert [r[1] for r in rows] == ["2", "3"]
    by_src = {r[0]: r for r in rows}
    for side, addr in zip("ab", dialer_listener(t)):
        pub = ed25519_public(t["seeds"][side])
        _, msg, key_type, key, pid, valid, keys_of = by_src[addr]
        assert msg == ("3" if side == "a" else "2")
        assert (key_type, bytes.fromhex(key), pid, valid) == ("1", pub, base58btc(peer_id(pub)), "1")
        assert pid.startswith("12D3KooW")
        assert keys_of == "the initiator's"     # the dialer's key log


@pytest.mark.parametrize("name", NOISE)
def test_decrypted_static_keys_are_the_key_logs(tshark, name):
    """The static key decrypted from message 2 (the listener's) and 3 (the dialer's) is the
    X25519 public key of that side's LOCAL_STATIC_PRIVATE_KEY in its key log: 32 bytes."""
    import base64

    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    def static_public(side: str) -> bytes:
        line = next(l for l in (ETH / truth(name)["keys"][side]).read_text().splitlines()
                    if l.startswith("LOCAL_STATIC_PRIVATE_KEY"))
        key = X25519PrivateKey.from_private_bytes(base64.b64decode(line.split("=", 1)[1].strip()))
        return key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)

    rows = tshark.fields(ETH / f"{name}.pcapng", ["libp2p_noise.handshake", "libp2p_noise.static"],
                         dfilter="libp2p_noise.handshake >= 2", extra=keyed(tshark, name))
    assert [(r[0], bytes.fromhex(r[1])) for r in rows] == [("2", static_public("listener")),
                                                          ("3", static_public("dialer"))]


def secp256k1_public(seed: int) -> bytes:
    """The generator's secp256k1 identity: crypto.GenerateSecp256k1Key over a reader of repeated
    `seed` bytes, i.e. the scalar whose 32 big-endian bytes are that byte; compressed point."""
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
    key = ec.derive_private_key(int.from_bytes(bytes([seed]) * 32, "big"), ec.SECP256K1())
    return key.public_key().public_bytes(Encoding.X962, PublicFormat.CompressedPoint)


def test_secp256k1_identities_verify(tshark):
    """Ethereum clients' identities are secp256k1 keys: peer IDs (16Uiu2...) from the
    generator's seeds, the ECDSA signatures of the Noise static keys verified, and the
    short workload decrypted above."""
    name = "eth2-noise-secp256k1"
    t = truth(name)
    assert t["key_type"] == "secp256k1"
    rows = tshark.fields(ETH / f"{name}.pcapng", ["ip.src", "libp2p_noise.key_type", "libp2p_noise.key",
                                                  "libp2p_noise.peer_id", "libp2p_noise.signature_valid"],
                         dfilter="libp2p_noise.handshake >= 2", extra=keyed(tshark, name, "listener"))
    got = {r[0]: r[1:] for r in rows}
    for side, addr in (("a", t["link"]["addr_a"]), ("b", t["link"]["addr_b"])):
        pub = secp256k1_public(t["seeds"][side])
        pb = b"\x08\x02\x12\x21" + pub
        want = base58btc(b"\x00" + bytes([len(pb)]) + pb)
        assert got[addr] == ["2", pub.hex(), want, "1"] and want.startswith("16Uiu2")
    types = {r["msg_type"] for r in tshark.records(ETH / f"{name}.pcapng", extra=keyed(tshark, name, "listener"))}
    assert {f"{req} request" for req in t["requests"]} <= types


@pytest.mark.parametrize("name", NOISE)
def test_muxer_negotiation_early_or_inside(tshark, name):
    """go-libp2p lists its muxers in the handshake extensions; with them the transport data is
    the muxer from its first byte, without them multistream-select negotiates it inside."""
    t = truth(name)
    muxer_id = "/yamux/1.0.0" if t["muxer"] == "yamux" else "/mplex/6.7.0"
    rows = tshark.fields(ETH / f"{name}.pcapng", ["libp2p_noise.stream_muxer", "libp2p_noise.early_muxer"],
                         dfilter="libp2p_noise.handshake", extra=keyed(tshark, name))
    offered = [m for r in rows for m in r[0].split("|") if m]
    early = [r[1] for r in rows if r[1]]
    ms = [m for r in tshark.fields(ETH / f"{name}.pcapng", ["multistream.message"], dfilter="multistream",
                                   extra=keyed(tshark, name)) for m in r[0].split("|")]
    if t["muxer_negotiation"] == "noise extensions":
        assert offered == [muxer_id, muxer_id] and early == [muxer_id]
        assert muxer_id not in ms
    else:
        assert offered == [] and early == []
        assert muxer_id in ms
    for req in t["requests"]:
        assert f"/eth2/beacon_chain/req/{req}/ssz_snappy" in ms


def noise_frames(tshark, capture, extra=None) -> list[list[str]]:
    return tshark.fields(capture, ["frame.number", "ip.src", "libp2p_noise.length", "libp2p_noise.handshake",
                                   "_ws.expert.message"], dfilter="libp2p_noise", extra=extra)


@pytest.mark.parametrize("keys", [None, "eth2-noise-mplex.keys"], ids=["missing", "wrong"])
def test_without_a_matching_key_every_frame_is_counted(tshark, keys):
    """No key, or another connection's keys: every message says no key matched, every
    transport message gets a `noise (encrypted)` record of its size, and nothing goes above."""
    cap = ETH / "eth2-noise-yamux.pcapng"
    extra = keylog(tshark, ETH / keys) if keys else None
    rows = noise_frames(tshark, cap, extra)
    assert [r[3] for r in rows[:3]] == ["1", "2", "3"]
    assert all("no key in libp2p_noise.keylog_file matches" in r[4] for r in rows[1:])
    transport = [int(n) for r in rows[3:] for n in r[2].split("|")]
    recs = [r for r in tshark.records(cap, extra=extra) if r["msg_type"] == "noise (encrypted)"]
    assert len(recs) == len(transport)
    assert sum(int(r["wire_len"]) for r in recs) == sum(2 + n for n in transport)
    assert all(int(r["header_len"]) == 18 for r in recs)
    # multistream-select negotiated /noise before message 3; nothing is decoded above since.
    assert not tshark.fields(cap, ["frame.number"], dfilter=f"frame.number > {rows[2][0]} && ({ABOVE})", extra=extra)


def test_mid_connection_capture_decrypts_nothing(tshark, tmp_path):
    """A capture that starts after the handshake, decoded from its Noise layer (Decode As
    libp2p_noise_tcp): every message says no handshake was seen; nothing goes above."""
    cut = tmp_path / "mid.pcapng"
    subprocess.run(["editcap", "-r", str(ETH / "eth2-noise-yamux.pcapng"), str(cut), "100-400"], check=True)
    extra = keyed(tshark, "eth2-noise-yamux") + ["-d", f"tcp.port=={truth('eth2-noise-yamux')['link']['port_b']},libp2p_noise_tcp"]
    rows = noise_frames(tshark, cut, extra)
    assert len(rows) >= 5
    assert all("Not a Noise XX handshake" in m for r in rows for m in r[4].split("|"))
    assert not tshark.fields(cut, ["frame.number"], dfilter=ABOVE, extra=extra)


def test_corrupted_ciphertext_stops_its_direction(tshark, tmp_path):
    """One flipped ciphertext byte in an early transport message of the listener: its tag fails
    there, that direction's later messages are not decrypted, the dialer's still are."""
    name = "eth2-noise-yamux"
    t = truth(name)
    src = ETH / f"{name}.pcapng"
    rows = tshark.fields(src, ["frame.number", "libp2p_noise.data"],
                         dfilter=f"ip.src == {t['link']['addr_b']} && libp2p_noise.data && !libp2p_noise.handshake "
                                 "&& libp2p_noise.length > 64 && libp2p_noise.length < 1400")
    raw = bytearray(src.read_bytes())
    # The third such message that lies whole in one segment (so its bytes are whole in the file).
    whole = [(r[0], bytes.fromhex(r[1])) for r in rows if "|" not in r[1] and bytes.fromhex(r[1]) in raw]
    frame, data = whole[2]
    at = raw.index(data) + len(data) // 2
    raw[at] ^= 0x01
    bad = tmp_path / "corrupt.pcapng"
    bad.write_bytes(bytes(raw))
    extra = keyed(tshark, name)
    got = tshark.fields(bad, ["frame.number", "ip.src", "_ws.expert.message", "libp2p_noise.stopped_in"],
                        dfilter="libp2p_noise && !libp2p_noise.handshake", extra=extra)
    listener = [r for r in got if r[1] == t["link"]["addr_b"]]
    failed = [r for r in listener if "authentication tag does not verify" in r[2]]
    assert [r[0] for r in failed] == [frame]
    after = [r for r in listener if int(r[0]) > int(frame)]
    assert after and all("earlier message of this connection failed" in m for r in after for m in r[2].split("|"))
    assert all(f == frame for r in after for f in r[3].split("|"))
    dialer_later = [r for r in got if r[1] == t["link"]["addr_a"] and int(r[0]) > int(frame)]
    assert dialer_later and not any("tag" in r[2] or "failed" in r[2] for r in dialer_later)
    # Nothing of the listener's direction is decoded above Noise after the failure.
    above = tshark.fields(bad, ["frame.number"], dfilter=f"ip.src == {t['link']['addr_b']} && ({ABOVE})", extra=extra)
    assert all(int(r[0]) <= int(frame) for r in above)


def sender_stream(tshark, capture, src: str) -> tuple[bytes, dict[int, tuple[int, int]]]:
    """The bytes one side sent, rebuilt from TCP's own fields (no p2pc layer), and where each
    frame's segment lies in them: frame number -> (offset, length)."""
    rows = tshark.fields(capture, ["frame.number", "tcp.seq_raw", "tcp.payload"],
                         dfilter=f"ip.src == {src} && tcp.len > 0", extra=["-o", "tcp.desegment_tcp_streams:FALSE"])
    isn = min(int(r[1]) for r in rows)
    stream, where = bytearray(), {}
    for frame, seq, payload in rows:
        off, data = int(seq) - isn, bytes.fromhex(payload)
        where[int(frame)] = (off, len(data))
        stream += data[len(stream) - off:] if off + len(data) > len(stream) else b""
    return bytes(stream), where


def noise_messages(stream: bytes) -> list[tuple[int, int]]:
    """(offset, size) of every Noise message of a dialer's stream: after the multistream-select
    lines (uvarint length < 128, then the line) up to "/noise\n", each is a u16 length and its bytes."""
    pos, line = 0, b""
    while line != b"/noise\n":
        line = stream[pos + 1:pos + 1 + stream[pos]]
        pos += 1 + stream[pos]
    out = []
    while pos + 2 <= len(stream):
        size = 2 + int.from_bytes(stream[pos:pos + 2], "big")
        out.append((pos, size))
        pos += size
    return out


def undecoded_on(messages: list[str], protocol: str) -> int:
    return sum(int(m.split(" ")[0]) for m in messages if m.endswith(f"bytes p2pc cannot frame on {protocol}"))


def test_noise_resynchronises_after_a_hole(tshark):
    """A segment in the middle of a Noise message of A's gossip block is missing: with keys, the
    bytes of that message left in the capture are exactly what is undecoded on /noise (computed
    from the original capture's TCP bytes), the next message decrypts one nonce later, the
    goodbye A sends afterwards decodes to its source value, and B's direction still hashes to
    the source blocks.  Without keys the rest of A's direction is undecoded bytes, as before."""
    gap, whole = truth("eth2-noise-yamux-gap"), truth("eth2-noise-yamux")
    a = whole["link"]["addr_a"]
    assert gap["removed_from"] == a
    stream, where = sender_stream(tshark, ETH / gap["made_from"], a)
    start, size = where[gap["removed_frame"]]
    cut = [(o, n) for o, n in noise_messages(stream) if o < start + size and start < o + n]
    assert len(cut) == 1 and cut[0][1] == 2 + 65535   # the hole lies inside one message
    c = ETH / gap["capture"]
    extra = keyed(tshark, "eth2-noise-yamux")
    expert = [m for r in tshark.fields(c, ["_ws.expert.message"], dfilter="_ws.expert", extra=extra)
              for m in r[0].split("|")]
    assert undecoded_on(expert, "/noise") == cut[0][1] - size
    assert [r[0] for r in tshark.fields(c, ["libp2p_noise.frames_lost"], dfilter="libp2p_noise.frames_lost",
                                        extra=extra)] == ["1"]
    # yamux resynchronises above it: the gossip stream gives up (its block is not decoded, its
    # bytes are counted); the goodbye/1 request on a new stream decodes.
    assert undecoded_on(expert, "/meshsub/1.3.0") > 200_000
    pl = tshark.payloads(c, extra=extra)
    assert not [m for _, m, _ in pl if m == "gossip beacon_block"]
    bye = tshark.fields(c, ["eth2.goodbye_reason"], dfilter='eth2.method == "goodbye/1"', extra=extra)
    assert bye == [[str(whole["ssz"]["goodbye_reason"])]]
    blocks = [hashlib.sha256(raw).hexdigest() for _, m, raw in pl
              if m == "beacon_blocks_by_range/2 response" and len(raw) > 1000]
    assert blocks == [b["sha256"] for b in whole["blocks_by_range"]]
    assert tshark.records(c, extra=extra) == tshark.records(c, two_pass=True, extra=extra)
    # Without keys nothing is tried: from the cut message on, A's bytes in the capture are undecoded.
    plain = tshark.expert(c)
    assert undecoded_on(plain, "/noise") == len(stream) - cut[0][0] - size


@pytest.mark.parametrize("name", NOISE)
def test_one_pass_equals_two_pass(tshark, name):
    fields = ["frame.number", "libp2p_noise.handshake", "libp2p_noise.peer_id", "libp2p_noise.nonce",
              "libp2p_noise.decrypted", "multistream.message", "yamux.stream", "mplex.stream", "eth2.method",
              "eth2.ssz_length", "eth2.gossip.message_id", "p2pc.header_len", "p2pc.raw_len", "_ws.expert.message"]
    extra = keyed(tshark, name)
    one = tshark.fields(ETH / f"{name}.pcapng", fields, dfilter="libp2p_noise", extra=extra)
    two = tshark.fields(ETH / f"{name}.pcapng", fields, dfilter="libp2p_noise", two_pass=True, extra=extra)
    assert one and one == two
    assert tshark.records(ETH / f"{name}.pcapng", extra=extra) == \
        tshark.records(ETH / f"{name}.pcapng", two_pass=True, extra=extra)


@pytest.mark.parametrize("name", NOISE)
def test_noise_framing_is_split_among_the_messages(tshark, name):
    """Per direction, the Noise framing (2 + 16 bytes) of every transport message up to the last
    one that completed a message went to the header bytes of the records: 18 per message."""
    extra = keyed(tshark, name)
    cap = ETH / f"{name}.pcapng"
    frames = tshark.fields(cap, ["ip.src", "libp2p_noise.framing_given"], dfilter="libp2p_noise.decrypted",
                           extra=extra)
    recs = tshark.records(cap, extra=extra)
    # Both directions decrypted (an empty loop would prove nothing).
    assert len({r[0] for r in frames}) == 2, frames
    for src in {r[0] for r in frames}:
        given = [int(g) for r in frames if r[0] == src for g in r[1].split("|")]
        last = max(i for i, g in enumerate(given) if g)
        assert sum(given) == 18 * (last + 1)
        assert sum(int(r["header_len"]) for r in recs if r["src"] == src) > sum(given)


TLS = {"eth2-tls-yamux": True, "eth2-tls-embedded": False}    # name: decrypts from its key log (else embedded)


def tls_extra(tshark, name: str) -> list[str]:
    return ["-o", f"tls.keylog_file:{tshark.ws.readable(ETH / truth(name)['keys']['dialer'])}"] if TLS[name] else []


@pytest.mark.parametrize("name", list(TLS))
def test_tls_decrypts_to_the_source_blocks_through_the_alpn_muxer(tshark, name):
    """Wireshark's TLS decrypts (key log, or secrets inside the pcapng); the muxer the server
    chose by ALPN takes the data with no multistream-select for it; every block is the source's."""
    t = truth(name)
    extra = tls_extra(tshark, name)
    pl = tshark.payloads(ETH / f"{name}.pcapng", extra=extra)
    got = [hashlib.sha256(raw).hexdigest() for _, mtype, raw in pl
           if mtype == "beacon_blocks_by_range/2 response" and len(raw) > 1000]
    assert got == [b["sha256"] for b in t["blocks_by_range"]]
    gossip = [hashlib.sha256(raw).hexdigest() for _, mtype, raw in pl if mtype == "gossip beacon_block"]
    assert gossip == [hashlib.sha256(source(f)).hexdigest() for f in t["gossip"]["blocks"]]
    alpn = tshark.fields(ETH / f"{name}.pcapng", ["ip.src", "tls.handshake.extensions_alpn_str"],
                         dfilter="tls.handshake.extensions_alpn_str", extra=extra)
    assert alpn == [[t["link"]["addr_a"], "/yamux/1.0.0|libp2p"], [t["link"]["addr_b"], "/yamux/1.0.0"]]
    ms = [m for r in tshark.fields(ETH / f"{name}.pcapng", ["multistream.message"], dfilter="multistream",
                                   extra=extra) for m in r[0].split("|")]
    assert "/tls/1.0.0" in ms and "/yamux/1.0.0" not in ms


@pytest.mark.parametrize("name", list(TLS))
def test_tls_certificate_extension_names_both_peers(tshark, name):
    t = truth(name)
    rows = tshark.fields(ETH / f"{name}.pcapng", ["ip.src", "libp2p_tls.key_type", "libp2p_tls.key",
                                                  "libp2p_tls.peer_id", "libp2p_tls.signature"],
                         dfilter="libp2p_tls.peer_id", extra=tls_extra(tshark, name))
    got = {r[0]: r[1:] for r in rows}
    assert len(rows) == 2
    for side, addr in (("a", t["link"]["addr_a"]), ("b", t["link"]["addr_b"])):
        pub = ed25519_public(t["seeds"][side])
        key_type, key, pid, sig = got[addr]
        assert (key_type, bytes.fromhex(key), pid, len(bytes.fromhex(sig))) == ("1", pub, base58btc(peer_id(pub)), 64)


def test_tls_one_pass_equals_two_pass(tshark):
    name = "eth2-tls-yamux"
    extra = tls_extra(tshark, name)
    assert tshark.records(ETH / f"{name}.pcapng", extra=extra) == \
        tshark.records(ETH / f"{name}.pcapng", two_pass=True, extra=extra)


@pytest.mark.parametrize("name", NOISE + ["eth2-tls-yamux"])
def test_one_pass_equals_two_pass_full_trees(tshark, name):
    """Every layer's tree and every tab (decrypted Noise, handshake payloads, reassembled
    streams): the same in one pass and in two."""
    from test_libp2p import OURS
    extra = tls_extra(tshark, name) if name in TLS else keyed(tshark, name)
    args = ["-n", "-r", tshark.ws.readable(ETH / f"{name}.pcapng"), "-O", OURS + ",libp2p_tls", "-V", "-x",
            "-Y", "libp2p_noise || libp2p_tls || yamux || mplex", *extra]
    one = tshark.run(args).stdout
    two = tshark.run(args + ["-2"]).stdout
    strip = lambda s: [l for l in s.splitlines() if not l.lstrip().startswith(("Transmission Control", "Internet Protocol",
                                                                               "Ethernet II", "Frame "))]
    assert one and strip(one) == strip(two)


def test_tls_record_framing_is_split_among_the_messages(tshark):
    """Per direction, each TLS 1.3 record that carried application data costs 22 bytes of
    framing (5-byte header, content type byte, 16-byte tag; crypto/tls adds no padding): every
    such record's up to the last that completed a message went to the records' header bytes."""
    name = "eth2-tls-yamux"
    extra = tls_extra(tshark, name)
    cap = ETH / f"{name}.pcapng"
    rows = tshark.fields(cap, ["ip.src", "libp2p_tls.framing_given"], dfilter="libp2p_tls.framing_given", extra=extra)
    recs = tshark.records(cap, extra=extra)
    # Both directions sent application data (an empty loop would prove nothing).
    assert len({r[0] for r in rows}) == 2, rows
    for src in {r[0] for r in rows}:
        given = [int(g) for r in rows if r[0] == src for g in r[1].split("|")]
        last = max(i for i, g in enumerate(given) if g)
        assert sum(given) == 22 * (last + 1)
        assert sum(int(r["header_len"]) for r in recs if r["src"] == src) > sum(given)


def test_tls_without_keys_counts_every_encrypted_record(tshark):
    """No keys: every TLS 1.3 record of (opaque) type application_data gets a `tls (encrypted)`
    record of its size (5-byte header + its length), the same in one pass and in two, and the
    note naming the key log that would open it (p2pc.tls_no_keys, as QUIC's packets); with the
    keys there is neither (every such record decrypts)."""
    cap = ETH / "eth2-tls-yamux.pcapng"
    rows = tshark.fields(cap, ["tls.record.content_type", "tls.record.opaque_type", "tls.record.length"], dfilter="tls")
    sizes = []
    for ctype, otype, lengths in rows:
        types = [t for t in (ctype.split("|") if ctype else [])] + [t for t in (otype.split("|") if otype else [])]
        # content_type and opaque_type share the records' order only within each field: TLS 1.3
        # sends the cleartext ones (handshake 22, change_cipher_spec 20) first in a frame.
        lens = [int(x) for x in lengths.split("|")]
        clear = len(ctype.split("|")) if ctype else 0
        sizes += [5 + n for n in lens[clear:]] if not otype or all(t == "23" for t in otype.split("|")) else []
        assert len(types) == len(lens)
    for two_pass in (False, True):
        enc = [r for r in tshark.records(cap, two_pass=two_pass) if r["msg_type"] == "tls (encrypted)"]
        assert len(enc) == len(sizes) > 100
        assert sum(int(r["wire_len"]) for r in enc) == sum(sizes)
        assert all(int(r["header_len"]) == 22 for r in enc)
    notes = [m for row in tshark.fields(cap, ["_ws.expert.message"], dfilter="p2pc.tls_no_keys")
             for m in row[0].split("|") if "tls.keylog_file" in m]
    assert len(notes) == len(sizes)
    assert not [r for r in tshark.records(cap, extra=tls_extra(tshark, "eth2-tls-yamux"), two_pass=True)
                if r["msg_type"] == "tls (encrypted)"]
    assert not tshark.fields(cap, ["frame.number"], dfilter="p2pc.tls_no_keys", extra=tls_extra(tshark, "eth2-tls-yamux"))


def noise_mix_key(ck: bytes, ikm: bytes) -> tuple[bytes, bytes]:
    """Noise's MixKey: HKDF(ck, ikm) with HMAC-SHA256 -> (new ck, new k)."""
    import hmac
    temp = hmac.new(ck, ikm, hashlib.sha256).digest()
    out1 = hmac.new(temp, b"\x01", hashlib.sha256).digest()
    return out1, hmac.new(temp, out1 + b"\x02", hashlib.sha256).digest()


def forge_dialer_signature(tshark, name: str, out) -> str:
    """A copy of a Noise capture whose handshake message 3 carries the dialer's identity with
    its signature's last byte flipped, re-encrypted with the handshake's own key (so the tag
    still verifies and the transport keys, which the payload does not touch, still decrypt).
    Worked from the dialer's key log and the Noise spec (XX, 25519, ChaChaPoly, SHA256), with
    the cryptography library. Returns the dialer's address."""
    import base64
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
    from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
    t = truth(name)
    keys = dict(l.split(" = ") for l in (ETH / t["keys"]["dialer"]).read_text().splitlines() if " = " in l)
    s_priv = X25519PrivateKey.from_private_bytes(base64.b64decode(keys["LOCAL_STATIC_PRIVATE_KEY"]))
    e_priv = X25519PrivateKey.from_private_bytes(base64.b64decode(keys["LOCAL_EPHEMERAL_PRIVATE_KEY"]))
    rows = tshark.fields(ETH / f"{name}.pcapng", ["ip.src", "libp2p_noise.handshake", "libp2p_noise.length",
                                                  "libp2p_noise.ephemeral", "libp2p_noise.static_encrypted",
                                                  "libp2p_noise.payload_encrypted"],
                         dfilter="libp2p_noise.handshake", extra=keyed(tshark, name))
    msgs = {int(r[1]): r for r in rows}
    raw = lambda hexs: bytes.fromhex(hexs.replace(":", ""))  # noqa: E731
    assert int(msgs[1][2]) == 32                        # message 1: e only, no payload
    sha = lambda b: hashlib.sha256(b).digest()  # noqa: E731
    pub = lambda k: k.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)  # noqa: E731
    nonce = lambda n: b"\0" * 4 + struct.pack("<Q", n)  # noqa: E731
    ck = h = b"Noise_XX_25519_ChaChaPoly_SHA256"
    h = sha(h)                                          # the empty prologue
    e_i = raw(msgs[1][3])
    assert e_i == pub(e_priv)
    h = sha(sha(h + e_i))                               # e, then message 1's empty payload
    e_r = X25519PublicKey.from_public_bytes(raw(msgs[2][3]))
    h = sha(h + raw(msgs[2][3]))
    ck, k = noise_mix_key(ck, e_priv.exchange(e_r))    # ee
    s_enc = raw(msgs[2][4])
    s_r = X25519PublicKey.from_public_bytes(ChaCha20Poly1305(k).decrypt(nonce(0), s_enc, h))
    h = sha(h + s_enc)
    ck, k = noise_mix_key(ck, e_priv.exchange(s_r))    # es
    h = sha(h + raw(msgs[2][5]))
    s3 = raw(msgs[3][4])
    assert ChaCha20Poly1305(k).encrypt(nonce(1), pub(s_priv), h) == s3
    h = sha(h + s3)
    ck, k = noise_mix_key(ck, s_priv.exchange(e_r))    # se
    p3 = raw(msgs[3][5])
    payload = bytearray(ChaCha20Poly1305(k).decrypt(nonce(0), p3, h))
    # NoiseHandshakePayload { identity_key = 1; identity_sig = 2; ... }: the signature's last byte.
    off = 0
    while True:
        tag, length = payload[off], payload[off + 1]
        assert length < 0x80                            # one-byte lengths in these captures
        if tag == 0x12:
            payload[off + 1 + length] ^= 0x01
            break
        off += 2 + length
    forged = ChaCha20Poly1305(k).encrypt(nonce(0), bytes(payload), h)
    data = (ETH / f"{name}.pcapng").read_bytes()
    assert data.count(p3) == 1
    out.write_bytes(data.replace(p3, forged))
    return msgs[3][0]


def test_a_forged_identity_signature_names_no_peer(tshark, tmp_path):
    """Message 3's identity signature altered (and re-encrypted): the signature check fails with
    its expert item, the dialer's peer ID does not go to the records (no `I` line), the
    listener's still does, and the transport still decrypts to the same messages."""
    name = "eth2-noise-yamux"
    forged = tmp_path / "forged.pcapng"
    dialer = forge_dialer_signature(tshark, name, forged)
    extra = keyed(tshark, name)
    rows = tshark.fields(forged, ["ip.src", "libp2p_noise.signature_valid", "_ws.expert.message"],
                         dfilter="libp2p_noise.handshake >= 2", extra=extra)
    got = {r[0]: r[1:] for r in rows}
    assert got[dialer][0] == "0" and "does not verify" in got[dialer][1]
    assert [v[0] for a, v in got.items() if a != dialer] == ["1"]
    lines = tshark.run(["-n", "-q", "-r", tshark.ws.readable(forged), "-z", "p2pc,records", *extra]).stdout
    ids = [l.split("\t") for l in lines.splitlines() if l.startswith("I\t")]
    want = {t: base58btc(peer_id(ed25519_public(truth(name)["seeds"][s])))
            for s, t in (("a", truth(name)["link"]["addr_a"]), ("b", truth(name)["link"]["addr_b"]))}
    assert [(i[3], i[7], i[8]) for i in ids] == [(a, "noise", want[a]) for a in want if a != dialer]
    assert tshark.records(forged, extra=extra) == tshark.records(ETH / f"{name}.pcapng", extra=extra)


def pcap_frames(tmp_path, name: str, frames: int) -> tuple[bytes, bytes]:
    """The first `frames` frames of a capture as a classic pcap: (file header, records)."""
    out = tmp_path / f"{name}.pcap"
    subprocess.run(["editcap", "-F", "pcap", "-r", str(ETH / f"{name}.pcapng"), str(out), f"1-{frames}"],
                   check=True, capture_output=True)
    raw = out.read_bytes()
    return raw[:24], raw[24:]


def decrypted_frames(rows: list[list[str]], port: str) -> list[int]:
    """The frames (numbered within their connection) of the client port `port` that decrypted."""
    conn = [r for r in rows if port in (r[1], r[2])]
    return [i for i, r in enumerate(conn, 1) if r[3]]


LIVE = ["eth2-noise-mplex", "eth2-noise-yamux", "eth2-noise-secp256k1"]
LIVE_FIELDS = ["frame.number", "tcp.srcport", "tcp.dstport", "libp2p_noise.decrypted"]


def test_keys_appended_or_replaced_while_tshark_runs_decrypt(tshark, tmp_path):
    """Live decryption (a node writes a key line per new connection): tshark reads three
    connections from a pipe fed one connection at a time, with a key log that changes between
    them.  The first connection's keys are there at the start; the second's are appended
    before its frames come; then the file is replaced by
    one of the same size and modification time holding the third's (a node restarting: a size
    and mtime check misses it; file_needs_reopen sees a new file).  Each connection decrypts the
    frames it decrypts offline with its own key file."""
    n = 60
    live = Path(tempfile.mkdtemp(dir="/tmp", prefix="keylog-live-"))     # readable by tshark's user
    try:
        os.chmod(live, 0o755)
        keys = live / "node.keys"
        logs = [(ETH / truth(name)["keys"]["dialer"]).read_text() for name in LIVE]
        keys.write_text(logs[0])
        os.chmod(keys, 0o644)
        parts = [pcap_frames(tmp_path, name, n) for name in LIVE]
        ports = [tshark.fields(ETH / f"{name}.pcapng", ["tcp.srcport"], dfilter="tcp.flags == 0x002")[0][0]
                 for name in LIVE]
        want = []
        for name, port in zip(LIVE, ports):
            cut = tmp_path / f"{name}.pcap"
            want.append(decrypted_frames(tshark.fields(cut, LIVE_FIELDS, extra=keyed(tshark, name)), port))
        assert all(len(w) > 3 for w in want)
        args = ["-n", "-l", "-r", "-", "-T", "fields", "-E", "separator=\t", "-o",
                f"libp2p_noise.keylog_file:{keys}"] + sum((["-e", f] for f in LIVE_FIELDS), [])
        proc = tshark.ws.popen("tshark", args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=False)
        watchdog = threading.Timer(180, proc.kill)      # a tshark that stops printing ends the test
        watchdog.start()
        rows: list[list[str]] = []

        def feed(i: int) -> None:
            """Write connection i's records, then wait until tshark has printed a line for each."""
            proc.stdin.write((parts[0][0] if i == 0 else b"") + parts[i][1])
            proc.stdin.flush()
            while len(rows) < n * (i + 1):
                line = proc.stdout.readline()
                assert line, proc.stderr.read().decode()
                rows.append(line.decode().rstrip("\n").split("\t"))

        try:
            feed(0)
            with keys.open("a") as f:
                f.write(logs[1])
            feed(1)
            before = keys.stat()
            new = live / "node.keys.new"
            new.write_text(logs[2] + logs[1])
            os.chmod(new, 0o644)
            assert new.stat().st_size == before.st_size
            os.utime(new, ns=(before.st_atime_ns, before.st_mtime_ns))
            os.replace(new, keys)
            feed(2)
            proc.stdin.close()
            assert proc.wait(timeout=60) == 0, proc.stderr.read().decode()
        finally:
            watchdog.cancel()
            proc.kill()
            proc.wait()
        assert len(rows) == 3 * n
        assert [decrypted_frames(rows, port) for port in ports] == want
    finally:
        shutil.rmtree(live, ignore_errors=True)


@pytest.mark.parametrize("name", ["eth2-noise-yamux", "eth2-noise-mplex"])
def test_a_display_filter_with_keys_prints_no_glib_critical(tshark, name):
    """With Noise keys and a -Y filter that does not name the peer ID, tshark builds no item for
    it: the Info column takes the value itself, and GLib complains of nothing."""
    res = tshark.run(["-n", "-r", tshark.ws.readable(ETH / f"{name}.pcapng"), *keyed(tshark, name), "-Y", "yamux || mplex"])
    assert "CRITICAL" not in res.stderr and "g_strlcat" not in res.stderr, res.stderr
    assert "12D3KooW" in res.stdout or res.stdout.count("\n") > 10
