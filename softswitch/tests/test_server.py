"""The runtime control server over a real localhost socket (its selector loop
in a thread), the Python clients, and the CLI as a subprocess."""
import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from softswitch.control.client import (RuntimeCommandError, RuntimeConnectionError, SoftswitchClient, is_error,
                                       parse_handle, parse_register, split_cli_output)
from softswitch.control.commands import RuntimeAPI
from softswitch.control.server import MAX_LINE, ControlServer
from runtime_fixtures import make_state, server  # noqa: F401 (fixture)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def raw_exchange(port, payload: bytes, n_replies: int, timeout=5.0) -> list[tuple[str, str]]:
    """Send raw bytes, read n framed replies -> [(status, text)]."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(payload)
        buf = b""
        out = []
        while len(out) < n_replies:
            while b"\n" not in buf:
                chunk = s.recv(65536)
                assert chunk, "server closed the connection"
                buf += chunk
            header, buf = buf.split(b"\n", 1)
            status, n = header.decode().split()
            while len(buf) < int(n):
                buf += s.recv(65536)
            out.append((status, buf[:int(n)].decode()))
            buf = buf[int(n):]
        return out


# ---------------------------------------------------------------- server and protocol
def test_server_binds_localhost_only():
    with pytest.raises(ValueError, match="localhost only"):
        ControlServer(RuntimeAPI(make_state()), 0, host="0.0.0.0")


def test_port_in_use_error_says_what_to_do(server):
    with pytest.raises(OSError, match=f"--thrift-port {server.port}"):
        ControlServer(server.api, server.port)


def test_framing_ok_err_and_empty_replies(server):
    replies = raw_exchange(server.port, b"table_num_entries dmac\r\nregister_write agg 0 1\nnope\n", 3)
    assert replies == [("OK", "0"), ("OK", ""),
                       ("ERR", "Error: Unknown command 'nope'; 'help' lists the commands (simple_switch_CLI syntax)")]


def test_bad_bytes_and_long_lines_do_not_break_the_connection(server):
    payload = b"\xff\xfe bad utf8\n" + b"x" * (MAX_LINE + 10) + b"\n" + b"table_num_entries dmac\n"
    replies = raw_exchange(server.port, payload, 3)
    assert replies[0][0] == "ERR" and "UTF-8" in replies[0][1]
    assert replies[1][0] == "ERR" and "longer than" in replies[1][1]
    assert replies[2] == ("OK", "0")


def test_abrupt_disconnects_and_garbage_keep_server_alive(server):
    for payload in (b"table_add dmac set_port 1", b"\x00" * 1000, b"help\n" * 50):
        s = socket.create_connection(("127.0.0.1", server.port))
        s.sendall(payload)
        s.close()                          # without reading replies
    with SoftswitchClient(server.port) as c:
        assert c.execute("table_num_entries dmac") == "0"


def test_many_clients_interleaved(server):
    clients = [SoftswitchClient(server.port) for _ in range(8)]
    try:
        for i, c in enumerate(clients):
            c.execute(f"table_add dmac set_port {i} => {i}", check=True) if i < 4 else \
                c.execute(f"register_write agg {i - 4} {i}", check=True)
        for c in clients:
            assert c.execute("table_num_entries dmac") == "4"
        assert parse_register(clients[0].execute("register_read agg")) == [4, 5, 6, 7]
    finally:
        for c in clients:
            c.close()


def test_pipelined_batch_of_commands(server):
    cmds = [f"table_add ipv4_lpm drop 10.{i}.0.0/16 =>" for i in range(8)]
    with SoftswitchClient(server.port) as c:
        replies = c.execute_many(cmds + ["table_num_entries ipv4_lpm"])
    assert [parse_handle(r) for r in replies[:8]] == list(range(8))
    assert replies[-1] == "8"


def test_slow_reader_gets_all_replies(server):
    """Replies bigger than the socket buffer are flushed as the client reads."""
    n = 3000
    with SoftswitchClient(server.port, timeout=20) as c:
        replies = c.execute_many(["help"] * n)
    assert len(replies) == n and all("table_add" in r for r in replies)


# ---------------------------------------------------------------- python client
def test_client_check_raises_with_command_and_reply(server):
    with SoftswitchClient(server.port) as c:
        with pytest.raises(RuntimeCommandError) as e:
            c.execute_many(["table_add dmac set_port 1 => 1", "table_add dmac set_port 1 => 1"], check=True)
        assert "DUPLICATE_ENTRY" in e.value.reply and e.value.command.startswith("table_add")
        with pytest.raises(ValueError, match="one command per item"):
            c.execute("help\nhelp")


def test_client_cannot_connect_names_the_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]            # bound but not listening: refused
        with pytest.raises(RuntimeConnectionError, match=f"--thrift-port {port}"):
            SoftswitchClient(port, timeout=2).execute("help")


def test_is_error_recognises_both_backends_errors():
    for r in ("Error: Invalid table name (x)", "Invalid table operation (DUPLICATE_ENTRY)",
              "Invalid match key: Error while parsing 1.2 - Invalid IPv4 address",
              "Adding entry...\nInvalid PRE operation (INVALID_MGID)"):
        assert is_error(r)
    for r in ("Entry has been added with handle 0", "agg[0]= 1", "", "Invalid"):
        assert not is_error(r)


def test_split_cli_output_like_simple_switch_cli():
    out = ("Obtaining JSON from switch...\nDone\nControl utility for runtime P4 table manipulation\n"
           "RuntimeCmd: Adding entry to exact match table dmac\nEntry has been added with handle 0\n"
           "RuntimeCmd: RuntimeCmd: r[0]= 5\nRuntimeCmd: \n")
    assert split_cli_output(out, 3) == ["Adding entry to exact match table dmac\nEntry has been added with handle 0",
                                        "", "r[0]= 5"]
    with pytest.raises(RuntimeConnectionError, match="answered 1 of 2"):
        split_cli_output("RuntimeCmd: x\n", 2)


# ---------------------------------------------------------------- CLI subprocess
def run_cli(port, stdin, *extra):
    return subprocess.run([sys.executable, "-m", "softswitch.cli", "--thrift-port", str(port), *extra],
                          input=stdin, capture_output=True, text=True, timeout=60, cwd=REPO)


def test_cli_reads_stdin_and_prints_like_simple_switch_cli(server):
    p = run_cli(server.port, "table_add dmac set_port 00:00:00:00:00:07 => 2\n\nregister_write agg 1 42\n"
                             "register_read agg 1\nbogus\n")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("Control utility for runtime P4 table manipulation\nRuntimeCmd: ")
    replies = split_cli_output(p.stdout, 5)
    assert parse_handle(replies[0]) == 0
    assert replies[1:4] == ["", "", "agg[1]= 42"]
    assert replies[4].startswith("Error: Unknown command 'bogus'")
    assert server.api.state.table("dmac").lookup((7,))[2] == (2,)


def test_cli_quiet_and_fail_on_error(server):
    p = run_cli(server.port, "register_read agg 0\ntable_add nope x 1\n", "--quiet", "--fail-on-error")
    assert p.returncode == 2
    assert p.stdout.split("\n")[:2] == ["agg[0]= 0", "Error: Invalid table name (nope): the program's tables "
                                        "are: " + ", ".join(sorted(server.api.state.tables))]


def test_cli_exits_nonzero_when_switch_is_unreachable():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        p = run_cli(port, "help\n")
    assert p.returncode == 1
    assert f"Could not connect to thrift client on port {port}" in p.stderr
    assert "Make sure the switch is running" in p.stderr


def test_client_that_reads_late_is_paused_not_dropped(server):
    """~6 MB of replies to a client that only starts reading after sending
    everything: the server pauses it (backpressure) and loses nothing."""
    n = 5000
    s = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    sender = threading.Thread(target=lambda: s.sendall(b"help\n" * n))
    sender.start()
    time.sleep(0.3)
    f = s.makefile("rb")
    for _ in range(n):
        status, size = f.readline().split()
        assert status == b"OK" and b"table_add" in f.read(int(size))
    sender.join(10)
    # and the server still serves others meanwhile and after
    with SoftswitchClient(server.port) as c:
        assert c.execute("table_num_entries dmac") == "0"
    s.close()


def test_half_closed_client_gets_every_reply(server):
    s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    s.sendall(b"register_write agg 3 7\nregister_read agg 3")   # last line without newline
    s.shutdown(socket.SHUT_WR)
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    s.close()
    assert data == b"OK 0\nOK 9\nagg[3]= 7"


def test_cli_interactive_with_a_tty(server):
    import pty
    pid, fd = pty.fork()
    if pid == 0:   # child: the CLI on a terminal
        os.chdir(REPO)
        os.execv(sys.executable, [sys.executable, "-m", "softswitch.cli", "--thrift-port", str(server.port)])

    def read_until(token, timeout=20):
        buf, end = b"", time.time() + timeout
        while token not in buf and time.time() < end:
            try:
                buf += os.read(fd, 4096)
            except OSError:
                break
        return buf

    try:
        assert read_until(b"RuntimeCmd: ").startswith(b"Control utility for runtime P4 table manipulation")
        os.write(fd, b"register_write agg 2 11\n")
        read_until(b"RuntimeCmd: ")
        os.write(fd, b"register_read agg 2\n")
        assert b"agg[2]= 11" in read_until(b"RuntimeCmd: ")
        os.write(fd, b"\x04")                       # Ctrl-D ends the session
        for _ in range(200):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.05)
        assert done and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        pid = None
    finally:
        if pid is not None:                          # our own child only, by PID
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        os.close(fd)


def test_random_bytes_never_break_the_server(server):
    import random
    rnd = random.Random(7)
    for _ in range(40):
        blob = bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(1, 3000)))
        lines = blob.count(b"\n")
        s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        s.sendall(blob + b"\ntable_num_entries dmac\n")
        f = s.makefile("rb")
        for _ in range(lines + 2):               # every line, even garbage, gets one framed reply
            status, size = f.readline().split()
            assert status in (b"OK", b"ERR")
            body = f.read(int(size))
        assert body == b"0"
        s.close()


def test_cli_completion_words_come_from_the_switch(server):
    from softswitch.control.cli import completion_words, make_completer
    with SoftswitchClient(server.port) as c:
        commands, names = completion_words(c)
    assert "table_add" in commands and "mc_node_create" in commands and "Documented" not in commands
    assert "MyIngress.ipv4_lpm" in names and "ipv4_lpm" in names and "ipv4_forward" in names
    complete = make_completer(commands, names)
    assert complete("table_a", 0, "table_a") == "table_add"
    assert complete("ipv4_l", 0, "table_add ipv4_l") == "ipv4_lpm"
    assert complete("zzz", 0, "table_add zzz") is None
