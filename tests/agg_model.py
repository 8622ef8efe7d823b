"""A Python model of p4/aggregation.p4, configured by the same CLI commands.

Used two ways: as an oracle that the P4 program, run by the softswitch, must match
byte for byte (differential tests), and as a fast stand-in switch to exercise the
worker client and the protocol in simulated networks. It follows the program's
behaviour table (docs/protocol.md) statement by statement; keep them in step.
"""
from __future__ import annotations

import ipaddress
import struct

from workers import agg_packet as ap

EV = dict(NEW=0, ADD=1, COMPLETE=2, UP=3, MCAST=4, DUP_ANSWER=5, DUP_RESEND=6, DUP_DROP=7,
          STALE=8, RESULT_STORE=9, RESULT_DROP=10, BAD=11, BYPASS=12, TIMER_DONE=13,
          REPAIR=14, REPAIR_GIVEUP=15)
REPAIR_MAX_PASSES = 254
RESULT_VALID = 0x01
M32 = 0xFFFFFFFF


def _ip(s):
    return int(ipaddress.IPv4Address(s))


def _mac(s):
    return bytes(int(b, 16) for b in s.split(":"))


class ModelSwitch:
    def __init__(self, k: int = 32, slots: int = 2048):
        self.k, self.size = k, 2 * slots
        self.points = {}                 # (job, addr) -> dict of params
        self.repair = {}                 # (job, addr) -> (timer_port, session, backoff_mask)
        self.sessions = {}               # clone session -> port
        self.paths = []                  # (job, dst, lo, hi, port, mask, mac, out port)
        self.in_port = 0                 # the packet's ingress port (agg_path's key)
        self.children = {}               # rid -> (addr, mac)
        self.routes = []                 # (net, plen, mac, port)
        self.groups, self.nodes = {}, []  # grp -> [node handles]; handle -> (rid, port)
        self.gen = [0] * self.size
        self.bitmap = [0] * self.size
        self.count = [0] * self.size
        self.state = [0] * self.size
        self.vals = [[0] * k for _ in range(self.size)]
        self.events = [0] * 16

    # -------------------------------------------------------------- control
    def execute(self, line: str) -> str:
        w = line.split()
        if w[:2] == ["table_add", "MyIngress.agg_points"] and \
                w[2] in ("MyIngress.agg_point", "MyIngress.agg_point_bypass"):
            job, addr = int(w[3]), _ip(w[4])
            a = w[6:]
            bypass = w[2].endswith("_bypass")
            self.points[(job, addr)] = dict(is_root=int(a[0]), base=int(a[1]), n=int(a[2]),
                                            fan_in=int(a[3]), grp=int(a[4]), parent=_ip(a[5]),
                                            index=int(a[6]), parent_fan_in=int(a[7]),
                                            bypass_base=int(a[8]) if bypass else 0,
                                            bypass_fan_in=int(a[9]) if bypass else 0)
        elif w[:3] == ["table_add", "MyIngress.agg_repair", "MyIngress.repair_point"]:
            self.repair[(int(w[3]), _ip(w[4]))] = (int(w[6]), int(w[7]), int(w[8]))
        elif w[:3] == ["table_add", "MyIngress.agg_path", "MyIngress.ipv4_forward"]:
            lo, hi = (int(x) for x in w[5].split("->"))
            port, mask = (int(x, 0) for x in w[6].split("&&&"))
            self.paths.append((int(w[3]), _ip(w[4]), lo, hi, port, mask, _mac(w[8]), int(w[9])))
        elif w[0] == "mirroring_add":
            self.sessions[int(w[1])] = int(w[2])
        elif w[:3] == ["table_add", "MyEgress.agg_children", "MyEgress.set_child"]:
            self.children[int(w[3])] = (_ip(w[5]), _mac(w[6]))
        elif w[:3] == ["table_add", "MyIngress.ipv4_lpm", "MyIngress.ipv4_forward"]:
            net = ipaddress.IPv4Network(w[3])
            self.routes.append((int(net.network_address), net.prefixlen, _mac(w[5]), int(w[6])))
        elif w[0] == "mc_mgrp_create":
            self.groups[int(w[1])] = []
        elif w[0] == "mc_node_create":
            self.nodes.append((int(w[1]), int(w[2])))
            return f"node was created with handle {len(self.nodes) - 1}"
        elif w[0] == "mc_node_associate":
            self.groups[int(w[1])].append(int(w[2]))
        elif w[0] == "register_write" and w[1] == "MyIngress.r_gen":
            self.gen[int(w[2])] = int(w[3])
        else:
            return f"Error: the model does not know `{line}`"
        return "ok"

    # -------------------------------------------------------------- data
    def _route(self, frame: bytearray):
        dst = struct.unpack_from("!I", frame, 30)[0]
        if self.paths and len(frame) >= 58 and frame[14] & 15 == 5 and frame[23] == 17 and \
                struct.unpack_from("!H", frame, 20)[0] & 0x1FFF == 0 and frame[43] & ap.DATA and \
                struct.unpack_from("!H", frame, 36)[0] == ap.AGG_UDP_PORT:
            slot = struct.unpack_from("!H", frame, 44)[0] & 0x7FFF
            for job, d, lo, hi, port, mask, mac, out in self.paths:
                if job == frame[42] and d == dst and lo <= slot <= hi and \
                        self.in_port & mask == port & mask:
                    frame[6:12] = frame[0:6]
                    frame[0:6] = mac
                    frame[22] -= 1
                    return [(out, self._finish(frame))]
        best = None
        for net, plen, mac, port in self.routes:
            mask = (M32 << (32 - plen)) & M32
            if dst & mask == net and (best is None or plen > best[1]):
                best = (net, plen, mac, port)
        if best is None:
            return []
        frame[6:12] = frame[0:6]
        frame[0:6] = best[2]
        frame[22] -= 1
        return [(best[3], self._finish(frame))]

    @staticmethod
    def _finish(frame: bytearray) -> bytes:
        frame[24:26] = b"\0\0"
        frame[24:26] = struct.pack("!H", ap._csum16(bytes(frame[14:34])))
        return bytes(frame)

    def process(self, port: int, data: bytes):
        self.in_port = port
        f = bytearray(data)
        if len(f) < 34 or f[12:14] != b"\x08\x00" or (f[14] >> 4) != 4:
            return []
        if (f[14] & 15) == 5 and not ap.ipv4_checksum_ok(bytes(f)):
            return []
        if f[22] <= 1:
            return []
        ihl, frag, proto = f[14] & 15, struct.unpack_from("!H", f, 20)[0] & 0x1FFF, f[23]
        if not (ihl == 5 and frag == 0 and proto == 17 and len(f) >= 42 + 16
                and struct.unpack_from("!H", f, 36)[0] == ap.AGG_UDP_PORT):
            return self._route(f)
        job = f[42]
        dst = struct.unpack_from("!I", f, 30)[0]
        p = self.points.get((job, dst))
        if p is None:
            return self._route(f)
        repair = self.repair.get((job, dst)) if p["is_root"] == 0 else None
        return self._aggregate(f, p, port, repair, data)

    def _timer_clone(self, session: int, original: bytes):
        """The I2E clone into the timer loop (egress: a contribution becomes the copy's
        timer, pass count 0 in fan_in; a timer counts one more pass), or none without the
        session (BMv2 drops a clone to an unknown session)."""
        if session not in self.sessions:
            return []
        c = bytearray(original)
        if c[43] & ap.TIMER:
            c[55] = (c[55] + 1) & 0xFF
        else:
            c[43], c[55] = ap.TIMER, 0
        return [(self.sessions[session], self._finish(c))]

    def _aggregate(self, f: bytearray, p, port: int, repair, original: bytes):
        k, ev = self.k, self.events
        flags, w, gen, _off, sender, fan, _exp, kk = struct.unpack_from("!BHIIBBbB", f, 43)
        shadow, slot = w >> 15, w & 0x7FFF
        timer = bool(flags & ap.TIMER)
        well_formed = len(f) >= 58 + 4 * k and kk == k and gen != 0 and shadow == gen & 1
        if well_formed and slot >= p["n"] and p["bypass_fan_in"] != 0 and p["is_root"] == 0 \
                and not flags & (ap.RESULT | ap.TIMER):
            if sender >= p["fan_in"] or sender >= 32:
                ev[EV["BAD"]] += 1
                return []
            struct.pack_into("!I", f, 30, p["parent"])      # to the parent, from the worker
            f[54], f[55] = (p["bypass_base"] + sender) & 0xFF, p["bypass_fan_in"]
            f[40:42] = b"\0\0"
            ev[EV["BYPASS"]] += 1
            return self._route(f)
        if not well_formed or slot >= p["n"] or p["base"] + slot >= self.size // 2 \
                or (timer and (repair is None or port != repair[0])):
            ev[EV["BAD"]] += 1
            return []
        vals = list(struct.unpack_from(f"!{k}I", f, 58))
        idx = ((p["base"] + slot) << 1) | shadow
        cur, bitmap, count, state = self.gen[idx], self.bitmap[idx], self.count[idx], self.state[idx]

        def set_vals(v):
            struct.pack_into(f"!{k}I", f, 58, *v)

        def originate(fl):
            f[43] = fl | (state & ap.OVERFLOW)
            f[26:30] = f[30:34]
            f[22] = 64
            f[40:42] = b"\0\0"

        def send_up(extra):
            originate(ap.DATA | extra)
            struct.pack_into("!I", f, 30, p["parent"])
            f[54], f[55] = p["index"], p["parent_fan_in"]
            ev[EV["UP"]] += 1
            return self._route(f)

        def multicast():
            originate(ap.RESULT | (flags & ap.RETX))
            f[55] = p["fan_in"]
            ev[EV["MCAST"]] += 1
            out = []
            for h in self.groups.get(p["grp"], []):
                rid, port = self.nodes[h]
                if rid not in self.children:
                    continue
                addr, mac = self.children[rid]
                r = bytearray(f)
                struct.pack_into("!I", r, 30, addr)
                r[0:6] = mac
                out.append((port, self._finish(r)))
            return out

        if timer:
            if gen == cur and count == p["fan_in"] and not state & RESULT_VALID:
                n = (fan + 1) & 0xFF
                if n > REPAIR_MAX_PASSES:
                    ev[EV["REPAIR_GIVEUP"]] += 1
                    return []
                out = self._timer_clone(repair[1], original)
                if n & (n - 1) == 0 or n & repair[2] == 0:
                    set_vals(self.vals[idx])
                    ev[EV["REPAIR"]] += 1
                    out += send_up(ap.RETX)
                return out
            ev[EV["TIMER_DONE"]] += 1
            return []
        if flags & ap.RESULT:
            if p["is_root"] == 0 and gen == cur and count == p["fan_in"]:
                state = state | RESULT_VALID | (flags & ap.OVERFLOW)
                self.state[idx] = state
                self.vals[idx] = vals
                ev[EV["RESULT_STORE"]] += 1
                return multicast()
            ev[EV["RESULT_DROP"]] += 1
            return []
        if sender >= p["fan_in"] or sender >= 32:
            ev[EV["BAD"]] += 1
            return []
        bit = 1 << sender
        if gen > cur:
            keep, bitmap, count, state = 0, bit, 1, flags & ap.OVERFLOW
            ev[EV["NEW"]] += 1
        elif gen == cur and not bitmap & bit:
            keep, bitmap, count = M32, bitmap | bit, count + 1
            state |= flags & ap.OVERFLOW
            ev[EV["ADD"]] += 1
        elif gen == cur and count == p["fan_in"]:
            set_vals(self.vals[idx])
            if p["is_root"] == 1 or state & RESULT_VALID:
                src = f[26:30]
                originate(ap.RESULT | ap.RETX)
                f[30:34] = src
                f[55] = p["fan_in"]
                ev[EV["DUP_ANSWER"]] += 1
                return self._route(f)
            ev[EV["DUP_RESEND"]] += 1
            return send_up(ap.RETX)
        elif gen == cur:
            ev[EV["DUP_DROP"]] += 1
            return []
        else:
            ev[EV["STALE"]] += 1
            return []
        self.gen[idx], self.bitmap[idx], self.count[idx], self.state[idx] = gen, bitmap, count, state
        new = [((a & keep) + b) & M32 for a, b in zip(self.vals[idx], vals)]
        self.vals[idx] = new
        set_vals(new)
        if count == p["fan_in"]:
            ev[EV["COMPLETE"]] += 1
            if p["is_root"] == 1:
                return multicast()
            up = send_up(flags & ap.RETX)
            return (self._timer_clone(repair[1], original) if repair else []) + up
        return []
