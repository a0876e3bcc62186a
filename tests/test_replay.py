"""Re-dissection: what p2pc keeps for it, and where.

A session that keeps its frames (Wireshark, sharkd, tshark -2) dissects them again, in any order:
p2pc keeps what its stateful layers decoded in each frame and replays it. tshark's one pass keeps
no frame, so p2pc keeps nothing either (the records tap's #END line says which)."""
from __future__ import annotations

import base64
import json

from conftest import CAPTURES

ETH2 = CAPTURES / "eth2" / "eth2-yamux.pcapng"
GZIP = CAPTURES / "libp2p-compression" / "comp-gzip.pcapng"


def replay_mode(tshark, capture, extra: list[str]) -> str:
    out = tshark.run(["-n", "-q", "-r", tshark.ws.readable(capture), "-z", "p2pc,records", *extra]).stdout
    end = [line for line in out.splitlines() if line.startswith("#END")]
    assert len(end) == 1, out[-500:]
    return dict(kv.split("=", 1) for kv in end[0].split("\t")[1:])["replay"]


def test_one_pass_keeps_nothing_and_two_passes_keep_it(tshark):
    assert replay_mode(tshark, ETH2, []) == "one-pass"
    assert replay_mode(tshark, ETH2, ["-2"]) == "kept"
    assert replay_mode(tshark, ETH2, ["-2", "-o", "p2pc.keep_replay:FALSE"]) == "off"


def sharkd_frames(ws, capture, frames: list[int], bytes_too: bool = False) -> dict[int, dict]:
    """sharkd's answer for each frame, asked for after the whole file loaded and in reverse
    order: every one is a re-dissection, as a click in Wireshark is."""
    order = sorted(frames, reverse=True)
    reqs = [{"jsonrpc": "2.0", "id": 1, "method": "load", "params": {"file": ws.readable(capture)}}]
    for i, f in enumerate(order, 2):
        reqs.append({"jsonrpc": "2.0", "id": i, "method": "frame",
                     "params": {"frame": f, "proto": True, "bytes": bytes_too}})
    res = ws.run("sharkd", ["-"], input="".join(json.dumps(r) + "\n" for r in reqs))
    answers = [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]
    assert answers and answers[0].get("result", {}).get("status") == "OK", res.stdout[:500] + res.stderr
    by_id = {a["id"]: a["result"] for a in answers[1:]}
    return {f: by_id[i] for i, f in enumerate(order, 2)}


def filters(node_list) -> list[str]:
    out = []
    for n in node_list:
        if "f" in n:
            out.append(n["f"])
        out += filters(n.get("n", []))
    return out


def test_sharkd_redissects_the_blocks_reassembled_across_frames(tshark, ws):
    """Each block of blocks_by_range spans dozens of frames; clicked on later, its last frame
    still shows the block (slots from the source files' names)."""
    t = json.loads(ETH2.with_suffix("").with_suffix(".truth.json").read_text())
    want = [int(b["file"].rsplit("slot", 1)[1].split(".")[0]) for b in t["blocks_by_range"]]
    frames = [int(r[0]) for r in tshark.fields(ETH2, ["frame.number"],
                                               dfilter='eth2.method == "beacon_blocks_by_range/2" && eth2.block.slot')]
    got = sharkd_frames(ws, ETH2, frames)
    slots = [int(f.split("== ")[1]) for fr in frames for f in filters(got[fr]["tree"])
             if f.startswith("eth2.block.slot == ")]
    assert slots == want


def test_sharkd_redissects_the_kept_stream_output(tshark, ws):
    """A gzip stream decodes only in order; clicked on later, B's frames still carry their
    "Decompressed gzip stream" tab, and in it B's replies (the sha256 of each file received)."""
    t = json.loads(GZIP.with_suffix("").with_suffix(".truth.json").read_text())
    b = t["link"]["addr_b"]
    frames = [int(r[0]) for r in tshark.fields(GZIP, ["frame.number"], dfilter=f"ip.src == {b} && libp2p_compression")]
    got = sharkd_frames(ws, GZIP, frames, bytes_too=True)
    tabs = b"".join(base64.b64decode(ds["bytes"]) for fr in frames for ds in got[fr].get("ds", [])
                    if ds["name"].startswith("Decompressed gzip stream"))
    for f in t["transfers"]:
        assert f["reply"].encode() in tabs, f["name"]
