"""The HTML reports' figures as a browser draws them: each report rendered by a real (headless)
Chromium, and what plotly drew read back from the page (each trace's values and colours, each
axis's range), checked against the captures' truth files and the captures themselves: time axes
start at each capture's own start, colours stay distinct, no CDF stands on a handful of
messages, the diff figure is A minus B per message type, and compare's ALL rows are sums."""
from __future__ import annotations

import html as htmllib
import json
import re
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

from conftest import CAPTURES, p2pc_report
from p2pc.model import size_range, size_range_label, SIZE_RANGES
from p2pc.output.html import CDF_MIN_MESSAGES, distinct_colors
from test_analyzer import BTC, p2pc, source_raw_len, truth
from test_diff import DIFFER, ETH2_ONLY, INTEROP, INTEROP_PAIRS, expected_diff
from test_reports import CHROMIUM, chromium, console_messages

COMPRESSED, BASELINE = BTC / "btc-compressed.pcapng", BTC / "btc-baseline.pcapng"
DEFLATE = CAPTURES / "libp2p-compression" / "comp-deflate.pcapng"   # 20 compressed messages under 250 B

pytestmark = [pytest.mark.once,   # Chromium draws the analyzer's page: once, not per Wireshark version
              pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")]

# Added to a copy of the page: once plotly has drawn every figure, what it drew (its full,
# defaults-resolved data and layout) goes into an attribute of <body> for --dump-dom.
PROBE = """<script>
(function () {
  var want = document.querySelectorAll("script.figure-spec").length;
  var timer = setInterval(function () {
    var plots = document.querySelectorAll(".js-plotly-plot");
    if (plots.length < want) return;
    clearInterval(timer);
    var out = {};
    plots.forEach(function (gd) {
      var h = gd.previousElementSibling;
      while (h && h.tagName !== "H2") h = h.previousElementSibling;
      var axes = {};
      Object.keys(gd._fullLayout).forEach(function (k) {
        if (/^[xy]axis\\d*$/.test(k)) axes[k] = gd._fullLayout[k].range;
      });
      out[h.textContent] = {axes: axes, traces: gd._fullData.map(function (t) {
        return {type: t.type, name: t.name, x: Array.from(t.x || []), y: Array.from(t.y || []),
                xaxis: t.xaxis, showlegend: t.showlegend,
                color: t.type === "bar" ? t.marker.color : (t.line && t.mode.indexOf("lines") >= 0
                                                             ? t.line.color : t.marker.color)};
      })};
    });
    document.body.setAttribute("data-probe", JSON.stringify(out));
  }, 100);
})();
</script></body>"""


def drawn(tmp_path: Path, command: str, *args: str) -> tuple[dict, str]:
    """The report's figures as Chromium drew them {title: {axes, traces}}, and the page's DOM."""
    page = tmp_path / f"{command}.html"
    res = p2pc(command, *args, "--format", "html", "--output", str(page))
    assert res.returncode in (0, DIFFER), res.stderr     # diff's exit code when A and B differ
    probe = tmp_path / f"{command}-probe.html"
    probe.write_text(page.read_text().replace("</body>", PROBE))
    dom = chromium(tmp_path, probe, "--dump-dom")
    assert console_messages(dom.stderr, probe) == []
    m = re.search(r'data-probe="([^"]*)"', dom.stdout)
    assert m, dom.stderr[-2000:]
    return json.loads(htmllib.unescape(m.group(1))), dom.stdout


def legend_colours_distinct(fig: dict) -> None:
    """One colour per legend entry, no two entries alike."""
    colours = {}
    for t in fig["traces"]:
        if t["showlegend"] is not False:
            colours.setdefault(t["name"], t["color"])
    assert len(set(map(str, colours.values()))) == len(colours), colours


def capture_times(capture: Path) -> list[float]:
    out = subprocess.run(["capinfos", "-a", "-e", "-S", "-T", "-r", str(capture)], capture_output=True,
                         text=True, check=True).stdout.strip().split("\t")
    return [float(out[-2]), float(out[-1])]


def test_distinct_colors_stay_distinct_for_any_number():
    for n in range(1, 80):
        assert len(set(distinct_colors(n))) == n


def test_analyze_figures(tmp_path):
    """Two captures taken at different times: each capture's bandwidth line starts at 0 s and the
    axis spans the longer capture, not the time between them; the bytes under each line are the
    capture's own messages (Bitcoin: the generator's truth); compression % per message type and
    size range is the truth's; size ranges with fewer than CDF_MIN_MESSAGES compressed messages
    are table rows, not lines; every legend's colours are distinct."""
    figs, dom = drawn(tmp_path, "analyze", str(COMPRESSED), str(DEFLATE))
    # Bandwidth: each capture's traces from its own start.
    bw = figs["Bandwidth over time"]
    spans = {c.name: capture_times(c) for c in (COMPRESSED, DEFLATE)}
    assert abs(spans[COMPRESSED.name][0] - spans[DEFLATE.name][0]) > 60      # taken apart
    for name in spans:
        lines = [t for t in bw["traces"] if t["name"] == name]
        assert len(lines) == 2                                            # inbound, outbound
        assert min(min(t["x"]) for t in lines) == 0
    longest = max(b - a for a, b in spans.values())
    lo, hi = bw["axes"]["xaxis2"]
    assert lo <= 0 and hi <= longest + 2, (lo, hi, longest)
    # Bitcoin on plain TCP: every TCP payload byte is a message's (stock tshark counts them).
    tcp = subprocess.run(["tshark", "-n", "-r", str(COMPRESSED), "-T", "fields", "-e", "tcp.len"],
                         capture_output=True, text=True, check=True).stdout.split()
    kbit = sum(y for t in bw["traces"] if t["name"] == COMPRESSED.name for y in t["y"])
    assert round(kbit * 1000 / 8) == sum(map(int, tcp))
    msgs = truth("btc-compressed")["messages"]
    legend_colours_distinct(bw)

    # Compression % per message type and raw size range, from the truth's sizes.
    sums = defaultdict(lambda: [0, 0])
    for m in msgs:
        if m["codec"] != "none":
            raw = source_raw_len(m)
            s = sums[(f"bitcoin {m['command']}", size_range_label(*SIZE_RANGES[size_range(raw)]))]
            s[0] += raw
            s[1] += m["payload_len"]
    by_size = figs["Compression by message size range"]
    got = {(x, t["name"]): y for t in by_size["traces"] for x, y in zip(t["x"], t["y"]) if y is not None}
    for key, (raw, sent) in sums.items():
        assert got[key] == pytest.approx(100 * (raw - sent) / raw, abs=0.006), key
    legend_colours_distinct(by_size)

    # The CDF: lines only for ranges with enough messages; the few are a table.
    count = defaultdict(int)
    for m in msgs:
        if m["codec"] != "none":
            count[size_range_label(*SIZE_RANGES[size_range(source_raw_len(m))])] += 1
    assert count and all(n < CDF_MIN_MESSAGES for n in count.values())    # Bitcoin: a handful each
    cdf = figs["Compression ratio CDF per message size range"]
    lines = {t["name"]: t for t in cdf["traces"]}
    assert list(lines) == ["0-250"]        # comp-deflate's 20 small messages; its other two ranges
    assert lines["0-250"]["x"][0] == lines["0-250"]["x"][1] and lines["0-250"]["y"][0] == 0   # hold one each
    for t in lines.values():
        assert t["y"][-1] == pytest.approx(1.0) and t["y"] == sorted(t["y"])
    table = re.search(r'<table class="few"[^>]*>(.*?)</table>', dom, re.S).group(1)
    listed = defaultdict(int)
    for rng, _, n in re.findall(r"<tr><td>([^<]*)</td><td[^>]*>([^<]*)</td><td[^>]*>([^<]*)</td></tr>", table):
        listed[rng] += int(n.replace(",", ""))
    few = {rng: n for rng, n in count.items() if rng not in lines}     # Bitcoin's small ones join 0-250
    assert few and {rng: listed[rng] for rng in few} == few
    assert sum(listed.values()) == sum(few.values()) + 2               # + comp-deflate's two
    legend_colours_distinct(cdf)


def test_budget_figure_stacks_every_layers_bytes(tmp_path):
    """The budget figure: per protocol, one bar segment per layer, their bytes the budget
    section's (go-libp2p's eth2 workload over yamux); every legend's colours are distinct."""
    args = (str(CAPTURES / "eth2" / "eth2-yamux.pcapng"),)
    figs, _ = drawn(tmp_path, "analyze", *args)
    rows = next(s for s in p2pc_report("analyze", *args)["sections"] if s["name"] == "budget")["rows"]
    want = defaultdict(int)
    for r in rows:
        want[(r["proto"], r["layer"])] += r["bytes"]
    fig = figs["Bytes by layer"]
    got = {(y, t["name"]): x for t in fig["traces"] for x, y in zip(t["x"], t["y"]) if x}
    assert got == dict(want) and {"gossip", "negotiation", "muxer"} <= {t["name"] for t in fig["traces"]}
    legend_colours_distinct(fig)


def test_compare_figures_and_all_rows(tmp_path):
    """compare: both runs' bandwidth from 0 s; the main table and the bandwidth table end with
    an ALL row whose bytes and counts are the sums of the rows above and whose percentages are
    those of the sums."""
    figs, dom = drawn(tmp_path, "compare", str(BASELINE), str(COMPRESSED))
    bw = figs["Bandwidth over time: compression off vs on"]
    for run in ("compression off", "compression on"):
        assert min(min(t["x"]) for t in bw["traces"] if t["name"] == run) == 0
    legend_colours_distinct(bw)

    def table(tid: str) -> tuple[list[str], list[list[str]], list[str]]:
        t = re.search(rf'<h2 id="table-{tid}">.*?<table[^>]*>(.*?)</table>', dom, re.S).group(1)
        cells = lambda part: [re.findall(r"<t[dh][^>]*>([^<]*)</t[dh]>", r)
                              for r in re.findall(r"<tr>(.*?)</tr>", part, re.S)]
        head = re.findall(r'title="([^"]*)"', t.split("</thead>")[0])
        body = cells(t.split("<tbody>")[1].split("</tbody>")[0])
        foot = cells(t.split("<tfoot>")[1])
        assert len(foot) == 1 and foot[0][:2] == ["ALL", "ALL"], foot
        return head, body, foot[0]

    num = lambda s: float(s.replace(",", "")) if s else None
    for tid, pct_of in (("main", {"model_error_pct": ("modelled_total_saved", "measured_total_saved")}),
                        ("bandwidth", {"measured_saved_pct": ("measured_saved", "baseline_bytes"),
                                       "model_error_pct": ("modelled_saved", "measured_saved")})):
        head, body, total = table(tid)
        col = {c: i for i, c in enumerate(head)}
        for c, i in col.items():
            if c in ("proto", "family") or c in pct_of:
                continue
            assert num(total[i]) == sum(num(r[i]) or 0 for r in body), (tid, c)
        for c, (part, whole) in pct_of.items():
            p, w = num(total[col[part]]), num(total[col[whole]])
            if c == "model_error_pct":
                p -= w
            assert num(total[col[c]]) == pytest.approx(100 * p / w, abs=0.006), (tid, c)


def test_diff_figure_is_a_minus_b_per_type(tmp_path):
    """Two stacks' Snappy encoders on the same content: the bar of each message type is the
    bytes A sent minus those B sent over the matched messages (the peers' own truth), each dot
    one message's difference; the axis is the difference, so a type where they agree sits at 0."""
    a, b = INTEROP_PAIRS[0]
    figs, _ = drawn(tmp_path, "diff", str(INTEROP / f"{a}.pcapng"), str(INTEROP / f"{b}.pcapng"), *ETH2_ONLY)
    fig = figs["Payload bytes sent, A minus B, per message type"]
    pairs, _ = expected_diff(a, b)
    want = defaultdict(int)
    dots = defaultdict(list)
    for p in pairs:
        want[f"eth2 {p['msg_type']}"] += p["a_payload"] - p["b_payload"]
        dots[f"eth2 {p['msg_type']}"].append(p["a_payload"] - p["b_payload"])
    bar = next(t for t in fig["traces"] if t["type"] == "bar")
    assert dict(zip(bar["y"], bar["x"])) == dict(want)
    assert any(want.values())                                   # the pair does differ somewhere
    dot = next(t for t in fig["traces"] if t["type"] == "scatter")
    got = defaultdict(list)
    for y, x in zip(dot["y"], dot["x"]):
        got[y].append(x)
    assert {k: sorted(v) for k, v in got.items()} == {k: sorted(v) for k, v in dots.items()}


def test_whatif_figures_colour_each_codec_apart(tmp_path):
    """whatif with every codec (ten, twenty lines in the sweep): each codec's sweep line its own
    colour, each strategy's bars their own."""
    figs, _ = drawn(tmp_path, "whatif", str(BASELINE))
    sweep = figs["Compress-above-N sweep"]
    per_codec = {t["name"]: t["color"] for t in sweep["traces"]
                 if t["xaxis"] == "x" and t["name"].startswith("message ")}
    assert len(per_codec) == 10 and len(set(per_codec.values())) == 10, per_codec
    legend_colours_distinct(figs["What-if strategies side by side"])
