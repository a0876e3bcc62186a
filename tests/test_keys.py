"""`p2pc keys` and `p2pc live --keys-from` on running, unmodified go-libp2p peers (issue #44,
docs/libp2p-decryption.md, "Keys from a running node").

The peers: captures/gen/keypeers.py (eth2peers built with no patch, go-libp2p v0.39.1 with Go
1.26 and v0.51.0 with Go 1.27.3, each normally and stripped).  Each cell runs the short eth2
session (status, ping, goodbye) over an emulated link, captured; `p2pc keys` attaches to the
running listener and, while the dialer waits on its stdin, to the running dialer, each writing a
key log of its own.  Each key log alone must decrypt every message of the capture to what the
peers say they sent (their -truth), and leave nothing encrypted.  Needs root, eBPF (uprobes) and
Go: the host's tests (`host`); a chroot without Go skips them.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import CAPTURES, REPO, built_plugin, truth_sent

sys.path.insert(0, str(CAPTURES / "gen"))
from golib import listener_addr  # noqa: E402
from keypeers import BUILDS, build  # noqa: E402
from netem import EmulatedLink  # noqa: E402
from pidkeys import running  # noqa: E402

pytestmark = pytest.mark.host
BLOCKS = CAPTURES / "data" / "ethereum"
CELLS = [(name, sec) for name, (_, secs) in BUILDS.items() for sec in secs]
PORT = 9000


@pytest.fixture(scope="module")
def helper():
    """The p2pc-keys helper, built as `make keys` builds it; skipped where there is no Go (a
    chroot: CI's host has it and must not skip)."""
    if shutil.which("go") is None:
        pytest.skip("no Go toolchain here (make keys needs Go 1.24+)")
    if os.geteuid() != 0:
        pytest.skip("eBPF uprobes need root or CAP_BPF+CAP_PERFMON")
    subprocess.run(["make", "-s", "keys"], cwd=REPO, check=True, capture_output=True)
    return REPO / "build" / "p2pc-keys"


@pytest.fixture(scope="module")
def peers(helper):
    """The peer programs, one per build, built on first use."""
    built: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in built:
            built[name] = build(name)
        return built[name]
    return get


# This checkout's analyzer, which finds this checkout's helper (the venv's p2pc may be another's).
ENV = dict(os.environ, PYTHONPATH=str(REPO / "analyzer"))


def p2pc(*args: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "p2pc", *args], stderr=subprocess.PIPE, text=True, env=ENV, **kw)


def attached(proc: subprocess.Popen, pid: int) -> list[str]:
    """p2pc keys' lines up to the one saying pid is probed."""
    lines = []
    while True:
        line = proc.stderr.readline()
        assert line, f"p2pc keys ended before probing pid {pid}: {lines}"
        lines.append(line.strip())
        if line.startswith(f"p2pc keys: pid {pid} (") and ": probing " in line:
            return lines


def run_cell(tmp: Path, exe: Path, security: str) -> dict:
    """One short eth2 session between two processes of exe, node A dialing; p2pc keys on each."""
    cap, idfile = tmp / "cell.pcapng", tmp / "listener.id"
    truths = {side: tmp / f"{side}.truth.json" for side in ("dialer", "listener")}
    keys = {side: tmp / f"{side}.keys" for side in ("dialer", "listener")}
    quic = security == "quic"
    listen = f"/ip4/0.0.0.0/udp/{PORT}/quic-v1" if quic else f"/ip4/0.0.0.0/tcp/{PORT}"
    common = ["-blocks", str(BLOCKS), "-gossip", "0", "-session", "short", "-security", "tls" if quic else security,
              "-transport", "quic" if quic else "tcp"]
    with EmulatedLink(delay_ms=5, rate_kbit=None, capture=cap) as link:
        lp = link.popen("b", [str(exe), "-role", "listen", *common, "-idfile", str(idfile), "-seed", "2",
                              "-listen", listen, "-truth", str(truths["listener"])])
        addr = listener_addr(idfile, link.addr_b)
        # The listener's keys come through one uprobe per function, as a kernel before 6.6 sets
        # them; the dialer's through this kernel's multi-uprobe links.
        lk = p2pc("keys", "--pid", str(lp.pid), "--output", str(keys["listener"]), "--uprobes", "single")
        lines = {"listener": attached(lk, lp.pid)}
        dp = link.popen("a", [str(exe), "-role", "dial", *common, "-peer", addr, "-seed", "1", "-wait-stdin",
                              "-truth", str(truths["dialer"])], stdin=subprocess.PIPE, text=True)
        running(dp.pid, exe)
        dk = p2pc("keys", "--pid", str(dp.pid), "--output", str(keys["dialer"]))
        lines["dialer"] = attached(dk, dp.pid)
        dp.stdin.write("go\n")
        dp.stdin.close()
        assert dp.wait(60) == 0
        lp.wait(30)
        for side, k in (("listener", lk), ("dialer", dk)):
            rest = k.stderr.read()
            assert k.wait(10) == 0, rest
            lines[side] += rest.splitlines()
    return {"capture": cap, "keys": keys, "lines": lines,
            "truth": {side: json.loads(path.read_text()) for side, path in truths.items()}}


@pytest.fixture(scope="module", params=CELLS, ids=[f"{b}-{s}" for b, s in CELLS])
def cell(request, peers, tmp_path_factory):
    name, security = request.param
    out = run_cell(tmp_path_factory.mktemp(f"{name}-{security}"), peers(name), security)
    out.update(build=name, security=security)
    return out


def key_options(tshark, path: Path) -> list[str]:
    """One key log for both readers: each skips the other's lines."""
    p = tshark.ws.readable(path)
    return ["-o", f"libp2p_noise.keylog_file:{p}", "-o", f"tls.keylog_file:{p}"]


@pytest.mark.parametrize("side", ["listener", "dialer"])
def test_one_sides_keys_decrypt_every_message(tshark, cell, side):
    """The keys p2pc keys read from one running peer alone decrypt the whole capture: each eth2
    message is one its sender says it sent, in order, with its lengths and the sha256 of its SSZ;
    no record stays encrypted."""
    extra = key_options(tshark, cell["keys"][side])
    recs = tshark.records(cell["capture"], extra=extra)
    assert not [r for r in recs if r["msg_type"].endswith("(encrypted)")]
    pays = tshark.payloads(cell["capture"], extra=extra)
    got = {"a": [], "b": []}
    addr = {EmulatedLink.addr_a: "a", EmulatedLink.addr_b: "b"}
    for rec, (frame, mtype, raw) in zip(recs, pays, strict=True):
        if rec["proto"] == "eth2":
            got[addr[rec["src"]]].append((mtype, int(rec["raw_len"]), int(rec["payload_len"]),
                                          hashlib.sha256(raw).hexdigest()))
    assert got["a"] == truth_sent(cell["truth"]["dialer"]) != []
    assert got["b"] == truth_sent(cell["truth"]["listener"]) != []


def test_the_key_log_is_private_and_each_line_is_written_once(cell):
    """Created 0600; TLS and QUIC: the four TLS 1.3 secrets of the one connection (NSS lines);
    Noise: the static and the ephemeral key, once each."""
    for side, path in cell["keys"].items():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        lines = path.read_text().splitlines()
        assert len(lines) == len(set(lines))
        labels = sorted(line.split()[0] for line in lines)
        if cell["security"] == "noise":
            assert labels == ["LOCAL_EPHEMERAL_PRIVATE_KEY", "LOCAL_STATIC_PRIVATE_KEY"], side
        else:
            assert labels == ["CLIENT_HANDSHAKE_TRAFFIC_SECRET", "CLIENT_TRAFFIC_SECRET_0",
                              "SERVER_HANDSHAKE_TRAFFIC_SECRET", "SERVER_TRAFFIC_SECRET_0"], side


def test_it_says_what_it_probed_and_why_it_stopped(cell):
    """Its first line names the program's Go and go-libp2p versions (from the build info, which a
    stripped build keeps) and the functions probed; the last why it stopped and what it wrote."""
    version = cell["build"].split("-")[0]
    go = "go1.27.3" if "go1.27" in cell["build"] else None
    for side, lines in cell["lines"].items():
        first = next(l for l in lines if ": probing " in l)
        assert f"go-libp2p {version}, flynn/noise v1.1.0: probing crypto/tls.(*Config).writeKeyLog, " \
               "github.com/flynn/noise.(*symmetricState).MixHash, github.com/flynn/noise.(*HandshakeState).ReadMessage" \
               in first
        if go:
            assert f": {go}, " in first
        assert first.endswith(" (one uprobe each)" if side == "listener" else " (multi-uprobe links)"), first
        n = 2 if cell["security"] == "noise" else 4
        kind = "0 TLS and 2 Noise" if n == 2 else "4 TLS and 0 Noise"
        assert lines[-1].startswith("p2pc keys: stopped (every process ended): ") and kind in lines[-1], lines


# ---- what it cannot do, in one line ----
def keys_error(*args: str) -> tuple[int, list[str]]:
    res = subprocess.run([sys.executable, "-m", "p2pc", "keys", *args], capture_output=True, text=True, timeout=60,
                         env=ENV)
    return res.returncode, res.stderr.splitlines()


def test_no_such_process(helper, tmp_path):
    code, lines = keys_error("--pid", str(2 ** 22 + 1), "--output", str(tmp_path / "k"))
    assert (code, lines) == (16, [f"p2pc keys: pid {2 ** 22 + 1}: no such process"])
    assert not (tmp_path / "k").exists()


def test_not_a_go_program(helper, tmp_path):
    with subprocess.Popen(["sleep", "30"]) as p:
        try:
            code, lines = keys_error("--pid", str(p.pid), "--output", str(tmp_path / "k"))
        finally:
            p.kill()
    assert code == 16 and len(lines) == 1 and "is not a Go program" in lines[0], lines


def test_a_go_program_without_libp2p(helper, tmp_path):
    (tmp_path / "go.mod").write_text("module sleeper\n\ngo 1.21\n")
    (tmp_path / "main.go").write_text('package main\n\nimport "time"\n\nfunc main() { time.Sleep(time.Minute) }\n')
    subprocess.run(["go", "build", "-o", "sleeper", "."], cwd=tmp_path, check=True)
    with subprocess.Popen([tmp_path / "sleeper"]) as p:
        try:
            code, lines = keys_error("--pid", str(p.pid), "--output", str(tmp_path / "k"))
        finally:
            p.kill()
    assert code == 16 and len(lines) == 1 and lines[0].endswith("has no go-libp2p in it"), lines


def test_another_users_process_needs_cap_sys_ptrace(helper, peers, tmp_path):
    """As nobody, a root process's program cannot be read: the line says which capability."""
    exe = peers("v0.39.1")
    with subprocess.Popen([exe, "-role", "listen", "-listen", "/ip4/127.0.0.1/tcp/0", "-blocks", str(BLOCKS)],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as p:
        try:
            running(p.pid, exe)
            res = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", str(helper),
                                  "--pid", str(p.pid), "--output", "/tmp/never-written.keys"],
                                 capture_output=True, text=True, timeout=30)
        finally:
            p.kill()
    assert res.returncode == 2
    assert res.stderr.splitlines() == [f"p2pc keys: pid {p.pid}: not permitted to read its program: another "
                                       "user's process needs CAP_SYS_PTRACE (run as root, or setcap "
                                       "cap_sys_ptrace,cap_bpf,cap_perfmon+ep on p2pc-keys)"]


def test_sigterm_writes_what_is_in_flight_and_detaches(helper, peers, tmp_path):
    """Stopped by SIGTERM while its process runs on: it exits 0 and says so, and the process, no
    longer probed, goes on (a later connection's keys are not read)."""
    exe = peers("v0.39.1")
    with subprocess.Popen([exe, "-role", "listen", "-listen", "/ip4/127.0.0.1/tcp/0", "-blocks", str(BLOCKS)],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as p:
        try:
            running(p.pid, exe)
            k = p2pc("keys", "--pid", str(p.pid), "--output", str(tmp_path / "k"))
            attached(k, p.pid)
            k.send_signal(signal.SIGTERM)
            rest = k.stderr.read()
            assert k.wait(10) == 0
            assert p.poll() is None
        finally:
            p.kill()
    assert rest.strip() == f"p2pc keys: stopped (terminated): 0 TLS and 0 Noise key lines written to {tmp_path / 'k'}"


@pytest.mark.parametrize("security", ["noise", "tls"])
def test_live_keys_from_decodes_a_running_node_as_it_runs(helper, peers, tmp_path, security):
    """`p2pc live --keys-from PID` on node A's interface: p2pc keys is attached to the running
    dialer before the capture starts, its keys reach tshark while it captures (the Noise reader
    and Wireshark's TLS both read their key log again on a miss), and the final report counts
    every eth2 message both peers say they sent, none encrypted."""
    exe = peers("v0.39.1")
    idfile, report = tmp_path / "listener.id", tmp_path / "live.json"
    truths = {side: tmp_path / f"{side}.truth.json" for side in ("dialer", "listener")}
    common = ["-blocks", str(BLOCKS), "-gossip", "0", "-session", "short", "-security", security]
    with EmulatedLink(delay_ms=5, rate_kbit=None) as link:
        lp = link.popen("b", [str(exe), "-role", "listen", *common, "-idfile", str(idfile), "-seed", "2",
                              "-listen", f"/ip4/0.0.0.0/tcp/{PORT}", "-truth", str(truths["listener"])])
        addr = listener_addr(idfile, link.addr_b)
        dp = link.popen("a", [str(exe), "-role", "dial", *common, "-peer", addr, "-seed", "1", "-wait-stdin",
                              "-truth", str(truths["dialer"])], stdin=subprocess.PIPE, text=True)
        running(dp.pid, exe)
        live = link.popen("a", [sys.executable, "-m", "p2pc", "live", "-i", link.tap["a"], "--interval", "1",
                                "-w", str(tmp_path / "live.pcapng"), "--format", "json", "--output", str(report),
                                "--keys-from", str(dp.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, env=dict(os.environ, P2PC_PLUGIN=str(built_plugin())))
        first = live.stderr.readline()
        assert first.startswith(f"p2pc live: keys: pid {dp.pid} (") and ": probing " in first, first
        for _ in range(100):        # the -w file gets its first packet once dumpcap captures
            link.run("b", ["ping", "-c", "1", "-W", "1", link.addr_a], check=False, capture_output=True)
            if (tmp_path / "live.pcapng").exists() and (tmp_path / "live.pcapng").stat().st_size > 200:
                break
        dp.stdin.write("go\n")
        dp.stdin.close()
        assert dp.wait(60) == 0
        lp.wait(30)
        time.sleep(2)               # the last frames decoded, a report written
        live.send_signal(signal.SIGINT)
        err = live.communicate(timeout=120)[1]
        assert live.returncode == 0, err
    rows = {(r["proto"], r["msg_type"]): r["messages"] for r in json.loads(report.read_text())["rows"]}
    want: dict[tuple[str, str], int] = {}
    for side in ("dialer", "listener"):
        for mtype, *_ in truth_sent(json.loads(truths[side].read_text())):
            want[("eth2", mtype)] = want.get(("eth2", mtype), 0) + 1
    assert {k: v for k, v in rows.items() if k[0] == "eth2"} == want != {}
    assert not [k for k in rows if k[1].endswith("(encrypted)")]
    lines = "0 TLS and 2 Noise" if security == "noise" else "4 TLS and 0 Noise"
    assert f"p2pc live: keys: stopped (every process ended): {lines} key lines written to " in err


def test_a_user_with_cap_bpf_and_cap_perfmon_reads_its_own_node(helper, peers):
    """Not root: `setcap cap_bpf,cap_perfmon+ep` on the helper (docs/libp2p-decryption.md) lets a
    user read the keys of a node running as that user, on this kernel's multi-uprobe links; the
    same helper without them says which capabilities it needs."""
    work = Path(tempfile.mkdtemp(prefix="p2pc-keys-caps-", dir="/tmp"))
    try:
        os.chmod(work, 0o777)
        for name, src in (("p2pc-keys", helper), ("peer", peers("v0.39.1"))):
            shutil.copy(src, work / name)
            os.chmod(work / name, 0o755)
        subprocess.run(["setcap", "cap_bpf,cap_perfmon+ep", str(work / "p2pc-keys")], check=True)
        nobody = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
        common = ["-blocks", str(BLOCKS), "-gossip", "0", "-session", "short", "-security", "noise"]
        with subprocess.Popen([*nobody, work / "peer", "-role", "listen", "-listen", "/ip4/127.0.0.1/tcp/0",
                               "-idfile", work / "id", "-seed", "2", *common],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as lp:
            try:
                running(lp.pid, work / "peer")
                addr = listener_addr(work / "id", "127.0.0.1")
                k = subprocess.Popen([*nobody, work / "p2pc-keys", "--pid", str(lp.pid), "--output", work / "k"],
                                     stderr=subprocess.PIPE, text=True)
                attached(k, lp.pid)
                subprocess.run([*nobody, work / "peer", "-role", "dial", "-peer", addr, "-seed", "1", *common],
                               check=True, capture_output=True, timeout=60)
                lp.wait(30)
                assert k.wait(10) == 0, k.stderr.read()
            finally:
                lp.kill()
        labels = sorted(line.split()[0] for line in (work / "k").read_text().splitlines())
        assert labels == ["LOCAL_EPHEMERAL_PRIVATE_KEY", "LOCAL_STATIC_PRIVATE_KEY"]
        subprocess.run(["setcap", "-r", str(work / "p2pc-keys")], check=True)
        with subprocess.Popen([*nobody, work / "peer", "-role", "listen", "-listen", "/ip4/127.0.0.1/tcp/0",
                               "-blocks", str(BLOCKS)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as p:
            try:
                running(p.pid, work / "peer")
                res = subprocess.run([*nobody, work / "p2pc-keys", "--pid", str(p.pid), "--output", work / "k2"],
                                     capture_output=True, text=True, timeout=30)
            finally:
                p.kill()
        assert res.returncode == 2 and len(res.stderr.splitlines()) == 1
        assert "not permitted" in res.stderr and "CAP_BPF and CAP_PERFMON" in res.stderr, res.stderr
    finally:
        shutil.rmtree(work, ignore_errors=True)


@pytest.mark.parametrize("uprobes", ["auto", "single"])
def test_an_unmodified_openssl_node_decodes_fisco3_over_tls(helper, tshark, tmp_path, uprobes):
    """FISCO 3.x over TLS 1.2 between two unmodified Python ssl peers (captures/gen/fisco3.py's
    `fisco3-tls` session: OpenSSL, Debian 12's libssl3 linked dynamically, no key log on the
    listener): p2pc keys attached to the running listener reads the connection's master secret at
    SSL_read/SSL_write, the same line the dialer's own OpenSSL writes to its key log, and with it
    every 3.x message of the capture decodes to the generator's truth, nothing left encrypted."""
    from make_fisco import make_certs
    from test_fisco3 import RECORD_FIELDS, truth
    certs, cap = tmp_path / "certs", tmp_path / "fisco3-tls.pcapng"
    certs.mkdir()
    make_certs(certs)
    keys, own = tmp_path / "listener.keys", tmp_path / "dialer-own.keys"
    peer = [sys.executable, str(CAPTURES / "gen" / "fisco3.py"), "fisco3-tls"]
    with EmulatedLink(delay_ms=5, rate_kbit=None, capture=cap) as link:
        lp = link.popen("a", [*peer, "a", "0", "30300", "tls", str(certs), "-"], stdout=subprocess.PIPE, text=True)
        assert lp.stdout.readline().strip() == "listening"
        k = p2pc("keys", "--pid", str(lp.pid), "--output", str(keys), "--uprobes", uprobes)
        lines = attached(k, lp.pid)
        link.run("b", [*peer, "b", link.addr_a, "30300", "tls", str(certs), str(own)], timeout=120, check=True)
        assert lp.wait(60) == 0
        rest = k.stderr.read()
        assert k.wait(10) == 0, rest
    lines += rest.splitlines()
    assert "OpenSSL libssl build ID " in lines[-3] and lines[-3].endswith(
        f": probing SSL_read, SSL_read_ex, SSL_write, SSL_write_ex ({'one uprobe each' if uprobes == 'single' else 'multi-uprobe links'})"), lines
    assert lines[-1] == f"p2pc keys: stopped (every process ended): 1 TLS and 0 Noise key lines written to {keys}"
    got = keys.read_text().splitlines()
    assert got == [l for l in own.read_text().splitlines() if l.startswith("CLIENT_RANDOM ")] and len(got) == 1
    t = truth("fisco3-tls")
    side = {t["link"]["addr_a"]: "a", t["link"]["addr_b"]: "b"}
    keyed = ["-o", f"tls.keylog_file:{tshark.ws.readable(keys)}"]
    recs = tshark.records(cap, extra=keyed)
    assert [(side[r["src"]], r["proto"], *(r[f] for f in RECORD_FIELDS)) for r in recs] == \
        [(m["side"], "fisco3", *(str(m[f]) for f in RECORD_FIELDS)) for m in t["messages"]]
    assert not tshark.fields(cap, ["frame.number"], dfilter="p2pc.tls_no_keys", extra=keyed)


def ssl_sleeper(**kw) -> subprocess.Popen:
    """A Python that has loaded its ssl module (so maps a libssl) and sleeps, after saying so."""
    p = subprocess.Popen([sys.executable, "-c", "import ssl, time; print('up', flush=True); time.sleep(60)"],
                         stdout=subprocess.PIPE, text=True, **kw)
    assert p.stdout.readline() == "up\n"
    return p


def mapped_libssl(pid: int) -> Path:
    return next(Path(line.split()[-1]) for line in Path(f"/proc/{pid}/maps").read_text().splitlines()
                if line.split()[-1].rsplit("/", 1)[-1].startswith("libssl.so"))


def build_id(lib: Path) -> str:
    """The GNU build ID, as binutils' readelf reads it."""
    out = subprocess.run(["readelf", "-n", lib], capture_output=True, text=True, check=True).stdout
    return out.split("Build ID: ", 1)[1].split()[0]


# Debian 12's libssl3 3.0.19-1~deb12u2, amd64: the offsets read by hand from `objdump -d` of its
# accessors (SSL_version `mov (%rdi),%eax`, SSL_get_client_random `lea 0x160(%rdi),%rsi`,
# SSL_get_session `mov 0x918(%rdi),%rax`, SSL_SESSION_get_master_key `mov 0x8(%rdi),%rbx` and
# `lea 0x50(%rax),%rsi`), the table p2pc keys kept before it read them itself.
HAND_READ = {"c0b9959017cf64b03131964573944fc72958bb2b": (0, 0x160, 0x918, 0x8, 0x50)}


def test_the_offsets_read_from_the_installed_libssl_are_the_hand_read_ones(helper, tmp_path):
    """p2pc keys reads struct ssl_st's offsets from the accessors' machine code; on the build whose
    offsets were read by hand (HAND_READ), it reads the same."""
    with ssl_sleeper() as p:
        try:
            lib = mapped_libssl(p.pid)
            bid = build_id(lib)
            if bid not in HAND_READ:
                pytest.skip(f"the installed libssl {lib} is build {bid}, not one whose offsets were read by hand")
            k = p2pc("keys", "--pid", str(p.pid), "--output", str(tmp_path / "k"), "--duration", "1")
            lines = attached(k, p.pid)
            assert k.wait(30) == 0
        finally:
            p.kill()
    v, cr, sess, mkl, mk = HAND_READ[bid]
    assert f"OpenSSL libssl build ID {bid} (SSL.version at {v:#x}, SSL.s3.client_random at {cr:#x}, SSL.session at " \
        f"{sess:#x}, SSL_SESSION.master_key_length at {mkl:#x}, master_key at {mk:#x}), {lib}: probing " in lines[-1], lines


def debian_libssl3_builds(work: Path) -> dict[str, Path]:
    """Every libssl3 version Debian's archive offers this machine besides the installed one, each
    downloaded with apt (signed indexes) and unpacked, not installed: version -> its library folder."""
    arch = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True, check=True).stdout.strip()
    installed = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "libssl3"],
                               capture_output=True, text=True, check=True).stdout
    madison = subprocess.run(["apt-cache", "madison", "libssl3"], capture_output=True, text=True, check=True).stdout
    versions = sorted({f[1] for f in (line.split(" | ") for line in madison.splitlines())
                       if len(f) == 3 and f[2].strip().endswith(f" {arch} Packages") and f[1].strip() != installed})
    builds = {}
    for v in (v.strip() for v in versions):
        subprocess.run(["apt-get", "download", "-q", f"libssl3={v}"], cwd=work, capture_output=True, check=True)
        deb = next(work.glob(f"libssl3_{v.replace(':', '%3a')}_{arch}.deb"))
        subprocess.run(["dpkg-deb", "-x", deb, work / v], check=True)
        builds[v] = next((work / v).glob("usr/lib/*/libssl.so.3")).parent
    return builds


def test_other_debian_libssl_builds_give_the_line_their_own_openssl_logs(helper, tmp_path):
    """The other libssl3 builds Debian's archive offers (on Debian 12 today 3.0.17-1~deb12u2,
    3.0.20-1~deb12u2 and 3.0.22-1~deb12u2: other build IDs, other code addresses), downloaded and
    unpacked, not installed: both peers of `fisco3-tls` run on one through LD_LIBRARY_PATH, the listener with a
    key log of its own (the library's keylog callback); p2pc keys attached to it reads the offsets
    from that build's accessors and writes exactly the CLIENT_RANDOM line that OpenSSL logged."""
    from make_fisco import make_certs
    builds = debian_libssl3_builds(tmp_path)
    if not builds:
        pytest.skip("Debian's archive offers no libssl3 build but the installed one (apt-get update?)")
    certs = tmp_path / "certs"
    certs.mkdir()
    make_certs(certs)
    for version, libdir in builds.items():
        env = dict(os.environ, LD_LIBRARY_PATH=str(libdir))
        keys, own = tmp_path / f"{version}.keys", tmp_path / f"{version}-own.keys"
        peer = [sys.executable, str(CAPTURES / "gen" / "fisco3.py"), "fisco3-tls"]
        with EmulatedLink(delay_ms=5, rate_kbit=None) as link:
            lp = link.popen("a", [*peer, "a", "0", "30300", "tls", str(certs), str(own)], stdout=subprocess.PIPE,
                            text=True, env=env)
            assert lp.stdout.readline().strip() == "listening"
            assert mapped_libssl(lp.pid) == libdir / "libssl.so.3", version
            k = p2pc("keys", "--pid", str(lp.pid), "--output", str(keys))
            lines = attached(k, lp.pid)
            link.run("b", [*peer, "b", link.addr_a, "30300", "tls", str(certs), "-"], timeout=120, check=True, env=env)
            assert lp.wait(60) == 0
            rest = k.stderr.read()
            assert k.wait(10) == 0, rest
        assert f"OpenSSL libssl build ID {build_id(libdir / 'libssl.so.3')} (" in lines[-1], (version, lines)
        got, logged = keys.read_text().splitlines(), own.read_text().splitlines()
        assert got == [l for l in logged if l.startswith("CLIENT_RANDOM ")] and len(got) == 1, (version, got, logged)


def test_a_libssl_whose_accessor_is_not_a_known_shape_is_refused(helper, tmp_path):
    """A libssl whose SSL_get_session does not begin with a load from its argument (here the
    system's, copied, with `test %rdi,%rdi` written over its entry; loaded through
    LD_LIBRARY_PATH) is refused in one line naming the library and the accessor: nothing is read
    at a guessed offset."""
    with ssl_sleeper() as p:
        lib = mapped_libssl(p.pid)
        p.kill()
    copy = tmp_path / lib.name
    shutil.copy(lib, copy)
    dump = subprocess.run(["objdump", "-d", "-F", "--disassemble=SSL_get_session", copy],
                          capture_output=True, text=True, check=True).stdout
    at = int(dump.split("<SSL_get_session@@", 1)[1].split("(File Offset: ", 1)[1].split(")", 1)[0], 16)
    with open(copy, "r+b") as f:
        f.seek(at)
        f.write(bytes.fromhex("4885ff"))   # test %rdi,%rdi
    with ssl_sleeper(env=dict(os.environ, LD_LIBRARY_PATH=str(tmp_path))) as p:
        try:
            code, lines = keys_error("--pid", str(p.pid), "--output", str(tmp_path / "k"))
        finally:
            p.kill()
    assert code == 16 and lines == [
        f"p2pc keys: pid {p.pid} ({os.path.realpath(sys.executable)}): its libssl {copy} (build ID {build_id(copy)}): "
        "SSL_get_session's code is not one p2pc keys reads an offset from (+0x0: TEST RDI, RDI): none is read at a "
        "guessed offset (docs/libp2p-decryption.md, \"FISCO BCOS\")"], lines
    assert not (tmp_path / "k").exists()
