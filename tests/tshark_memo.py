"""tshark with a memory, for one test session: the suite's `tshark` on PATH (tests/conftest.py).

Many tests, and the analyzer runs they start, read the same committed capture the same way
(`p2pc analyze` of btc-compressed alone runs tshark's records read about 25 times in a session).
A run that only reads a capture file and prints is a function of its inputs, so within a session
it runs once: the same inputs again get that run's stdout, stderr and exit status, byte for byte.
Every output still comes from the real tshark, on this machine, for exactly those inputs.

The inputs are: the arguments, the content of every file they name (`-r FILE`, `-o pref:FILE`),
the environment (HOME and the XDG folders stand for the content of the Wireshark folders they
hold: plugins, Lua parts, preferences and profiles, and the files those preferences name), the
user and groups, and the real tshark's identity.  Anything else runs tshark itself, unremembered:
standard input or a live capture, `-w`, Lua scripts given with -X (they may write), a file that
changes while it is read, a run that ends by a signal or whose reader stops early.

With P2PC_TSHARK_LOG=FILE each run also appends one JSON line to FILE: the test that ran it
(pytest's PYTEST_CURRENT_TEST), how it was answered ("ran": remembered for next time, "memo":
from the memory, "unremembered"), tshark's own CPU seconds and the arguments: where the suite's
tshark time goes (tools/tshark-log.py sums it).

    P2PC_TSHARK_REAL=/usr/bin/tshark P2PC_TSHARK_MEMO=DIR tests/tshark_memo.py ARGS...
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import selectors
import signal
import subprocess
import sys
from pathlib import Path

REAL = os.environ["P2PC_TSHARK_REAL"]
MEMO = Path(os.environ["P2PC_TSHARK_MEMO"])
# The environment's per-process names: what they point to is hashed instead (below).
VOLATILE = {"HOME", "PWD", "OLDPWD", "_", "TMPDIR", "PYTEST_CURRENT_TEST", "SHLVL"}
PATHS = re.compile(r"/[^\s\"',;]+")


def remembered(args: list[str]) -> bool:
    """Whether this run only reads a capture file and prints."""
    if "-r" not in args or args.index("-r") + 1 >= len(args):
        return False
    capture = args[args.index("-r") + 1]
    return (capture != "-" and os.path.isfile(capture)
            and not any(a in ("-w", "-i", "-b", "-P") or a.startswith(("-X", "--export")) for a in args))


def file_digest(path: str, h) -> None:
    with open(path, "rb") as f:
        h.update(hashlib.file_digest(f, "sha256").digest() if hasattr(hashlib, "file_digest")
                 else hashlib.sha256(f.read()).digest())


def tree_digest(root: Path, h) -> None:
    """The names and contents of a Wireshark folder, and of the files its text names."""
    if not root.is_dir():
        return
    for p in sorted(root.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(root)).encode() + b"\0")
            file_digest(str(p), h)
            if p.stat().st_size < 1 << 20 and p.suffix not in (".so", ".lua"):
                for named in PATHS.findall(p.read_text(errors="replace")):
                    if os.path.isfile(named):
                        h.update(named.encode() + b"\0")
                        file_digest(named, h)


def key(args: list[str]) -> str:
    h = hashlib.sha256()
    st = os.stat(REAL)
    h.update(f"{REAL}\0{st.st_size}\0{st.st_mtime_ns}\0{os.geteuid()}\0{sorted(os.getgroups())}\0".encode())
    for a in args:
        h.update(a.encode() + b"\0")
        for part in sorted({a, a.partition(":")[2], *PATHS.findall(a)}):
            if part and os.path.isfile(part):
                h.update(part.encode() + b"\0")
                file_digest(part, h)
    for k, v in sorted(os.environ.items()):
        if k not in VOLATILE and not k.startswith("XDG_"):
            h.update(f"{k}={v}\0".encode())
    home = Path(os.environ.get("HOME", "/nonexistent"))
    config = Path(os.environ.get("XDG_CONFIG_HOME", home / ".config")) / "wireshark"
    for root in (home / ".local/lib/wireshark", config):
        h.update(f"{root.name}\0".encode())
        tree_digest(root, h)
    return h.hexdigest()


def replay(entry: Path) -> int:
    rc = int((entry / "rc").read_text())
    for name, out in (("stderr", sys.stderr.buffer), ("stdout", sys.stdout.buffer)):
        out.write((entry / name).read_bytes())
        out.flush()
    return rc


def spawn(args: list[str], **kw) -> subprocess.Popen:
    """The real tshark as a child, which gets the signals this process gets (a reader stopping
    a live tshark signals the process it started: this one)."""
    child = subprocess.Popen([REAL, *args], **kw)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda s, _f: child.send_signal(s))
    return child


def run_and_remember(args: list[str], entry: Path) -> int:
    """tshark itself, its output passed on as it comes (a reader may stream it) and kept."""
    child = spawn(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    kept = {child.stdout: bytearray(), child.stderr: bytearray()}
    sink = {child.stdout: sys.stdout.buffer, child.stderr: sys.stderr.buffer}
    whole = True
    with selectors.DefaultSelector() as sel:
        for pipe in kept:
            sel.register(pipe, selectors.EVENT_READ)
        while sel.get_map():
            for k, _ in sel.select():
                chunk = os.read(k.fd, 1 << 16)
                if not chunk:
                    sel.unregister(k.fileobj)
                    continue
                kept[k.fileobj] += chunk
                try:
                    sink[k.fileobj].write(chunk)
                    sink[k.fileobj].flush()
                except BrokenPipeError:
                    whole = False
                    child.terminate()
    rc = child.wait()
    if whole and rc >= 0:
        tmp = entry.with_name(entry.name + f".{os.getpid()}")
        tmp.mkdir()
        (tmp / "stdout").write_bytes(kept[child.stdout])
        (tmp / "stderr").write_bytes(kept[child.stderr])
        (tmp / "rc").write_text(str(rc))
        try:
            tmp.rename(entry)
        except OSError:             # another run of the same inputs got there first
            for p in tmp.iterdir():
                p.unlink()
            tmp.rmdir()
    return rc if rc >= 0 else 128 - rc


def log(args: list[str], how: str) -> None:
    """One line to P2PC_TSHARK_LOG, if set (the module's docstring)."""
    path = os.environ.get("P2PC_TSHARK_LOG")
    if path:
        usage = os.times()
        line = json.dumps({"test": os.environ.get("PYTEST_CURRENT_TEST", ""), "how": how,
                           "cpu": round(usage.children_user + usage.children_system, 3), "args": args})
        with open(path, "a") as f:
            f.write(line + "\n")


def main(args: list[str]) -> int:
    if not remembered(args):
        if not os.environ.get("P2PC_TSHARK_LOG"):
            os.execv(REAL, [REAL, *args])
        rc = spawn(args).wait()
        log(args, "unremembered")
        return rc if rc >= 0 else 128 - rc
    before = key(args)
    entry = MEMO / before
    if (entry / "rc").is_file():
        log(args, "memo")
        return replay(entry)
    rc = run_and_remember(args, entry)
    log(args, "ran")
    if entry.is_dir() and key(args) != before:      # an input changed while tshark read it
        for p in entry.iterdir():
            p.unlink()
        entry.rmdir()
    return rc


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except BrokenPipeError:
        sys.exit(141)
