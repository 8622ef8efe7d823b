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
FLAG_NAMES = ["DATA", "RESULT", "RETX", "OVERFLOW"]


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
