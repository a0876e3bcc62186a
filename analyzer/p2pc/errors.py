"""p2pc's exit codes and the errors that carry them: the one table the commands' help, every
error's code and docs/analyzer.md (tests/test_analyzer.py compares them) come from.

Every error is a P2pcError with a one-line message that names the cause and the fix; `p2pc`
prints it and exits with its class's code.
"""
from __future__ import annotations

from enum import IntEnum


class Exit(IntEnum):
    """An exit code and what it means (the help prints `text`)."""

    def __new__(cls, code: int, text: str):
        member = int.__new__(cls, code)
        member._value_ = code
        member.text = text
        return member

    OK = 0, "ok"
    ERROR = 1, "an error without a code of its own, named in its one line (--scheduler without Dask)"
    USAGE = 2, "usage error: a bad argument, printed as one line"
    TSHARK_MISSING = 3, "tshark not found"
    PLUGIN_MISSING = 4, "p2pc plugin not found or not loadable (doctor: something needed is missing)"
    UNREADABLE = 5, ("a capture or saved report missing, unreadable, not one p2pc reads, or given twice "
                      "(its counts would be added twice)")
    NO_P2P = 6, "no P2P messages in the captures"
    INTERFACE = 7, "live: no such interface, or it cannot be opened"
    TRUNCATED = 8, "a capture is cut short: the report covers what could be read, with a warning"
    MALFORMED = 9, "the plugin printed a malformed record (is it this analyzer's version? p2pc doctor)"
    PERMISSION = 10, "live: no permission to capture (run as root, or the fix p2pc doctor prints)"
    CAPTURE_FILTER = 11, "live: the capture filter (-f) is invalid"
    INCOMPLETE = 12, "records of a tshark second pass (-2) are missing: p2pc.max_replay_mib ran out"
    WRITE_FAILED = 13, ("live: writing the -w file failed (a full disk): the capture stopped; the "
                        "report, printed first, is that of the whole packets the file holds")
    CAPTURE_ENDED = 14, ("live: dumpcap or tshark ended while capturing: the report, printed "
                         "first, covers what was decoded")
    DIFFER = 15, ("diff: A and B differ (messages on one side only, matched messages whose "
                  "lengths, codec or header bytes differ, or connections negotiated differently)")
    KEYS = 16, ("keys, live --keys-from: no keys can be read from a process (no such process, not "
                "permitted, not a Go program, no go-libp2p in it, the helper not built), named in one line")
    INTERRUPTED = 130, "interrupted by ^C (live instead ends its capture and reports)"
    TERMINATED = 143, "terminated by SIGTERM (live instead ends its capture and reports)"


# code -> text, in order: what the help and docs/analyzer.md list.
EXIT_CODES = {int(e): e.text for e in Exit}


class P2pcError(Exception):
    """An error with a one-line message that names the cause and the fix."""
    exit_code = Exit.ERROR


class UsageError(P2pcError):
    """A bad argument found after parsing (exit 2, like argparse's own)."""
    exit_code = Exit.USAGE


class TsharkOptionError(P2pcError):
    """tshark refused an option p2pc handed it as given (-Y, -d, -o, -C): a usage error."""
    exit_code = Exit.USAGE


class OutputError(P2pcError):
    """A file p2pc was told to write (-w, --output) cannot be written (a usage error)."""
    exit_code = Exit.USAGE


class TsharkMissing(P2pcError):
    exit_code = Exit.TSHARK_MISSING


class PluginMissing(P2pcError):
    exit_code = Exit.PLUGIN_MISSING


class CaptureUnreadable(P2pcError):
    exit_code = Exit.UNREADABLE


class ReportUnmergeable(P2pcError):
    """A saved report `p2pc merge` cannot read as its aggregate."""
    exit_code = Exit.UNREADABLE


class NoP2PTraffic(P2pcError):
    exit_code = Exit.NO_P2P


class InterfaceError(P2pcError):
    exit_code = Exit.INTERFACE


class MalformedRecord(P2pcError):
    exit_code = Exit.MALFORMED


class CapturePermission(P2pcError):
    exit_code = Exit.PERMISSION


class CaptureFilterError(P2pcError):
    exit_code = Exit.CAPTURE_FILTER


class RecordsIncomplete(P2pcError):
    """A second pass (tshark -2) found nothing kept for a frame's re-dissection: the records
    from that frame on are missing, so any total would be wrong."""
    exit_code = Exit.INCOMPLETE


class WriteFailed(P2pcError):
    """Writing the -w file failed while capturing (the disk is full, say): the capture stopped."""
    exit_code = Exit.WRITE_FAILED


class KeysUnavailable(P2pcError):
    """p2pc keys cannot read a process's keys (keys.py): the helper's one line says why."""
    exit_code = Exit.KEYS


class CaptureEnded(P2pcError):
    """dumpcap or tshark ended while capturing."""
    exit_code = Exit.CAPTURE_ENDED
