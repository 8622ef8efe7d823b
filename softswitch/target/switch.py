"""The v1model pipeline of one switch, as simple_switch orders it.

    parser -> verify checksum -> ingress -> traffic manager -> egress (per copy)
           -> compute checksum -> deparser (valid headers + unparsed payload)

Traffic manager after ingress, in BMv2's order: an I2E clone (the original
packet, parsed again, to the mirror session's port, instance_type 1); resubmit
(the original packet back to ingress, instance_type 6, ends this pass);
multicast when mcast_grp != 0 (one egress pass per PRE replica, instance_type 5,
egress_rid set); drop when egress_spec == 511; else unicast to egress_spec.
A unicast packet enters egress with instance_type 0, also after resubmit or
recirculation (simple_switch.cpp sets PKT_INSTANCE_TYPE_NORMAL before enqueue).
After egress: an E2E clone (the egress-modified headers with reset metadata,
instance_type 2, to the session's port, through egress again); drop when egress
set egress_spec to 511; recirculate (the deparsed packet back to ingress,
instance_type 4).

A parser error does not drop the packet (v1model: ingress sees
standard_metadata.parser_error). `process` never raises: an exception in
generated code for one packet is caught, counted in stats['errors'] and
logged; resubmit/recirculate/clone chains are cut after MAX_PASSES.
"""
from __future__ import annotations

import logging
import time

import softswitch.compiler.pipeline as compiler
from softswitch.runtime.v1model import AssertFailed, Packet

DROP_PORT = 511
MAX_PACKET_BYTES = 65535
MAX_PASSES = 16           # resubmit + recirculate + clone passes per input packet

NORMAL, INGRESS_CLONE, EGRESS_CLONE, COALESCED, RECIRC, REPLICATION, RESUBMIT = range(7)

STAT_KEYS = ("packets_in", "packets_out", "dropped", "parser_errors", "checksum_errors", "oversized",
             "errors", "assert_failures", "clones", "resubmits", "recirculations", "multicast_copies",
             "loop_limit_drops", "digests")


def _worth_logging(n: int) -> bool:
    """The first 10 occurrences, then every 1000th: a flood of bad packets must
    not turn into a flood of log lines."""
    return n <= 10 or n % 1000 == 0


class Switch:
    def __init__(self, program, device_id: int = 0, log=None):
        self.program = program
        self.pipe = compiler.compile_program(program, device_id)
        self.state = self.pipe.state
        self.device_id = device_id
        self.log = log if log is not None else logging.getLogger(f"softswitch.s{device_id}")
        self.stats = {k: 0 for k in STAT_KEYS}
        self.digests: list = []
        self._digests_seen = 0
        self.logs: list = []
        self.errors = self.pipe.errors

    @classmethod
    def from_file(cls, path, defines=None, device_id: int = 0, log=None, include_dirs=()):
        from softswitch.frontend import load
        return cls(load(str(path), defines, include_dirs), device_id=device_id, log=log)

    # ------------------------------------------------------------------ entry
    def process(self, port: int, data: bytes, now_us: int | None = None) -> list[tuple[int, bytes]]:
        st = self.stats
        st["packets_in"] += 1
        if len(data) > MAX_PACKET_BYTES:
            st["oversized"] += 1
            st["dropped"] += 1
            return []
        if now_us is None:
            now_us = time.monotonic_ns() // 1000
        out: list = []
        try:
            self._ingress(port, bytes(data), now_us, NORMAL, None, out, [0])
        except AssertFailed as e:
            st["assert_failures"] += 1
            st["dropped"] += 1
            if _worth_logging(st["assert_failures"]):
                self.log.error("assert/assume failed at %s: packet dropped (%d so far)",
                               e.where, st["assert_failures"])
            return []
        except Exception as e:  # a bug must cost one packet, never the switch
            st["errors"] += 1
            st["dropped"] += 1
            if _worth_logging(st["errors"]):
                self.log.exception("error while processing a packet from port %s (%s): packet dropped "
                                   "(%d so far); please report it with the program", port, e, st["errors"])
            return []
        finally:
            if self.logs:
                for m in self.logs:
                    self.log.info("log_msg: %s", m)
                self.logs.clear()
            if len(self.digests) != self._digests_seen:   # only packets that called digest()
                self._log_digests()
        st["packets_out"] += len(out)
        if not out:
            st["dropped"] += 1
        return out

    DIGESTS_KEPT = 1024

    def _log_digests(self) -> None:
        """digest() goes to the log (simple_switch sends it to a learning client, which the
        testbed has no use for); the newest DIGESTS_KEPT stay in .digests for inspection."""
        new = self.digests[self._digests_seen:]
        for name, values in new:
            self.stats["digests"] += 1
            if _worth_logging(self.stats["digests"]):
                self.log.info("digest %s: %s", name, values)
        if len(self.digests) > 2 * self.DIGESTS_KEPT:
            del self.digests[:-self.DIGESTS_KEPT]
        self._digests_seen = len(self.digests)

    # ------------------------------------------------------------------ passes
    def _preserve(self, meta, fl):
        """User metadata carried by a clone/resubmit/recirculate: the fields of
        @field_list(fl) keep their values, all others start at 0 (BMv2 resets
        metadata and copies the field list). fl == -1: the deprecated forms
        without a list, nothing is kept."""
        new = self.pipe.new_meta()
        for name in self.pipe.field_lists.get(fl, ()):
            v = getattr(meta, name)
            if hasattr(v, "_set"):
                getattr(new, name)._set(v)
            else:
                setattr(new, name, v)
        return new

    def _parse(self, port, data, now, itype, meta):
        p = self.pipe
        sm = p.new_sm()
        sm.ingress_port = port
        sm.instance_type = itype
        sm.packet_length = len(data)
        sm.ingress_global_timestamp = now
        hdr = p.new_headers()
        if meta is None:
            meta = p.new_meta()
        P = Packet(sm, len(data), now, self.digests, self.logs)
        off = p.parse(P, data, hdr, meta, sm)
        P.payload = data[off:]
        if sm.parser_error:
            self.stats["parser_errors"] += 1
        return P, hdr, meta, sm

    def _ingress(self, port, data, now, itype, meta, out, passes):
        p = self.pipe
        passes[0] += 1
        if passes[0] > MAX_PASSES:
            self.stats["loop_limit_drops"] += 1
            return
        P, hdr, meta, sm = self._parse(port, data, now, itype, meta)
        p.verify_checksum(P, hdr, meta)
        if sm.checksum_error:
            self.stats["checksum_errors"] += 1
        p.ingress(P, hdr, meta, sm)
        if P.clone_sess is not None:
            self._clone_i2e(P, port, data, now, meta, out, passes)
        if P.resubmit_fl is not None:
            self.stats["resubmits"] += 1
            self._ingress(port, data, now, RESUBMIT, self._preserve(meta, P.resubmit_fl), out, passes)
            return
        if sm.mcast_grp:
            reps = self.state.pre.replicas(sm.mcast_grp)
            last = len(reps) - 1
            for i, (eport, rid) in enumerate(reps):
                self.stats["multicast_copies"] += 1
                if i == last:   # the last copy can use the originals
                    h2, m2, s2 = hdr, meta, sm
                else:
                    h2, m2, s2 = hdr._clone(), meta._clone(), sm._clone()
                s2.egress_rid = rid
                self._egress(P, h2, m2, s2, eport, REPLICATION, now, out, passes)
            return
        if sm.egress_spec == DROP_PORT:
            return
        # simple_switch marks every unicast packet NORMAL here, also a resubmitted
        # or recirculated one
        self._egress(P, hdr, meta, sm, sm.egress_spec, NORMAL, now, out, passes, reuse=True)

    def _clone_i2e(self, P, port, data, now, meta, out, passes):
        sess_port = self.state.mirroring.sessions.get(P.clone_sess)
        if sess_port is None:
            return  # BMv2: a clone to an unconfigured session does nothing
        self.stats["clones"] += 1
        passes[0] += 1
        # BMv2 parses the original packet again for the clone.
        P2, hdr2, meta2, sm2 = self._parse(port, data, now, INGRESS_CLONE, self._preserve(meta, P.clone_fl))
        self._egress(P2, hdr2, meta2, sm2, sess_port, INGRESS_CLONE, now, out, passes)

    def _egress(self, Pin, hdr, meta, sm, eport, itype, now, out, passes, reuse=False):
        """One egress pass. reuse: the unicast copy may take over the ingress
        context (its clone/resubmit requests are already served)."""
        p = self.pipe
        if passes[0] > MAX_PASSES:
            self.stats["loop_limit_drops"] += 1
            return
        sm.egress_port = eport
        sm.instance_type = itype
        # BMv2 writes drop_port + 1 here so only an explicit drop in egress drops;
        # 512 does not fit bit<9>, we write 0 (also "not the drop port").
        sm.egress_spec = 0
        sm.enq_timestamp = now & 0xFFFFFFFF
        sm.egress_global_timestamp = now
        if reuse:
            P = Pin
            P.clone_sess = P.clone_fl = None
        else:
            P = Packet(sm, Pin.plen, now, self.digests, self.logs)
            P.payload = Pin.payload
            P.truncate = Pin.truncate     # truncate() in ingress applies on the way out
        p.egress(P, hdr, meta, sm)
        if P.clone_sess is not None:
            sess_port = self.state.mirroring.sessions.get(P.clone_sess)
            if sess_port is not None:
                self.stats["clones"] += 1
                passes[0] += 1
                sm2 = p.new_sm()   # BMv2: the clone's metadata is reset, headers copied
                sm2.packet_length = sm.packet_length
                self._egress(P, hdr._clone(), self._preserve(meta, P.clone_fl), sm2, sess_port,
                             EGRESS_CLONE, now, out, passes)
        if sm.egress_spec == DROP_PORT:
            return
        p.compute_checksum(P, hdr, meta)
        parts = p.deparse(P, hdr)
        parts.append(P.payload)
        pkt = b"".join(parts)
        if P.truncate is not None and P.truncate < len(pkt):
            pkt = pkt[:P.truncate]
        if P.recirc_fl is not None:
            self.stats["recirculations"] += 1
            self._ingress(sm.ingress_port, pkt, now, RECIRC, self._preserve(meta, P.recirc_fl), out, passes)
            return
        out.append((eport, pkt))
