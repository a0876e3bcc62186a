"""Hostile input: the reproducers in tests/data/repro (see its README) and out-of-range
preferences get an expert item or a clear one-line error, never a crash, a traceback or a wrong
number."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import CAPTURES, REPO
from p2pc.wsenv import built_plugin

REPRO = REPO / "tests" / "data" / "repro"
ANALYZER_REPROS = ["analyzer-traceback-btc-command-tab-newline.pcapng.gz", "analyzer-traceback-indexerror.pcapng.gz"]


def p2pc(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, P2PC_PLUGIN=str(built_plugin()))
    return subprocess.run([sys.executable, "-m", "p2pc", *args], capture_output=True, text=True, env=env)


@pytest.mark.parametrize("name", ANALYZER_REPROS)
def test_records_never_split_whatever_the_peer_sent(tshark, name):
    """Every record line has its 16 columns: strings a peer controls (a Bitcoin command) are
    escaped by the printer."""
    out = tshark.run(["-n", "-q", "-r", tshark.ws.readable(REPRO / name), "-z", "p2pc,records"]).stdout
    m_lines = [l.split("\t") for l in out.splitlines() if l.startswith("M\t")]
    assert m_lines and all(len(p) == 16 for p in m_lines)
    if "tab-newline" in name:
        assert any("\\t" in p[9] or "\\n" in p[9] for p in m_lines)


@pytest.mark.parametrize("name", ANALYZER_REPROS)
def test_analyzer_reports_mutated_captures_without_traceback(name):
    res = p2pc("analyze", "--format", "json", str(REPRO / name))
    assert "Traceback" not in res.stderr
    assert res.returncode in (0, 8), res.stderr


def test_a_command_with_control_characters_reads_back_as_sent(tshark):
    """The analyzer unescapes what the printer escaped: a command holding TAB or LF is reported
    with those characters, in one row, rather than split."""
    name = REPRO / "analyzer-traceback-btc-command-tab-newline.pcapng.gz"
    res = p2pc("analyze", "--format", "json", str(name))
    types = {r["msg_type"] for r in json.loads(res.stdout)["rows"] if r["proto"] == "bitcoin"}
    assert any("\t" in t or "\n" in t for t in types)


def test_decompression_cap_out_of_range_takes_the_nearest_limit(tshark):
    """p2pc.max_decompressed_mib:0 would let no decoder produce a byte: the 1 MiB minimum
    applies, and the 999,887-byte block of btc-small still decodes."""
    cap = CAPTURES / "bitcoin" / "btc-small.pcapng"
    recs = [r for r in tshark.records(cap, extra=["-o", "p2pc.max_decompressed_mib:0"]) if r["msg_type"] == "cblock"]
    assert recs and all(int(r["raw_len"]) > int(r["payload_len"]) for r in recs)


def test_service_bit_out_of_range_takes_the_default(tshark):
    """A service bit past 63 names no bit of the 64-bit field: bit 5 applies, and the compressed
    session is still negotiated."""
    cap = CAPTURES / "bitcoin" / "btc-compressed.pcapng"
    rows = tshark.fields(cap, ["btcc.negotiated"], dfilter="bitcoin.command == \"cblock\"",
                         extra=["-o", "btcc.service_bit:99"])
    assert rows and all(set(r[0].split("|")) == {"1"} for r in rows)
