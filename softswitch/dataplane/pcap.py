"""Per-port pcap capture, like simple_switch's --pcap (s1-eth1_in.pcap / s1-eth1_out.pcap).

The classic libpcap format is a 24-byte global header followed by one 16-byte record
header per frame; it is simple enough to write directly, so no capture library is needed.
Files are written through a buffered file object and flushed on close (the switch closes
them on SIGTERM/SIGINT), so a normal shutdown never loses frames.
"""
from __future__ import annotations

import os
import struct
import time

PCAP_MAGIC_USEC = 0xA1B2C3D4
LINKTYPE_ETHERNET = 1
SNAPLEN = 65535

_GLOBAL_HEADER = struct.pack("<IHHiIII", PCAP_MAGIC_USEC, 2, 4, 0, 0, SNAPLEN, LINKTYPE_ETHERNET)
_RECORD = struct.Struct("<IIII")


class PcapWriter:
    """Appends Ethernet frames to one pcap file (microsecond timestamps, wall clock)."""

    def __init__(self, path: str):
        self.path = path
        self._file = open(path, "wb", buffering=1 << 16)
        self._file.write(_GLOBAL_HEADER)
        self.frames = 0

    def write(self, frame: bytes, ts: float | None = None) -> None:
        if ts is None:
            ts = time.time()
        sec = int(ts)
        usec = int((ts - sec) * 1_000_000)
        caplen = min(len(frame), SNAPLEN)
        self._file.write(_RECORD.pack(sec, usec, caplen, len(frame)))
        self._file.write(frame[:caplen])
        self.frames += 1

    def flush(self) -> None:
        self._file.flush()

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()


def pcap_paths(directory: str, ifnames: dict[int, str]) -> dict[int, tuple[str, str]]:
    """{port: (input pcap, output pcap)}, named as simple_switch names them; makes the folder."""
    os.makedirs(directory, exist_ok=True)
    return {p: (os.path.join(directory, f"{name}_in.pcap"), os.path.join(directory, f"{name}_out.pcap"))
            for p, name in ifnames.items()}


class PortPcaps:
    """One input and one output pcap per interface (the Python loop's writers)."""

    def __init__(self, directory: str, ifnames: dict[int, str]):
        paths = pcap_paths(directory, ifnames)
        self.inputs = {p: PcapWriter(i) for p, (i, _o) in paths.items()}
        self.outputs = {p: PcapWriter(o) for p, (_i, o) in paths.items()}

    def close(self) -> None:
        for writer in (*self.inputs.values(), *self.outputs.values()):
            writer.close()


def read_pcap(path: str) -> list[tuple[float, bytes]]:
    """Reads a pcap written by PcapWriter (or any little-endian usec pcap): [(ts, frame)]."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        raise ValueError(f"{path}: not a pcap file (shorter than its 24-byte header)")
    magic, _vmaj, _vmin, _tz, _sig, _snap, linktype = struct.unpack_from("<IHHiIII", data, 0)
    if magic != PCAP_MAGIC_USEC:
        raise ValueError(f"{path}: unsupported pcap magic 0x{magic:08x} (expected little-endian usec 0xa1b2c3d4)")
    frames = []
    off = 24
    while off + 16 <= len(data):
        sec, usec, caplen, _origlen = _RECORD.unpack_from(data, off)
        off += 16
        frames.append((sec + usec / 1e6, data[off:off + caplen]))
        off += caplen
    return frames
