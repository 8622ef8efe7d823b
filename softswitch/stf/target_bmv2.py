"""BMv2 (`simple_switch`) as an STF target, the way p4c's own runner drives it.

The program is compiled by `p4c-bm2-ss --arch v1model`; `simple_switch --use-files` reads each
port's frames from a pcap FIFO `p<PORT>_in.pcap` and writes what it sends to `p<PORT>_out.pcap`,
so no network interfaces, namespaces or root are needed. One `simple_switch_CLI` session takes
the runtime commands; its reply to each command is read before the next step, so an entry is in
place before the next frame. BMv2 processes frames on its own threads: a command that follows
frames waits `settle` seconds first, and the outputs are read after a last `settle` and SIGTERM.

Needs `p4c-bm2-ss`, `simple_switch` and `simple_switch_CLI` on PATH (`missing_tools()`).
"""
from __future__ import annotations

import errno
import json
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time

from softswitch.dataplane.pcap import read_pcap
from softswitch.stf.entries import ActionInfo, KeyInfo, ProgramInfo, TableInfo
from softswitch.stf.runner import Refused, TargetFailure

TOOLS = ("p4c-bm2-ss", "simple_switch", "simple_switch_CLI")
PROMPT = "RuntimeCmd: "
_PCAP_HEADER = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
# simple_switch_CLI prints these at the start of a reply it refuses
_ERROR_STARTS = ("Error", "Invalid", "Traceback", "Exception")


def missing_tools() -> list[str]:
    return [t for t in TOOLS if shutil.which(t) is None]


def _header_widths(prog: dict) -> dict[str, dict[str, int]]:
    types = {t["name"]: {f[0]: f[1] for f in t.get("fields", [])} for t in prog.get("header_types", [])}
    return {h["name"]: types.get(h["header_type"], {}) for h in prog.get("headers", [])}


def program_info(prog: dict) -> ProgramInfo:
    """Tables, keys and actions of a p4c BMv2 JSON program."""
    actions = {a["id"]: ActionInfo(a["name"], tuple((r["name"], r["bitwidth"]) for r in a.get("runtime_data", [])))
               for a in prog.get("actions", [])}
    widths = _header_widths(prog)
    tables = []
    for pipe in prog.get("pipelines", []):
        for t in pipe.get("tables", []):
            keys = []
            for k in t.get("key", []):
                target = k.get("target")
                width = None
                if isinstance(target, list) and len(target) == 2:
                    width = widths.get(target[0], {}).get(target[1])
                name = k.get("name") or (".".join(target) if isinstance(target, list) else str(target))
                keys.append(KeyInfo(name, k["match_type"], width))
            acts = [actions[i] for i in t.get("action_ids", []) if i in actions]
            tables.append(TableInfo(t["name"], keys, acts, t.get("match_type") in ("ternary", "range"),
                                    bool(t.get("entries"))))
    return ProgramInfo(tables)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _first_error(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        if "error" in ln.lower():
            return ln
    return lines[0] if lines else "no message"


class Bmv2Target:
    name = "bmv2"

    def __init__(self, settle: float = 1.0, compile_timeout: float = 120.0, start_timeout: float = 30.0,
                 reply_timeout: float = 30.0):
        self.settle = settle
        self.compile_timeout = compile_timeout
        self.start_timeout = start_timeout
        self.reply_timeout = reply_timeout
        self.dir = None
        self.switch = None
        self.cli = None
        self.fifos: dict[int, int] = {}
        self._err = None
        self.ports: set[int] = set()
        self.inputs: set[int] = set()
        self._frames_since_command = False

    # ------------------------------------------------------------ start
    def load(self, p4_path: str, ports: set[int], inputs: set[int] = frozenset()) -> ProgramInfo:
        self.dir = tempfile.mkdtemp(prefix="stf-bmv2-")
        out = os.path.join(self.dir, "program.json")
        try:
            r = subprocess.run(["p4c-bm2-ss", "--arch", "v1model", "-o", out, os.path.abspath(p4_path)],
                               cwd=os.path.dirname(os.path.abspath(p4_path)), capture_output=True, text=True,
                               timeout=self.compile_timeout)
        except subprocess.TimeoutExpired:
            raise TargetFailure(f"p4c-bm2-ss took longer than {self.compile_timeout:.0f} s") from None
        if r.returncode != 0 or not os.path.exists(out):
            raise Refused(f"p4c-bm2-ss: {_first_error(r.stderr + r.stdout)}")
        with open(out) as f:
            info = program_info(json.load(f))
        self.ports = set(ports)
        self.inputs = set(inputs) & self.ports
        self._start(out)
        return info

    def _start(self, json_path: str) -> None:
        # simple_switch merges its inputs by timestamp, so it holds a frame until every other
        # input has one queued or has ended: ports the test never sends into get an input that
        # ends at once, and only the others are FIFOs fed frame by frame
        for p in self.ports:
            path = os.path.join(self.dir, f"p{p}_in.pcap")
            if p in self.inputs:
                os.mkfifo(path)
            else:
                with open(path, "wb") as f:
                    f.write(_PCAP_HEADER)
        thrift = _free_port()
        cmd = ["simple_switch", "--use-files", "0", "--thrift-port", str(thrift), "--device-id", str(thrift),
               "--notifications-addr", f"ipc://{self.dir}/notifications.ipc"]
        for p in sorted(self.ports):
            cmd += ["-i", f"{p}@p{p}"]
        self._err = open(os.path.join(self.dir, "switch.err"), "wb")
        self.switch = subprocess.Popen(cmd + [json_path], cwd=self.dir, stdout=self._err, stderr=self._err)
        deadline = time.monotonic() + self.start_timeout
        self._open_fifos(deadline)
        while True:
            if self.switch.poll() is not None:   # it did not take the program
                raise Refused(f"simple_switch: {self._switch_error()}")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", thrift)) == 0:
                    break
            if time.monotonic() > deadline:
                raise TargetFailure(f"simple_switch did not serve thrift within {self.start_timeout:.0f} s")
            time.sleep(0.05)
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.cli = subprocess.Popen(["simple_switch_CLI", "--thrift-port", str(thrift)], cwd=self.dir, env=env,
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self._read_reply()

    def _open_fifos(self, deadline: float) -> None:
        # simple_switch opens its inputs one by one, each open blocking until a writer exists:
        # non-blocking opens retried over every port never deadlock whatever its order
        pending = set(self.inputs)
        while pending:
            for p in sorted(pending):
                try:
                    fd = os.open(os.path.join(self.dir, f"p{p}_in.pcap"), os.O_WRONLY | os.O_NONBLOCK)
                except OSError as e:
                    if e.errno != errno.ENXIO:
                        raise
                    continue
                os.set_blocking(fd, True)
                os.write(fd, _PCAP_HEADER)
                self.fifos[p] = fd
                pending.discard(p)
            if pending:
                if self.switch.poll() is not None:
                    raise Refused(f"simple_switch: {self._switch_error()}")
                if time.monotonic() > deadline:
                    raise TargetFailure(f"simple_switch did not open its inputs within {self.start_timeout:.0f} s")
                time.sleep(0.02)

    def _switch_error(self) -> str:
        with open(os.path.join(self.dir, "switch.err"), errors="replace") as f:
            err = f.read().strip()
        return err.splitlines()[-1] if err else f"exited with code {self.switch.returncode}"

    def _check_alive(self, doing: str) -> None:
        if self.switch.poll() is not None:
            raise TargetFailure(f"simple_switch exited with code {self.switch.returncode} while {doing}: "
                                f"{self._switch_error()}")

    # ------------------------------------------------------------ steps
    def _read_reply(self) -> str:
        buf = b""
        deadline = time.monotonic() + self.reply_timeout
        fd = self.cli.stdout.fileno()
        while not buf.endswith(PROMPT.encode()):
            left = deadline - time.monotonic()
            if left <= 0:
                raise TargetFailure(f"simple_switch_CLI gave no prompt within {self.reply_timeout:.0f} s")
            ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise TargetFailure(f"simple_switch_CLI exited: {buf.decode(errors='replace').strip()[-200:]}")
                buf += chunk
        return buf[:-len(PROMPT)].decode(errors="replace")

    def command(self, text: str) -> tuple[bool, str]:
        if self._frames_since_command:
            time.sleep(self.settle)   # let BMv2 finish the frames sent so far
            self._frames_since_command = False
        self._check_alive(f"running `{text}`")
        self.cli.stdin.write(text.encode() + b"\n")
        self.cli.stdin.flush()
        reply = self._read_reply()
        ok = not any(ln.strip().startswith(_ERROR_STARTS) for ln in reply.splitlines())
        return ok, reply

    def send(self, port: int, frame: bytes) -> None:
        now = time.time()
        sec = int(now)
        record = struct.pack("<IIII", sec, int((now - sec) * 1e6), len(frame), len(frame))
        try:
            os.write(self.fifos[port], record + frame)
        except BrokenPipeError:
            self._check_alive("reading frames")
            raise TargetFailure("simple_switch closed its pcap input") from None
        self._frames_since_command = True

    def wait(self) -> None:
        time.sleep(self.settle)

    def finish(self):
        for fd in self.fifos.values():
            os.close(fd)
        self.fifos = {}
        time.sleep(self.settle)
        notes = []
        if self.switch.poll() is not None:
            notes.append(f"simple_switch exited with code {self.switch.returncode}")
        self._stop()
        sent = {}
        for p in self.ports:
            path = os.path.join(self.dir, f"p{p}_out.pcap")
            sent[p] = [frame for _, frame in read_pcap(path)] if os.path.exists(path) and \
                os.path.getsize(path) >= 24 else []
        return sent, notes

    # ------------------------------------------------------------ end
    def _stop(self) -> None:
        if self.cli is not None:
            try:
                self.cli.stdin.close()
            except OSError:
                pass
            self.cli.kill()
            self.cli.wait()
            self.cli.stdout.close()
            self.cli = None
        if self.switch is not None:
            if self.switch.poll() is None:
                self.switch.send_signal(signal.SIGTERM)
                try:
                    self.switch.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.switch.kill()
                    self.switch.wait()
        if self._err is not None:
            self._err.close()
            self._err = None

    def close(self) -> None:
        for fd in self.fifos.values():
            os.close(fd)
        self.fifos = {}
        self._stop()
        self.switch = None
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None
