"""An emulated network link between two network namespaces, for captures of real TCP.

This kernel has no `netem` qdisc, so the link is two TAP devices bridged by a userspace relay
(this module) that holds every Ethernet frame for the one-way delay and serialises frames at
the link rate before writing them to the other side: real end-to-end TCP with real ACKs, a real
1500-byte MTU, and the RTT and bandwidth-delay product the seeds' tests had (e.g. 60 ms each
way).  dumpcap captures on node A's interface, so timestamps are what A saw.

`hold_first_payload_ms={"b": 30}` holds the first frame with TCP payload of each connection B sends
that long on top of the delay (B's later frames queue behind it, so nothing is reordered).  Who
speaks first on a new connection is a race between the dialer's first write and the listener's
(a go-libp2p or py-libp2p listener sends its multistream header as soon as it accepts); holding
the dialer's first bytes lets the listener's go out first at the listener's side, as on a link
where they happen to arrive later.

    with EmulatedLink(delay_ms=60, rate_kbit=20000, capture="out.pcapng") as link:
        rx = link.popen("b", ["python3", "peer.py", "listen"])
        link.run("a", ["python3", "peer.py", "connect", link.addr_b])

Addresses are 192.0.2.1 (A) and 192.0.2.2 (B), TEST-NET-1: nothing outside the namespaces.
Needs root.
"""
from __future__ import annotations

import fcntl
import heapq
import os
import select
import struct
import subprocess
import threading
import time
from pathlib import Path

import dpkt

TUNSETIFF = 0x400454CA
IFF_TAP = 0x0002
IFF_NO_PI = 0x1000


def _sh(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), check=check, capture_output=True, text=True)


def _open_tap(name: str) -> int:
    fd = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TAP | IFF_NO_PI))
    return fd


class _Relay(threading.Thread):
    """Moves frames between two TAP fds with a delay and a rate limit per direction."""

    def __init__(self, fd_a: int, fd_b: int, delay_s: float, rate_bps: float | None,
                 hold_s: tuple[float, float] = (0.0, 0.0), queue_limit: int = 20000):
        super().__init__(daemon=True)
        self.fds = (fd_a, fd_b)
        self.delay = delay_s
        self.rate = rate_bps
        self.queue_limit = queue_limit
        self.busy_until = [0.0, 0.0]   # when each direction's "wire" is free again
        self.hold = hold_s             # per direction: extra delay of a connection's first payload
        self.released = [0.0, 0.0]     # per direction: when its last frame leaves the relay
        self.spoken: set = set()       # (direction, TCP ports) that have sent payload
        self.stalled_until = 0.0       # no frame leaves before this (EmulatedLink.stall)
        self.heap: list[tuple[float, int, int, bytes]] = []
        self.seq = 0
        self.stop = threading.Event()
        self.frames = [0, 0]
        self.dropped = [0, 0]

    def run(self) -> None:
        while not self.stop.is_set():
            now = time.monotonic()
            while self.heap and self.heap[0][0] <= now:
                _, _, out_fd, frame = heapq.heappop(self.heap)
                try:
                    os.write(out_fd, frame)
                except OSError:
                    pass
            timeout = 0.05 if not self.heap else max(0.0, min(0.05, self.heap[0][0] - now))
            ready, _, _ = select.select(self.fds, [], [], timeout)
            now = time.monotonic()
            for fd in ready:
                d = 0 if fd == self.fds[0] else 1
                try:
                    frame = os.read(fd, 65536)
                except OSError:
                    continue
                if len(self.heap) >= self.queue_limit:
                    self.dropped[d] += 1
                    continue
                start = max(now, self.busy_until[d], self.stalled_until)
                tx_time = (len(frame) + 24) * 8 / self.rate if self.rate else 0.0  # + preamble/IFG/FCS
                self.busy_until[d] = start + tx_time
                self.seq += 1
                self.frames[d] += 1
                due = start + tx_time + self.delay + self._hold(d, frame)
                self.released[d] = due = max(due, self.released[d])
                heapq.heappush(self.heap, (due, self.seq, self.fds[1 - d], frame))

    def _hold(self, d: int, frame: bytes) -> float:
        """The hold for a frame: its direction's, if it is the first with TCP payload of its connection."""
        if not self.hold[d]:
            return 0.0
        ip = dpkt.ethernet.Ethernet(frame).data
        if not isinstance(ip, dpkt.ip.IP) or not isinstance(ip.data, dpkt.tcp.TCP) or not ip.data.data:
            return 0.0
        conn = (d, ip.data.sport, ip.data.dport)
        if conn in self.spoken:
            return 0.0
        self.spoken.add(conn)
        return self.hold[d]


class EmulatedLink:
    addr_a = "192.0.2.1"
    addr_b = "192.0.2.2"

    def __init__(self, delay_ms: float = 60, rate_kbit: float | None = 20000,
                 capture: str | os.PathLike | None = None, mtu: int = 1500,
                 snaplen: int = 0, hold_first_payload_ms: dict[str, float] | None = None):
        if os.geteuid() != 0:
            raise PermissionError("EmulatedLink needs root (network namespaces, TAP devices)")
        tag = f"{os.getpid() % 100000}"
        self.ns = {"a": f"p2pc-a-{tag}", "b": f"p2pc-b-{tag}"}
        self.tap = {"a": f"p2pca{tag}", "b": f"p2pcb{tag}"}
        self.delay_ms = delay_ms
        self.rate_kbit = rate_kbit
        self.capture = Path(capture) if capture else None
        self.mtu = mtu
        self.snaplen = snaplen
        self.hold_ms = hold_first_payload_ms or {}
        self._fds: dict[str, int] = {}
        self._relay: _Relay | None = None
        self._dumpcap: subprocess.Popen | None = None
        self._procs: list[subprocess.Popen] = []

    # -- setup / teardown --
    def __enter__(self) -> "EmulatedLink":
        try:
            self._setup()
        except BaseException:
            self._teardown()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self._teardown()

    def _setup(self) -> None:
        for side, addr in (("a", self.addr_a), ("b", self.addr_b)):
            ns, tap = self.ns[side], self.tap[side]
            _sh("ip", "netns", "add", ns)
            _sh("ip", "-n", ns, "link", "set", "lo", "up")
            self._fds[side] = _open_tap(tap)
            _sh("ip", "link", "set", tap, "netns", ns)
            _sh("ip", "-n", ns, "link", "set", tap, "mtu", str(self.mtu), "up")
            _sh("ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", tap)
            # Real-link segment sizes: no segmentation or receive offloads.
            _sh("ip", "netns", "exec", ns, "ethtool", "-K", tap, "tso", "off", "gso", "off",
                "gro", "off", check=False)
        self._relay = _Relay(self._fds["a"], self._fds["b"], self.delay_ms / 1000.0,
                             self.rate_kbit * 1000.0 if self.rate_kbit else None,
                             tuple(self.hold_ms.get(side, 0) / 1000.0 for side in ("a", "b")))
        self._relay.start()
        if self.capture:
            self.capture.parent.mkdir(parents=True, exist_ok=True)
            if self.capture.exists():
                self.capture.unlink()
            args = ["ip", "netns", "exec", self.ns["a"], "dumpcap", "-q", "-i", self.tap["a"],
                    "-w", str(self.capture)]
            if self.snaplen:
                args += ["-s", str(self.snaplen)]
            self._dumpcap = subprocess.Popen(args, stdout=subprocess.DEVNULL,
                                             stderr=subprocess.PIPE)
            deadline = time.monotonic() + 10
            while not self.capture.exists() and time.monotonic() < deadline:
                time.sleep(0.1)
            time.sleep(0.5)
        # Resolve ARP before the measured traffic starts.
        _sh("ip", "netns", "exec", self.ns["a"], "ping", "-c", "1", "-W", "2", self.addr_b,
            check=False)

    def _teardown(self) -> None:
        for p in self._procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    p.kill()
        if self._dumpcap and self._dumpcap.poll() is None:
            time.sleep(max(0.5, 3 * self.delay_ms / 1000.0))   # let the last frames arrive
            self._dumpcap.terminate()
            self._dumpcap.wait(10)
        if self._relay:
            self._relay.stop.set()
            self._relay.join(5)
        for ns in self.ns.values():
            _sh("ip", "netns", "del", ns, check=False)
        for fd in self._fds.values():
            try:
                os.close(fd)
            except OSError:
                pass
        if self.capture and self.capture.exists():
            os.chmod(self.capture, 0o644)

    # -- running things --
    def command(self, side: str, argv: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.ns[side], *argv]

    def popen(self, side: str, argv: list[str], **kw) -> subprocess.Popen:
        p = subprocess.Popen(self.command(side, argv), **kw)
        self._procs.append(p)
        return p

    def stall(self, seconds: float) -> None:
        """The link stalls for `seconds`: every frame sent in that time, each way, waits until it
        ends (then the delay and the rate as always), in order; none is lost, so TCP carries on."""
        self._relay.stalled_until = time.monotonic() + seconds

    def run(self, side: str, argv: list[str], timeout: float = 300, **kw) -> subprocess.CompletedProcess:
        kw.setdefault("check", True)
        return subprocess.run(self.command(side, argv), timeout=timeout, **kw)


if __name__ == "__main__":
    # Self-check: RTT over the emulated link is about twice the one-way delay.
    with EmulatedLink(delay_ms=60, rate_kbit=20000) as link:
        out = link.run("a", ["ping", "-c", "3", "-i", "0.3", link.addr_b],
                       capture_output=True, text=True).stdout
        print(out.strip().splitlines()[-1])
