"""The reports and the command line: CSV one table per file, the JSON Schema, the Parquet
records, tables that fit the terminal, the progress bar, help and usage errors, and the HTML
report rendered by a real (headless) Chromium.  Expected figures come from the generator's
truth files and the source data, as in test_analyzer.py."""
from __future__ import annotations

import csv
import fcntl
import io
import json
import os
import pty
import re
import select
import shutil
import struct
import subprocess
import sys
import termios
from collections import Counter
from pathlib import Path

import pytest

from conftest import REPO
from p2pc.wsenv import built_plugin
from test_analyzer import BTC, p2pc, source_raw_len, truth

COMPRESSED = str(BTC / "btc-compressed.pcapng")
BASELINE = str(BTC / "btc-baseline.pcapng")
SCHEMA = REPO / "analyzer" / "p2pc" / "schema" / "p2pc-report-1.json"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def expected_payload_saved(mtype: str) -> int:
    return sum(source_raw_len(m) - m["payload_len"] for m in truth("btc-compressed")["messages"]
               if m["command"] == mtype)


def json_report(*args: str) -> dict:
    res = p2pc(*args, "--format", "json")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


# ---- CSV ----
@pytest.mark.once
def test_csv_is_one_valid_table():
    res = p2pc("analyze", COMPRESSED, "--format", "csv")
    assert res.returncode == 0, res.stderr
    rows = list(csv.reader(io.StringIO(res.stdout)))
    assert all(len(r) == len(rows[0]) for r in rows) and not any(r and r[0].startswith("#") for r in rows)
    table = list(csv.DictReader(io.StringIO(res.stdout)))
    by_type = {r["msg_type"]: r for r in table}
    for mtype in ("cblock", "ctxcat"):
        assert int(by_type[mtype]["payload_saved"]) == expected_payload_saved(mtype)
    assert int(by_type["ALL"]["messages"]) == sum(int(r["messages"]) for r in table if r["proto"] != "ALL")


@pytest.mark.once
def test_csv_section_and_long_format():
    sizes = list(csv.DictReader(io.StringIO(
        p2pc("analyze", COMPRESSED, "--format", "csv", "--section", "size_ranges").stdout)))
    cblocks = Counter(int(source_raw_len(m)) for m in truth("btc-compressed")["messages"] if m["command"] == "cblock")
    assert sum(int(r["messages"]) for r in sizes if r["msg_type"] == "cblock") == sum(cblocks.values())
    big = [r for r in sizes if r["msg_type"] == "cblock" and r["range"] == "1MB-2MB"]
    assert [int(r["avg_raw"]) for r in big] == [n for n in cblocks if 1_000_000 <= n < 2_000_000]

    res = p2pc("analyze", COMPRESSED, "--format", "csv", "--section", "all")
    long = list(csv.DictReader(io.StringIO(res.stdout)))
    assert list(long[0]) == ["section", "row", "column", "value"]
    assert {r["section"] for r in long} == {"main", "size_ranges", "budget"}     # the sections with rows
    row = next(r["row"] for r in long if r["section"] == "main" and r["column"] == "msg_type" and r["value"] == "cblock")
    saved = next(r["value"] for r in long if r["section"] == "main" and r["row"] == row and r["column"] == "payload_saved")
    assert int(saved) == expected_payload_saved("cblock")


# ---- JSON Schema ----
@pytest.mark.once
def test_json_reports_follow_the_schema():
    import jsonschema               # a test dependency (analyzer[test]): missing, the test fails
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    reports = [json_report("analyze", COMPRESSED, "--explain"),
               json_report("analyze", COMPRESSED, "--by-direction", "--model", "bip"),
               json_report("compare", BASELINE, COMPRESSED),
               json_report("whatif", "--codecs", "zlib-1,lzo1x-1", BASELINE)]
    for rep in reports:
        errors = [e.message for e in validator.iter_errors(rep)]
        assert not errors, (rep["command"], errors[:3])
    # The schema has teeth: a row without its payload_saved, or an unknown column, fails.
    broken = json.loads(json.dumps(reports[0]))
    del broken["rows"][0]["payload_saved"]
    assert not validator.is_valid(broken)
    broken = json.loads(json.dumps(reports[2]))
    broken["rows"][0]["surprise"] = 1
    assert not validator.is_valid(broken)


def b58decode(text: str) -> bytes:
    """base58btc (Bitcoin alphabet) decoded from the definition: a big-endian number in base 58,
    each leading '1' a zero byte."""
    alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
    n = 0
    for c in text:
        n = n * 58 + alphabet.index(c)
    body = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return b"\0" * (len(text) - len(text.lstrip("1"))) + body


@pytest.mark.once
def test_compare_renders_the_connection_setup_row_in_every_format():
    """compare's bandwidth table has a `connection setup` row on a libp2p pair (attribution.py):
    valid against the schema, and the same figures in JSON, CSV, Markdown, HTML and the table.
    On the Bitswap exchange over /plaintext/2.0.0 (the truth files), each peer sends the
    multistream header, the protocol ID and its Exchange {id = the peer ID's multihash, pubkey =
    the PublicKey that multihash holds} behind a varint length; the compressed run adds, per
    peer, the multistream header and the transport's ID (its negotiation, which the row's model
    counts as the transport's cost)."""
    import jsonschema
    comp = REPO / "captures" / "libp2p-compression"
    off, on = str(comp / "comp-bitswap-off.pcapng"), str(comp / "comp-bitswap-gzip.pcapng")
    t_off = json.loads((comp / "comp-bitswap-off.truth.json").read_text())
    t_on = json.loads((comp / "comp-bitswap-gzip.truth.json").read_text())
    ms = lambda proto: len(proto) + 2       # a multistream line: varint length, the ID, "\n"
    pb = lambda n: 1 + 1 + n                # a protobuf bytes field under 128 bytes: tag, length
    setup = 0
    for peer in t_off["peers"].values():
        mh = b58decode(peer["id"])          # identity multihash: code 0, length, the PublicKey
        exchange = pb(len(mh)) + pb(mh[1])
        setup += ms("/multistream/1.0.0") + ms(t_off["security"]) + 1 + exchange
    negotiation = len(t_on["peers"]) * (ms("/multistream/1.0.0") + ms(t_on["compression"]))

    rep = json_report("compare", off, on)
    jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text())).validate(rep)
    row = next(r for r in next(s for s in rep["sections"] if s["name"] == "bandwidth")["rows"]
               if r["family"] == "connection setup")
    assert (row["proto"], row["baseline_bytes"], row["compressed_bytes"]) == ("libp2p", setup, setup + negotiation)
    assert row["measured_saved"] == row["modelled_saved"] == -negotiation
    cells = [f"{row[c]:,}" for c in ("baseline_bytes", "compressed_bytes", "measured_saved")]

    csv_rows = list(csv.DictReader(io.StringIO(p2pc("compare", off, on, "--format", "csv", "--section",
                                                    "bandwidth").stdout)))
    assert {k: v for k, v in next(r for r in csv_rows if r["family"] == "connection setup").items()
            if k in ("baseline_bytes", "compressed_bytes")} == {"baseline_bytes": str(setup),
                                                                "compressed_bytes": str(setup + negotiation)}
    md = p2pc("compare", off, on, "--format", "markdown").stdout
    assert f"| libp2p | connection setup | {' | '.join(cells)} |" in md
    html = p2pc("compare", off, on, "--format", "html").stdout
    assert "<td>libp2p</td><td>connection setup</td>" + "".join(
        f'<td class="num" data-v="{row[c]}">{v}</td>' for c, v in
        zip(("baseline_bytes", "compressed_bytes", "measured_saved"), cells)) in html
    table = p2pc("compare", off, on, env_extra={"COLUMNS": "250"}).stdout
    assert [l.split()[3:6] for l in table.splitlines() if "connection setup" in l] == [cells]


# ---- Parquet ----
@pytest.mark.once
def test_records_parquet_holds_every_message(tmp_path):
    import pyarrow.parquet as pq    # a dependency: missing, the test fails
    out = tmp_path / "records.parquet"
    res = p2pc("records", COMPRESSED, "--output", str(out))
    assert res.returncode == 0, res.stderr
    table = pq.read_table(out)
    assert table.column_names == ["proto", "msg_type", "codec", "wire_len", "header_len", "payload_len",
                                  "raw_len", "batch_count", "frame", "stream", "src", "srcport", "dst",
                                  "dstport", "time", "mux_stream", "mux_frames", "snappy_chunks", "reason"]
    recs = table.to_pylist()
    t = truth("btc-compressed")
    link = t["link"]
    for r in recs:
        assert r["proto"] == "bitcoin" and r["wire_len"] == r["payload_len"] + 24 == r["header_len"] + r["payload_len"]
        assert {r["src"], r["dst"]} == {link["addr_a"], link["addr_b"]} and link["port_b"] in (r["srcport"], r["dstport"])
        # Bitcoin over plain TCP: no muxer, no framed Snappy, every message decoded.
        assert (r["mux_stream"], r["mux_frames"], r["snappy_chunks"], r["reason"]) == (None, 0, 0, "")
    got = Counter((r["msg_type"], r["payload_len"], r["raw_len"]) for r in recs)
    raw = lambda m: source_raw_len(m) if "source" in m or "txs" in m else m["raw_len"]   # ping: no source
    want = Counter((m["command"], m["payload_len"], raw(m)) for m in t["messages"])
    assert not want - got, want - got
    lzo = [r for r in recs if r["msg_type"] in ("cblock", "ctxcat")]
    assert lzo and all(r["codec"] == "lzo1x" for r in lzo)
    assert [r["time"] for r in recs] == sorted(r["time"] for r in recs)


# ---- terminal ----
def run_on_pty(args: list[str], stdout_tty: bool, stderr_tty: bool, columns: int = 100) -> tuple[int, str, str]:
    """Run p2pc with stdout and/or stderr on a pseudo-terminal `columns` wide: (rc, stdout, pty text)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    env = dict(os.environ, PYTHONPATH=str(REPO / "analyzer"), P2PC_PLUGIN=str(built_plugin()))
    env.pop("COLUMNS", None)
    proc = subprocess.Popen([sys.executable, "-m", "p2pc", *args], env=env,
                            stdout=slave if stdout_tty else subprocess.PIPE,
                            stderr=slave if stderr_tty else subprocess.PIPE)
    os.close(slave)
    seen = b""
    while True:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                data = os.read(master, 1 << 16)
            except OSError:
                break
            if not data:
                break
            seen += data
        elif proc.poll() is not None:
            break
    os.close(master)
    out = proc.stdout.read().decode() if proc.stdout else ""
    if proc.stderr:
        out += proc.stderr.read().decode()
    return proc.wait(), out, seen.decode(errors="replace")


@pytest.mark.once
@pytest.mark.parametrize("columns", [80, 100])
def test_tables_fit_the_terminal(columns):
    rc, _, screen = run_on_pty(["compare", BASELINE, COMPRESSED], stdout_tty=True, stderr_tty=False,
                               columns=columns)
    assert rc == 0
    lines = ANSI.sub("", screen).replace("\r", "").splitlines()
    assert lines and max(len(l) for l in lines) <= columns, max(lines, key=len)
    assert any("left out to fit" in l for l in lines)
    # Piped with COLUMNS, the same fit; the cblock row keeps its truth-derived payload saving.
    res = p2pc("analyze", COMPRESSED, env_extra={"COLUMNS": str(columns)})
    assert max(len(l) for l in res.stdout.splitlines()) <= columns
    cblock = next(l for l in res.stdout.splitlines() if " cblock " in l)
    assert f"{expected_payload_saved('cblock'):,}" in cblock.split()


@pytest.mark.once
def test_piped_table_keeps_every_column():
    res = p2pc("compare", BASELINE, COMPRESSED, env_extra={"COLUMNS": ""})
    assert res.returncode == 0 and "left out" not in res.stdout
    assert "baseline msgs" in res.stdout and "ACK saved (measured)" in res.stdout


@pytest.mark.once
def test_progress_bar_on_a_terminal_only():
    rc, out, screen = run_on_pty(["analyze", "--format", "json", COMPRESSED, BASELINE], stdout_tty=False,
                                 stderr_tty=True)
    assert rc == 0 and json.loads(out)["schema"] == "p2pc-report/1"
    text = ANSI.sub("", screen)
    assert "btc-compressed.pcapng" in text and "100%" in text and "ETA" in text
    size_mb = f"{os.path.getsize(COMPRESSED) / 1e6:.1f}"
    assert f"{size_mb}/{size_mb} MB" in text
    res = p2pc("analyze", "--format", "json", COMPRESSED)
    assert res.returncode == 0 and res.stderr == ""


def test_progress_reads_the_offset_of_every_process_below(tmp_path):
    """The bar's bytes come from where the processes below p2pc are in each capture: here a
    grandchild (as tshark below setpriv and env) that has read 12,345 bytes of it."""
    from p2pc.progress import read_offsets
    cap = tmp_path / "big.pcapng"
    cap.write_bytes(b"\0" * 100_000)
    code = (f"import subprocess, sys; subprocess.run([sys.executable, '-c', "
            f"\"f = open({str(cap)!r}, 'rb', buffering=0); f.read(12345); print('ready', flush=True); "
            f"import time; time.sleep(30)\"])")
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        assert read_offsets({cap.name: str(cap)}) == {str(cap): 12345}
    finally:
        for p in __import__("psutil").Process(child.pid).children(recursive=True) + [child]:
            p.kill()
        child.wait()


def test_progress_bar_does_not_need_proc(monkeypatch):
    """The offsets come from psutil, so a terminal gets the bar where there is no /proc (macOS,
    the BSDs, a container without it)."""
    from p2pc import progress
    real_isdir = os.path.isdir
    monkeypatch.setattr(os.path, "isdir", lambda p: False if str(p).startswith("/proc") else real_isdir(p))

    class Tty(io.StringIO):
        def isatty(self):
            return True
    assert progress.CaptureProgress([COMPRESSED], stream=Tty()).enabled


# ---- help and usage errors ----
def all_parsers(monkeypatch) -> list:
    """p2pc's parser and every subcommand's, as main() builds them."""
    from p2pc import cli
    grabbed = []

    def grab(self, *a, **kw):
        grabbed.append(self)
        raise SystemExit(0)
    monkeypatch.setattr(cli.Parser, "parse_args", grab)
    with pytest.raises(SystemExit):
        cli.main([])
    parsers = [grabbed[0]]
    for action in grabbed[0]._actions:
        if isinstance(getattr(action, "choices", None), dict):
            parsers += list(action.choices.values())
    return parsers


@pytest.mark.once
def test_help_shows_examples_and_exit_codes(monkeypatch):
    parsers = all_parsers(monkeypatch)
    commands = [p.prog.split()[1:] for p in parsers]
    assert ["analyze"] in commands and ["records"] in commands and len(commands) >= 7
    for cmd in commands:
        res = p2pc(*cmd, "--help")
        assert res.returncode == 0, res.stderr
        assert "examples:" in res.stdout and "exit codes:" in res.stdout, cmd
        assert "8  a capture is cut short" in res.stdout


@pytest.mark.once
def test_every_argument_has_help(monkeypatch):
    for p in all_parsers(monkeypatch):
        for action in p._actions:
            if action.dest in ("help", "command"):
                continue
            assert action.help, f"{p.prog}: {action.option_strings or action.dest} has no help"


@pytest.mark.once
@pytest.mark.parametrize("args", [
    ["analyze"],
    ["nonsense"],
    ["analyze", "-j", "0", COMPRESSED],
    ["analyze", "--format", "xml", COMPRESSED],
    ["analyze", "--format", "json", "--section", "main", COMPRESSED],
    ["analyze", "--format", "csv", "--section", "nope", COMPRESSED],
    ["analyze", COMPRESSED, "--output", "/dev/null/report.txt"],   # its folder cannot be made
    ["whatif", "--codecs", "zlib-1,gzip-9", COMPRESSED],
    ["live", "-i", "lo", "--interval", "zero"],
    ["live", "-i", "lo", "--duration", "0"],          # ran forever, as did keys'
    ["keys", "--pid", "1", "--output", "k.keys", "--duration", "0"],
    ["records", COMPRESSED],
])
def test_bad_arguments_are_one_line_and_exit_2(args):
    res = p2pc(*args)
    assert res.returncode == 2, (args, res.stderr)
    assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr, res.stderr


def test_doctor_names_the_optional_parts_and_their_fix():
    res = p2pc("doctor")
    assert res.returncode == 0, res.stdout
    for what in ("dumpcap", "liblzo2", "whatif codec snappy", "whatif codec zstd", "whatif codec brotli",
                 "plotly", "pyarrow"):
        assert what in res.stdout, what
    # Without tshark on PATH doctor says so with the fix, and exits 3.
    res = p2pc("doctor", env_extra={"PATH": "/nonexistent"})
    assert res.returncode == 3 and "apt-get install tshark" in res.stdout


# ---- HTML in a real browser ----
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def chromium(tmp_path: Path, page: Path, *mode: str) -> subprocess.CompletedProcess:
    """Headless Chromium on `page`, offline (its own network namespace when we are root)."""
    profile = tmp_path / f"profile-{len(list(tmp_path.iterdir()))}"
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
           "--enable-logging=stderr", "--v=0", "--window-size=1280,2000", "--virtual-time-budget=10000",
           *mode, page.as_uri()]
    if os.geteuid() == 0 and shutil.which("unshare"):
        cmd = ["unshare", "--net", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def console_messages(stderr: str, page: Path) -> list[str]:
    return [l for l in stderr.splitlines() if ":CONSOLE" in l and page.as_uri() in l]


FIGURES = {
    "analyze": ["Savings per message type", "Bytes by layer", "Compression by message size range",
                "Compression ratio CDF per message size range", "Bandwidth over time"],
    "compare": ["Bandwidth over time: compression off vs on"],
    "whatif": ["What-if strategies side by side", "What-if strategies: CPU time per MB",
               "Compress-above-N sweep", "What-if codecs: compression ratio"],
    "diff": ["Payload bytes sent, A minus B, per message type"],
}


# once: Chromium draws the analyzer's page; the figures in it are checked on every version.
@pytest.mark.once
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (tools/install-deps.sh installs it)")
@pytest.mark.parametrize("command", ["analyze", "compare", "whatif", "diff"])
def test_html_report_renders_offline_in_chromium(tmp_path, command):
    page = tmp_path / f"{command}.html"
    args = {"analyze": [COMPRESSED], "compare": [BASELINE, COMPRESSED],
            "whatif": ["--codecs", "zlib-6,lzo1x-1,zstd", BASELINE],
            "diff": [COMPRESSED, COMPRESSED]}[command]
    res = p2pc(command, *args, "--format", "html", "--output", str(page))
    assert res.returncode == 0, res.stderr
    html = page.read_text()
    # Self-contained: no script, style or image fetched from anywhere.
    assert not re.search(r"<(script|img|iframe)[^>]+src=|<link[^>]+href=", html)
    for title in FIGURES[command]:
        assert f"<h2>{title}</h2>" in html, title

    shot = tmp_path / f"{command}.png"
    run = chromium(tmp_path, page, f"--screenshot={shot}")
    assert shot.is_file() and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", run.stderr[-2000:]
    assert shot.stat().st_size > 20_000     # a blank 1280x2000 page is a few kB
    assert console_messages(run.stderr, page) == []

    dom = chromium(tmp_path, page, "--dump-dom")
    assert console_messages(dom.stderr, page) == []
    # plotly drew every figure (each draws into its own svg.main-svg); btc-compressed's CDF is a
    # table (each size range holds under 10 compressed messages: tests/test_figures.py) ...
    plots = re.findall(r'<div id="figure-\d+" class="[^"]*js-plotly-plot', dom.stdout)
    assert len(plots) == len(FIGURES[command]) - (command == "analyze"), len(plots)
    # ... and the sortable summary holds the truth-derived saving.
    if command == "analyze":
        row = re.search(r"<tr><td>bitcoin</td><td>cblock</td>(.*?)</tr>", dom.stdout).group(1)
        cells = re.findall(r"<td[^>]*>([^<]*)</td>", row)
        assert f"{expected_payload_saved('cblock'):,}" in cells


@pytest.mark.once
@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (tools/install-deps.sh installs it)")
def test_html_report_is_small_and_compare_fits_1400_px(tmp_path):
    """A small capture's report is under 1 MB (plotly.js's basic bundle, gzipped, not the whole
    4.8 MB plotly.min.js), and compare's widest table fits a 1,400 px window without scrolling:
    its headers wrap.  Measured in Chromium by a script added to a copy of the page."""
    sizes = {}
    for command, args in (("analyze", [COMPRESSED]), ("compare", [BASELINE, COMPRESSED])):
        page = tmp_path / f"{command}.html"
        res = p2pc(command, *args, "--format", "html", "--output", str(page))
        assert res.returncode == 0, res.stderr
        sizes[command] = page.stat().st_size
    assert all(n < 1_000_000 for n in sizes.values()), sizes

    probe = tmp_path / "compare-probe.html"
    probe.write_text((tmp_path / "compare.html").read_text().replace("</body>", """<script>
window.addEventListener("load", function () { setTimeout(function () {
  var wraps = Array.prototype.map.call(document.querySelectorAll(".table-wrap"),
                                       function (w) { return [w.scrollWidth, w.clientWidth]; });
  document.body.setAttribute("data-probe", JSON.stringify(
    {page: document.documentElement.scrollWidth, view: window.innerWidth, wraps: wraps,
     plots: document.querySelectorAll(".js-plotly-plot").length}));
}, 500); });
</script></body>"""))
    dom = chromium(tmp_path, probe, "--window-size=1400,1000", "--dump-dom")
    m = re.search(r'data-probe="([^"]*)"', dom.stdout)
    assert m, dom.stderr[-2000:]
    got = json.loads(m.group(1).replace("&quot;", '"'))
    assert got["view"] == 1400 and got["plots"] == 1, got
    assert got["page"] <= 1400, got
    assert got["wraps"] and all(scroll <= client for scroll, client in got["wraps"]), got

