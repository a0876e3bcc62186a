"""What IDONTWANT would save on traffic as captured (`p2pc whatif --idontwant-threshold`): the
gossipsub v1.2 basic scenario (libp2p/specs pubsub/gossipsub/gossipsub-v1.2.md), a node that
first has a message (receives it, or publishes it: "a user may choose to broadcast IDONTWANT
when publishing", as go-libp2p-pubsub does) at once sends IDONTWANT with its message ID to its
peers, and a peer skips the message for every node whose IDONTWANT it has.

For each threshold N, only messages of N bytes or more (the Message's protobuf bytes, as the
gossip section's publish rows count them) take part:

- stopped: every later copy delivered to a node that already had the message (the gossip
  section's duplicates, docs/analyzer.md), as if the IDONTWANT reached its peer at once: an
  upper bound, since a copy already on its way when the IDONTWANT left still arrives;
- cost: the IDONTWANT entries that would be sent: one per node having a message, to each of the
  peers it exchanged gossipsub RPCs with in the capture but the one it got the message from,
  each `ControlMessage.idontwant` entry's bytes for one message ID (tag, length, and the
  ControlIDontWant's own tag, length and ID): no RPC framing, muxer or security bytes around it.

docs/savings-model.md (IDONTWANT) defines them with the analyze figures they sit next to.
"""
from __future__ import annotations

from .model import GOSSIP_SEEN_IDS
from .records import GossipPart

# Thresholds swept when none are given: every message, go-libp2p-pubsub's default (1 KiB) and
# sizes around it.
DEFAULT_THRESHOLDS = (0, 512, 1024, 4096, 16384)

COLUMNS = ["threshold", "stopped", "stopped_bytes", "idontwant_sent", "idontwant_bytes", "net_saved_bytes"]


def _entry_bytes(id_len: int) -> int:
    """A ControlMessage.idontwant entry holding one message ID of id_len bytes: the entry's tag
    and length, the ControlIDontWant's messageIDs tag and length, the ID (each length a uvarint)."""
    inner = 1 + _uvarint_len(id_len) + id_len
    return 1 + _uvarint_len(inner) + inner


def _uvarint_len(n: int) -> int:
    return max(1, (n.bit_length() + 6) // 7)


class IDontWantWhatIf:
    """Fed a capture's gossip parts in capture order (add), one capture after another
    (next_capture); rows() gives the sweep."""

    def __init__(self, thresholds=DEFAULT_THRESHOLDS) -> None:
        self.thresholds = sorted(set(thresholds))
        self.firsts: list[tuple] = []       # (message bytes, its ID's bytes, node, source)
        self.copies: list[int] = []         # the bytes of each copy delivered again
        self.peers: dict[tuple, set] = {}   # (capture, node) -> the addresses it exchanged RPCs with
        self.full = False
        self._capture = 0
        self._had: dict[str, set] = {}

    def next_capture(self) -> None:
        """Message IDs are counted within one capture (as analyze's duplicates)."""
        self._capture += 1
        self._had = {}

    def add(self, g: GossipPart) -> None:
        for a, b in ((g.src, g.dst), (g.dst, g.src)):
            self.peers.setdefault((self._capture, a), set()).add(b)
        if g.kind != "publish" or not g.message_id:
            return
        if g.message_id in self._had.get(g.dst, ()):
            self.copies.append(g.bytes)
        for node, source in ((g.src, None), (g.dst, g.src)):
            had = self._had.setdefault(node, set())
            if g.message_id not in had:
                if len(self.firsts) >= GOSSIP_SEEN_IDS:
                    self.full = True
                    return
                had.add(g.message_id)
                self.firsts.append((g.bytes, len(g.message_id) // 2, (self._capture, node), source))

    def rows(self) -> list[dict]:
        out = []
        for n in self.thresholds:
            copies = [b for b in self.copies if b >= n]
            sent = sent_bytes = 0
            for size, id_len, node, source in self.firsts:
                if size >= n:
                    to = len(self.peers.get(node, set()) - {source})
                    sent += to
                    sent_bytes += to * _entry_bytes(id_len)
            out.append({"threshold": n, "stopped": len(copies), "stopped_bytes": sum(copies),
                        "idontwant_sent": sent, "idontwant_bytes": sent_bytes,
                        "net_saved_bytes": sum(copies) - sent_bytes})
        return out

    def warnings(self) -> list[str]:
        return [f"IDONTWANT's what-if counts the first {GOSSIP_SEEN_IDS:,} messages the nodes had"] if self.full else []
