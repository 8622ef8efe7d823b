"""Length-prefixed numpy arrays over TCP sockets, robust to partial reads.

One frame = a 24-byte header + the array's raw bytes (little-endian float32 by default):

    magic  b"GDA1"  4 bytes   (a stray connection or a desynchronised stream is caught)
    kind   uint16            (what the frame means to the scheme: HELLO, DATA, ...)
    dtype  uint16            (index into DTYPES)
    tag    uint64            (the iteration, or a rank in HELLO: checked by the receiver)
    count  uint64            (number of elements)

Every socket has a timeout, so a dead or silent peer raises PeerError naming the peer and
what was awaited instead of hanging the run. Byte counters let the schemes report what
they put on the wire (payload + header; TCP/IP overhead is not counted).
"""
from __future__ import annotations

import os
import socket
import struct
import time

import numpy as np

from workers.communicator import Counters

MAGIC = b"GDA1"
HEADER = struct.Struct("<4sHHQQ")
DTYPES = (np.dtype("<f4"), np.dtype("<f8"), np.dtype("<i4"), np.dtype("<i8"),
          np.dtype("u1"),   # bytes: JSON control messages (schemes/netstorm/wire.py)
          np.dtype("<u4"))  # row frames (ROWS, ROWS_END, ROWS_RESULT: encode_rows)

# frame kinds
HELLO = 1      # first frame on a connection: tag = sender's rank
DATA = 2       # a (partial) gradient going up / around
RESULT = 3     # an aggregated result coming back down
BYE = 4        # orderly end: the receiver stops waiting for more
DATA_END = 5   # the last DATA chunk of an iteration
ROWS = 6       # touched rows of a row-sparse block going up (encode_rows)
ROWS_END = 7   # ROWS as the last piece of an iteration
ROWS_RESULT = 8   # the union of the children's rows with their sums, coming back down
# asynchronous parameter server (ps in ssp/asp: schemes/ps/async_server.py)
MODEL_INIT = 9    # a worker's initial model (float32), once before iteration 0
MODEL_VERSION = 10   # int64 [iteration it may start, version, clock, version its update was applied to]
MODEL = 11        # the model of that version (float32), right after its MODEL_VERSION

MAX_ELEMENTS = 1 << 31   # sanity limit: a corrupt header must not allocate terabytes

# The scenario's TCP congestion control (testbed/tcp.py), set on every socket opened here
TCP_CONGESTION_ENV = "GDML_TCP_CONGESTION"


def _tcp_socket_options(s: socket.socket) -> None:
    name = os.environ.get(TCP_CONGESTION_ENV)
    if not name:
        return
    try:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, name.encode())
    except OSError as e:
        raise PeerError(f"cannot set TCP congestion control {name!r} ({e.strerror}): is the "
                        f"kernel module tcp_{name} loaded?") from None


class PeerError(ConnectionError):
    """A peer closed, stalled or broke protocol. The message names the peer and what to check."""


class Channel:
    """A connected TCP socket carrying frames to/from one named peer."""

    def __init__(self, sock: socket.socket, peer: str, timeout_s: float):
        self.sock, self.peer, self.timeout_s = sock, peer, timeout_s
        sock.settimeout(timeout_s)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.bytes_sent = 0
        self.bytes_received = 0

    def send(self, kind: int, tag: int, arr: np.ndarray | None = None) -> None:
        if arr is None:
            arr = np.empty(0, dtype=DTYPES[0])
        arr = np.ascontiguousarray(arr)
        code = _dtype_code(arr.dtype)
        head = HEADER.pack(MAGIC, kind, code, tag, arr.size)
        try:
            # two sendall calls but TCP_NODELAY off-path cost is negligible next to MBs of payload
            self.sock.sendall(head)
            self.sock.sendall(memoryview(arr).cast("B"))
        except socket.timeout:
            raise PeerError(f"{self.peer}: send stalled for {self.timeout_s:g} s (peer not reading: "
                            f"is it alive? check its log)") from None
        except OSError as e:
            raise PeerError(f"{self.peer}: send failed ({e}): the peer's process probably died; "
                            f"check its log") from None
        self.bytes_sent += HEADER.size + arr.nbytes

    def recv(self, expect_kind: int | None = None, expect_tag: int | None = None,
             what: str = "a frame") -> tuple[int, int, np.ndarray]:
        head = self._recv_exact(HEADER.size, what)
        magic, kind, code, tag, count = HEADER.unpack(head)
        if magic != MAGIC or code >= len(DTYPES) or count > MAX_ELEMENTS:
            raise PeerError(f"{self.peer}: malformed frame header while waiting for {what} "
                            f"(not a testbed peer, or the stream lost sync)")
        dt = DTYPES[code]
        body = self._recv_exact(count * dt.itemsize, what)
        arr = np.frombuffer(body, dtype=dt)
        if expect_kind is not None and kind != expect_kind:
            if kind == BYE:
                raise PeerError(f"{self.peer}: peer ended the session while this side waited for "
                                f"{what} (did it stop early? check its log)")
            raise PeerError(f"{self.peer}: got frame kind {kind}, expected {expect_kind} ({what})")
        if expect_tag is not None and tag != expect_tag:
            raise PeerError(f"{self.peer}: got tag {tag}, expected {expect_tag} ({what}): the peers "
                            f"are out of step (same iterations configured everywhere?)")
        return kind, tag, arr

    def _recv_exact(self, n: int, what: str) -> bytes:
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n:
            try:
                r = self.sock.recv_into(view[got:], n - got)
            except socket.timeout:
                raise PeerError(f"{self.peer}: nothing received for {self.timeout_s:g} s while "
                                f"waiting for {what} (peer dead or stuck? check its log; raise the "
                                f"scheme's timeout_s for very slow links)") from None
            except OSError as e:
                raise PeerError(f"{self.peer}: receive failed while waiting for {what} ({e}): "
                                f"the peer's process probably died; check its log") from None
            if r == 0:
                raise PeerError(f"{self.peer}: connection closed while waiting for {what} "
                                f"({got}/{n} bytes): the peer's process ended; check its log")
            got += r
        self.bytes_received += n
        return bytes(buf)

    def congestion_control(self) -> str | None:
        """The TCP congestion control this connection runs (None once closed)."""
        try:
            return self.sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16) \
                .rstrip(b"\0").decode()
        except OSError:
            return None

    def tcp_counters(self) -> tuple[int, int]:
        """(segments sent, retransmitted segments) of this connection, from the kernel's
        TCP_INFO (tcpi_segs_out at byte 136, tcpi_total_retrans at byte 100; Linux >= 4.2).
        Segments are GSO super-segments where the device offloads, data and pure ACKs alike."""
        try:
            b = self.sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 144)
        except OSError:
            return 0, 0   # socket closed: nothing more to count
        if len(b) < 144:
            return 0, 0
        (retrans,) = struct.unpack_from("<I", b, 100)
        (segs_out,) = struct.unpack_from("<I", b, 136)
        return segs_out, retrans

    def close(self) -> None:
        # shutdown first: it wakes a thread blocked in recv on this socket and sends FIN now
        # (a bare close() waits for that thread's system call to return)
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            self.sock.close()
        except OSError:
            pass


def _dtype_code(dt: np.dtype) -> int:
    dt = np.dtype(dt).newbyteorder("<") if np.dtype(dt).byteorder == ">" else np.dtype(dt)
    for i, d in enumerate(DTYPES):
        if d == dt:
            return i
    raise TypeError(f"cannot frame dtype {dt} (supported: {', '.join(map(str, DTYPES))})")


def connect(host: str, port: int, peer: str, timeout_s: float,
            connect_timeout_s: float | None = None) -> Channel:
    """Connect, retrying while the server is not up yet (processes start in any order)."""
    deadline = time.monotonic() + (connect_timeout_s if connect_timeout_s is not None else timeout_s)
    last = None
    while True:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            _tcp_socket_options(s)   # before connect: the handshake already uses it
        except PeerError:
            s.close()
            raise                    # a setting, not a peer that is not up yet: no retry
        s.settimeout(max(0.1, deadline - time.monotonic()))
        try:
            s.connect((host, port))
            return Channel(s, peer, timeout_s)
        except OSError as e:
            s.close()
            last = e
        if time.monotonic() >= deadline:
            raise PeerError(f"{peer}: cannot connect to {host}:{port} ({last}): is its process "
                            f"running and the network up? check its log")
        time.sleep(0.1)


def listen(host: str, port: int, backlog: int = 64) -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        _tcp_socket_options(s)   # accepted sockets inherit it
    except PeerError:
        s.close()
        raise
    try:
        s.bind((host, port))
    except OSError as e:
        s.close()
        raise PeerError(f"cannot listen on {host}:{port} ({e}): another process holds the port; "
                        f"choose another base_port in scheme_options") from None
    s.listen(backlog)
    return s


def accept(lsock: socket.socket, timeout_s: float, what: str, channel_timeout_s: float) -> Channel:
    lsock.settimeout(timeout_s)
    try:
        s, addr = lsock.accept()
    except socket.timeout:
        raise PeerError(f"no connection from {what} within {timeout_s:g} s: did its process start? "
                        f"check its log") from None
    return Channel(s, f"{what} {addr[0]}:{addr[1]}", channel_timeout_s)


# ---------------------------------------------------------------- tensors in frames
# 16 KiB per frame: small enough that push and pull overlap, big enough that per-frame
# Python overhead stays far below the transfer time at the testbed's rates
DEFAULT_CHUNK_VALUES = 4096



def accept_ranked(lsock, n: int, name: str, what: str, timeout_s: float,
                  accept_timeout_s: float) -> list[Channel]:
    """n connections on `lsock`, each of which says HELLO with its rank 0..n-1 first, once
    per rank, within accept_timeout_s in all; returned by rank. Closes lsock."""
    chans: list = [None] * n
    deadline = time.monotonic() + accept_timeout_s
    for _ in range(n):
        ch = accept(lsock, max(0.1, deadline - time.monotonic()), f"{name}: a {what}", timeout_s)
        _, rank, _ = ch.recv(HELLO, what="HELLO")
        if not 0 <= rank < n or chans[rank] is not None:
            ch.close()
            raise PeerError(f"{name}: {what} rank {rank} is out of range 0..{n - 1} or connected "
                            "twice: the scheme's placement is inconsistent")
        ch.peer = f"{name}: {what} {rank} ({ch.peer.split(' ', 3)[-1]})"
        chans[rank] = ch
    lsock.close()
    return chans

def shard_bounds(n: int, k: int) -> list[tuple[int, int]]:
    """k contiguous ranges covering 0..n, sizes differing by at most one (numpy's array_split)."""
    if k < 1:
        raise ValueError(f"shards must be >= 1 (got {k})")
    base, extra = divmod(n, k)
    out, lo = [], 0
    for i in range(k):
        hi = lo + base + (1 if i < extra else 0)
        out.append((lo, hi))
        lo = hi
    return out


def sum_in_order(parts: list[np.ndarray]) -> np.ndarray:
    """float32 sum of parts[0] + parts[1] + ... left to right (the order fixes the bits)."""
    acc = np.array(parts[0], dtype=np.float32, copy=True)
    for p in parts[1:]:
        acc += p
    return acc


def chunk_bounds(lo: int, hi: int, chunk_values: int) -> list[tuple[int, int]]:
    """The range lo..hi cut into pieces of at most chunk_values (at least one piece)."""
    if chunk_values < 1:
        raise ValueError(f"chunk size must be >= 1 value (got {chunk_values})")
    return [(a, min(a + chunk_values, hi)) for a in range(lo, hi, chunk_values)] or [(lo, hi)]


def chunk_tag(iteration: int, chunk: int) -> int:
    return (iteration << 24) | chunk


def channel_counters(chans) -> Counters:
    """A TCP communicator's workers.communicator.Counters over its channels (None skipped)."""
    chans = [c for c in chans if c is not None]
    tcp = [c.tcp_counters() for c in chans]
    return Counters(bytes_sent=sum(c.bytes_sent for c in chans),
                    bytes_received=sum(c.bytes_received for c in chans),
                    packets_sent=sum(t[0] for t in tcp), retransmissions=sum(t[1] for t in tcp))


# ---------------------------------------------------------------- row-sparse blocks
# A row-sparse block (workers.workload.row_blocks) goes as the rows a worker touched, the
# keys a PS-lite worker pushes. Payload of a ROWS / ROWS_END / ROWS_RESULT frame, uint32
# words: [n, width, n row ids, n x width float32 values (their bits), row by row].
ROWS_HEAD = 2     # words before the ids


def touched_rows(rows: np.ndarray) -> np.ndarray:
    """Indices of the rows of a (rows, width) float32 array holding any value that is not
    +0.0 (bit pattern 0). A row left out is all +0.0, so a receiver that fills the rows it
    did not get with zeros rebuilds the array bit for bit (-0.0 is sent: it is not +0.0)."""
    bits = np.ascontiguousarray(rows, dtype=np.float32).view(np.uint32)
    return np.flatnonzero(bits.any(axis=1))


def encode_rows(ids: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The uint32 payload of a row frame: ids (n,) and values (n, width) float32."""
    values = np.ascontiguousarray(values, dtype=np.float32)
    if values.ndim != 2 or len(ids) != len(values):
        raise ValueError(f"encode_rows: {len(ids)} ids for values of shape {values.shape}")
    head = np.array([len(ids), values.shape[1]], dtype=np.uint32)
    return np.concatenate([head, np.asarray(ids, dtype=np.uint32), values.view(np.uint32).reshape(-1)])


def decode_rows(payload: np.ndarray, peer: str, width: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(ids uint32 (n,), values float32 (n, width)) of a row frame's payload; a malformed
    payload (ids not strictly increasing, or another width than expected) is a PeerError
    naming the peer."""
    if payload.dtype != np.uint32 or payload.size < ROWS_HEAD:
        raise PeerError(f"{peer}: a row frame must hold uint32 words [n, width, ids, values] "
                        f"(got {payload.size} values of {payload.dtype}): peers of another version?")
    n, w = int(payload[0]), int(payload[1])
    if payload.size != ROWS_HEAD + n * (1 + w) or (width is not None and w != width):
        raise PeerError(f"{peer}: row frame of {payload.size} words does not hold {n} rows of width "
                        f"{w}{'' if width is None else f' (expected width {width})'}: same scenario "
                        f"everywhere?")
    ids = payload[ROWS_HEAD:ROWS_HEAD + n]
    if n > 1 and not np.all(ids[1:] > ids[:-1]):
        raise PeerError(f"{peer}: row frame ids are not strictly increasing (a row named twice?)")
    return ids, payload[ROWS_HEAD + n:].view(np.float32).reshape(n, w)


def sum_rows_in_order(parts: list[tuple[np.ndarray, np.ndarray]], width: int
                      ) -> tuple[np.ndarray, np.ndarray]:
    """The union of the parts' row ids (sorted) and, per row, the float32 sum of the parts in
    order, each part counting +0.0 for a row it lacks: the very additions sum_in_order makes
    on the dense arrays, so the rows' bits equal the dense sum's (and every row outside the
    union is +0.0 there too). parts: (ids, values (n, width)) per child, in child-rank order,
    each part's ids distinct (decode_rows checks it)."""
    ids = [np.asarray(i, dtype=np.int64) for i, _ in parts]
    union = np.unique(np.concatenate(ids)) if ids else np.empty(0, np.int64)
    acc = np.zeros((len(union), width), dtype=np.float32)
    for k, (i, (_, values)) in enumerate(zip(ids, parts)):
        pos = np.searchsorted(union, i)
        if k == 0:
            acc[pos] = values          # acc = part 0, as sum_in_order copies its first part
        else:
            add = np.zeros_like(acc)   # + 0.0 where this part lacks the row (turns -0.0 into +0.0)
            add[pos] = values
            acc += add
    return union.astype(np.uint32), acc
