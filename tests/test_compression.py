"""The libp2p compression transport (adlrocha's go-libp2p forks): stateful gzip and brotli
streams between the security layer and the muxer, decoded from captures of the real peers.
Expected values come from the generator's truth files (the transferred files' sha256)."""
from __future__ import annotations

import hashlib
import json

import pytest

from conftest import CAPTURES

COMP = CAPTURES / "libp2p-compression"
CODECS = {"comp-gzip": "gzip-stream", "comp-cbrotli": "brotli-stream", "comp-none": "none"}


def truth(name: str) -> dict:
    return json.loads((COMP / f"{name}.truth.json").read_text())


def sent_file(tshark, name: str) -> bytes:
    cap = COMP / f"{name}.pcapng"
    recs = tshark.records(cap)
    pays = tshark.payloads(cap)
    assert len(recs) == len(pays)
    a = truth(name.replace("-gap", ""))["link"]["addr_a"]
    return b"".join(raw for (_, mtype, raw), r in zip(pays, recs)
                    if mtype == "/p2pc/file/1.0.0" and r["src"] == a)


@pytest.mark.parametrize("name", list(CODECS))
def test_decompressed_application_bytes_equal_what_was_sent(tshark, name):
    t = truth(name)
    data = sent_file(tshark, name)
    assert len(data) == t["file"]["bytes"]
    assert hashlib.sha256(data).hexdigest() == t["file"]["sha256"]
    echo = [raw for _, mtype, raw in tshark.payloads(COMP / f"{name}.pcapng") if mtype == "/echo/1.0.0"]
    assert echo == [t["echo"]["sent"].encode()] * 2


@pytest.mark.parametrize("name", ["comp-gzip", "comp-cbrotli"])
def test_inner_layers_decode_as_in_the_uncompressed_twin(tshark, name):
    fields = ["multistream.message", "yamux.stream"]
    def layers(cap):
        rows = tshark.fields(COMP / f"{cap}.pcapng", fields, dfilter="multistream || yamux")
        # The compression negotiation adds one multistream header and proposal per direction.
        msgs = [m for r in rows for m in r[0].split("|")
                if m and not m.startswith("/compression/") and m != "/multistream/1.0.0"]
        streams = sorted({int(s) for r in rows for s in r[1].split("|") if s})
        return msgs, streams
    assert layers(name) == layers("comp-none")
    assert f"/compression/{name.split('-')[1]}" in [
        m for r in tshark.fields(COMP / f"{name}.pcapng", ["multistream.message"], dfilter="multistream")
        for m in r[0].split("|")]


@pytest.mark.parametrize("name", ["comp-gzip", "comp-cbrotli"])
def test_records_carry_the_stream_codec_and_add_up(tshark, name):
    recs = tshark.records(COMP / f"{name}.pcapng")
    assert {r["codec"] for r in recs} == {CODECS[name]}
    rows = tshark.fields(COMP / f"{name}.pcapng", ["ip.src", "libp2p_compression.in"], dfilter="libp2p_compression")
    for src in {r["src"] for r in recs}:
        fed = sum(int(x) for r in rows if r[0] == src for x in r[1].split("|"))
        attributed = sum(int(r["payload_len"]) for r in recs if r["src"] == src)
        # Every compressed byte up to the end of the last message is attributed to a message.
        assert 0 < attributed <= fed and fed - attributed < 200
    file_recs = [r for r in recs if r["msg_type"] == "/p2pc/file/1.0.0" and r["src"] == truth(name)["link"]["addr_a"]]
    assert sum(int(r["payload_len"]) for r in file_recs) < sum(int(r["raw_len"]) for r in file_recs)


@pytest.mark.parametrize("name", list(CODECS) + ["comp-gzip-gap"])
def test_one_pass_equals_two_pass(tshark, name):
    fields = ["frame.number", "multistream.message", "yamux.stream", "libp2p_compression.out",
              "libp2p.protocol", "p2pc.payload_len", "p2pc.raw_len", "_ws.expert.message"]
    one = tshark.fields(COMP / f"{name}.pcapng", fields, dfilter="libp2p")
    two = tshark.fields(COMP / f"{name}.pcapng", fields, dfilter="libp2p", two_pass=True)
    assert one and one == two


def test_gap_stops_one_direction_only(tshark):
    cap = COMP / "comp-gzip-gap.pcapng"
    removed = json.loads((COMP / "comp-gzip-gap.truth.json").read_text())["removed_frame"]
    gaps = tshark.fields(cap, ["frame.number", "ip.src"], dfilter="libp2p.gap")
    assert len(gaps) == 1 and int(gaps[0][0]) == removed
    t = truth("comp-gzip")
    recs = tshark.records(cap)
    a = [r for r in recs if r["src"] == t["link"]["addr_a"]]
    b = [r for r in recs if r["src"] == t["link"]["addr_b"]]
    # Nothing from A decodes after the hole; B's reply (the file's sha256) still does.
    assert all(int(r["frame"]) < removed for r in a)
    reply = [r for r in b if r["msg_type"] == "/p2pc/file/1.0.0"]
    assert reply and int(reply[0]["frame"]) > removed
    res = tshark.run(["-n", "-r", tshark.ws.readable(cap)])
    assert res.returncode == 0
