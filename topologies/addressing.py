"""The addressing plan (docs/addressing.md): pure functions from indices to names/addresses.

D = datacenter index (1..8), R = rack index (1..), W = worker index in its rack (1..).
  host            10.D.R.W            MAC 00:00:0a:DD:RR:WW (the IP's bytes)
  rack gateway    10.D.R.253 (virtual; hosts' default route, only ever ARP-resolved
                  statically)          MAC 00:00:0a:DD:RR:fd  = rack switch's MAC
  DC gateway sw.  10.D.0.253 (never used as a destination)  MAC 00:00:0a:DD:00:fd
  rack aggregation address        10.D.R.254
  datacenter aggregation address  10.D.0.254
  global aggregation addresses    10.0.0.0/24
All of them route like any other address: LPM entries in the switches.
"""
from __future__ import annotations

import ipaddress

GATEWAY_OCTET = 253       # virtual gateway / switch address inside a /24
AGGREGATION_OCTET = 254   # aggregation address inside a /24
MAX_HOST_OCTET = 252      # hosts use .1 .. .252
GLOBAL_AGG_PREFIX = "10.0.0.0/24"


def _check(d: int, r: int = 0, w: int = 0) -> None:
    if not (1 <= d <= 255 and 0 <= r <= 255 and 0 <= w <= 255):
        raise ValueError(f"address indices out of range: dc {d}, rack {r}, worker {w}")


def host_ip(d: int, r: int, w: int) -> str:
    _check(d, r, w)
    if not (1 <= r and 1 <= w <= MAX_HOST_OCTET):
        raise ValueError(f"host 10.{d}.{r}.{w}: racks start at 1 and workers are 1..{MAX_HOST_OCTET}")
    return f"10.{d}.{r}.{w}"


def mac_from_ip(ip: str) -> str:
    """00:00 followed by the four bytes of the IPv4 address."""
    b = ipaddress.IPv4Address(ip).packed
    return "00:00:" + ":".join(f"{x:02x}" for x in b)


def rack_subnet(d: int, r: int) -> str:
    _check(d, r)
    return f"10.{d}.{r}.0/24"


def rack_gateway_ip(d: int, r: int) -> str:
    _check(d, r)
    return f"10.{d}.{r}.{GATEWAY_OCTET}"


def rack_gateway_mac(d: int, r: int) -> str:
    return mac_from_ip(rack_gateway_ip(d, r))


def dc_gateway_mac(d: int) -> str:
    _check(d)
    return mac_from_ip(f"10.{d}.0.{GATEWAY_OCTET}")


def rack_aggregation_ip(d: int, r: int) -> str:
    _check(d, r)
    return f"10.{d}.{r}.{AGGREGATION_OCTET}"


def dc_aggregation_ip(d: int) -> str:
    _check(d)
    return f"10.{d}.0.{AGGREGATION_OCTET}"


def global_aggregation_ip(n: int) -> str:
    """The n-th global aggregation address (n = 1..254) in 10.0.0.0/24."""
    if not 1 <= n <= 254:
        raise ValueError(f"global aggregation address index must be 1..254 (got {n})")
    return f"10.0.0.{n}"


def ip_in(ip: str, prefix: str) -> bool:
    return ipaddress.IPv4Address(ip) in ipaddress.IPv4Network(prefix)
