"""The savings model, defined once (docs/savings-model.md) and held to hand-worked numbers: its
golden vectors (docs/savings-model-vectors.tsv) for both implementations, the Python one in the
analyzer and the Lua one behind the GUI's Statistics window, the worked example of the doc
through the analyzer's whole accounting, and the GUI window against `p2pc analyze` on the same
capture."""
from __future__ import annotations

import csv

import pytest

from conftest import CAPTURES, REPO, once_beyond_first, p2pc_report
from p2pc.model import Aggregate, LinkParams, Sums, compute_rows, direction_savings, totals
from p2pc.records import Message, TcpDirection

VECTORS = REPO / "docs" / "savings-model-vectors.tsv"


def vectors() -> list[dict]:
    lines = [l for l in VECTORS.read_text().splitlines() if l and not l.startswith("#")]
    return list(csv.DictReader(lines, delimiter="\t"))


def inputs(v: dict) -> tuple[Sums, LinkParams | None]:
    items = int(v["batched_items"])
    s = Sums(raw=int(v["raw"]), payload=int(v["payload"]), batched_items=items,
             batched_headers=items * int(v["header_per_item"]))
    params = None
    if int(v["mss"]):
        params = LinkParams(int(v["mss"]), float(v["seg_overhead"]), float(v["ack_ratio"]), float(v["ack_bytes"]))
    return s, params


def test_there_are_vectors_for_both_models():
    assert len(vectors()) >= 6 and {v["model"] for v in vectors()} == {"capture", "bip"}


@pytest.mark.parametrize("v", vectors(), ids=lambda v: v["name"])
def test_python_model_matches_the_vector(v):
    s, params = inputs(v)
    p2p, tcp, ack = direction_savings(s, params, v["model"])
    assert s.raw - s.payload == int(v["payload_saved"])
    assert p2p == pytest.approx(float(v["p2p_header_saved"]), abs=1e-6)
    assert tcp == pytest.approx(float(v["tcp_header_saved"]), rel=1e-9, abs=1e-6)
    assert ack == pytest.approx(float(v["ack_saved"]), rel=1e-9, abs=1e-6)


def test_lua_model_matches_the_vectors(tshark):
    script = REPO / "tests" / "lua" / "model_vectors.lua"
    res = tshark.run(["-q", "-r", tshark.ws.readable(CAPTURES / "bitcoin" / "btc-small.pcapng"), "-c", "1",
                      "-X", f"lua_script:{tshark.ws.readable(script)}",
                      "-X", f"lua_script1:{tshark.ws.readable(REPO / 'lua' / 'p2pc_model.lua')}",
                      "-X", f"lua_script1:{tshark.ws.readable(VECTORS)}"])
    got = {p[1]: [float(x) for x in p[2:]] for p in (l.split("\t") for l in res.stdout.splitlines())
           if p[0] == "V"}
    assert set(got) == {v["name"] for v in vectors()}, res.stdout + res.stderr
    for v in vectors():
        p2p, tcp, ack = got[v["name"]]
        assert p2p == pytest.approx(float(v["p2p_header_saved"]), abs=1e-6)
        assert tcp == pytest.approx(float(v["tcp_header_saved"]), rel=1e-9, abs=1e-6)
        assert ack == pytest.approx(float(v["ack_saved"]), rel=1e-9, abs=1e-6)


def msg(frame: int, mtype: str, raw: int, payload: int, batch: int) -> Message:
    return Message(frame, 0, "192.0.2.1", 49730, "192.0.2.2", 8333, 0.0, "bitcoin", mtype, "lzo1x",
                   payload + 24, 24, payload, raw, batch)


def tcp(src, sport, dst, dport, data_segs, data_bytes, frame_bytes, acks, ack_bytes, max_seg) -> TcpDirection:
    return TcpDirection(0, src, sport, dst, dport, data_segs + acks, frame_bytes + ack_bytes, data_segs,
                        data_bytes, frame_bytes, acks, ack_bytes, 0, 0, max_seg, 0.0, 1.0)


def test_worked_example_of_the_doc():
    """docs/savings-model.md: a ctxcat of 10 txs, 2,641 B raw, 2,528 B sent; MSS 1,448, 66 B per
    segment, 0.7 pure ACKs of 66 B per data segment -> 113 + 231 + 10 = 354 B, 12.2 %."""
    agg = Aggregate(files=["example"])
    agg.add_message("example", msg(10, "ctxcat", 2641, 2528, 10))
    # A: 10 full segments with 66 B of headers each; B: 7 pure ACKs of 66 B.
    agg.add_tcp("example", tcp("192.0.2.1", 49730, "192.0.2.2", 8333, 10, 14480, 14480 + 660, 0, 0, 1448))
    agg.add_tcp("example", tcp("192.0.2.2", 8333, "192.0.2.1", 49730, 0, 0, 0, 7, 462, 0))
    row = compute_rows(agg)[0].as_dict()
    assert (row["payload_saved"], row["header_saved"], row["ack_saved"], row["total_saved"]) == (113, 231, 10, 354)
    assert row["total_saved_pct"] == 12.2
    bip = compute_rows(agg, model="bip")[0].as_dict()
    assert (bip["header_saved"], bip["ack_saved"]) == (216, 468)


def test_aggregates_merge_exactly():
    """Sums are integers: two halves merged give the same rows as the whole."""
    m1, m2 = msg(1, "cblock", 999887, 903192, 1), msg(2, "ctxcat", 2641, 2528, 10)
    t = tcp("192.0.2.1", 49730, "192.0.2.2", 8333, 700, 1_000_000, 1_046_200, 0, 0, 1448)
    whole, a, b = Aggregate(), Aggregate(), Aggregate()
    for agg, ms in ((whole, [m1, m2]), (a, [m1]), (b, [m2])):
        for m in ms:
            agg.add_message("f", m)
        agg.add_tcp("f", t)
    a.merge(b)
    assert [r.as_dict() for r in compute_rows(a)] == [r.as_dict() for r in compute_rows(whole)]
    assert totals(compute_rows(a)).as_dict() == totals(compute_rows(whole)).as_dict()


def test_no_tcp_data_models_no_segments():
    assert LinkParams.from_tcp(None, None) is None
    assert LinkParams.from_tcp(tcp("a", 1, "b", 2, 0, 0, 0, 3, 198, 0), None) is None


# capture: its key log (an NSS one, for tls.keylog_file), if any.
GUI_CAPTURES = {"bitcoin/btc-compressed.pcapng": None, "fisco/fisco-parallel-on.pcapng": None,
                "eth2/eth2-yamux.pcapng": None, "eth2/eth2-quic.pcapng": "eth2/eth2-quic.keys"}
GUI_COLUMNS = ["msgs", "wire", "payload", "header", "ack", "saved", "pct"]   # after proto, type


def gui_window(tshark, capture: str, *script_args: str) -> list[list[str]]:
    """The Statistics window's table (lua/p2pc_savings.lua, run in tshark's print mode, with
    script arguments such as sort=pct), its lines in order, the header left out."""
    script = REPO / "lua" / "p2pc_savings.lua"
    keys = GUI_CAPTURES[capture]
    res = tshark.run(["-q", "-r", tshark.ws.readable(CAPTURES / capture),
                      "-X", f"lua_script:{tshark.ws.readable(script)}",
                      *(a for arg in ("print", *script_args) for a in ("-X", f"lua_script1:{arg}"))] +
                     (["-o", f"tls.keylog_file:{tshark.ws.readable(CAPTURES / keys)}"] if keys else []))
    assert "Lua:" not in res.stderr, res.stderr
    lines = [l.split("\t") for l in res.stdout.splitlines() if l and not l.startswith("#")]
    assert lines and all(len(l) == 2 + len(GUI_COLUMNS) for l in lines), res.stdout + res.stderr
    return lines


def analyze(capture: str) -> dict:
    keys = GUI_CAPTURES[capture]
    return p2pc_report("analyze", *(["--keylog", str(CAPTURES / keys)] if keys else []), str(CAPTURES / capture))


# The window's Lua runs on every version with the first capture; the others change only the
# records it sums, which each protocol's tests check on every version.
@pytest.mark.parametrize("capture", once_beyond_first(list(GUI_CAPTURES)))
def test_gui_window_shows_what_analyze_reports(tshark, capture):
    """The Statistics window and `p2pc analyze` give the same rows, number for number (over QUIC
    too, its packets counted alike)."""
    gui = {(c[0], c[1]): c[2:] for c in gui_window(tshark, capture)[:-1]}
    rep = analyze(capture)
    assert rep["rows"] and set(gui) == {(r["proto"], r["msg_type"]) for r in rep["rows"]}
    for r in rep["rows"]:
        msgs, wire, payload_saved, header_saved, ack_saved, total_saved, total_pct = gui[(r["proto"], r["msg_type"])]
        assert [int(msgs), int(wire), int(payload_saved), int(header_saved), int(ack_saved), int(total_saved)] == \
            [r["messages"], r["wire_bytes"], r["payload_saved"], r["header_saved"], r["ack_saved"], r["total_saved"]]
        assert float(total_pct) == pytest.approx(r["total_saved_pct"], abs=0.01)


@pytest.mark.parametrize("capture", once_beyond_first(list(GUI_CAPTURES)))
def test_gui_window_all_row_sums_every_message(tshark, capture):
    """The window's last row is ALL: its messages, wire bytes and payload bytes saved are the
    plugin's own records summed (-z p2pc,records, read here, not the window's rows); its
    header, ACK and total savings are the analyzer's totals (the model summed unrounded over
    every direction), and its % is the total over the summed bytes, not the rows' % averaged."""
    lines = gui_window(tshark, capture)
    assert [l[:2] for l in lines].count(["ALL", "ALL"]) == 1 and lines[-1][:2] == ["ALL", "ALL"], lines
    msgs, wire, payload_saved, header_saved, ack_saved, total_saved, total_pct = lines[-1][2:]
    keys = GUI_CAPTURES[capture]
    recs = tshark.records(CAPTURES / capture,
                          extra=["-o", f"tls.keylog_file:{tshark.ws.readable(CAPTURES / keys)}"] if keys else None)
    assert recs
    assert int(msgs) == len(recs)
    assert int(wire) == sum(int(m["wire_len"]) for m in recs)
    assert int(payload_saved) == sum(int(m["raw_len"]) - int(m["payload_len"]) for m in recs)
    tot = analyze(capture)["totals"]
    assert (tot["messages"], tot["wire_bytes"], tot["payload_saved"]) == (len(recs), int(wire), int(payload_saved))
    assert [int(header_saved), int(ack_saved), int(total_saved)] == \
        [tot["header_saved"], tot["ack_saved"], tot["total_saved"]]
    assert int(total_saved) != int(payload_saved)          # the model's header and ACK terms count
    assert float(total_pct) == pytest.approx(tot["total_saved_pct"], abs=0.01)
    assert float(total_pct) == pytest.approx(100 * tot["total_saved"] / (int(wire) + tot["total_saved"]), abs=0.01)
    row_pcts = [float(l[8]) for l in lines[:-1]]
    assert abs(float(total_pct) - sum(row_pcts) / len(row_pcts)) > 1    # not an average of ratios


def shown_order(lines: list[list[str]], column: str | None) -> list[tuple[str, str]]:
    """The rows' order a sort column gives, worked from the cells: largest first, equal
    cells by protocol and message type (column None: by protocol and message type)."""
    def key(l):
        return ((-float(l[2 + GUI_COLUMNS.index(column)]),) if column else ()) + (l[0], l[1])
    return [(l[0], l[1]) for l in sorted(lines, key=key)]


@pytest.mark.parametrize("capture", once_beyond_first(["bitcoin/btc-compressed.pcapng", "eth2/eth2-yamux.pcapng"]))
def test_gui_window_sorts_by_bytes_saved_then_by_the_column_asked(tshark, capture):
    """By default the rows come by total bytes saved, the largest first, and ALL last; sort=KEY
    (the window's Sort buttons) orders them by another column, the same rows and ALL row."""
    default = gui_window(tshark, capture)
    rows = default[:-1]
    assert len(rows) >= 5
    assert [(l[0], l[1]) for l in rows] == shown_order(rows, "saved")
    assert [(l[0], l[1]) for l in rows] != shown_order(rows, None)    # the sort did something
    for column in GUI_COLUMNS + ["name"]:
        lines = gui_window(tshark, capture, f"sort={column}")
        assert lines[-1] == default[-1], column                   # the same ALL row, last
        assert sorted(lines[:-1]) == sorted(rows), column          # the same rows
        want = shown_order(rows, None if column == "name" else column)
        assert [(l[0], l[1]) for l in lines[:-1]] == want, column
    # Sort orders that differ here, so each one above was checked for its own order.
    assert shown_order(rows, "pct") != shown_order(rows, "saved") != shown_order(rows, "msgs")


def test_gui_window_rejects_an_unknown_sort(tshark):
    script = REPO / "lua" / "p2pc_savings.lua"
    res = tshark.run(["-q", "-r", tshark.ws.readable(CAPTURES / "bitcoin" / "btc-small.pcapng"),
                      "-X", f"lua_script:{tshark.ws.readable(script)}", "-X", "lua_script1:print",
                      "-X", "lua_script1:sort=ratio"], check=False)
    assert "sort=ratio is not one of saved, pct, payload, header, ack, msgs, wire, name" in res.stderr


def test_rows_per_codec_follow_the_generator_and_add_up_to_their_type():
    """compute_rows(by_codec=True) (the metrics' codec label): on the FISCO 3.x capture, whose
    gateway compresses only payloads over its threshold, a message type splits into its codecs
    with the generator's own counts and byte sums; the model's header and ACK savings of a
    type's codec rows add up to the type's row."""
    from collections import defaultdict
    from p2pc.gather import analyze_file
    from p2pc.wsenv import built_plugin
    import json
    cap = CAPTURES / "fisco/fisco3-on.pcapng"
    truth = json.loads(cap.with_suffix("").with_suffix(".truth.json").read_text())["messages"]
    want = defaultdict(lambda: [0, 0, 0])
    for m in truth:
        w = want[(m["msg_type"], m["codec"])]
        w[0] += 1
        w[1] += m["payload_len"]
        w[2] += m["raw_len"]
    assert len({c for (t, c) in want if t == "TxsSync.TxsPacket"}) == 2     # the split tested
    agg = analyze_file(str(cap), str(built_plugin()))
    by_codec = compute_rows(agg, by_codec=True)
    assert {(r.msg_type, r.codec): [r.sums.messages, r.sums.payload, r.sums.raw] for r in by_codec} == want
    for r in compute_rows(agg):
        parts = [c for c in by_codec if (c.proto, c.msg_type) == (r.proto, r.msg_type)]
        assert sum(c.sums.wire for c in parts) == r.sums.wire
        assert sum(c.header_saved for c in parts) == pytest.approx(r.header_saved, abs=1e-6)
        assert sum(c.ack_saved for c in parts) == pytest.approx(r.ack_saved, abs=1e-6)
