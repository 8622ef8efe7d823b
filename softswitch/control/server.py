"""The switch's runtime control port: simple_switch_CLI commands over TCP.

Protocol (line-oriented, UTF-8, on 127.0.0.1 only):

    request   one command per line, terminated by '\\n' ('\\r\\n' accepted),
              in the simple_switch_CLI language (see commands.py). A client
              may send many lines without waiting (pipelining).
    response  per request line, in order: a header line ``OK <n>\\n`` or
              ``ERR <n>\\n`` then exactly <n> bytes of UTF-8 reply text (the
              same text simple_switch_CLI prints, without trailing newline;
              n may be 0). ``ERR`` means the reply is an error reply
              (it starts with ``Error:``).

A line longer than MAX_LINE bytes, or not valid UTF-8, gets an ERR reply and
the connection stays usable. A client that stops reading while its pending
replies exceed MAX_PENDING bytes is paused (its further input is not
read until it reads its replies), never disconnected. Nothing a client sends can
stop the server; an exception while serving one client closes only that
client.

The server is non-blocking and does not own a loop: ``register(selector)``
adds it to the switch's single selectors loop, each registration's data being
a ``handler(mask)`` callable, as every registration in the switch process is.
"""
from __future__ import annotations

import errno
import ipaddress
import selectors
import socket

MAX_LINE = 64 * 1024
MAX_PENDING = 1024 * 1024


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ControlServer:
    def __init__(self, api, port: int, host: str = "127.0.0.1", log=None):
        if not _is_loopback(host):
            raise ValueError(f"runtime control port must listen on localhost only, not {host!r}: "
                             f"use 127.0.0.1 (the testbed's rule: no remote control of switches)")
        self.api = api
        self.log = log
        self.selector = None
        self.clients: dict[socket.socket, _Client] = {}
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as e:
            sock.close()
            hint = (f"is another switch already using --thrift-port {port}? "
                    f"(check with: ss -ltnp 'sport = :{port}')" if e.errno == errno.EADDRINUSE
                    else "choose another port with --thrift-port")
            raise OSError(e.errno, f"cannot listen on {host}:{port} for runtime control: {e.strerror}; {hint}") from None
        sock.listen(64)
        sock.setblocking(False)
        self.sock = sock
        self.host = host
        self.port = sock.getsockname()[1]

    def register(self, selector: selectors.BaseSelector):
        self.selector = selector
        selector.register(self.sock, selectors.EVENT_READ, self._on_accept)

    def _on_accept(self, mask):
        for _ in range(64):   # drain the backlog without starving packets
            try:
                conn, _ = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as e:   # e.g. EMFILE: keep serving the others
                self._log(f"control: accept failed: {e}")
                return
            conn.setblocking(False)
            client = _Client(self, conn)
            self.clients[conn] = client
            self.selector.register(conn, selectors.EVENT_READ, client.on_event)

    def _drop(self, client):
        self.clients.pop(client.sock, None)
        try:
            self.selector.unregister(client.sock)
        except (KeyError, ValueError):
            pass
        client.sock.close()

    def _log(self, msg):
        if self.log:
            self.log(msg)

    def close(self):
        for c in list(self.clients.values()):
            self._drop(c)
        if self.selector is not None:
            try:
                self.selector.unregister(self.sock)
            except (KeyError, ValueError):
                pass
        self.sock.close()


def frame(reply: str) -> bytes:
    body = reply.encode("utf-8", "replace")
    status = "ERR" if reply.startswith("Error:") else "OK"
    return f"{status} {len(body)}\n".encode() + body


class _Client:
    def __init__(self, server: ControlServer, sock: socket.socket):
        self.server = server
        self.sock = sock
        self.inbuf = bytearray()
        self.outbuf = bytearray()
        self.discarding = False   # inside an over-long line: skip to its end
        self.mode = (True, False)  # (registered for read, registered for write)
        self.eof = False

    def on_event(self, mask):
        try:
            if mask & selectors.EVENT_READ:
                self._read()
            if self.sock.fileno() != -1 and mask & selectors.EVENT_WRITE:
                self._flush()
        except Exception as e:   # one broken client must not stop the switch
            self.server._log(f"control: dropping client after error: {type(e).__name__}: {e}")
            self.server._drop(self)

    def _read(self):
        try:
            data = self.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self.server._drop(self)
            return
        if not data:
            # the client finished sending (maybe only half-closed): answer
            # what it sent, then close once every reply is out
            self.eof = True
            if self.inbuf and not self.discarding:
                self.inbuf += b"\n"     # a last line without newline still counts
            self._process()
            self._flush()
            return
        self.inbuf += data
        self._process()
        self._flush()

    def _process(self):
        """Answer complete lines, but only while replies are not piling up:
        a client that does not read is paused (backpressure), not dropped."""
        while len(self.outbuf) < MAX_PENDING:
            nl = self.inbuf.find(b"\n")
            if nl < 0:
                if len(self.inbuf) > MAX_LINE:
                    if not self.discarding:
                        self._reply(f"Error: command line longer than {MAX_LINE} bytes; send one command per line")
                    self.discarding = True
                    self.inbuf.clear()
                return
            raw = bytes(self.inbuf[:nl])
            del self.inbuf[:nl + 1]
            if self.discarding:
                self.discarding = False
                continue
            if len(raw) > MAX_LINE:
                self._reply(f"Error: command line longer than {MAX_LINE} bytes; send one command per line")
                continue
            try:
                line = raw.decode("utf-8").rstrip("\r")
            except UnicodeDecodeError:
                self._reply("Error: command is not valid UTF-8 text")
                continue
            self._reply(self.server.api.execute(line))

    def _reply(self, text):
        self.outbuf += frame(text)

    def _flush(self):
        while self.outbuf:
            try:
                n = self.sock.send(self.outbuf)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                self.server._drop(self)
                return
            del self.outbuf[:n]
            if len(self.outbuf) < MAX_PENDING and b"\n" in self.inbuf:
                self._process()      # paused lines can go on now
        if self.eof and not self.outbuf and b"\n" not in self.inbuf:
            self.server._drop(self)
            return
        reading = not self.eof and len(self.outbuf) < MAX_PENDING
        writing = bool(self.outbuf)
        if (reading, writing) != self.mode:
            self.mode = (reading, writing)
            events = (selectors.EVENT_READ if reading else 0) | (selectors.EVENT_WRITE if writing else 0)
            self.server.selector.modify(self.sock, events, self.on_event)
