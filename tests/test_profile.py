"""The `p2pc` configuration profile shipped in profiles/p2pc (#30): its packet-list columns, its
colouring rules (p2pc's, then Wireshark's defaults: tools/p2pc_profile.py) and its I/O Graph
presets, read by tshark -C p2pc from a profiles folder of the user's (as it is installed), in a
private HOME (p2pc.wsenv)."""
from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest
from conftest import CAPTURES, REPO, configured_tshark, spec_checks
from p2pc_profile import global_config, profile_files

PROFILE = REPO / "profiles" / "p2pc"
BTC = CAPTURES / "bitcoin" / "btc-compressed.pcapng"
BROKEN = CAPTURES / "eth2" / "eth2-broken.pcapng"


@pytest.fixture(scope="module")
def profiled(tmp_path_factory):
    """tshark in a private HOME whose Wireshark configuration holds the p2pc profile, as
    tools/p2pc_profile.py installs it for this Wireshark."""
    yield from configured_tshark(tmp_path_factory.mktemp("xdg"), "p2pc", profile_files(global_config()))


@pytest.fixture(scope="module")
def stock(tmp_path_factory):
    """tshark in a private HOME with no profile of p2pc's: Wireshark's default colouring."""
    yield from configured_tshark(tmp_path_factory.mktemp("xdg"), "other", {})


def psml(tshark, capture, extra=()) -> tuple[list[str], list[tuple[dict, list[str]]]]:
    """The column titles, and per packet its attributes (colours) and column texts."""
    out = tshark.run(["-n", "-C", "p2pc", "-r", tshark.ws.readable(capture), "-T", "psml", *extra]).stdout
    root = ET.fromstring(out[out.index("<psml"):])
    titles = [s.text or "" for s in root.find("structure")]
    return titles, [(dict(p.attrib), [s.text or "" for s in p]) for p in root.findall("packet")]


def test_columns_show_each_message_as_the_truth_file_has_it(profiled):
    titles, packets = psml(profiled, BTC, ["-Y", "p2pc"])
    assert titles[-6:] == ["Message", "Codec", "Wire bytes", "Raw bytes", "Ratio", "Info"]
    col = {t: i for i, t in enumerate(titles)}
    shown = []
    for _, cells in packets:
        per = [cells[col[t]].split(",") for t in ("Message", "Codec", "Wire bytes", "Raw bytes", "Ratio")]
        assert len({len(p) for p in per}) == 1, cells     # one value per record in every column
        shown += list(zip(*per))
    truth = json.loads(BTC.with_suffix("").with_suffix(".truth.json").read_text())["messages"]
    for m in truth:
        # Bitcoin's header is 24 bytes; the ratio is raw over sent payload
        row = [s for s in shown if s[0] == m["command"] and s[1] == m["codec"] and int(s[3]) == m["raw_len"]]
        assert row, (m, shown[:20])
        assert int(row[0][2]) == m["payload_len"] + 24
        # two decimals (p2pc_ratio_format), not 1.714285…
        assert row[0][4] == "%.2f" % (m["raw_len"] / m["payload_len"]), row


def rules(text: str | None = None) -> list[tuple[str, str, str, str]]:
    """(name, filter, background #rrggbb, foreground #rrggbb) of each enabled colouring rule of a
    colorfilters file (default: p2pc's own rules), in order; a disabled rule ("!@...") colours
    nothing."""
    out = []
    text = (REPO / "profiles" / "p2pc.colorfilters").read_text() if text is None else text
    for line in text.splitlines():
        if line.startswith(("#", "!@")) or not line.strip():
            continue
        m = re.fullmatch(r"@([^@]+)@([^@]+)@\[(\d+),(\d+),(\d+)\]\[(\d+),(\d+),(\d+)\]", line)
        assert m, line
        c = [int(v) >> 8 for v in m.groups()[2:]]
        out.append((m[1], m[2], "#%02x%02x%02x" % tuple(c[:3]), "#%02x%02x%02x" % tuple(c[3:])))
    return out


def test_every_colouring_rule_is_a_valid_filter(profiled):
    assert [r[0] for r in rules()] == ["p2pc decompression failed", "p2pc spec violation", "p2pc undecoded",
                                       "p2pc not smaller", "p2pc compressed"]
    for name, flt, _, _ in rules():
        res = profiled.run(["-n", "-r", profiled.ws.readable(BTC), "-c", "1", "-Y", flt], check=False)
        assert res.returncode == 0, (name, res.stderr)


def test_every_conformance_check_is_coloured():
    """Each p2pc.spec.* check (plugin/core/spec.c) is named by one colouring rule: "not
    smaller" for BUIP017's, "spec violation" for every other."""
    named = {name: flt.split(" || ") for name, flt, _, _ in rules()}
    spec = [n for n in named["p2pc spec violation"] + named["p2pc not smaller"] if n.startswith("p2pc.spec.")]
    assert sorted(spec) == sorted(spec_checks())


def test_every_decompression_failure_is_coloured():
    """Each expert item the plugin registers for a payload that does not decompress (every
    "...failed" expert in plugin/: BUIP017, eth2 Snappy, FISCO, FISCO 3, the libp2p
    compression transport, the Lua codecs) is named by the "decompression failed" rule."""
    failed = {n for src in (REPO / "plugin").rglob("*.c")
              for n in re.findall(r'\{\s*&ei_\w+,\s*\{\s*"([^"]+)"', src.read_text()) if "fail" in n}
    assert len(failed) >= 6
    assert sorted(rules()[0][1].split(" || ")) == sorted(failed)


def test_the_profile_adds_to_wiresharks_colouring(profiled, stock):
    """The installed colorfilters is p2pc's rules first, then every rule of this Wireshark's
    global colorfilters, in its order; so a frame no p2pc rule matches (TCP handshake, ACKs)
    gets exactly the colours stock Wireshark gives it, and a p2pc frame the colours of the
    first p2pc rule it matches."""
    installed = rules(profile_files(global_config())["colorfilters"])
    defaults = rules((global_config() / "colorfilters").read_text())
    assert len(defaults) >= 10 and installed == rules() + defaults
    ours = rules()
    for capture in (BTC, BROKEN):
        mine = {a["n"]: a for a, _ in _coloured(profiled, capture, ["-C", "p2pc"])}
        theirs = {a["n"]: a for a, _ in _coloured(stock, capture, [])}
        assert mine.keys() == theirs.keys()
        first: dict[str, tuple] = {}
        for name, flt, bg, fg in ours:
            for (n,) in profiled.fields(capture, ["frame.number"], dfilter=flt):
                first.setdefault(n, (name, bg, fg))
        assert first and len(first) < len(mine)          # some frames are p2pc's, some are not
        for n, a in mine.items():
            want = first.get(n, (None, theirs[n].get("background"), theirs[n].get("foreground")))
            assert (a.get("background"), a.get("foreground")) == want[1:], (capture.name, n, want[0])
        assert any(t.get("background") for t in theirs.values())   # the defaults colour something


def _coloured(tshark, capture, extra) -> list[tuple[dict, list[str]]]:
    """Per packet: its psml attributes with its number as "n", and its column texts."""
    out = tshark.run(["-n", *extra, "-r", tshark.ws.readable(capture), "--color", "-T", "psml"]).stdout
    root = ET.fromstring(out[out.index("<psml"):])
    return [({**p.attrib, "n": p[0].text}, [s.text or "" for s in p]) for p in root.findall("packet")]


def test_decompression_failures_are_coloured(profiled):
    """eth2-broken's Snappy payloads that do not decompress (go-libp2p peers sent them on
    purpose) are painted with the "decompression failed" colours."""
    name, flt, bg, fg = rules()[0]
    _, packets = psml(profiled, BROKEN, ["--color", "-Y", "eth2.decompress_failed"])
    assert len(packets) >= 2
    assert all((a.get("background"), a.get("foreground")) == (bg, fg) for a, _ in packets), packets


def test_compressed_messages_are_coloured_as_the_rule_says(profiled):
    """tshark --color reads the profile's rules: every frame carrying a compressed block is
    painted with the "p2pc compressed" colours, and frames without a p2pc record are not."""
    _, _, bg, fg = rules()[-1]
    _, packets = psml(profiled, BTC, ["--color", "-Y", 'p2pc.codec == "lzo1x" || !p2pc'])
    compressed = [a for a, cells in packets if "lzo1x" in ",".join(cells)]
    assert len(compressed) >= 6
    assert all(a.get("background") == bg and a.get("foreground") == fg for a in compressed), compressed
    assert all(a.get("background") != bg for a, cells in packets if "lzo1x" not in ",".join(cells))


def test_io_graph_presets_name_real_fields_and_filters(profiled):
    """io_graphs is the UAT the I/O Graph dialog reads (GUI only): each row's filter compiles
    and its Y field exists; one wire-bytes and one raw-bytes graph per protocol."""
    rows = [re.findall(r'"((?:[^"\\]|\\.)*)"', line)
            for line in (PROFILE / "io_graphs").read_text().splitlines() if line.startswith('"')]
    assert rows and all(len(r) == 9 for r in rows)
    fields = {line.split("\t")[2] for line in profiled.run(["-G", "fields"]).stdout.splitlines()
              if line.startswith("F\t")}
    protos = set()
    for enabled, name, flt, colour, style, yaxis, yfield, sma, factor in rows:
        flt = flt.replace("\\x22", '"')
        if flt:
            res = profiled.run(["-n", "-r", profiled.ws.readable(BTC), "-c", "1", "-Y", flt], check=False)
            assert res.returncode == 0, (name, res.stderr)
        if yfield:
            assert yfield in fields and yaxis == "SUM(Y Field)", name
            protos.add((re.search(r'"(\w+)"', flt)[1], yfield))
    for proto in {p for p, _ in protos}:
        assert {(proto, "p2pc.wire_len"), (proto, "p2pc.raw_len")} <= protos
    assert "bitcoin" in {p for p, _ in protos}
