"""Differential runs of one P4 program on BMv2 and on the softswitch: same entries, same
packets, outputs per port compared byte for byte. BMv2's simple_switch reads and writes packets
from pcap files (`--use-files`), so no network namespace is needed.

    json_path, warnings = compile_bmv2(PROGRAM, {"AGG_K": "32"})
    frames = [(1, b"..."), (2, b"...")]                 # (ingress port, frame), in order
    got, reads = run_bmv2(json_path, (1, 2, 3), frames, commands, tmp_path, reads=[...])
    want = run_softswitch(PROGRAM, {"AGG_K": "32"}, frames, commands)

Both get their entries through control/agg_entries.push (multicast node handles from the
replies). Used by tests/test_bmv2_diff.py; skip_unless_bmv2() skips with the reason."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from control.agg_entries import push
from testbed.bmv2 import Bmv2Client, missing_tools

REPO = Path(__file__).resolve().parent.parent
AGGREGATION = REPO / "p4" / "aggregation.p4"
FORWARD = REPO / "p4" / "forward.p4"
WAIT_S = 4              # simple_switch waits this long before reading its input files
_compiled: dict = {}
_loaded: dict = {}


def skip_unless_bmv2():
    missing = missing_tools()
    if missing:
        pytest.skip(f"{', '.join(missing)} not on PATH (BMv2 and p4c are not in this machine's "
                    "registries; CI puts a reference build on PATH: .ci/p4ref-env.sh)")


def compile_cmd(program, defines: dict, out_dir: str) -> tuple[list[str], str]:
    """p4c's command line for BMv2 v1model, as testbed/bmv2.py runs it, and the JSON it writes."""
    json_path = os.path.join(out_dir, f"{Path(program).stem}.json")
    d = [f"-D{k}={v}" for k, v in sorted(defines.items())]
    if shutil.which("p4c-bm2-ss"):
        return ["p4c-bm2-ss", "--p4v", "16", *d, "-o", json_path, str(program)], json_path
    return ["p4c", "--target", "bmv2", "--arch", "v1model", *d, "-o", out_dir, str(program)], json_path


def compile_bmv2(program, defines: dict) -> tuple[str, str]:
    """(JSON path, p4c's output) for program + defines, compiled once per test process."""
    key = (str(program), tuple(sorted(defines.items())))
    if key not in _compiled:
        out_dir = tempfile.mkdtemp(prefix="gdml-p4c-")
        cmd, json_path = compile_cmd(program, defines, out_dir)
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if res.returncode != 0 or not os.path.exists(json_path):
            raise AssertionError(f"p4c failed on {program} {defines} (exit {res.returncode}): "
                                 f"{(res.stderr or res.stdout)[-3000:]}")
        _compiled[key] = (json_path, res.stdout + res.stderr)
    return _compiled[key]


# ------------------------------------------------------------------ pcap files
def write_pcap(path, frames: list[tuple[int, bytes]], t0: int = 1_000_000) -> None:
    """(time in us after t0 s, frame) records: simple_switch merges its input files by time."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for t_us, frame in frames:
            f.write(struct.pack("<IIII", t0 + t_us // 1_000_000, t_us % 1_000_000,
                                len(frame), len(frame)))
            f.write(frame)


def read_pcap(path) -> list[bytes]:
    if not os.path.exists(path) or os.path.getsize(path) < 24:
        return []
    data = Path(path).read_bytes()
    magic = struct.unpack_from("<I", data)[0]
    end = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    out, at = [], 24
    while at + 16 <= len(data):
        incl = struct.unpack_from(end + "IIII", data, at)[2]
        if at + 16 + incl > len(data):
            break                    # a record still being written
        out.append(data[at + 16:at + 16 + incl])
        at += 16 + incl
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_bmv2(json_path: str, ports, frames, commands, workdir, reads=(), wait_s: int = WAIT_S,
             expect: int | None = None) -> tuple[dict[int, list[bytes]], list[str]]:
    """Frames through simple_switch programmed with `commands`: ({port: frames out}, replies
    to `reads`, CLI commands run once the outputs are in). Waits until `expect` output frames
    are out and a second has passed since BMv2 began reading its input (30 s at most)."""
    workdir = Path(workdir)
    for port in ports:
        write_pcap(workdir / f"p{port}_in.pcap", [(i, f) for i, (p, f) in enumerate(frames) if p == port])
    thrift = _free_port()
    log = open(workdir / "switch.log", "w")
    sw = subprocess.Popen(["simple_switch", *[a for p in ports for a in ("-i", f"{p}@p{p}")],
                           "--use-files", str(wait_s), "--thrift-port", str(thrift), json_path],
                          cwd=workdir, stdout=log, stderr=subprocess.STDOUT)
    started = time.monotonic()
    client = Bmv2Client(thrift, timeout=60)
    try:
        for _ in range(100):                          # until its thrift server listens
            if sw.poll() is not None:
                raise AssertionError(f"simple_switch exited: {(workdir / 'switch.log').read_text()[-2000:]}")
            try:
                client.execute("help")
                break
            except Exception:
                client.close()
                time.sleep(0.1)
        push(client, commands)
        assert time.monotonic() - started < wait_s, \
            f"programming BMv2 took {time.monotonic() - started:.1f}s, more than it waits before " \
            "reading packets: raise wait_s"
        # it reads its input only after wait_s; then the outputs must reach `expect`, and a
        # second more lets extra frames (and counter updates of frames with no output) show
        earliest, deadline = started + wait_s + 1.0, started + wait_s + 30
        got: dict[int, list[bytes]] = {}
        while True:
            got = {p: read_pcap(workdir / f"p{p}_out.pcap") for p in ports}
            now = time.monotonic()
            if now >= deadline or now >= earliest and expect is not None \
                    and sum(map(len, got.values())) >= expect:
                break
            time.sleep(0.2)
        replies = client.execute_many(list(reads)) if reads else []
    finally:
        client.close()
        sw.send_signal(signal.SIGTERM)
        try:
            sw.wait(10)
        except subprocess.TimeoutExpired:
            sw.kill()
            sw.wait()
        log.close()
    return got, replies


def softswitch(program, defines: dict):
    """A fresh in-process softswitch running program (parsed once per program and defines)."""
    from softswitch import frontend
    from softswitch.target.switch import Switch
    from tests.agg_switches import SoftswitchAdapter
    key = (str(program), tuple(sorted(defines.items())))
    if key not in _loaded:
        _loaded[key] = frontend.load(str(program), dict(defines))
    return SoftswitchAdapter(Switch(_loaded[key]))


def run_softswitch(sw, ports, frames, commands) -> dict[int, list[bytes]]:
    push(sw, commands)
    want: dict[int, list[bytes]] = {p: [] for p in ports}
    for port, frame in frames:
        for out_port, out in sw.process(port, frame):
            want.setdefault(out_port, []).append(out)
    return want
