"""Runtime clients: one interface for every switch that speaks the simple_switch_CLI language.

    client = SoftswitchClient(9090)            # BMv2's: testbed.bmv2.Bmv2Client(9090)
    reply = client.execute("table_add ipv4_lpm ipv4_forward 10.0.0.1/32 => 00:00:00:00:00:01 1")
    handle = parse_handle(reply)
    client.execute_many([...], check=True)     # raises RuntimeCommandError on the first error reply

Replies are simple_switch_CLI's texts on the softswitch and on BMv2, so the parse
helpers below serve both. The control plane never needs to ask which backend runs.
"""
from __future__ import annotations

import re
import socket
from typing import NamedTuple

# error replies: the softswitch's ("Error: ...") and simple_switch_CLI's forms
_ERROR_RE = re.compile(r"^(Error:|Invalid [\w ]+ operation \(|Invalid match key:|Invalid runtime data:"
                       r"|\*\*\* Unknown syntax|Could not connect to thrift)", re.M)


CLI_PROMPT = "RuntimeCmd: "   # simple_switch_CLI's prompt, before each command it reads


class RuntimeCommandError(RuntimeError):
    def __init__(self, command: str, reply: str):
        super().__init__(f"runtime command failed: {command!r}: {reply.strip()}")
        self.command = command
        self.reply = reply


class RuntimeConnectionError(ConnectionError):
    pass


def is_error(reply: str) -> bool:
    return bool(_ERROR_RE.search(reply))


class RuntimeClient:
    """Base: subclasses implement ``_run(cmds) -> list[str]``."""

    def execute(self, cmd: str, check: bool = False) -> str:
        return self.execute_many([cmd], check=check)[0]

    def execute_many(self, cmds, check: bool = False) -> list[str]:
        cmds = [c.strip() for c in cmds]
        for c in cmds:
            if "\n" in c or not c or c.startswith("#"):
                raise ValueError(f"not a single runtime command: {c!r} (one command per item, no comments)")
        replies = self._run(cmds)
        if check:
            for c, r in zip(cmds, replies):
                if is_error(r):
                    raise RuntimeCommandError(c, r)
        return replies

    def _run(self, cmds) -> list[str]:
        raise NotImplementedError

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class SoftswitchClient(RuntimeClient):
    """TCP client for softswitch.control.server (framing documented there)."""

    def __init__(self, port: int, host: str = "127.0.0.1", timeout: float = 10.0):
        self.port, self.host, self.timeout = port, host, timeout
        self.sock = None
        self._buf = bytearray()

    def connect(self):
        if self.sock is None:
            try:
                self.sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
            except OSError as e:
                raise RuntimeConnectionError(
                    f"cannot connect to the softswitch runtime on {self.host}:{self.port} ({e.strerror or e}); "
                    f"is the switch running with --thrift-port {self.port}? "
                    f"check with: ss -ltn 'sport = :{self.port}'") from None
        return self

    BATCH = 256   # commands in flight at once: pipelined, but bounded

    def _run(self, cmds):
        self.connect()
        replies = []
        try:
            for i in range(0, len(cmds), self.BATCH):
                chunk = cmds[i:i + self.BATCH]
                self.sock.sendall("".join(c + "\n" for c in chunk).encode())
                replies += [self._read_reply() for _ in chunk]
            return replies
        except (OSError, ValueError) as e:
            self.close()
            raise RuntimeConnectionError(f"runtime connection to {self.host}:{self.port} failed: {e}") from None

    def _recv_until(self, n_or_newline):
        while True:
            if n_or_newline is None:
                nl = self._buf.find(b"\n")
                if nl >= 0:
                    out = bytes(self._buf[:nl])
                    del self._buf[:nl + 1]
                    return out
            elif len(self._buf) >= n_or_newline:
                out = bytes(self._buf[:n_or_newline])
                del self._buf[:n_or_newline]
                return out
            data = self.sock.recv(65536)
            if not data:
                raise ValueError("the switch closed the connection (did it exit? see its log)")
            self._buf += data

    def _read_reply(self) -> str:
        header = self._recv_until(None).decode()
        status, _, n = header.partition(" ")
        if status not in ("OK", "ERR") or not n.isdigit():
            raise ValueError(f"unexpected reply header {header!r}: is port {self.port} a softswitch control port?")
        return self._recv_until(int(n)).decode("utf-8", "replace")

    def close(self):
        if self.sock is not None:
            self.sock.close()
            self.sock = None
            self._buf.clear()


def split_cli_output(out: str, n: int) -> list[str]:
    """simple_switch_CLI (cmd.Cmd) prints a prompt before reading each line, and so does
    softswitch.cli: the text between prompt i and prompt i+1 is the reply to command i."""
    chunks = out.split(CLI_PROMPT)[1:]
    replies = [c[:-1] if c.endswith("\n") else c for c in chunks[:n]]
    if len(replies) < n:
        raise RuntimeConnectionError(f"simple_switch_CLI answered {len(replies)} of {n} commands; "
                                     f"output was: {out[-300:]!r}")
    return replies


# ---------------------------------------------------------------- reply parsing
class CounterValue(NamedTuple):
    packets: int
    bytes: int


def _need(pattern, reply, what):
    m = re.search(pattern, reply, re.M)
    if m is None:
        raise ValueError(f"reply has no {what}: {reply.strip()[:200]!r}")
    return m


def parse_handle(reply: str) -> int:
    """Entry handle from table_add's reply."""
    return int(_need(r"Entry has been added with handle (\d+)", reply, "entry handle").group(1))


def parse_node_handle(reply: str) -> int:
    """Node handle from mc_node_create's reply."""
    return int(_need(r"node was created with handle (\d+)", reply, "node handle").group(1))


def parse_register(reply: str):
    """register_read: ``r[3]= 5`` -> 5; ``r= 1, 2, 3`` -> [1, 2, 3]."""
    m = _need(r"^\S+?(\[\d+\])?= ?(.*)$", reply, "register value")
    if m.group(1):
        return int(m.group(2))
    return [int(v) for v in m.group(2).split(",") if v.strip()]


def parse_counter(reply: str) -> CounterValue:
    """counter_read: ``c[0]= (128 bytes, 2 packets)``."""
    m = _need(r"= \((\d+) bytes, (\d+) packets\)", reply, "counter value")
    return CounterValue(packets=int(m.group(2)), bytes=int(m.group(1)))


def parse_meter_rates(reply: str) -> list[tuple[float, int]]:
    """meter_get_rates: lines ``0: info rate = 0.5, burst size = 10``."""
    return [(float(r), int(b)) for r, b in
            re.findall(r"^\d+: info rate = ([\d.e+-]+), burst size = (\d+)", reply, re.M)]


def parse_num_entries(reply: str) -> int:
    return int(_need(r"^(\d+)\s*$", reply, "entry count").group(1))
