#!/usr/bin/env python3
"""make gui-check: the real Wireshark GUI with the fresh plugin, under Xvfb, and screenshots of
what a person sees (docs/screenshots/*.png).

It starts a private X server (Xvfb), runs `wireshark` with build/plugins/<ver>/epan/p2pc.so and
lua/*.lua (as `nobody` with a private HOME when run as root: root ignores personal plugins, see
analyzer/p2pc/wsenv.py), opens the sample captures at chosen frames, drives the GUI with xdotool
keystrokes, and takes screenshots:

  btc-cblock-tree.png       a BUIP017 cblock: Bitcoin and p2pc subtrees expanded, the
                            "Decompressed cblock" byte tab
  eth2-gossip-block.png     an eth2 gossipsub beacon_block (Snappy) with its tree expanded
  stats-savings-menu.png    Statistics menu: the Lua savings window and P2P Compression
  stats-savings.png         the "Savings by message type" window (the analyzer's model)

It fails when Wireshark does not start, a window it expects does not appear, or a screenshot is
blank (one colour).  Missing tools (wireshark, Xvfb, xdotool, ImageMagick) are installed with
apt-get when run as root.  Keystroke counts fit the Wireshark the machine has (4.0 here);
another version may need them adjusted.
"""
from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "analyzer"))
from p2pc.wsenv import Wireshark, built_plugin  # noqa: E402

OUT = REPO / "docs" / "screenshots"
SCREEN = (1280, 1024)
NEEDS = {"wireshark": "wireshark", "Xvfb": "xvfb", "xdotool": "xdotool", "import": "imagemagick"}


class GuiCheckFailed(RuntimeError):
    pass


def ensure_tools() -> None:
    missing = sorted({pkg for exe, pkg in NEEDS.items() if not shutil.which(exe)})
    if not missing:
        return
    if os.geteuid() != 0:
        raise GuiCheckFailed(f"missing: {' '.join(missing)} (apt-get install {' '.join(missing)})")
    print(f"gui-check: installing {' '.join(missing)}", flush=True)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "install", "-y", "-q", *missing], check=True, env=env,
                   stdout=subprocess.DEVNULL)


def free_display() -> str:
    for n in range(90, 140):
        if not Path(f"/tmp/.X11-unix/X{n}").exists() and not Path(f"/tmp/.X{n}-lock").exists():
            return f":{n}"
    raise GuiCheckFailed("no free X display number")


class Gui:
    """One Xvfb and, at a time, one Wireshark in it."""

    def __init__(self) -> None:
        self.display = free_display()
        # -ac: the X server is private to this run and Wireshark runs as another user.
        self.xvfb = subprocess.Popen(["Xvfb", self.display, "-screen", "0", f"{SCREEN[0]}x{SCREEN[1]}x24",
                                      "-ac", "-nolisten", "tcp"], stderr=subprocess.DEVNULL)
        sock = Path(f"/tmp/.X11-unix/X{self.display[1:]}")
        for _ in range(100):
            if sock.exists():
                break
            time.sleep(0.1)
        else:
            raise GuiCheckFailed("Xvfb did not start")
        self.env = dict(os.environ, DISPLAY=self.display)
        self.ws: Wireshark | None = None
        self.proc: subprocess.Popen | None = None
        self.log = None

    def xdo(self, *args: str, check: bool = False) -> str:
        res = subprocess.run(["xdotool", *args], env=self.env, capture_output=True, text=True)
        if check and res.returncode != 0:
            raise GuiCheckFailed(f"xdotool {' '.join(args)}: {res.stderr.strip()}")
        return res.stdout

    def keys(self, *keys: str, pause: float = 0.25) -> None:
        for k in keys:
            self.xdo("key", k)
            time.sleep(pause)

    def click(self, x: int, y: int) -> None:
        self.xdo("mousemove", str(x), str(y))
        self.xdo("click", "1")
        time.sleep(0.5)

    def wait_window(self, name: str, timeout: float = 60) -> str:
        end = time.time() + timeout
        while time.time() < end:
            if self.proc is not None and self.proc.poll() is not None:
                raise GuiCheckFailed(f"wireshark exited ({self.proc.returncode}) before '{name}' showed; "
                                     f"its output:\n{Path(self.log.name).read_text()[-2000:]}")
            ids = self.xdo("search", "--onlyvisible", "--name", name).split()
            if ids:
                return ids[-1]
            time.sleep(0.5)
        raise GuiCheckFailed(f"no window named '{name}' within {timeout:.0f} s")

    def open(self, capture: Path, frame: int) -> str:
        """Wireshark on `capture` at `frame`, its main window filling the screen."""
        self.close()
        self.ws = Wireshark(plugin=built_plugin())
        home = self.ws._home
        if os.geteuid() == 0:
            # Wireshark (as nobody) writes its profile and recent files into the private HOME.
            nobody = pwd.getpwnam("nobody")
            for d, _, files in os.walk(home):
                os.chown(d, nobody.pw_uid, nobody.pw_gid)
                for f in files:
                    os.chown(os.path.join(d, f), nobody.pw_uid, nobody.pw_gid)
        cmd = self.ws.command("wireshark", ["-r", self.ws.readable(capture), "-g", str(frame)])
        # The tool may run under `env HOME=...` (and setpriv): pass DISPLAY the same way.
        if "env" in cmd:
            cmd.insert(cmd.index("env") + 1, f"DISPLAY={self.display}")
        self.log = open(Path(home) / "wireshark.log", "w")
        self.proc = subprocess.Popen(cmd, env=self.env, stdout=self.log, stderr=subprocess.STDOUT)
        wid = self.wait_window(capture.name)
        self.xdo("windowmove", wid, "0", "0")
        self.xdo("windowsize", wid, str(SCREEN[0]), str(SCREEN[1]))
        time.sleep(3)       # the file loads and the frame is selected
        if self.proc.poll() is not None:
            raise GuiCheckFailed(f"wireshark exited ({self.proc.returncode}) after opening {capture}")
        return wid

    def shot(self, name: str, crop: tuple[int, int, int, int] | None = None, width: int = 1000) -> Path:
        """The screen (or the crop w,h,x,y of it), scaled to `width`, as a small 8-bit-palette png."""
        OUT.mkdir(parents=True, exist_ok=True)
        raw = Path(self.ws._home if self.ws else "/tmp") / f"{name}.raw.png"
        subprocess.run(["import", "-display", self.display, "-window", "root", str(raw)], check=True)
        dst = OUT / f"{name}.png"
        args = ["convert", str(raw)]
        if crop:
            w, h, x, y = crop
            args += ["-crop", f"{w}x{h}+{x}+{y}", "+repage"]
        args += ["-resize", f"{width}x>", "-strip", "-colors", "128", f"PNG8:{dst}"]
        subprocess.run(args, check=True)
        # Blank: a single colour (Xvfb's black, or an empty window).
        sd = subprocess.run(["convert", str(dst), "-format", "%[fx:standard_deviation]", "info:"],
                            capture_output=True, text=True, check=True).stdout.strip()
        if float(sd or 0) < 0.02:
            raise GuiCheckFailed(f"{dst} is blank (standard deviation {sd})")
        print(f"gui-check: {dst.relative_to(REPO)} ({dst.stat().st_size // 1024} KiB)", flush=True)
        return dst

    def close(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.terminate()
                try:
                    self.proc.wait(10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            self.proc = None
        if self.log is not None:
            self.log.close()
            self.log = None
        if self.ws is not None:
            self.ws.cleanup()
            self.ws = None

    def stop(self) -> None:
        self.close()
        self.xvfb.terminate()
        self.xvfb.wait()


# Screen positions for the 1280x1024 main window of Wireshark 4.0's default layout: the packet
# details pane is the lower left quarter.
DETAILS_EMPTY = (300, 1000)      # an empty spot of the details pane (gives it the focus)
MENU_STATISTICS = (325, 10)


def expand_details_item(gui: Gui, index: int) -> None:
    """Focus the details pane, select its top-level item `index` (0 = Frame) and expand all
    its subtrees."""
    gui.click(*DETAILS_EMPTY)
    gui.keys("Home", *(["Down"] * index), "shift+Right")
    time.sleep(1)


def main() -> int:
    ensure_tools()
    if built_plugin() is None:
        raise GuiCheckFailed("no build/plugins/*/epan/p2pc.so: run make build")
    gui = Gui()
    try:
        # 1. A BUIP017 cblock (frame 2513): Frame, Ethernet, IP, TCP, reassembly, Bitcoin, p2pc.
        #    Bitcoin expanded; a few rows down the selection is inside the decompressed payload, so
        #    the "Decompressed cblock" byte tab is the one shown.
        gui.open(REPO / "captures" / "bitcoin" / "btc-compressed.pcapng", 2513)
        expand_details_item(gui, 5)
        gui.keys("End", "shift+Right")         # the p2pc accounting subtree too
        gui.keys("Home", *(["Down"] * 5), *(["Down"] * 18))
        time.sleep(1)
        gui.shot("btc-cblock-tree", crop=(1280, 480, 0, 530))

        # 2. The Statistics menu: the Lua "Savings by message type" entry (MENU_STAT_UNSORTED) and
        #    the C P2P Compression ▸ Messages and Bytes tree.
        gui.click(*MENU_STATISTICS)
        gui.keys("Up", "Right")
        time.sleep(1)
        gui.shot("stats-savings-menu", crop=(900, 830, 270, 0), width=700)
        gui.keys("Escape", "Escape")

        # 3. The savings window: Statistics, the 12th entry (after ONC-RPC Programs in 4.0).
        gui.click(*MENU_STATISTICS)
        gui.keys(*(["Down"] * 12), "Return")
        win = gui.wait_window("savings by message type", timeout=30)
        gui.xdo("windowmove", win, "0", "0")
        gui.xdo("windowsize", win, "1180", "420")
        time.sleep(4)                           # the retap fills it
        gui.shot("stats-savings", crop=(1180, 420, 0, 0))

        # 4. An eth2 gossipsub beacon_block (Snappy block) on yamux: gossipsub expanded.
        gui.open(REPO / "captures" / "eth2" / "eth2-yamux.pcapng", 1941)
        expand_details_item(gui, 5)            # Frame, Ethernet, IP, TCP, yamux, gossipsub
        gui.shot("eth2-gossip-block", crop=(1280, 480, 0, 530))
    finally:
        gui.stop()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except GuiCheckFailed as e:
        print(f"gui-check: FAILED: {e}", file=sys.stderr)
        sys.exit(1)
