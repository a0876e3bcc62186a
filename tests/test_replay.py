"""Re-dissection: what p2pc keeps for it, and where.

A session that keeps its frames (Wireshark, sharkd, tshark -2) dissects them again, in any order:
p2pc keeps what its stateful layers decoded in each frame and replays it. tshark's one pass keeps
no frame and dissects none twice, so p2pc keeps nothing there: it finds which from the program's
frame store by the fourth frame (Wireshark says a second pass can come only once the first is
over, too late for what that pass keeps). The records tap's #END line says whether a pass
followed ("kept") or not ("one-pass"), or that nothing was kept ("off"), and what was kept
(kept_bytes)."""
from __future__ import annotations

import base64
import json
import subprocess

import pytest
from conftest import CAPTURES
from p2pc.records import RecordsIncomplete, read_records

ETH2 = CAPTURES / "eth2" / "eth2-yamux.pcapng"
GZIP = CAPTURES / "libp2p-compression" / "comp-gzip.pcapng"
JS_PLAINTEXT = CAPTURES / "interop" / "interop-js-js-plaintext-yamux.pcapng"


def end_line(tshark, capture, extra: list[str]) -> dict[str, str]:
    out = tshark.run(["-n", "-q", "-r", tshark.ws.readable(capture), "-z", "p2pc,records", *extra]).stdout
    end = [line for line in out.splitlines() if line.startswith("#END")]
    assert len(end) == 1, out[-500:]
    return dict(kv.split("=", 1) for kv in end[0].split("\t")[1:])


def replay_mode(tshark, capture, extra: list[str]) -> str:
    return end_line(tshark, capture, extra)["replay"]


def test_one_pass_keeps_nothing_and_two_passes_keep_it(tshark):
    assert replay_mode(tshark, ETH2, []) == "one-pass"
    assert replay_mode(tshark, ETH2, ["-2"]) == "kept"
    assert replay_mode(tshark, ETH2, ["-2", "-o", "p2pc.keep_replay:FALSE"]) == "off"
    assert replay_mode(tshark, ETH2, ["-o", "p2pc.keep_replay:FALSE"]) == "off"


@pytest.mark.parametrize("capture", [ETH2, GZIP, JS_PLAINTEXT], ids=lambda c: c.stem)
@pytest.mark.parametrize("extra", [[], ["-Y", "tcp.len > 0"], ["-c20000"]], ids=["all", "filtered", "count"])
def test_tshark_one_pass_keeps_no_byte_by_default(tshark, capture, extra):
    """With p2pc's preferences as they are by default, tshark without -2 keeps nothing for a
    re-dissection that never comes (the three frames before the frame store can tell are
    handshakes), whatever filter or count it runs with (a display filter changes which earlier
    frame tshark holds as the previous displayed one); the same run with -2 keeps the capture's
    decoded state (#39: one pass used to keep up to p2pc.max_replay_mib, 1.69x stock's RSS)."""
    assert end_line(tshark, capture, extra)["kept_bytes"] == "0"
    assert int(end_line(tshark, capture, ["-2", *extra])["kept_bytes"]) > 100_000


def test_the_pass_is_known_from_wireshark_not_from_the_command_line(tshark):
    """Whether frames are kept is what the program's frame store says, not a guess from
    tshark's arguments: -c20000 (a packet count holding a "2") is one pass, and -2 among other
    options is two."""
    assert replay_mode(tshark, ETH2, ["-c20000"]) == "one-pass"
    assert replay_mode(tshark, ETH2, ["-c", "20000", "-2"]) == "kept"
    plugin = tshark.ws.plugin.read_bytes()
    assert b"/proc/self/cmdline" not in plugin and b"/proc/self/exe" not in plugin


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


# ---- the budget: p2pc.max_replay_mib ----
SMALL = ["-o", "p2pc.max_replay_mib:1"]


def test_a_used_up_budget_cuts_replay_at_a_frame_and_says_so(tshark):
    """With 1 MiB for all replay state, eth2-yamux (2.5 MB) keeps its first frames whole and
    the rest not at all: the #END line names the first frame not kept; on the second pass every
    frame from it on that TCP handed to p2pc (payload, not a retransmission: TCP's own fields)
    carries p2pc.replay_not_kept naming the budget and that frame, and no frame before it does.
    The frames kept replay their records exactly as one pass makes them; the others have none."""
    end = end_line(tshark, ETH2, ["-2", *SMALL])
    assert end["replay"] == "kept"
    cut = int(end["not_kept_from"])
    fed = [int(r[0]) for r in tshark.fields(ETH2, ["frame.number"],
                                            dfilter="tcp.len > 0 && !tcp.analysis.retransmission")]
    assert fed[0] < cut <= fed[-1]
    rows = tshark.fields(ETH2, ["frame.number", "_ws.expert.message"], dfilter="p2pc.replay_not_kept",
                         two_pass=True, extra=SMALL)
    assert [int(r[0]) for r in rows] == [f for f in fed if f >= cut]
    assert f"p2pc.max_replay_mib budget (1 MiB) ran out in frame {cut - 1}" in rows[0][1]
    one_pass = tshark.records(ETH2, extra=SMALL)
    assert one_pass == tshark.records(ETH2)
    assert tshark.records(ETH2, two_pass=True, extra=SMALL) == [r for r in one_pass if int(r["frame"]) < cut]


def test_the_default_budget_keeps_every_test_capture_whole(tshark):
    """No #END cut, and no p2pc.replay_not_kept, for the captures the other replay tests click
    through; and none where nothing is kept at all (one pass, p2pc.keep_replay off)."""
    for capture in (ETH2, GZIP):
        assert "not_kept_from" not in end_line(tshark, capture, ["-2"])
        assert not tshark.fields(capture, ["frame.number"], dfilter="p2pc.replay_not_kept", two_pass=True)
    assert "not_kept_from" not in end_line(tshark, ETH2, SMALL)
    assert "not_kept_from" not in end_line(tshark, ETH2, ["-2", *SMALL, "-o", "p2pc.keep_replay:FALSE"])


def test_the_budget_is_range_checked(tshark):
    """Out of its range (1-65536, as its description says) the nearest limit applies: 0 cuts
    where 1 MiB does, a huge value keeps everything."""
    at_one = end_line(tshark, ETH2, ["-2", *SMALL])["not_kept_from"]
    assert end_line(tshark, ETH2, ["-2", "-o", "p2pc.max_replay_mib:0"])["not_kept_from"] == at_one
    assert "not_kept_from" not in end_line(tshark, ETH2, ["-2", "-o", "p2pc.max_replay_mib:4000000000"])
    prefs = tshark.run(["-G", "defaultprefs"]).stdout.splitlines()
    at = prefs.index("#p2pc.max_replay_mib: 256")
    assert "(1-65536)" in prefs[at - 2]


def test_sharkd_says_a_frame_past_the_budget_was_not_kept(tshark, ws):
    """sharkd with the budget set to 1 MiB (setconf, as the GUI's preferences): a click on the
    capture's last segment shows the expert item instead of an empty libp2p layer."""
    last = int(tshark.fields(ETH2, ["frame.number"], dfilter="tcp.len > 0")[-1][0])
    reqs = [{"jsonrpc": "2.0", "id": 1, "method": "setconf",
             "params": {"name": "p2pc.max_replay_mib", "value": "1"}},
            {"jsonrpc": "2.0", "id": 2, "method": "load", "params": {"file": ws.readable(ETH2)}},
            {"jsonrpc": "2.0", "id": 3, "method": "frame", "params": {"frame": last, "proto": True}}]
    res = ws.run("sharkd", ["-"], input="".join(json.dumps(r) + "\n" for r in reqs))
    answers = {a["id"]: a for a in map(json.loads, (l for l in res.stdout.splitlines() if l.startswith("{")))}
    assert answers[2]["result"]["status"] == "OK", res.stdout[:500] + res.stderr
    assert "p2pc.replay_not_kept" in filters(answers[3]["result"]["tree"])


def test_the_analyzer_refuses_a_second_pass_missing_records(tshark, ws):
    """A record dump whose #END says frames were not kept is an error naming the frame, not a
    report whose totals silently miss them."""
    cut = end_line(tshark, ETH2, ["-2", *SMALL])["not_kept_from"]
    proc = ws.popen("tshark", ["-n", "-q", "-r", ws.readable(ETH2), "-2", *SMALL, "-z", "p2pc,records"],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with pytest.raises(RecordsIncomplete, match=f"records from frame {cut} on are missing") as e:
        read_records(proc, ETH2, lambda m: None, lambda t: None)
    assert e.value.exit_code == 12 and len(str(e.value).splitlines()) == 1
