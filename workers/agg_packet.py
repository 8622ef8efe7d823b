"""Scapy layer of the aggregation protocol (docs/protocol.md), declared as data.

    Ether / IP / UDP(sport=AGG_UDP_PORT, dport=AGG_UDP_PORT) / AggHeader(values=[...])

The header is 16 bytes, followed by `k` signed 32-bit values (network byte order).
Binding on the UDP port makes pcaps of a run dissect into AggHeader.
"""
from __future__ import annotations

from scapy.fields import (BitField, ByteField, FieldLenField, FieldListField, FlagsField,
                          IntField, SignedByteField, SignedIntField)
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Packet, bind_layers

AGG_UDP_PORT = 48879          # 0xBEEF, both source and destination port
AGG_HEADER_LEN = 16

# flag bits (the `flags` byte)
DATA, RESULT, RETX, OVERFLOW = 0x01, 0x02, 0x04, 0x08
TIMER = 0x10                  # a switch's repair timer: only ever on its own timer loop
FLAG_NAMES = ["DATA", "RESULT", "RETX", "OVERFLOW", "TIMER"]


class AggHeader(Packet):
    name = "Aggregation"
    fields_desc = [
        ByteField("job", 0),
        FlagsField("flags", DATA, 8, FLAG_NAMES),
        BitField("shadow", 0, 1),          # which of the slot's two copies (== gen & 1)
        BitField("slot", 0, 15),           # slot index inside the job's range
        IntField("gen", 1),                # use number of the slot, from 1
        IntField("offset", 0),             # index of the first value in the tensor
        ByteField("sender", 0),            # sender's child index at this aggregation point
        ByteField("fan_in", 1),            # children expected at this aggregation point
        SignedByteField("exponent", 0),    # quantization exponent e: value = q * 2**-e
        FieldLenField("k", None, count_of="values", fmt="B"),
        FieldListField("values", [], SignedIntField("v", 0), count_from=lambda p: p.k),
    ]

    def mysummary(self):
        return self.sprintf("Agg job=%job% %flags% slot=%slot%/%shadow% gen=%gen% "
                            "off=%offset% from=%sender%/%fan_in% k=%k%")


bind_layers(UDP, AggHeader, dport=AGG_UDP_PORT)
bind_layers(UDP, AggHeader, sport=AGG_UDP_PORT)


def build(src_mac: str, dst_mac: str, src_ip: str, dst_ip: str, **fields) -> bytes:
    """Wire bytes of one aggregation packet (UDP checksum 0: switches rewrite the payload)."""
    pkt = (Ether(src=src_mac, dst=dst_mac) / IP(src=src_ip, dst=dst_ip, ttl=64)
           / UDP(sport=AGG_UDP_PORT, dport=AGG_UDP_PORT, chksum=0) / AggHeader(**fields))
    return bytes(pkt)


def parse(data: bytes) -> AggHeader | None:
    """The AggHeader of an Ethernet frame, or None if it is not an aggregation packet."""
    pkt = Ether(data)
    return pkt[AggHeader] if AggHeader in pkt else None


# ------------------------------------------------------------------ fast codec
# Workers and the simulated network handle thousands of packets per second;
# scapy is for dissection, these struct-based functions are for the data path.
# tests/test_agg_packet.py checks that both agree byte for byte.
import ipaddress as _ip
import struct as _struct
from dataclasses import dataclass as _dataclass

import numpy as _np

_HDR = _struct.Struct("!BBHIIBBbB")
assert _HDR.size == AGG_HEADER_LEN


@_dataclass(frozen=True)
class AggFields:
    job: int
    flags: int
    slot: int
    shadow: int
    gen: int
    offset: int
    sender: int
    fan_in: int
    exponent: int
    values: _np.ndarray      # int32, length k


def encode(job: int, flags: int, slot: int, gen: int, offset: int, sender: int, fan_in: int,
           exponent: int, values) -> bytes:
    """UDP payload of one aggregation packet; the shadow bit is derived from gen."""
    vals = _np.asarray(values, dtype=">i4")
    if not 0 <= slot < 2**15:
        raise ValueError(f"slot {slot} does not fit 15 bits")
    if gen < 1:
        raise ValueError(f"generations start at 1 (got {gen})")
    return _HDR.pack(job, flags, ((gen & 1) << 15) | slot, gen, offset, sender, fan_in,
                     exponent, len(vals)) + vals.tobytes()


def decode(payload: bytes) -> AggFields | None:
    """UDP payload -> AggFields, or None if it is too short or its k disagrees with its length."""
    if len(payload) < AGG_HEADER_LEN:
        return None
    job, flags, w, gen, offset, sender, fan_in, exponent, k = _HDR.unpack_from(payload)
    if len(payload) < AGG_HEADER_LEN + 4 * k:
        return None
    vals = _np.frombuffer(payload, dtype=">i4", count=k, offset=AGG_HEADER_LEN).astype(_np.int32)
    return AggFields(job, flags, w & 0x7FFF, w >> 15, gen, offset, sender, fan_in, exponent, vals)


def _mac(s: str) -> bytes:
    return bytes(int(b, 16) for b in s.split(":"))


def _csum16(data: bytes) -> int:
    s = sum(_struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def udp_frame(src_mac: str, dst_mac: str, src_ip: str, dst_ip: str, payload: bytes,
              port: int = AGG_UDP_PORT, ttl: int = 64) -> bytes:
    """Ethernet/IPv4/UDP frame around payload (IPv4 checksum set, UDP checksum 0)."""
    ip = bytearray(_struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + 8 + len(payload), 0, 0, ttl, 17, 0,
                                _ip.IPv4Address(src_ip).packed, _ip.IPv4Address(dst_ip).packed))
    ip[10:12] = _struct.pack("!H", _csum16(bytes(ip)))
    udp = _struct.pack("!HHHH", port, port, 8 + len(payload), 0)
    return _mac(dst_mac) + _mac(src_mac) + b"\x08\x00" + bytes(ip) + udp + payload


def udp_payload(frame: bytes, port: int = AGG_UDP_PORT) -> tuple[str, str, bytes] | None:
    """(src_ip, dst_ip, payload) of an Ethernet/IPv4/UDP frame to `port`, else None."""
    if len(frame) < 42 or frame[12:14] != b"\x08\x00" or frame[14] != 0x45 or frame[23] != 17:
        return None
    if _struct.unpack_from("!H", frame, 36)[0] != port:
        return None
    total = _struct.unpack_from("!H", frame, 16)[0]
    src = str(_ip.IPv4Address(frame[26:30]))
    dst = str(_ip.IPv4Address(frame[30:34]))
    return src, dst, frame[42:14 + total]


def frame_bytes(k: int) -> int:
    """Bytes of one aggregation frame on the wire: Ethernet + IPv4 + UDP + header + k values."""
    return 14 + 20 + 8 + AGG_HEADER_LEN + 4 * k


def ipv4_checksum_ok(frame: bytes) -> bool:
    return _csum16(frame[14:34]) == 0
