"""Two beacon nodes' truth, as make_lodestar.py and make_prysm.py read it: their standard REST
API (/eth/v1/node/identity) and their Prometheus counters, from inside netem.py's namespaces.

The nodes and their validator clients run as `link.popen(...)` processes in sessions of their
own (start_new_session), in a dict by side: "a", "b" the nodes, "va", "vb" their validators.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time

from netem import EmulatedLink


def http(link: EmulatedLink, side: str, path: str, port: int, *curl: str) -> bytes | None:
    """curl's stdout for http://127.0.0.1:<port><path> inside the node's namespace (more curl
    arguments in `curl`), or None if the request failed (an HTTP error included)."""
    r = subprocess.run(link.command(side, ["curl", "-sf", "-m", "10", *curl, f"http://127.0.0.1:{port}{path}"]),
                       capture_output=True)
    return r.stdout if r.returncode == 0 else None


def metrics(link: EmulatedLink, side: str, port: int, prefixes: tuple[str, ...]) -> list[str]:
    """The node's counters (`name_total{labels} n` lines, as it printed them) whose names start
    with one of `prefixes`."""
    text = http(link, side, "/metrics", port).decode()
    return [ln for ln in text.splitlines() if ln.startswith(prefixes) and re.match(r"\w+_total[{ ]", ln)]


def stop(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGINT)
    proc.wait(60)


def read_nodes(link: EmulatedLink, procs: dict, seconds_per_slot: int, rest: int, metrics_port: int,
               prefixes: tuple[str, ...], validators: dict[str, str], extra=lambda side: {}) -> dict:
    """Each node's truth: its peer ID and ENR, `extra(side)`, the validators it runs, and its
    counters with the time they were read (wall clock, as the capture's timestamps).

    The validators stop first, and the counters are read two slots later, so that no new message
    is under way when they are: what is still sent after that (a ping) is after metrics_time."""
    for side in ("vb", "va"):
        stop(procs[side])
    time.sleep(2 * seconds_per_slot)
    out = {}
    for side in ("a", "b"):
        ident = json.loads(http(link, side, "/eth/v1/node/identity", rest))["data"]
        out[side] = {"peer_id": ident["peer_id"], "enr": ident["enr"], **extra(side),
                     "validators": validators[side], "metrics_time": time.time(),
                     "metrics": metrics(link, side, metrics_port, prefixes)}
    return out
