"""Network interfaces by name in the root namespace: does one exist, delete some.

Used by the Mininet builder (interfaces left after a stop) and by testbed.cleanup (what
dead runs left); deleting one end of a veth pair deletes its peer too.
"""
from __future__ import annotations

import os
import subprocess

SYS_CLASS_NET = "/sys/class/net"


def interface_exists(name: str) -> bool:
    return os.path.exists(f"{SYS_CLASS_NET}/{name}")


def delete_interfaces(names) -> list[str]:
    """``ip link del`` each named interface that exists; returns the names deleted."""
    gone = []
    for name in names:
        if interface_exists(name):
            subprocess.run(["ip", "link", "del", name], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            gone.append(name)
    return gone
