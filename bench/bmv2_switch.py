"""`run.py bench switch`: the softswitch's benchmark (softswitch/bench/veth.py) with BMv2's
simple_switch measured beside it, in the same run, on the same veths, with the same programs,
entries and frames, when simple_switch, simple_switch_CLI and p4c are on PATH. A second build
named simple_switch_nolog on PATH (BMv2 built with --disable-logging-macros
--disable-elogger; .ci/p4ref-env.sh provides one) is measured too. The last line gains
`bmv2_fwd_veth_kpps=... bmv2_agg32_veth_kpps=...` (and `bmv2nolog_...`)."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time

from softswitch.bench import veth
from softswitch.node import free_tcp_port, log_tail, port_accepts
from testbed.bmv2 import Bmv2Client, compile_program, missing_tools

BUILDS = {"bmv2": "simple_switch", "bmv2nolog": "simple_switch_nolog"}


def _pin_to_dut():
    if veth.DUT_CPU is not None:
        os.sched_setaffinity(0, {veth.DUT_CPU})    # before exec: every thread of the switch


def starter(exe: str, out_dir: str):
    """start(bed, workload, log_path) -> simple_switch process, programmed and serving."""
    compiled: dict = {}

    def start(bed, wl, log_path):
        key = (wl.program, tuple(sorted(wl.defines.items())))
        if key not in compiled:
            compiled[key] = compile_program(wl.program, {k: str(v) for k, v in wl.defines.items()},
                                            os.path.join(out_dir, wl.name), who=f"bench {wl.name}")
        port = free_tcp_port()
        with open(log_path, "w") as log:
            proc = subprocess.Popen([exe, "-i", f"1@{bed.sw_in}", "-i", f"2@{bed.sw_out}",
                                     "--thrift-port", str(port), compiled[key]],
                                    stdout=log, stderr=subprocess.STDOUT, preexec_fn=_pin_to_dut)
        deadline = time.monotonic() + 60
        while not port_accepts(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                veth._stop(proc)
                raise RuntimeError(f"{exe} for {wl.name} did not start; log {log_path}:\n"
                                   f"{log_tail(log_path, 20)}")
            time.sleep(0.05)
        try:
            with Bmv2Client(port) as client:
                client.execute_many(wl.commands, check=True)
        except Exception:
            veth._stop(proc)
            raise
        return proc
    return start


def bmv2_starters(out_dir: str, which=shutil.which) -> dict:
    """{label: start} for each BMv2 build on PATH; empty without BMv2 and p4c."""
    if missing_tools(which):
        return {}
    return {label: starter(which(exe), out_dir) for label, exe in BUILDS.items() if which(exe)}


def main(argv=None) -> int:
    with tempfile.TemporaryDirectory(prefix="gdml-bench-bmv2-") as out_dir:
        others = bmv2_starters(out_dir)
        missing = missing_tools()
        veth.progress(f"BMv2 builds measured beside the softswitch: {', '.join(others)}" if others else
                      f"BMv2 not measured: {' and '.join(missing)} not on PATH")
        return veth.main(argv, others=others)
