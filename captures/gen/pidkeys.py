"""`p2pc keys --pid` on one running, unmodified node, as make_kubo.py and make_prysm.py run it:
attached before the node makes the connection the capture holds, stopped by the node's end
(p2pc keys stops when every process it probes has ended), what it said kept for the truth.
Needs root, eBPF uprobes and the helper `make keys` builds (build/p2pc-keys).  running() waits
for the process to probe, as make_prysm.py and tests/test_keys.py start it."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def running(pid: int, exe: Path, timeout: float = 10) -> None:
    """Once pid runs exe: `ip netns exec` (or a shell) has exec'd it, so p2pc keys probes exe and
    not the launcher.  TimeoutError if it does not within timeout seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if Path(f"/proc/{pid}/exe").resolve() == exe.resolve():
                return
        except OSError:
            pass
        time.sleep(0.02)
    raise TimeoutError(f"pid {pid} never ran {exe}")


class Tracer:
    """p2pc keys on pid, writing output (made anew); attached when the constructor returns."""

    def __init__(self, pid: int, output: Path):
        output.unlink(missing_ok=True)
        self.output = output
        self.proc = subprocess.Popen([sys.executable, "-m", "p2pc", "keys", "--pid", str(pid), "--output", str(output)],
                                     stderr=subprocess.PIPE, text=True,
                                     env=dict(os.environ, PYTHONPATH=str(ROOT / "analyzer")))
        self.said = []
        for line in self.proc.stderr:    # its lines up to the one saying pid is probed
            self.said.append(line.strip())
            if line.startswith(f"p2pc keys: pid {pid} (") and ": probing " in line:
                return
        raise SystemExit(f"p2pc keys ended before probing pid {pid}: {self.said}")

    def finish(self) -> list[str]:
        """After the node ended: what p2pc keys said, paths from the repository; the key log
        readable by all (the helper makes it 0600)."""
        rest = self.proc.stderr.read()
        if self.proc.wait(30) != 0:
            raise SystemExit(f"p2pc keys on {self.output.name}: {rest}")
        os.chmod(self.output, 0o644)
        return [line.replace(f"{ROOT}/", "") for line in self.said + rest.splitlines()]
