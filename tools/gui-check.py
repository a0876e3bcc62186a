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
  stats-savings-menu.png    the Statistics menu open at the savings entry (in its submenu
                            on 4.6)
  stats-savings.png         the "Savings by message type" window (the analyzer's model): its
                            rows by total saved, the ALL row last, the Sort buttons below
  profile-colours.png       the packet list in the p2pc profile (-C p2pc, installed as
                            tools/p2pc_profile.py writes it): a TCP row, a p2pc row and a row
                            whose Snappy payload does not decompress, each in its rule's colours

The row colours are checked on the screen itself: each of the three rows must show, as a band
of pixels across the packet list, the background of the colouring rule it falls under, read
from the profile's colorfilters (Wireshark's own "TCP" rule for the TCP row: the profile adds
p2pc's rules to Wireshark's, never replaces them; "p2pc compressed"; "p2pc decompression
failed"), in frame order.

The savings window is found without knowing where a Wireshark version puts it: the Statistics
menu is walked one entry at a time (Down, Return), each window an entry opens is closed again,
until the window titled "savings by message type" appears; submenus are walked after the top
level.  The walk runs on a small capture; the path is printed ("savings window at Statistics
entry 13 > 1": the 13th entry's submenu, its 1st entry) and the menu screenshot shows it.

  tools/gui-check.py [--out DIR] [--suffix SUF]
      DIR (default docs/screenshots) gets the screenshots, each name ending in SUF (e.g. -4.4:
      stats-savings-4.4.png; make gui-check-versions takes one set per Wireshark version).

It fails when Wireshark does not start, a window it expects does not appear, the savings entry is
in no Statistics (sub)menu, a screenshot is blank (one colour), or a row is not in its rule's
colour.  Missing tools (wireshark,
Xvfb, xdotool, ImageMagick) are installed with apt-get when run as root.
"""
from __future__ import annotations

import argparse
import os
import pwd
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "analyzer"))
sys.path.insert(0, str(REPO / "tools"))
from p2pc.wsenv import Wireshark, built_plugin  # noqa: E402
from p2pc_profile import global_config, profile_files  # noqa: E402

OUT = REPO / "docs" / "screenshots"
SAVINGS_TITLE = "savings by message type"
MENU_TITLE = "Wireshark"     # Qt titles an open (sub)menu by the application's name only
MENU_ENTRIES = 40            # more entries than any Statistics (sub)menu has
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


class Gui:
    """One Xvfb and, at a time, one Wireshark in it."""

    def __init__(self, out: Path, suffix: str) -> None:
        self.out, self.suffix = out, suffix
        # -displayfd: Xvfb takes the first free display number itself (one a chroot's X server
        # holds too: they share the abstract socket namespace) and writes it to the pipe.
        # -ac: the X server is private to this run and Wireshark runs as another user.
        rfd, wfd = os.pipe()
        self.xvfb = subprocess.Popen(["Xvfb", "-displayfd", str(wfd), "-screen", "0",
                                      f"{SCREEN[0]}x{SCREEN[1]}x24", "-ac", "-nolisten", "tcp"],
                                     pass_fds=(wfd,), stderr=subprocess.DEVNULL)
        os.close(wfd)
        with os.fdopen(rfd) as r:
            number = r.readline().strip()    # empty when Xvfb exits without a display
        if not number.isdigit():
            raise GuiCheckFailed("Xvfb did not start")
        self.display = f":{number}"
        self.env = dict(os.environ, DISPLAY=self.display)
        self.ws: Wireshark | None = None
        self.base: dict[str, str] = {}        # the windows before a menu entry is tried
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

    def windows(self) -> dict[str, str]:
        """The visible windows: id -> title."""
        ids = self.xdo("search", "--onlyvisible", "--class", "").split()
        return {w: self.xdo("getwindowname", w).strip() for w in ids}

    def geometry(self, wid: str) -> tuple[int, int, int, int]:
        """x, y, width, height of a window."""
        g = dict(line.split("=", 1) for line in self.xdo("getwindowgeometry", "--shell", wid).split())
        return int(g["X"]), int(g["Y"]), int(g["WIDTH"]), int(g["HEIGHT"])

    def downs(self, n: int) -> None:
        """Down n times in one xdotool run (a menu takes them as fast as that)."""
        if n:
            self.xdo("key", "--delay", "30", *(["Down"] * n))
        time.sleep(0.2)

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

    def open(self, capture: Path, frame: int, profile: dict[str, str] | None = None,
             dfilter: str | None = None) -> str:
        """Wireshark on `capture` at `frame`, its main window filling the screen; with
        `profile` (file name -> text), in that profile (named p2pc), showing what `dfilter`
        matches."""
        self.close()
        self.ws = Wireshark(plugin=built_plugin())
        home = self.ws._home
        args = ["-r", self.ws.readable(capture), "-g", str(frame)]
        if profile is not None:
            folder = Path(home) / ".config" / "wireshark" / "profiles" / "p2pc"
            folder.mkdir(parents=True, exist_ok=True)
            for name, text in profile.items():
                (folder / name).write_text(text)
            args += ["-C", "p2pc"]
        if dfilter:
            args += ["-Y", dfilter]
        if os.geteuid() == 0:
            # Wireshark (as nobody) writes its profile and recent files into the private HOME.
            nobody = pwd.getpwnam("nobody")
            for d, _, files in os.walk(home):
                os.chown(d, nobody.pw_uid, nobody.pw_gid)
                for f in files:
                    os.chown(os.path.join(d, f), nobody.pw_uid, nobody.pw_gid)
        cmd = self.ws.command("wireshark", args)
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
        self.out.mkdir(parents=True, exist_ok=True)
        raw = Path(self.ws._home if self.ws else "/tmp") / f"{name}.raw.png"
        subprocess.run(["import", "-display", self.display, "-window", "root", str(raw)], check=True)
        dst = self.out / f"{name}{self.suffix}.png"
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
        print(f"gui-check: {dst} ({dst.stat().st_size // 1024} KiB)", flush=True)
        return dst

    def pixels(self) -> tuple[int, int, bytes]:
        """The screen as it is: width, height and its RGB bytes (no palette, no scaling)."""
        raw = Path(self.ws._home if self.ws else "/tmp") / "screen.raw.png"
        subprocess.run(["import", "-display", self.display, "-window", "root", str(raw)], check=True)
        ppm = subprocess.run(["convert", str(raw), "-depth", "8", "ppm:-"], capture_output=True, check=True).stdout
        magic, w, h, maxval, data = ppm.split(maxsplit=4)
        if magic != b"P6" or maxval != b"255":
            raise GuiCheckFailed("ImageMagick's PPM is not 8-bit P6")
        return int(w), int(h), data

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


# Screen positions for the 1280x1024 main window of the default layout (the same in 4.0, 4.4 and
# 4.6): the packet details pane is the lower left quarter, Statistics is the 7th menu.
DETAILS_EMPTY = (300, 1000)      # an empty spot of the details pane (gives it the focus)
MENU_STATISTICS = (325, 10)


def expand_details_item(gui: Gui, index: int) -> None:
    """Focus the details pane, select its top-level item `index` (0 = Frame) and expand all
    its subtrees."""
    gui.click(*DETAILS_EMPTY)
    gui.keys("Home", *(["Down"] * index), "shift+Right")
    time.sleep(1)


def open_entry(gui: Gui, path: tuple[int, ...]) -> dict[str, str]:
    """Open the Statistics menu, go down to its entry path[0] (and into its submenu to entry
    path[1], ...) and press Return there; the windows that are new afterwards (an entry that is
    a submenu leaves its menus open, titled MENU_TITLE)."""
    before = gui.windows()
    gui.click(*MENU_STATISTICS)
    if MENU_TITLE not in {t for w, t in gui.windows().items() if w not in before}:
        raise GuiCheckFailed(f"clicking at {MENU_STATISTICS} opened no Statistics menu")
    for level, n in enumerate(path):
        if level:
            gui.keys("Right", pause=0.3)     # a submenu opens with its first entry selected
        gui.downs(n - (1 if level else 0))
    gui.keys("Return", pause=1.0)
    return {w: t for w, t in gui.windows().items() if w not in before}


def close_all(gui: Gui, opened: dict[str, str]) -> None:
    """Close what an entry opened: its window(s) with Escape, open menus with Escape."""
    time.sleep(0.5)                          # a dialog that a retap delays
    opened = {**opened, **{w: t for w, t in gui.windows().items() if w not in gui.base}}
    for w, t in opened.items():
        if t != MENU_TITLE:
            gui.xdo("windowfocus", "--sync", w)
            gui.keys("Escape", pause=0.3)
    gui.keys("Escape", "Escape", "Escape", pause=0.15)
    left = {w: t for w, t in gui.windows().items() if w not in gui.base}
    for w in left:                           # out of the way of the menu bar and the screenshots
        gui.xdo("windowmove", w, str(SCREEN[0] + 100), "0")


def find_savings(gui: Gui) -> tuple[int, ...]:
    """The path of the Statistics entry that opens the savings window (left open). The
    top level first, then each submenu found there; Down wraps at a menu's end, so a menu ends
    where its first entry's window (or submenu) comes again."""
    gui.base = gui.windows()
    menus: list[tuple[int, ...]] = [()]
    tried: list[str] = []
    while menus:
        prefix = menus.pop(0)
        first = None
        for n in range(1, MENU_ENTRIES + 1):
            path = prefix + (n,)
            opened = open_entry(gui, path)
            if any(SAVINGS_TITLE in t.lower() for t in opened.values()):
                print(f"gui-check: savings window at Statistics entry {' > '.join(map(str, path))}",
                      flush=True)
                return path
            titles = sorted(t for t in opened.values() if t != MENU_TITLE)
            submenu = len([t for t in opened.values() if t == MENU_TITLE]) > len(prefix)
            outcome = "submenu" if submenu and not titles else " | ".join(titles) or "-"
            close_all(gui, opened)
            if first is None:
                first = outcome
            elif outcome == first and outcome != "-":
                break                        # wrapped round to the first entry
            tried.append(f"{' > '.join(map(str, path))}: {outcome}")
            if submenu and not titles:
                menus.append(path)
    raise GuiCheckFailed("no Statistics entry opens a window titled '*" + SAVINGS_TITLE +
                         "*'; the entries:\n  " + "\n  ".join(tried))


def menu_shot(gui: Gui, path: tuple[int, ...]) -> None:
    """The Statistics menu (and submenus) open down to the savings entry, selected."""
    before = gui.windows()
    gui.click(*MENU_STATISTICS)
    for level, n in enumerate(path):
        if level:
            gui.keys("Right", pause=0.3)
        gui.downs(n - (1 if level else 0))
    time.sleep(1)
    menus = [gui.geometry(w) for w, t in gui.windows().items() if w not in before and t == MENU_TITLE]
    if not menus:
        raise GuiCheckFailed("the Statistics menu did not open for its screenshot")
    # The menus and the menu bar above them.
    x0 = max(0, min(x for x, _, _, _ in menus) - 60)
    x1 = min(SCREEN[0], max(x + w for x, _, w, _ in menus) + 20)
    y1 = min(SCREEN[1], max(y + h for _, y, _, h in menus) + 10)
    gui.shot("stats-savings-menu", crop=(x1 - x0, y1, x0, 0), width=700)
    gui.keys("Escape", "Escape", "Escape", pause=0.15)


# The rows whose colours are checked: (what, a filter its first frame matches, the colouring
# rule that must paint it).  eth2-broken's go-libp2p peers sent Snappy that does not decode on
# purpose (captures/gen), beside ordinary TCP and compressed eth2 messages.
ROWS_CAPTURE = REPO / "captures" / "eth2" / "eth2-broken.pcapng"
ROWS = [("a TCP row", "tcp.len == 0 && tcp.flags.syn == 0 && tcp.flags.fin == 0 && !tcp.analysis.flags", "TCP"),
        ("a p2pc row", "p2pc.ratio > 1 && !_ws.expert", "p2pc compressed"),
        ("a decompression failure", "eth2.decompress_failed", "p2pc decompression failed")]
BAND_ROWS = 8           # a packet-list row is about 20 pixels high on this screen


def rule_backgrounds(colorfilters: str) -> dict[str, tuple[int, int, int]]:
    """Each colouring rule's background as 8-bit RGB (the file has 16 bits a component)."""
    out = {}
    for line in colorfilters.splitlines():
        m = re.fullmatch(r"@([^@]+)@[^@]+@\[(\d+),(\d+),(\d+)\]\[\d+,\d+,\d+\]", line)
        if m:
            out.setdefault(m[1], tuple(int(v) >> 8 for v in m.groups()[1:]))
    return out


def first_frame(ws: Wireshark, capture: Path, dfilter: str) -> int:
    out = subprocess.run(ws.command("tshark", ["-n", "-r", ws.readable(capture), "-Y", dfilter,
                                               "-T", "fields", "-e", "frame.number"]),
                         capture_output=True, text=True, check=True).stdout.split()
    if not out:
        raise GuiCheckFailed(f"no frame of {capture.name} matches {dfilter}")
    return int(out[0])


def bands(width: int, height: int, data: bytes) -> list[tuple[int, int, tuple[int, int, int]]]:
    """(first y, rows, colour) of each run of screen rows that one colour fills more than half
    of, top to bottom."""
    out: list = []
    for y in range(height):
        row = data[3 * width * y: 3 * width * (y + 1)]
        counts: dict = {}
        for x in range(0, width, 4):
            c = tuple(row[3 * x: 3 * x + 3])
            counts[c] = counts.get(c, 0) + 1
        colour, n = max(counts.items(), key=lambda kv: kv[1])
        colour = colour if 4 * n > width / 2 else None
        if out and out[-1][2] == colour and out[-1][0] + out[-1][1] == y:
            out[-1] = (out[-1][0], out[-1][1] + 1, colour)
        else:
            out.append((y, 1, colour))
    return [b for b in out if b[2] is not None]


def row_colours(gui: Gui) -> None:
    """The packet list in the p2pc profile: a TCP row, a p2pc row and a decompression failure,
    each a band of its rule's background, in frame order; the screenshot profile-colours.png."""
    files = profile_files(global_config())
    want = rule_backgrounds(files["colorfilters"])
    probe = Wireshark(plugin=built_plugin())
    try:
        frames = [(first_frame(probe, ROWS_CAPTURE, flt), what, want[rule]) for what, flt, rule in ROWS]
        selected = first_frame(probe, ROWS_CAPTURE, "frame")         # frame 1, selected: not checked
    finally:
        probe.cleanup()
    frames.sort()
    shown = " || ".join(f"frame.number == {n}" for n in [selected] + [n for n, _, _ in frames])
    gui.open(ROWS_CAPTURE, selected, profile=files, dfilter=shown)
    found = bands(*gui.pixels())
    ys = []
    for n, what, rgb in frames:
        got = [b for b in found if b[2] == rgb and b[1] >= BAND_ROWS]
        if len(got) != 1:
            raise GuiCheckFailed(f"{what} (frame {n}) should be one row in #%02x%02x%02x; rows seen: %s" % (
                *rgb, ", ".join("#%02x%02x%02x x%d at y=%d" % (*c, h, y) for y, h, c in found if h >= BAND_ROWS)))
        ys.append(got[0][0])
        print(f"gui-check: {what} (frame {n}) is painted #%02x%02x%02x at y={got[0][0]}" % rgb, flush=True)
    if ys != sorted(ys):
        raise GuiCheckFailed(f"the coloured rows are not in frame order: {list(zip(frames, ys))}")
    top, bottom = max(0, ys[0] - 60), min(SCREEN[1], ys[-1] + 40)
    gui.shot("profile-colours", crop=(SCREEN[0], bottom - top, 0, top))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=OUT, help="where the screenshots go")
    ap.add_argument("--suffix", default="", help="end of each screenshot's name, e.g. -4.4")
    args = ap.parse_args()
    ensure_tools()
    if built_plugin() is None:
        raise GuiCheckFailed("no build/plugins/*/epan/p2pc.so: run make build")
    gui = Gui(args.out, args.suffix)
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

        # 2. Where this Wireshark's Statistics menu has the savings window: walked on a small
        #    capture (every entry tried opens its window, most of them retap the file).
        gui.open(REPO / "captures" / "eth2" / "eth2-noise.pcapng", 1)
        path = find_savings(gui)
        gui.open(REPO / "captures" / "bitcoin" / "btc-compressed.pcapng", 2513)
        win = next((w for w, t in open_entry(gui, path).items() if SAVINGS_TITLE in t.lower()), None)
        if win is None:
            raise GuiCheckFailed(f"Statistics entry {path} opened no savings window the second time")
        gui.xdo("windowmove", win, "0", "0")
        gui.xdo("windowsize", win, "1180", "420")
        time.sleep(4)                           # the retap fills it
        gui.shot("stats-savings", crop=(1180, 420, 0, 0))
        close_all(gui, {win: SAVINGS_TITLE})

        # 3. The Statistics menu with the savings entry selected.
        menu_shot(gui, path)

        # 4. An eth2 gossipsub beacon_block (Snappy block) on yamux: gossipsub expanded.
        gui.open(REPO / "captures" / "eth2" / "eth2-yamux.pcapng", 1941)
        expand_details_item(gui, 5)            # Frame, Ethernet, IP, TCP, yamux, gossipsub
        gui.shot("eth2-gossip-block", crop=(1280, 480, 0, 530))

        # 5. The p2pc profile's row colours, on the screen.
        row_colours(gui)
    finally:
        gui.stop()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except GuiCheckFailed as e:
        print(f"gui-check: FAILED: {e}", file=sys.stderr)
        sys.exit(1)
