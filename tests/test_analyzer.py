"""The analyzer (`p2pc`), end to end on the committed captures: figures are checked against
values computed here from the source data, the generator's truth files and tshark's own TCP
fields (not the plugin's records)."""
from __future__ import annotations

import csv
import ctypes
import io
import json
import os
import pkgutil
import re
import shutil
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

import pytest

from btcdata import block_txs
from conftest import CAPTURES, DATA, REPO, once_beyond_first
from conftest import p2pc_report as report
from conftest import run_p2pc as p2pc
from p2pc.wsenv import built_plugin

BTC = CAPTURES / "bitcoin"


def rows_by_type(rep: dict) -> dict:
    return {r["msg_type"]: r for r in rep["rows"]}


def truth(name: str) -> dict:
    return json.loads((BTC / f"{name}.truth.json").read_text())


def source_raw_len(m: dict) -> int:
    if "txs" in m:
        txs = {}
        for t in m["txs"]:
            txs.setdefault(t["source"], block_txs((DATA / "bitcoin" / t["source"]).read_bytes()))
        return sum(len(txs[t["source"]][t["index"]].raw) for t in m["txs"])
    return (DATA / "bitcoin" / m["source"]).stat().st_size if "#" not in m["source"] else m["raw_len"]


@pytest.mark.once
def test_payload_saved_equals_the_source_sum():
    rep = report("analyze", str(BTC / "btc-compressed.pcapng"))
    rows = rows_by_type(rep)
    for mtype in ("cblock", "ctxcat"):
        expected = sum(source_raw_len(m) - m["payload_len"] for m in truth("btc-compressed")["messages"]
                       if m["command"] == mtype)
        assert rows[mtype]["payload_saved"] == expected
    assert rep["schema"] == "p2pc-report/1"


def tcp_inputs(capture, ws_tshark, src: str):
    """MSS, per-segment overhead, pure-ACK ratio and ACK frame size for the direction from
    `src`, from tshark's own TCP fields."""
    rows = ws_tshark.fields(capture, ["ip.src", "tcp.len", "frame.len", "tcp.flags.syn",
                                      "tcp.flags.fin", "tcp.flags.reset", "tcp.flags.ack"], dfilter="tcp")
    data = [(int(r[1]), int(r[2])) for r in rows if r[0] == src and int(r[1]) > 0]
    acks = [int(r[2]) for r in rows if r[0] != src and int(r[1]) == 0 and r[3] == r[4] == r[5] == "0"
            and r[6] == "1"]
    mss = max(l for l, _ in data)
    overhead = sum(f - l for l, f in data) / len(data)
    return mss, overhead, len(acks) / len(data), sum(acks) / len(acks)


@pytest.mark.once
def test_model_inputs_come_from_the_capture(tshark):
    """The link parameters the model uses (--explain) are the capture's own, computed here from
    tshark's TCP fields; the formula itself is held to hand-worked numbers in test_model.py."""
    cap = BTC / "btc-small.pcapng"
    t = truth("btc-small")
    mss, overhead, ack_ratio, ack_bytes = tcp_inputs(cap, tshark, t["link"]["addr_a"])
    assert mss == 1448      # 1500-byte MTU, IPv4, TCP timestamps
    rep = report("analyze", "--explain", str(cap))
    sent = [e for x in rep["explain"] if x["msg_type"] in ("cblock", "ctxcat") for e in x["inputs"]]
    assert len(sent) == 2
    for e in sent:
        assert e["mss"] == mss
        assert e["seg_overhead"] == round(overhead, 2)
        assert e["ack_ratio"] == round(ack_ratio, 4)
        assert e["ack_frame_bytes"] == round(ack_bytes, 2)
    # Δ of each row: the source's raw bytes less what was sent, plus the batched headers.
    for m in t["messages"]:
        if m["command"] in ("cblock", "ctxcat"):
            items = len(m.get("txs", [])) or 1
            e = [x for x in rep["explain"] if x["msg_type"] == m["command"]][0]["inputs"][0]
            assert e["delta_bytes"] == source_raw_len(m) - m["payload_len"] + (items - 1) * 24


def test_bip_model_is_24_plus_52_per_batched_message():
    rows = rows_by_type(report("analyze", "--model", "bip", str(BTC / "btc-small.pcapng")))
    items = len([m for m in truth("btc-small")["messages"] if m["command"] == "ctxcat"][0]["txs"])
    assert rows["ctxcat"]["header_saved"] == (items - 1) * 24
    assert rows["ctxcat"]["ack_saved"] == (items - 1) * 52
    assert rows["cblock"]["header_saved"] == 0 and rows["cblock"]["ack_saved"] == 0


@pytest.mark.once
def test_compare_measures_against_the_baseline():
    rep = report("compare", str(BTC / "btc-baseline.pcapng"), str(BTC / "btc-compressed.pcapng"))
    fam = {r["family"]: r for r in rep["rows"]}
    comp, base = truth("btc-compressed")["messages"], truth("btc-baseline")["messages"]
    wire = lambda ms, cmds: sum(m["payload_len"] + 24 for m in ms if m["command"] in cmds)
    assert fam["block"]["measured_message_saved"] == wire(base, {"block"}) - wire(comp, {"block", "cblock"})
    assert fam["tx"]["measured_message_saved"] == wire(base, {"tx"}) - wire(comp, {"tx", "txcat", "ctxcat"})
    # The model, from the compressed capture alone, is checked against the measured savings.
    for f in ("block", "tx"):
        assert abs(fam[f]["model_error_pct"]) < 5, fam[f]
    conn = {r["measure"]: r for r in rep["sections"][0]["rows"]}
    assert conn["pure_acks"]["saved"] > 0 and conn["data_segments"]["saved"] > 0


# The formats are the analyzer's own: JSON's run holds the tshark part on every version.
@pytest.mark.parametrize("fmt", once_beyond_first(["json", "csv", "markdown", "html", "table"]))
def test_every_output_format_parses(fmt):
    res = p2pc("analyze", str(BTC / "btc-compressed.pcapng"), "--format", fmt)
    assert res.returncode == 0, res.stderr
    out = res.stdout
    keys = ["proto", "msg_type", "messages", "wire_bytes", "payload_bytes", "raw_bytes",
            "payload_saved", "header_saved", "ack_saved", "total_saved"]
    if fmt == "json":
        rep = json.loads(out)
        assert rep["schema"] == "p2pc-report/1"
        for r in rep["rows"]:
            assert set(keys) <= set(r)
    elif fmt == "csv":
        first = out.split("\n\n")[0]
        rows = list(csv.DictReader(io.StringIO(first)))
        assert set(keys) <= set(rows[0]) and any(r["msg_type"] == "cblock" for r in rows)
    elif fmt == "markdown":
        assert "| proto |" in out and "| cblock |" in out.replace("  ", " ")
    elif fmt == "html":
        assert out.startswith("<!DOCTYPE html>") and "</html>" in out
        # plotly figures (their JSON), plotly.js's basic bundle embedded once (test_reports.py
        # renders them in Chromium)
        assert out.count('<div id="figure-') >= 3 and out.count('class="figure-spec"') >= 3
        assert out.count('id="plotly-js"') == 1
    else:
        assert "cblock" in out and "total saved" in out


def _lzo1x_1(data: bytes) -> bytes:
    lib = ctypes.CDLL("liblzo2.so.2")
    out = ctypes.create_string_buffer(len(data) + len(data) // 16 + 67)
    n = ctypes.c_ulong(0)
    wrk = ctypes.create_string_buffer(16384 * ctypes.sizeof(ctypes.c_void_p))
    assert lib.lzo1x_1_compress(data, ctypes.c_ulong(len(data)), out, ctypes.byref(n), wrk) == 0
    return out.raw[:n.value]


@pytest.mark.once
def test_whatif_ratios_equal_direct_library_calls():
    rep = report("whatif", "--codecs", "zlib-1,zlib-6,lzo1x-1", str(BTC / "btc-baseline.pcapng"))
    sizes = next(s for s in rep["sections"] if s["name"] == "whatif")
    table = {(r["msg_type"], r["range"]): r for r in sizes["rows"]}
    raw = (DATA / "bitcoin" / "block413567.raw").read_bytes()   # the only block of 500KB-1MB
    row = table[("block", "500KB-1MB")]
    pct = lambda c: round(100 * (len(raw) - len(c)) / len(raw), 2)
    assert row["zlib-1 %"] == pct(zlib.compress(raw, 1))
    assert row["zlib-6 %"] == pct(zlib.compress(raw, 6))
    assert row["lzo1x-1 %"] == pct(_lzo1x_1(raw))


@pytest.mark.once
def test_parallel_results_merge_exactly():
    caps = [str(BTC / "btc-compressed.pcapng"), str(BTC / "btc-small.pcapng")]
    both = report("analyze", "-j", "2", *caps)["totals"]
    parts = [report("analyze", c)["totals"] for c in caps]
    for k in ("messages", "wire_bytes", "payload_bytes", "raw_bytes", "payload_saved"):
        assert both[k] == parts[0][k] + parts[1][k]


def test_errors_have_distinct_exit_codes(tmp_path):
    missing = p2pc("analyze", str(tmp_path / "nope.pcapng"))
    assert missing.returncode == 5 and "no such file" in missing.stderr
    junk = tmp_path / "junk.pcapng"
    junk.write_bytes(b"this is not a capture file" * 10)
    res = p2pc("analyze", str(junk))
    assert res.returncode == 5 and len(res.stderr.strip().splitlines()) == 1
    res = p2pc("analyze", "--plugin", str(tmp_path / "none.so"), str(BTC / "btc-small.pcapng"))
    assert res.returncode == 4
    res = p2pc("analyze", str(BTC / "btc-small.pcapng"), env_extra={"PATH": "/nonexistent"})
    assert res.returncode == 3 and "tshark" in res.stderr


def test_the_docs_exit_codes_are_the_code_table():
    """docs/analyzer.md's exit code table is p2pc.errors.Exit, row for row; the help lists every
    code; and every error is a class of p2pc.errors carrying one of its codes (no module keeps
    codes of its own)."""
    import p2pc
    from p2pc import cli, errors
    doc = (REPO / "docs/analyzer.md").read_text().split("## Exit codes")[1].split("\n## ")[0]
    assert re.findall(r"^\| (\d+) \| (.*) \|$", doc, re.M) == [(str(c), t) for c, t in errors.EXIT_CODES.items()]
    assert [int(c) for c in re.findall(r"^ *(\d+)  ", cli.EXIT_HELP, re.M)] == list(errors.EXIT_CODES)
    for mod in pkgutil.iter_modules(p2pc.__path__):
        if mod.name == "__main__":     # runs the command
            continue
        try:
            __import__(f"p2pc.{mod.name}")
        except ImportError:     # a module of an optional dependency missing here
            pass
    todo, classes = [errors.P2pcError], []
    while todo:
        todo += todo[0].__subclasses__()
        classes.append(todo.pop(0))
    assert all(c.__module__ == "p2pc.errors" and isinstance(c.exit_code, errors.Exit) for c in classes), \
        [c for c in classes if c.__module__ != "p2pc.errors"]


def test_no_p2p_traffic(tmp_path):
    quiet = tmp_path / "quiet.pcapng"
    subprocess.run(["editcap", "-r", str(BTC / "btc-small.pcapng"), str(quiet), "1-5"], check=True)
    res = p2pc("analyze", str(quiet))
    assert res.returncode == 6 and "no P2P messages" in res.stderr


def test_encrypted_traffic_without_keys_is_said_as_such(tmp_path):
    """A capture whose P2P traffic is all encrypted and not decrypted (FISCO over TLS, its
    secrets withheld) is no "no P2P messages": exit 0, its encrypted records in the report per
    protocol, and a warning that names the key log that would open them.  With that key log the
    messages are there and nothing is said."""
    from test_fisco import tls_without_secrets
    bare, keys = tls_without_secrets(tmp_path)
    res = p2pc("analyze", "--format", "json", str(bare))
    assert res.returncode == 0, res.stderr
    rows = {(r["proto"], r["msg_type"]): r for r in json.loads(res.stdout)["rows"]}
    assert list(rows) == [("fisco", "tls (encrypted)")]
    enc = rows[("fisco", "tls (encrypted)")]
    assert (f"warning: fisco: {enc['messages']:,} records ({enc['wire_bytes']:,} bytes) are encrypted and were "
            "not decrypted: --keylog with the nodes' TLS secrets (an NSS key log") in res.stderr
    keyed = p2pc("analyze", "--keylog", str(keys), "--format", "json", str(bare))
    assert keyed.returncode == 0 and "warning" not in keyed.stderr, keyed.stderr
    got = [r["msg_type"] for r in json.loads(keyed.stdout)["rows"]]
    assert "tls (encrypted)" not in got and "BlockSync.Blocks" in got


@pytest.mark.parametrize("keys", ["empty", "another connection's"])
def test_a_key_log_that_decrypts_nothing_is_a_warning_naming_it(tmp_path, keys):
    """An empty key log, and one whose keys are another connection's (eth2-noise-mplex's Noise
    keys on eth2-noise-yamux), decrypt nothing: the warning names the file and what stayed
    encrypted.  The capture's own key log opens it and nothing is said."""
    eth2 = CAPTURES / "eth2"
    keylog = tmp_path / "node.keys"
    keylog.write_text("" if keys == "empty" else (eth2 / "eth2-noise-mplex.keys").read_text())
    res = p2pc("analyze", "--keylog", str(keylog), "--format", "csv", str(eth2 / "eth2-noise-yamux.pcapng"))
    assert res.returncode == 0, res.stderr
    warnings = [line for line in res.stderr.splitlines() if line.startswith("p2pc: warning: ")]
    assert len(warnings) == 1 and f"--keylog {keylog} " in warnings[0], res.stderr
    assert "decrypted nothing" in warnings[0] and "libp2p: " in warnings[0] and "stayed encrypted" in warnings[0]
    own = p2pc("analyze", "--keylog", str(eth2 / "eth2-noise-yamux.keys"), "--format", "csv",
               str(eth2 / "eth2-noise-yamux.pcapng"))
    assert own.returncode == 0 and "warning" not in own.stderr, own.stderr


def test_truncated_capture_reports_what_it_read(tmp_path):
    src = (BTC / "btc-compressed.pcapng").read_bytes()
    cut = tmp_path / "cut.pcapng"
    cut.write_bytes(src[: len(src) // 2])
    res = p2pc("analyze", str(cut), "--format", "json")
    assert res.returncode == 8
    rep = json.loads(res.stdout)
    assert rep["warnings"] and "cut short" in rep["warnings"][0]
    assert rows_by_type(rep)["cblock"]["messages"] >= 1


def _btc_traffic(srv, seconds: float) -> None:
    """Real Bitcoin messages over loopback, to the listening socket srv, for `p2pc live` to see."""
    import hashlib
    import socket
    import struct
    import threading
    import time

    def msg(cmd: str, payload: bytes) -> bytes:
        ck = hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4]
        return bytes.fromhex("f9beb4d9") + cmd.encode().ljust(12, b"\0") + struct.pack("<I", len(payload)) + ck + payload

    def serve():
        c, _ = srv.accept()
        while c.recv(65536):
            pass
        c.close()
    th = threading.Thread(target=serve)
    th.start()
    c = socket.create_connection(srv.getsockname())
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        c.sendall(msg("ping", struct.pack("<Q", n)))
        n += 1
        time.sleep(0.2)
    c.close()
    th.join()
    srv.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="capturing on lo needs root")
def test_live_reports_traffic_as_it_comes():
    import socket
    import threading
    # A port of the kernel's choosing: CI runs suites side by side in chroots, which share the
    # host's loopback.
    srv = socket.create_server(("127.0.0.1", 0))
    port = srv.getsockname()[1]
    t = threading.Thread(target=_btc_traffic, args=(srv, 5.0))
    env = dict(os.environ, PYTHONPATH=str(REPO / "analyzer"), P2PC_PLUGIN=str(built_plugin()))
    proc = subprocess.Popen([sys.executable, "-m", "p2pc", "live", "-i", "lo", "--duration", "4",
                             "--interval", "2", "-f", f"tcp port {port}", "--format", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    import time
    time.sleep(1.0)
    t.start()
    out, err = proc.communicate(timeout=60)
    t.join()
    assert proc.returncode == 0, err
    docs = [json.loads(d) for d in out.replace("}\n{", "}\n\x00{").split("\x00") if d.strip()]
    assert docs, err
    pings = rows_by_type(docs[-1])["ping"]
    assert pings["messages"] >= 5 and pings["wire_bytes"] == pings["messages"] * 32


def test_live_bad_interface():
    res = p2pc("live", "-i", "nonexistent0", "--duration", "1", "--interval", "1")
    assert res.returncode == 7 and "nonexistent0" in res.stderr


def test_doctor_reports_tshark_and_the_plugin(tmp_path):
    res = p2pc("doctor", env_extra={"HOME": str(tmp_path)})
    assert res.returncode == 0, res.stdout + res.stderr
    assert "[ok] tshark:" in res.stdout and "tshark loads it" in res.stdout
    # p2pc keys' helper, an optional part: named with the fix when it is not there.
    res = p2pc("doctor", env_extra={"HOME": str(tmp_path), "P2PC_KEYS": str(tmp_path / "p2pc-keys")})
    assert res.returncode == 0
    assert f"[--] p2pc keys (eBPF helper): P2PC_KEYS={tmp_path / 'p2pc-keys'}: no such file" in res.stdout
    assert "make keys" in res.stdout
    res = p2pc("doctor", env_extra={"HOME": str(tmp_path), "P2PC_PLUGIN": str(tmp_path / "missing.so")})
    assert res.returncode == 4 and "make build" in res.stdout + res.stderr


def test_a_plugin_for_another_wireshark_is_named_with_the_fix(tmp_path):
    """A p2pc.so built for another major.minor cannot load: doctor and analyze say which versions
    and how to fix it, in one line, instead of "no P2P traffic"."""
    out = subprocess.run(["tshark", "--version"], capture_output=True, text=True).stdout
    major, minor = out.split()[2].split(".")[:2]
    other = f"{major}.{int(minor) + 2}"
    marker = f"p2pc-built-for-wireshark={major}.{minor}".encode()
    data = built_plugin().read_bytes()
    assert data.count(marker) == 1
    foreign = tmp_path / "p2pc.so"
    foreign.write_bytes(data.replace(marker, f"p2pc-built-for-wireshark={other}".encode()))
    why = f"built for Wireshark {other}, tshark is {major}.{minor}: run make install-user"

    res = p2pc("doctor", env_extra={"HOME": str(tmp_path), "P2PC_PLUGIN": str(foreign)})
    assert res.returncode == 4 and why in res.stdout, res.stdout + res.stderr
    res = p2pc("analyze", str(BTC / "btc-small.pcapng"), env_extra={"P2PC_PLUGIN": str(foreign)})
    assert res.returncode == 4 and why in res.stderr and "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_a_tshark_that_fills_its_stderr_first_does_not_hang_the_analyzer(tmp_path):
    """A tshark that writes 1 MB to stderr before any record: the analyzer reads both pipes at
    once, so neither side waits on the other's full pipe."""
    tools = Path(tempfile.mkdtemp(dir="/tmp", prefix="stderr-flood-"))    # tshark may run as nobody
    try:
        tools.chmod(0o755)
        real = shutil.which("tshark")
        (tools / "tshark").write_text('#!/bin/sh\ncase " $* " in *" -r "*) head -c 1000000 /dev/zero >&2;; esac\n'
                                      f'exec {real} "$@"\n')
        (tools / "tshark").chmod(0o755)
        env = {"PATH": f"{tools}:{os.environ['PATH']}", "XDG_CACHE_HOME": str(tmp_path)}
        res = p2pc("analyze", "--format", "json", str(CAPTURES / "bitcoin" / "btc-compressed.pcapng"),
                   env_extra=env, timeout=120)
    finally:
        shutil.rmtree(tools)
    assert res.returncode == 0, res.stderr[-500:]
    assert json.loads(res.stdout)["rows"]


def test_a_fields_reader_stopped_early_leaves_no_tshark_behind(monkeypatch):
    """read_fields is a generator: closing it after the first frame ends its tshark.  The real
    tshark (the session's memory would answer from a file): its output, 2,864 frames of
    protocols, is more than a pipe holds, so it is still running when the first line is read."""
    import psutil
    from p2pc.records import open_wireshark, read_fields
    from p2pc.tsharkopts import TsharkOptions
    real = os.environ.get("P2PC_TSHARK_REAL")
    if real:
        monkeypatch.setenv("PATH", f"{os.path.dirname(real)}{os.pathsep}{os.environ['PATH']}")
    ws = open_wireshark(str(built_plugin()))

    def tsharks():
        return [c for c in psutil.Process().children(recursive=True) if "tshark" in " ".join(c.cmdline())]
    try:
        gen = read_fields(ws, CAPTURES / "bitcoin" / "btc-baseline.pcapng",
                          ["frame.number", "frame.time_epoch", "frame.protocols"], TsharkOptions())
        next(gen)
        assert tsharks()
        gen.close()
        assert not tsharks()
    finally:
        ws.cleanup()


def test_the_records_help_examples_run_on_a_default_install(tmp_path):
    """`p2pc records --help`'s two examples, run as written (pyarrow only: pandas is not a
    dependency)."""
    lines = p2pc("records", "--help").stdout.splitlines()
    write, read = [l.strip() for l in lines[lines.index("examples:") + 1:][:2]]
    assert write.startswith("p2pc records ")
    cap = str(CAPTURES / "bitcoin" / "btc-compressed.pcapng")
    res = p2pc(*write.replace("btc-compressed.pcapng", cap).split()[1:], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert read.startswith("python3 -c ")
    res = subprocess.run([sys.executable, "-c", read[len('python3 -c "'):-1]], cwd=tmp_path,
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert "wire_len_sum" in res.stdout and "cblock" in res.stdout


# tshark's word for a cut capture is read on every version by the table and JSON runs; CSV and
# Markdown are the analyzer's own formatting of the same.  records writes Parquet: it has no --format.
@pytest.mark.parametrize("command,fmt", [
    ("records", "table"),
    *((c, f) for c in ("analyze", "compare", "whatif") for f in ("table", "json")),
    *(pytest.param(c, f, marks=pytest.mark.once) for c in ("analyze", "compare", "whatif")
      for f in ("csv", "markdown"))])
def test_warnings_go_to_stderr_in_every_format(tmp_path, command, fmt):
    """A capture cut short warns on stderr, once, whatever the format; the table and CSV on stdout
    hold data only (a script parsing them sees no warning line); JSON still carries it."""
    src = (BTC / "btc-compressed.pcapng").read_bytes()
    cut = tmp_path / "cut.pcapng"
    cut.write_bytes(src[: len(src) // 2])
    warning = f"p2pc: warning: {cut}: the capture is cut short; the report covers what could be read"
    if command == "records":
        res = p2pc("records", str(cut), "--output", str(tmp_path / "r.parquet"))
    else:
        args = {"analyze": [str(cut)], "compare": [str(BTC / "btc-baseline.pcapng"), str(cut)],
                "whatif": ["--codecs", "zlib-1", "--all", str(cut)]}[command]
        res = p2pc(command, *args, "--format", fmt)
    assert res.returncode == 8, res.stderr
    assert res.stderr.splitlines() == [warning], res.stderr
    assert "warning" not in res.stdout or fmt in ("json", "markdown")
    if fmt == "json":
        assert json.loads(res.stdout)["warnings"] == [warning.removeprefix("p2pc: warning: ")]


def test_the_analyzer_map_names_every_module():
    """analyzer/README.md's map is how a newcomer finds a module: each one is on it."""
    from conftest import REPO
    text = (REPO / "analyzer" / "README.md").read_text()
    package = REPO / "analyzer" / "p2pc"
    modules = {p.relative_to(package).as_posix() for p in package.rglob("*.py")
               if p.name not in ("__init__.py", "__main__.py")}
    assert "cli.py" in modules and "output/html.py" in modules
    assert not {m for m in modules if m.split("/")[-1] not in text}, sorted(
        m for m in modules if m.split("/")[-1] not in text)


# ---- tshark's habits (issue 43, finding 5) ----
def sent_per_command(capture: Path) -> dict:
    """The generator's own record of the messages it sent (beyond the handshake): command -> count."""
    out: dict = {}
    for m in json.loads(capture.with_suffix(".truth.json").read_text())["messages"]:
        out[m["command"]] = out.get(m["command"], 0) + 1
    return out


def test_a_capture_after_r_or_on_standard_input_is_read_as_tshark_reads_it(tmp_path):
    """`-r FILE` as well as a positional capture, and `-r -` standard input (tshark reads it
    itself): every message the generator sent, once, and the same report as the file's."""
    small = BTC / "btc-small.pcapng"
    env = dict(os.environ, PYTHONPATH=str(REPO / "analyzer"), P2PC_PLUGIN=str(built_plugin()))

    def from_stdin(*args: str) -> subprocess.CompletedProcess:
        with open(small, "rb") as f:
            return subprocess.run([sys.executable, "-m", "p2pc", *args], stdin=f, capture_output=True, env=env)
    by_file = report("analyze", str(small))
    for rep in (report("analyze", "-r", str(small)),
                json.loads(from_stdin("analyze", "-r", "-", "--format", "json").stdout)):
        rows = {r["msg_type"]: r["messages"] for r in rep["rows"]}
        assert {c: rows.get(c) for c in sent_per_command(small)} == sent_per_command(small)
        assert (rep["rows"], rep["totals"]) == (by_file["rows"], by_file["totals"])
    # records to standard output from standard input: one row per message sent
    import pyarrow.parquet as pq
    res = from_stdin("records", "-r", "-", "--output", "-")
    assert res.returncode == 0, res.stderr
    types = pq.read_table(io.BytesIO(res.stdout)).column("msg_type").to_pylist()
    assert {c: types.count(c) for c in sent_per_command(small)} == sent_per_command(small)
    assert len(types) == by_file["totals"]["messages"]
    res = p2pc("whatif", "-r", str(small), "--format", "json", "--strategy", "message", "--codecs", "zlib-6")
    assert res.returncode == 0 and json.loads(res.stdout)["files"] == [str(small)], res.stderr


@pytest.mark.once
@pytest.mark.parametrize("args, words", [
    (["analyze"], "analyze reads captures: CAPTURE or -r CAPTURE"),
    (["records", "-r", "a.pcapng", "b.pcapng", "--output", "r.parquet"], "records reads one capture"),
    (["analyze", "-r", "-", "-"], "standard input (-) can be read once"),
    (["analyze", "--shards", "2", "-r", "-"], "standard input (-) cannot be split into shards"),
    (["shard", "-r", "-", "--out", "shards"], "shard reads a file: standard input (-) cannot be split"),
    (["diff", "-", str(BTC / "btc-small.pcapng")], "diff reads each capture more than once"),
])
def test_captures_missing_or_stdin_twice_are_one_line_exit_2(args, words):
    res = p2pc(*args)
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and words in res.stderr, res.stderr


@pytest.mark.once
def test_output_dash_is_standard_output_and_a_missing_folder_is_made(tmp_path):
    """`--output -` wrote a file named `-` (issue 43); `--output DIR/FILE` made nothing when DIR
    was missing (the audit guide's /var/log/p2pc/cl.json)."""
    small = str(BTC / "btc-small.pcapng")
    res = p2pc("analyze", "--format", "json", "--output", "-", small, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["totals"] == report("analyze", small)["totals"]
    assert list(tmp_path.iterdir()) == []
    out = tmp_path / "new" / "folder" / "r.json"
    res = p2pc("analyze", "--format", "json", "--output", str(out), small)
    assert res.returncode == 0 and json.loads(out.read_text())["totals"] == report("analyze", small)["totals"]


@pytest.mark.once
def test_the_same_report_or_capture_given_twice_is_refused_naming_it(tmp_path):
    """`merge a.json a.json` doubled every count (issue 43). The same report, by one path or
    two, or a copy (the same captures' sums), is one line naming it, exit 5; so is the same
    capture twice where its counts would add up, or as both sides of compare (diff A A is a
    check that A equals itself). Two reports of different captures merge."""
    small, other = str(BTC / "btc-small.pcapng"), str(BTC / "btc-xthin.pcapng")
    a, b, copy = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "copy.json"
    for out, cap in ((a, small), (b, other)):
        assert p2pc("analyze", "--format", "json", "--output", str(out), cap).returncode == 0
    copy.write_bytes(a.read_bytes())
    (tmp_path / "link.json").symlink_to(a)
    cases = [(["merge", str(a), str(a)], f"p2pc: {a}: the same report given twice"),
             (["merge", str(a), str(tmp_path / "link.json")], f"p2pc: {tmp_path / 'link.json'}: the same report given twice"),
             (["merge", str(a), str(b), str(copy)], f"p2pc: {copy}: the same report as {a} (the same captures' sums)"),
             (["analyze", small, small], f"p2pc: {small}: the same capture given twice"),
             (["analyze", small, f"{BTC}/../bitcoin/btc-small.pcapng"],
              f"p2pc: {BTC}/../bitcoin/btc-small.pcapng: the same capture given twice (the same file as {small})"),
             (["whatif", small, small], f"p2pc: {small}: the same capture given twice"),
             (["compare", small, small], f"p2pc: {small}: the same capture given twice: compare needs")]
    for args, words in cases:
        res = p2pc(*args)
        assert res.returncode == 5 and res.stderr.count("\n") == 1, (args, res.stderr)
        assert res.stderr.startswith(words), (args, res.stderr)
    merged = p2pc("merge", "--format", "json", str(a), str(b))
    assert merged.returncode == 0, merged.stderr
    assert json.loads(merged.stdout)["totals"]["messages"] == \
        json.loads(a.read_text())["totals"]["messages"] + json.loads(b.read_text())["totals"]["messages"]


def test_what_it_needs_says_the_dependencies_and_extras_pyproject_installs():
    """docs/analyzer.md, "What it needs": every dependency of analyzer/pyproject.toml named, and
    each extra's packages as the doc says them (it said `all` was `codecs`, and left out dpkt)."""
    import tomllib
    project = tomllib.loads((REPO / "analyzer/pyproject.toml").read_text())["project"]
    name = lambda req: re.match(r"[A-Za-z0-9_.-]+", req).group(0).lower()     # noqa: E731
    extras = project["optional-dependencies"]

    def expand(reqs: list[str]) -> set[str]:
        out = set()
        for r in reqs:
            inner = re.fullmatch(r"p2pc\[(\w+)\]", r)
            out |= expand(extras[inner.group(1)]) if inner else {name(r)}
        return out
    doc = (REPO / "docs/analyzer.md").read_text().split("## What it needs")[1].split("\n## ")[0]
    doc = " ".join(doc.split())
    defaults, said = doc.split("The extras", 1)
    for dep in project["dependencies"]:
        assert name(dep) in defaults, dep
    told = {}
    for extra, verb, what in re.findall(r"`(\w+)` (adds|is) ([^;.]*)", said):
        what = re.sub(r"\([^)]*\)| for .*$", "", what)
        items = [i.strip().removeprefix("the ") for i in re.split(r",| and ", what) if i.strip()]
        got = set()
        for i in items:
            ref = i.strip("`")
            got |= expand(extras[ref]) if ref in extras else {ref.lower()}
        told[extra] = got
    assert told == {x: expand(reqs) for x, reqs in extras.items()}
