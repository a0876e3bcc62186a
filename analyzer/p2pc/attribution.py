"""Which message each TCP payload byte of a direction goes to, for compare's bandwidth table.

A direction of an uncompressed libp2p connection carries bytes no message holds: the security
handshake, the muxer's negotiation, muxed streams' opens, negotiations, window updates and
closes.  On a compressed stream the same bytes are compressed with the messages, and the
compression layer gives them to the next frame that completes messages
(docs/libp2p-compression.md, rules 1-4).  So that the two runs of one exchange are counted
alike, compare applies the same rule to the TCP payload of both, per direction:

- setup: the bytes up to the end of the frame in which the direction's security handshake
  states its peer ID (an `I` line); a connection with no such line has none;
- each group of messages completed by the same unit (their records' `unit_end`: the message's
  last byte in the TCP payload, or the end of the Noise record or compressed flush unit that
  carried it, docs/tap-format.md) takes the direction's bytes since the end of the previous
  group's unit (or since setup) up to the end of its own, split among its messages in proportion
  to their `wire_len` (on a compressed stream the decompressed size, rule 2; its own bytes, on an
  uncompressed one).  So bytes after a message's end (a stream's close) go to the next message
  whether TCP sent them in the message's segment or not; a record with no `unit_end` is
  counted up to the end of its frame;
- the bytes after the last group's unit are the direction's tail, `undecoded`.

On a compressed stream this gives each message exactly its record's `wire_len` (the plugin's
rule); the bytes before the compressed stream that are not setup (the transport's own
multistream negotiation, which the uncompressed run does not have) go with setup and are
counted in `spent`, the transport's cost, which the model subtracts from that row's savings.
A direction whose records add up to its TCP payload (Bitcoin, FISCO: no byte outside a
message) keeps its records' bytes.

It needs the records' `unit_end` and each frame's running TCP payload count (for the `I` lines,
the total and records with no `unit_end`), which the records' stream mode prints (a `T` line
after every TCP frame, before that frame's `M` and `I` lines: docs/tap-format.md).
"""
from __future__ import annotations

from collections import defaultdict

from .model import SETUP, family
from .records import Message, PeerIdentity


class FrameAttribution:
    """Reads one capture's stream-mode records (on_progress per T line, on_peer, on_message, in
    the dump's order: records.read_records); `result()` is {(proto, family): TCP payload
    bytes} and the bytes spent on a compression transport's negotiation."""

    def __init__(self) -> None:
        self.sent: dict = {}                        # direction -> TCP payload bytes so far
        self.setup: dict = {}                       # direction -> bytes through its I frame
        self.msgs: dict = defaultdict(list)         # direction -> [(bytes so far, frame, Message)]

    def on_progress(self, key: tuple, data_bytes: int) -> None:
        self.sent[key] = data_bytes

    def on_peer(self, p: PeerIdentity) -> None:
        self.setup.setdefault(p.key, self.sent.get(p.key, 0))

    def on_message(self, m: Message) -> None:
        # Up to the end of the unit that completed it; a record with none (a tail, a dump of a
        # protocol that gives none) up to its frame's.
        upto = m.unit_end if m.unit_end is not None else self.sent.get(m.key, 0)
        self.msgs[m.key].append((upto, m.frame, m))

    def result(self) -> tuple[dict, int]:
        out: dict = defaultdict(float)
        spent = 0
        for d, total in self.sent.items():
            msgs = self.msgs.get(d, [])
            wire = sum(m.wire_len for _, _, m in msgs)
            if not msgs:
                continue
            if wire == total:               # every byte in a message: the records as they are
                for _, _, m in msgs:
                    out[(m.proto, family(m.proto, m.msg_type))] += m.wire_len
                continue
            setup = self.setup.get(d, 0)
            if any(m.codec.endswith("-stream") for _, _, m in msgs) and total - wire > setup:
                # The records cover the compressed stream; what comes before it, less the
                # handshake, is the transport's negotiation.
                spent += total - wire - setup
                setup = total - wire
            if setup:
                out[("libp2p", SETUP)] += setup
            done = setup
            groups: list = []               # [bytes so far, frame, [messages]] per frame
            for upto, frame, m in msgs:
                if groups and groups[-1][0] == upto:
                    groups[-1][2].append(m)
                else:
                    groups.append([upto, frame, [m]])
            for upto, _, ms in groups:
                budget, done = upto - done, max(done, upto)
                w = sum(m.wire_len for m in ms) or len(ms)
                for m in ms:
                    out[(m.proto, family(m.proto, m.msg_type))] += budget * (m.wire_len or 1) / w
            if total > done:                # a libp2p connection's tail is libp2p's, as on a
                proto = "libp2p" if setup else msgs[-1][2].proto    # compressed stream
                out[(proto, family(proto, "undecoded"))] += total - done
        return dict(out), spent
