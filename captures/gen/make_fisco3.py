#!/usr/bin/env python3
"""Make the FISCO BCOS 3.x captures in captures/fisco/ (fisco3-*.pcapng) from real TCP connections.

Two gateways (fisco3.py) in network namespaces over the emulated link of netem.py (60 ms each
way, 20 Mbit/s), port 30300 (3.x's default P2P port, as 2.x's): at V2 with enable_compress on
and off, and a session negotiated at each other version (V0, V1, V3) with compression on.
`fisco3-layout`: four nodes on one host, on the ports build_chain.sh gives them (30300-30303),
their six sessions at once over the same link (fisco3.py, "a multi-node layout").
`fisco3-tls`: fisco3-v3's session inside TLS 1.2 with mutual certificates (made with openssl as
make_fisco.py makes them), node a listening; the listener's key log beside the capture as
fisco3-tls.keys (not embedded: p2pc reads it as an operator's key log, `tls.keylog_file`).
Needs root:  sudo python3 captures/gen/make_fisco3.py [SESSION|fisco3-layout ...]
"""
from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import fisco3  # noqa: E402
from make_fisco import make_certs  # noqa: E402
from netem import EmulatedLink  # noqa: E402

OUT = HERE.parent / "fisco"
DELAY_MS, RATE_KBIT, PORT = 60, 20000, 30300


def truth_messages(name: str) -> list[dict]:
    """A session's messages in the order sent, from the generator's own inputs."""
    out = []
    nodes = fisco3.session_nodes(name)
    negotiated = min(fisco3.spec_of(name)["max"])
    for i, (m, wire, hlen, sent) in enumerate(fisco3.wire_messages(name)):
        compressed = len(sent) != len(m.payload) or sent != m.payload
        peer = "b" if m.side == "a" else "a"
        ids = ({"src_p2p_id": nodes[m.side].p2p_id_for(negotiated).hex(),
                "dst_p2p_id": nodes[peer].p2p_id_for(negotiated).hex()} if m.version >= 1 else {})
        out.append({"index": i, "side": m.side, "version": m.version, "packet_type": m.ptype, "seq": m.seq,
                    "module": m.module, "msg_type": m.msg_type, "compressed": compressed,
                    "codec": "zstd" if compressed else "none", "response": bool(m.ext & fisco3.RESPONSE),
                    "wire_len": len(wire), "header_len": hlen, "payload_len": len(sent),
                    "raw_len": len(m.payload), "raw_sha256": hashlib.sha256(m.payload).hexdigest(),
                    "batch_count": m.batch, "max_version": m.max_version, "dst_count": m.dst if m.module else None,
                    **ids})
    return out


def run_pair(name: str, link: EmulatedLink) -> None:
    """Plaintext: B listens, A dials."""
    b = link.popen("b", [sys.executable, str(HERE / "fisco3.py"), name, "b", "0", str(PORT)],
                   stdout=subprocess.DEVNULL)
    link.run("a", [sys.executable, str(HERE / "fisco3.py"), name, "a", link.addr_b, str(PORT)], timeout=120)
    if b.wait(60) != 0:
        raise RuntimeError(f"{name}: peer B exited {b.returncode}")


def run_tls_pair(name: str, link: EmulatedLink, certdir: Path, keylog: Path) -> None:
    """TLS: A listens and writes the key log (the node an operator audits), B dials."""
    a = link.popen("a", [sys.executable, str(HERE / "fisco3.py"), name, "a", "0", str(PORT), "tls", str(certdir),
                         str(keylog)], stdout=subprocess.DEVNULL)
    link.run("b", [sys.executable, str(HERE / "fisco3.py"), name, "b", link.addr_a, str(PORT), "tls", str(certdir),
                   "-"], timeout=120)
    if a.wait(60) != 0:
        raise RuntimeError(f"{name}: peer A exited {a.returncode}")


def make(name: str, spec: dict) -> None:
    cap = OUT / f"{name}.pcapng"
    tls = spec.get("tls", False)
    with tempfile.TemporaryDirectory() as tmp, \
            EmulatedLink(delay_ms=DELAY_MS, rate_kbit=RATE_KBIT, capture=cap) as link:
        if tls:
            make_certs(Path(tmp))
            run_tls_pair(name, link, Path(tmp), Path(tmp) / "keys.txt")
            shutil.copyfile(Path(tmp) / "keys.txt", OUT / f"{name}.keys")
        else:
            run_pair(name, link)
    out = truth_messages(name)
    negotiated = min(spec["max"])
    listener = {"port_a": PORT} if tls else {"port_b": PORT}
    truth = {"capture": cap.name, "description": spec["desc"],
             "link": {"delay_ms_each_way": DELAY_MS, "rate_kbit": RATE_KBIT, "mtu": 1500,
                      "addr_a": EmulatedLink.addr_a, "addr_b": EmulatedLink.addr_b, **listener},
             "compress": spec["compress"], "threshold": fisco3.THRESHOLD,
             "max_version": dict(zip("ab", spec["max"])), "negotiated_version": negotiated, "messages": out}
    if tls:
        truth["keys"] = f"{name}.keys"      # node a's (the listener's) key log, as OpenSSL wrote it
        truth["tls"] = {"version": "TLS 1.2",
                        "writes": {s: [{"ends_with": i, "sizes": [len(w) for w in ws]}
                                       for i, ws in fisco3.write_plan(fisco3.wire_messages(name), s)]
                                   for s in "ab"}}
    (OUT / f"{name}.truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    print(f"{cap.name}: {cap.stat().st_size} bytes")


LAYOUT = "fisco3-layout"


def make_layout() -> None:
    """The four-node layout (fisco3.LAYOUT_*).  Its nodes share one host, so every session is
    local to it; the link stands in for that host's loopback with the 1500-byte MTU and the RTT
    of the other captures: each session's listening node is in namespace B (192.0.2.2, on its
    build_chain.sh port), its dialling node in A (a namespace cannot route its own address over a
    link), connecting from an ephemeral port as Host::asyncConnect does.  The connections are
    made one after another (each listener takes its one connection and frees its port for the
    next), then the six sessions start together, as Service::heartBeat dials every node at once."""
    cap = OUT / f"{LAYOUT}.pcapng"
    layout = fisco3.layout_sessions()
    client_ports = {}
    with EmulatedLink(delay_ms=DELAY_MS, rate_kbit=RATE_KBIT, capture=cap) as link:
        peers = []
        for name, spec in layout.items():
            b = link.popen("b", [sys.executable, str(HERE / "fisco3.py"), name, "b", "0", str(spec["port"])],
                           stdout=subprocess.PIPE, text=True)
            if b.stdout.readline().strip() != "listening":
                raise RuntimeError(f"{name}: the listener did not start")
            a = link.popen("a", [sys.executable, str(HERE / "fisco3.py"), name, "a", link.addr_b,
                                 str(spec["port"]), "hold"], stdin=subprocess.PIPE, text=True)
            line = b.stdout.readline().split()
            if line[:1] != ["accepted"]:
                raise RuntimeError(f"{name}: the listener accepted nothing")
            client_ports[name] = int(line[1])
            peers += [(name, a), (name, b)]
        for name, p in peers:
            if p.stdin:
                p.stdin.write("go\n")
                p.stdin.close()
        for name, p in peers:
            if p.wait(120) != 0:
                raise RuntimeError(f"{name}: a peer exited {p.returncode}")
    nodes = fisco3.layout_nodes()
    truth = {"capture": cap.name,
             "description": "four 3.x gateways on one host, on the ports build_chain.sh gives them, "
                            "their six sessions at the same time; maxVersions V3, V2, V3, V1",
             "link": {"delay_ms_each_way": DELAY_MS, "rate_kbit": RATE_KBIT, "mtu": 1500,
                      "addr_a": EmulatedLink.addr_a, "addr_b": EmulatedLink.addr_b},
             "threshold": fisco3.THRESHOLD,
             "nodes": [{"index": i, "p2p_port": fisco3.LAYOUT_PORT + i, "max_version": fisco3.LAYOUT_MAX[i],
                        "p2p_id": n.p2p_id, "node_id": n.node_id.hex()} for i, n in enumerate(nodes)],
             "sessions": [{"name": name, "dialer": spec["nodes"][0], "listener": spec["nodes"][1],
                           "client_addr": EmulatedLink.addr_a, "client_port": client_ports[name],
                           "server_addr": EmulatedLink.addr_b, "server_port": spec["port"],
                           "compress": spec["compress"], "max_version": dict(zip("ab", spec["max"])),
                           "negotiated_version": min(spec["max"]), "messages": truth_messages(name)}
                          for name, spec in layout.items()]}
    (OUT / f"{LAYOUT}.truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    print(f"{cap.name}: {cap.stat().st_size} bytes")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    all_s = fisco3.sessions()
    for name in sys.argv[1:] or [*all_s, LAYOUT]:
        if name == LAYOUT:
            make_layout()
        else:
            make(name, all_s[name])


if __name__ == "__main__":
    main()
