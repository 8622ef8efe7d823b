"""The aggregation header (docs/protocol.md) for many packets at once, as numpy arrays.

Why: a worker at tens of Mbps handles ~20 000 packets per second; struct.pack, tobytes
and a dataclass per packet (workers/agg_packet.py's encode/decode) cost it more CPU than
the switch spends aggregating them. Here a tensor's packets are one structured array
built in a few vectorised operations, a window of them is a slice of it, and a batch of
results is parsed by one frombuffer over their joined bytes. The bytes are those of
agg_packet.encode (tests/test_ina_batch.py checks them against it). Pure functions.
"""
from __future__ import annotations

import numpy as np

from workers.agg_packet import _HDR, AGG_HEADER_LEN

# the 16-byte header, network byte order, field for field as agg_packet's struct "!BBHIIBBbB"
HEADER = np.dtype([("job", "u1"), ("flags", "u1"), ("shadow_slot", ">u2"), ("gen", ">u4"),
                   ("offset", ">u4"), ("sender", "u1"), ("fan_in", "u1"), ("exponent", "i1"),
                   ("k", "u1")])
assert HEADER.itemsize == AGG_HEADER_LEN


def packet_dtype(k: int) -> np.dtype:
    """One whole UDP payload: the header and k big-endian int32 values."""
    return np.dtype([("h", HEADER), ("values", ">i4", (k,))])


def payload_len(k: int) -> int:
    return AGG_HEADER_LEN + 4 * k


def pack_tensor(job: int, flags: int, base_seq: int, window: int, sender: int, fan_in: int,
                exponents: np.ndarray, values: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """The payloads of a tensor's chunks, chunk j = row j: `values` is (n, k) int32,
    `exponents` one per chunk; chunk j is sequence number base_seq + j, so it uses slot
    seq % window, generation seq // window + 1 (shadow = gen & 1) and offset j * k.
    out: an (n,) array of packet_dtype(k) to fill (a worker reuses last tensor's)."""
    n, k = values.shape
    exps = np.asarray(exponents, dtype=np.int64)
    if exps.size and (exps.min() < -128 or exps.max() > 127):
        raise ValueError(f"exponents must fit a signed byte (-128..127); got {exps.min()}..{exps.max()}")
    if not 1 <= window < 2**15:
        raise ValueError(f"slot numbers must fit 15 bits: window {window}")
    seq = base_seq + np.arange(n, dtype=np.int64)
    gen = seq // window + 1
    if n and gen[-1] >= 2**32:
        raise ValueError("generation numbers no longer fit 32 bits")
    if out is None:
        out = np.empty(n, dtype=packet_dtype(k))
    elif out.shape != (n,) or out.dtype != packet_dtype(k):
        raise ValueError(f"out must be ({n},) of packet_dtype({k}) (got {out.dtype} {out.shape})")
    h = out["h"]
    h["job"], h["flags"], h["sender"], h["fan_in"], h["k"] = job, flags, sender, fan_in, k
    h["shadow_slot"] = ((gen & 1) << 15) | (seq % window)
    h["gen"] = gen
    h["offset"] = np.arange(n, dtype=np.int64) * k
    h["exponent"] = exps
    out["values"] = values
    return out


def rows_of(payloads, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Datagrams (bytes) -> ((m, size) uint8 rows, their lengths): each cut or zero-padded
    to `size`, so that a batch parses in one piece; the lengths say which were whole."""
    lengths = np.fromiter((len(p) for p in payloads), dtype=np.int64, count=len(payloads))
    joined = b"".join(bytes(p[:size]).ljust(size, b"\0") for p in payloads)
    return np.frombuffer(joined, dtype=np.uint8).reshape(len(payloads), size), lengths


def headers(rows: np.ndarray):
    """The headers of (m, >= 16) uint8 rows, one tuple each as agg_packet's struct reads
    it: (job, flags, shadow << 15 | slot, gen, offset, sender, fan_in, exponent, k).
    One copy of the m headers joined, unpacked in C: a batch of results costs ~0.3 us a
    packet and ~1 us a batch, where numpy's field-by-field arithmetic costs ~1 us per
    operation and batch, more than the unpacking for the batches of 10-60 that a worker
    reads at once."""
    return _HDR.iter_unpack(rows[:, :AGG_HEADER_LEN].tobytes())


def store_values(dest: np.ndarray, chunks: list, rows: np.ndarray, index: list, k: int) -> None:
    """dest[chunks[i]] = the k big-endian values of rows[index[i]], for every i. A few rows
    one by one (~0.7 us each), more in one gather (~3 us, then ~0.05 us a row): at a few
    Mbps a worker reads one or two results per wake-up."""
    if len(index) <= 4:
        for i, j in zip(index, chunks):
            dest[j] = rows[i, AGG_HEADER_LEN:AGG_HEADER_LEN + 4 * k].view(">i4")
    else:
        dest[chunks] = rows.take(index, axis=0)[:, AGG_HEADER_LEN:AGG_HEADER_LEN + 4 * k].view(">i4")
