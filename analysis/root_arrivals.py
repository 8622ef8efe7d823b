"""When each datacenter's partial sums reached the global aggregation point (pure, from
pcaps): the root switch's per-port input pcaps (scenario `switch.pcap: [<root gateway>]`,
written as simple_switch writes them) hold every contribution addressed to the global
point; per iteration, the arrival of each datacenter's last chunk and their spread, and the
mean over chunks of a chunk's spread (its last datacenter's arrival - its first's: how long
the root holds the slot waiting). L3DML's rate synchronization aims to bring both to 0
(schemes/l3dml/README.md); with geo-ina's shared slot window the first is bounded by a
window of the slowest stream whatever the policy, so the second shows more.

A chunk is (sender address, slot, generation): sequence number (gen - 1) x window + slot,
iteration = sequence // chunks per iteration. Its first arrival counts (a re-sent copy
arrives later and changes nothing at the switch). The datacenter of a sender is the second
octet of its aggregation address (10.D.x.254: a datacenter's or a root rack's point)."""
from __future__ import annotations

import struct
from pathlib import Path

from workers import agg_packet as ap

_GLOBAL = struct.Struct("<IHHiIII")
_RECORD = struct.Struct("<IIII")
MAGIC_USEC, MAGIC_NSEC = 0xA1B2C3D4, 0xA1B23C4D


def read_pcap(path: Path):
    """(time in s, frame) of every record of a little-endian pcap file."""
    data = Path(path).read_bytes()
    if len(data) < _GLOBAL.size:
        return
    magic = _GLOBAL.unpack_from(data)[0]
    if magic not in (MAGIC_USEC, MAGIC_NSEC):
        raise ValueError(f"{path}: not a little-endian pcap file (magic {magic:#x})")
    scale = 1e-6 if magic == MAGIC_USEC else 1e-9
    off = _GLOBAL.size
    while off + _RECORD.size <= len(data):
        sec, frac, caplen, _ = _RECORD.unpack_from(data, off)
        off += _RECORD.size
        yield sec + frac * scale, data[off:off + caplen]
        off += caplen


def chunk_arrivals(frames, root_addr: str, job: int, window: int) -> dict[int, dict[int, float]]:
    """{chunk sequence number: {datacenter: its first arrival (s)}} from (time, frame) pairs."""
    out: dict[int, dict[int, float]] = {}
    for (src, slot, gen), t in _first_arrivals(frames, root_addr, job).items():
        per = out.setdefault((gen - 1) * window + slot, {})
        dc = int(src.split(".")[1])
        per[dc] = min(per.get(dc, t), t)
    return out


def chunk_spreads(by_chunk: dict[int, dict[int, float]], chunks: int) -> dict[int, float]:
    """{iteration: mean over its chunks of (last datacenter's arrival - first's)}, over the
    chunks every datacenter reached."""
    n = max((len(v) for v in by_chunk.values()), default=0)
    per_it: dict[int, list[float]] = {}
    for seq, v in by_chunk.items():
        if len(v) == n:
            per_it.setdefault(seq // chunks, []).append(max(v.values()) - min(v.values()))
    return {i: sum(x) / len(x) for i, x in sorted(per_it.items())}


def _first_arrivals(frames, root_addr: str, job: int) -> dict[tuple, float]:
    first: dict[tuple, float] = {}
    for t, frame in frames:
        p = ap.udp_payload(frame)
        if p is None or p[1] != root_addr:
            continue
        f = ap.decode(p[2])
        if f is None or f.job != job or not f.flags & ap.DATA or f.flags & ap.TIMER:
            continue
        key = (p[0], f.slot, f.gen)
        if key not in first or t < first[key]:
            first[key] = t
    return first


def arrivals(frames, root_addr: str, job: int, window: int, chunks: int) -> dict[int, dict[int, float]]:
    """{iteration: {datacenter: last chunk's first arrival (s)}} from (time, frame) pairs."""
    out: dict[int, dict[int, float]] = {}
    for (src, slot, gen), t in _first_arrivals(frames, root_addr, job).items():
        it = ((gen - 1) * window + slot) // chunks
        dc = int(src.split(".")[1])
        per = out.setdefault(it, {})
        per[dc] = max(per.get(dc, t), t)
    return out


def spreads(arr: dict[int, dict[int, float]]) -> dict[int, float]:
    """{iteration: last datacenter's arrival - first's}, for iterations every datacenter reached."""
    n = max((len(v) for v in arr.values()), default=0)
    return {i: max(v.values()) - min(v.values()) for i, v in sorted(arr.items()) if len(v) == n}


def root_frames(pcap_dir: Path, root_switch: str) -> list:
    """(time, frame) of every input pcap of the root switch (<switch>-eth<N>_in.pcap)."""
    frames = [x for p in sorted(Path(pcap_dir).glob(f"{root_switch}-eth*_in.pcap")) for x in read_pcap(p)]
    if not frames:
        raise FileNotFoundError(f"no input pcaps of {root_switch} in {pcap_dir}: run with "
                                f"switch.pcap: [{root_switch}] (the name without the run's prefix)")
    return frames


def root_arrivals(pcap_dir: Path, root_switch: str, root_addr: str, job: int, window: int,
                  chunks: int) -> dict[int, dict[int, float]]:
    """arrivals() over every input pcap of the root switch."""
    return arrivals(root_frames(pcap_dir, root_switch), root_addr, job, window, chunks)
