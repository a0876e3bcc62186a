#!/usr/bin/env python3
"""Make the FISCO BCOS captures in captures/fisco/ from real TCP (and TLS) connections.

Two peers (fisco.py) in network namespaces over the emulated link of netem.py (60 ms each way,
20 Mbit/s), port 30300.  The TLS session uses TLS 1.2 with mutual certificates made here with
openssl; the client's key log is embedded in the pcapng with `editcap --inject-secrets`, so
Wireshark decrypts it with no setup.  Sessions and what they hold: fisco.sessions().
Needs root:  sudo python3 captures/gen/make_fisco.py [SESSION ...]
"""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import fisco  # noqa: E402
from netem import EmulatedLink  # noqa: E402

OUT = HERE.parent / "fisco"
DELAY_MS, RATE_KBIT, PORT = 60, 20000, 30300


def make_certs(d: Path) -> None:
    def run(*a):
        subprocess.run(a, check=True, capture_output=True)
    # secp256k1 keys and ECDHE, as FISCO 2.x nodes' (non-SM) certificates use.
    run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:secp256k1", "-nodes",
        "-keyout", str(d / "ca.key"), "-out", str(d / "ca.crt"), "-days", "3650", "-subj", "/CN=p2pc-fisco-ca")
    for side in "ab":
        run("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:secp256k1", "-nodes",
            "-keyout", str(d / f"node{side}.key"), "-out", str(d / f"node{side}.csr"), "-subj", f"/CN=node{side}")
        run("openssl", "x509", "-req", "-in", str(d / f"node{side}.csr"), "-CA", str(d / "ca.crt"),
            "-CAkey", str(d / "ca.key"), "-CAcreateserial", "-out", str(d / f"node{side}.crt"), "-days", "3650")


def make(name: str, spec: dict) -> None:
    cap = OUT / f"{name}.pcapng"
    with tempfile.TemporaryDirectory() as tmp:
        tmpd = Path(tmp)
        tls = spec.get("tls", False)
        if tls:
            make_certs(tmpd)
        raw_cap = tmpd / "raw.pcapng" if tls else cap
        keylog = tmpd / "keys.txt"
        extra = [str(tmpd), str(keylog)] if tls else ["-"]
        with EmulatedLink(delay_ms=DELAY_MS, rate_kbit=RATE_KBIT, capture=raw_cap) as link:
            b = link.popen("b", [sys.executable, str(HERE / "fisco.py"), name, "b", "0", str(PORT), *extra])
            link.run("a", [sys.executable, str(HERE / "fisco.py"), name, "a", link.addr_b, str(PORT), *extra],
                     timeout=120)
            if b.wait(60) != 0:
                raise RuntimeError(f"{name}: peer B exited {b.returncode}")
        if tls:
            subprocess.run(["editcap", "--inject-secrets", f"tls,{keylog}", str(raw_cap), str(cap)], check=True)
            cap.chmod(0o644)
    msgs = spec["msgs"]()
    out = []
    for i, m in enumerate(msgs):
        wire, flag, sent = m.wire(spec["compress"], spec.get("rc1", False))
        e = {"index": i, "side": m.side, "workload": m.workload, "module": m.module, "packet_type": m.ptype,
             "seq": m.seq, "response": m.response, "group": None if m.response else m.group}
        if m.force is not None:
            e.update(malformed=m.expect, expert=m.expert, length=len(wire))
        else:
            e.update(msg_type=m.expect, response_to=m.response_to, length=len(wire), compressed=flag,
                     payload_len=len(sent), raw_len=len(m.data), raw_sha256=hashlib.sha256(m.data).hexdigest(),
                     batch_count=m.batch)
        out.append(e)
    truth = {"capture": cap.name, "description": spec["desc"],
             "link": {"delay_ms_each_way": DELAY_MS, "rate_kbit": RATE_KBIT, "mtu": 1500,
                      "addr_a": EmulatedLink.addr_a, "addr_b": EmulatedLink.addr_b, "port_b": PORT},
             "compress": spec["compress"], "tls": spec.get("tls", False), "rc1": spec.get("rc1", False),
             "messages": out}
    (OUT / f"{name}.truth.json").write_text(json.dumps(truth, indent=1) + "\n")
    print(f"{cap.name}: {cap.stat().st_size} bytes")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    all_s = fisco.sessions()
    names = sys.argv[1:] or list(all_s)
    for name in names:
        make(name, all_s[name])
    if "fisco-mixed-on" not in names:
        return
    # A capture cut short in the middle of a packet.
    src = (OUT / "fisco-mixed-on.pcapng").read_bytes()
    (OUT / "fisco-truncated.pcapng").write_bytes(src[: len(src) * 2 // 5])
    print("fisco-truncated.pcapng: the first 40% of fisco-mixed-on.pcapng's bytes")


if __name__ == "__main__":
    main()
