"""What NetStorm's processes say to each other, on top of workers/framing.py's frames.

Workers talk to their datacenter's server exactly as in ps (HELLO, DATA/DATA_END chunks,
RESULT chunks, BYE). Between servers and with the scheduler (kinds from 16 up, so that a
stray ps peer is caught):

  PEER_HELLO   tag = the sender's datacenter           first frame on a server-server link
  MSG          int64 array = Header.pack()             a routed message's header, followed
  MSG_BODY     float32 array                           by its values (one block's part)
  RECV_REPLY   tag = msg_id, int64 [bytes]             next hop -> sender: the message is in
                                                       (network awareness times these)
  CHECKIN      tag = iteration                         server -> scheduler: my workers started
                                                       this iteration (the per-iteration barrier)
  POLICY       tag = iteration, uint8 JSON             scheduler -> servers: trees and shards
                                                       from this iteration on
  GO           tag = iteration                         ... or: keep the current ones
  ROUTES       uint8 JSON                              scheduler -> servers: new paths, at once
  SPEED        float64 [neighbour, Mbps]               server -> scheduler: a measured link
  DONE         tag = iterations                        server -> scheduler: my workers said BYE
  STOP         (empty)                                 scheduler -> servers: everyone is done
  FAIL         uint8 JSON reason                       server -> scheduler: I am failing, why
                                                       (so the scheduler can tell the first
                                                       failure from the ones it caused)

The roles of the authors' ps-lite messages (van.cc: ROUTE_RELEASE, RECV_REPLY,
SPEED_REPORT): the same information, named for what it does here.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

PEER_HELLO, MSG, MSG_BODY, RECV_REPLY = 16, 17, 18, 19
CHECKIN, POLICY, GO, ROUTES, SPEED, DONE, STOP, FAIL = 20, 21, 22, 23, 24, 25, 26, 27

MAX_PATH = 64          # hops a header may carry (the overlay has at most 254 datacenters)
HEADER_FIELDS = 9             # int64 fields before the path


class ProtocolError(ValueError):
    """A message that breaks NetStorm's protocol (malformed, out of step, wrong policy)."""


@dataclass(frozen=True)
class Header:
    """A routed message: one block's partial sum going up root's tree, or its result coming
    down. `path` is source-routed (datacenters from the sender to dst, both included):
    relays forward it without looking inside, as the authors' Van::Push does."""
    iteration: int
    block: int
    root: int
    down: bool
    version: int        # the policy the sender used: every message of an iteration must agree
    msg_id: int
    values: int         # length of the body
    path: tuple[int, ...]

    @property
    def src(self) -> int:
        return self.path[0]

    @property
    def dst(self) -> int:
        return self.path[-1]

    def next_hop(self, me: int) -> int | None:
        """The datacenter after `me` on the path (None: `me` is the destination)."""
        i = self.path.index(me)
        return self.path[i + 1] if i + 1 < len(self.path) else None

    def pack(self) -> np.ndarray:
        return np.array([self.iteration, self.block, self.root, int(self.down), self.version,
                         self.msg_id, self.values, len(self.path), 0, *self.path], dtype=np.int64)

    @staticmethod
    def unpack(arr: np.ndarray, me: int, prev: int) -> "Header":
        """Parse and check a header that `prev` sent to `me`; ProtocolError names what is wrong."""
        a = np.asarray(arr)
        if a.dtype != np.int64 or a.ndim != 1 or a.size < HEADER_FIELDS:
            raise ProtocolError(f"malformed message header from datacenter {prev} "
                                f"({a.size} values of {a.dtype})")
        it, block, root, down, version, msg_id, values, n, _ = (int(x) for x in a[:HEADER_FIELDS])
        path = tuple(int(x) for x in a[HEADER_FIELDS:])
        if not 2 <= n <= MAX_PATH or len(path) != n or len(set(path)) != n:
            raise ProtocolError(f"message from datacenter {prev}: bad path {path} (length {n})")
        if me not in path or path.index(me) == 0 or path[path.index(me) - 1] != prev:
            raise ProtocolError(f"message from datacenter {prev} has path {path}: it does not "
                                f"reach datacenter {me} from {prev}")
        if min(it, block, root, version, msg_id, values) < 0 or down not in (0, 1):
            raise ProtocolError(f"message from datacenter {prev}: negative or bad field in "
                                f"{a[:HEADER_FIELDS].tolist()}")
        return Header(it, block, root, bool(down), version, msg_id, values, path)


def encode_json(obj) -> np.ndarray:
    return np.frombuffer(json.dumps(obj, separators=(",", ":")).encode(), dtype=np.uint8)


def decode_json(arr: np.ndarray):
    try:
        return json.loads(np.asarray(arr, dtype=np.uint8).tobytes().decode())
    except (UnicodeDecodeError, ValueError) as e:
        raise ProtocolError(f"malformed JSON control message ({e})") from None
