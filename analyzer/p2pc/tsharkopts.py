"""tshark's own options, with tshark's meanings, for every p2pc command:
-Y FILTER, -d LAYER==VALUE,PROTO, -o PREF:VALUE, -C PROFILE and --keylog FILE.

-Y selects the messages of the frames it matches (the records tap's filter); the others are
handed to tshark as they are. The options travel to worker processes, so they are plain data.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path

from . import private
from .keylog import KeylogFiles, KeylogInvalid, split


@dataclass(frozen=True)
class TsharkOptions:
    display_filter: str | None = None
    args: tuple = field(default_factory=tuple)    # -d/-o/-C and the key log's -o, for tshark
    keylog: "KeylogFiles | None" = None           # the --keylog parts (live follows them), or
                                                  # the one file live --keys-from has written

    def tap(self, name: str) -> str:
        """The `-z` argument of the p2pc tap `name` with the display filter."""
        return f"p2pc,{name}" + (f",{self.display_filter}" if self.display_filter else "")


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("tshark options (as tshark takes them)")
    g.add_argument("-Y", "--display-filter", metavar="FILTER",
                   help="count only the messages of frames this display filter matches, "
                        "e.g. 'ip.addr==192.0.2.7'")
    g.add_argument("-d", dest="decode_as", action="append", default=[], metavar="LAYER==VALUE,PROTO",
                   help="Decode As, e.g. 'tcp.port==9000,btcc' (repeatable)")
    g.add_argument("-o", dest="prefs", action="append", default=[], metavar="PREF:VALUE",
                   help="a Wireshark preference, e.g. 'fisco.rc1:TRUE' (repeatable)")
    g.add_argument("-C", dest="profile", metavar="PROFILE",
                   help="your Wireshark configuration profile (also when run as root)")
    g.add_argument("--keylog", metavar="FILE",
                   help="TLS (NSS key log lines) and Noise (LOCAL_STATIC_PRIVATE_KEY = ..., "
                        "LOCAL_EPHEMERAL_PRIVATE_KEY = ...) secrets in one file")


def from_args(args, folder: str | None) -> TsharkOptions:
    """The options given on p2pc's command line; the key log's parts are written in `folder`
    (given when there is a key log)."""
    out: list[str] = []
    for d in getattr(args, "decode_as", []):
        out += ["-d", d]
    for o in getattr(args, "prefs", []):
        out += ["-o", o]
    if getattr(args, "profile", None):
        out += ["-C", args.profile]
    files = None
    if getattr(args, "keys_from", None):
        # live --keys-from: p2pc keys appends to one file that both readers read as it grows
        # (each skips the other's lines), so a key reaches tshark as soon as it is written.
        path = private.write_text(Path(folder) / "from-pids.keys", "")
        files = KeylogFiles(noise=path, tls=path)
        out += files.options()
    elif getattr(args, "keylog", None):
        try:
            # live keeps both parts, for the keys a node adds while it runs (keylog.follow)
            files = split(Path(args.keylog), Path(folder), both=getattr(args, "command", None) == "live")
        except KeylogInvalid as e:
            raise argparse.ArgumentTypeError(f"--keylog: {e}") from None
        out += files.options()
    return TsharkOptions(getattr(args, "display_filter", None), tuple(out), files)
