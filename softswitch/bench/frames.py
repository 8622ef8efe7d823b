"""Test frames for the benchmarks: Ethernet/IPv4/UDP with the IPv4 checksum set. Its own
module so that inproc.py and workloads.py can both use it without importing each other."""
from __future__ import annotations

import struct


def ipv4_checksum(h: bytes) -> int:
    s = sum(struct.unpack(f"!{len(h) // 2}H", h))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def udp_frame(dst_ip: bytes, src_ip: bytes, dport: int, payload: bytes, dst_mac: str = "02:00:00:00:01:01",
              src_mac: str = "02:00:00:00:01:02", sport: int = 40000, ident: int = 1) -> bytes:
    """Ethernet/IPv4/UDP frame (IPv4 checksum set, UDP checksum 0)."""
    eth = bytes.fromhex(dst_mac.replace(":", "")) + bytes.fromhex(src_mac.replace(":", "")) + b"\x08\x00"
    udp = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp) + len(payload), ident, 0, 64, 17, 0, src_ip, dst_ip)
    ip = ip[:10] + struct.pack("!H", ipv4_checksum(ip)) + ip[12:]
    return eth + ip + udp + payload
