"""Bmv2Client's one simple_switch_CLI session per switch, and BMv2's error replies seen as
failures by control/agg_entries.push, against a scripted stand-in for simple_switch_CLI that
answers as BMv2 1.15's runtime_CLI.py does (no BMv2 needed)."""
import os
import re
import sys
import textwrap

import pytest

from control.agg_entries import push
from softswitch.control.client import RuntimeCommandError, RuntimeConnectionError
from testbed.bmv2 import Bmv2Client

# Replies copied in form from BMv2's runtime_CLI.py (handle_bad_input and friends).
FAKE_CLI = textwrap.dedent('''\
    import os, sys, time
    log = os.environ["FAKE_CLI_LOG"]
    with open(log, "a") as f:
        f.write(f"start {os.getpid()} {' '.join(sys.argv[1:])}\\n")
    if os.environ.get("FAKE_CLI_UNREACHABLE"):
        print("Could not connect to thrift client on port 9090")
        print("Make sure the switch is running and that you have the right port")
        sys.exit(1)
    print("Obtaining JSON from switch...")
    print("Done")
    print("Control utility for runtime P4 table manipulation")
    nodes = 0
    while True:
        try:
            line = input("RuntimeCmd: ")
        except EOFError:
            break
        w = line.split()
        if w[0] == "mc_node_create":
            print(f"Creating node with rid {w[1]} , port map {w[2]} and lag map ")
            print(f"node was created with handle {100 + nodes}")
            nodes += 1
        elif w[0] == "table_add" and w[1] == "dup":
            print("Adding entry to exact match table dup")
            print("Invalid table operation (DUPLICATE_ENTRY)")
        elif w[0] == "table_add" and w[1] == "nosuch":
            print("Error: Invalid table name (nosuch)")
        elif w[0] == "table_add" and w[1] == "badkey":
            print("Invalid match key: Error while parsing key - Invalid IPv4 address")
        elif w[0] == "register_write" and int(w[2]) >= 4096:
            print("Invalid register operation (INVALID_INDEX)")
        elif w[0] == "mc_node_associate" and int(w[2]) < 100:
            print("Invalid PRE operation (INVALID_L1_HANDLE)")
        elif w[0] == "stall":
            time.sleep(30)
        elif w[0] == "crash":
            raise RuntimeError("thrift transport closed")
        elif w[0] == "table_add":
            print(f"Adding entry to exact match table {w[1]}")
            print("Entry has been added with handle 7")
        elif w[0] == "mc_node_associate":
            print(f"Associating node {w[2]} to multicast group {w[1]}")
        elif w[0] in ("register_write", "mc_mgrp_create"):
            print(f"Creating multicast group {w[1]}") if w[0] == "mc_mgrp_create" else None
        else:
            print(f"*** Unknown syntax: {line}")
''')


@pytest.fixture
def fake_cli(tmp_path, monkeypatch):
    script = tmp_path / "fake_cli.py"
    script.write_text(FAKE_CLI)
    exe = tmp_path / "simple_switch_CLI"
    exe.write_text(f"#!/bin/sh\nexec {sys.executable} {script} \"$@\"\n")
    exe.chmod(0o755)
    log = tmp_path / "cli.log"
    monkeypatch.setenv("FAKE_CLI_LOG", str(log))
    starts = lambda: [l for l in log.read_text().splitlines() if l.startswith("start")] \
        if log.exists() else []   # noqa: E731
    return str(exe), starts


def test_one_cli_process_serves_every_command_until_close(fake_cli):
    exe, starts = fake_cli
    c = Bmv2Client(9123, cli=exe, timeout=20)
    resets = [f"register_write MyIngress.r_gen {i} 0" for i in range(3000)]
    replies = c.execute_many(["table_add t a 1 => 2", *resets, "mc_node_create 1 2"])
    assert replies[0] == "Adding entry to exact match table t\nEntry has been added with handle 7"
    assert replies[1:-1] == [""] * 3000
    assert replies[-1].endswith("node was created with handle 100")
    assert c.execute("mc_node_create 2 3").endswith("handle 101")      # same session: handles go on
    proc = c.proc
    assert len(starts()) == 1 and starts()[0].endswith("--thrift-port 9123 --thrift-ip 127.0.0.1")
    c.close()
    assert c.proc is None and proc.returncode == 0                        # left on EOF, by itself
    c.execute("table_add t a 2 => 3")                                     # a new session after close
    assert len(starts()) == 2
    c.close()


def test_bmv2_error_replies_are_errors(fake_cli):
    exe, _ = fake_cli
    with Bmv2Client(9123, cli=exe, timeout=20) as c:
        for cmd, reply in [("table_add dup a 1 => 2", "Invalid table operation (DUPLICATE_ENTRY)"),
                           ("table_add nosuch a 1 => 2", "Error: Invalid table name (nosuch)"),
                           ("table_add badkey a 1 => 2", "Invalid match key: Error while parsing"),
                           ("register_write r 5000 0", "Invalid register operation (INVALID_INDEX)"),
                           ("mc_node_associate 1 3", "Invalid PRE operation (INVALID_L1_HANDLE)"),
                           ("tabel_add t a 1 => 2", "*** Unknown syntax: tabel_add")]:
            with pytest.raises(RuntimeCommandError, match=rf"(?s){re.escape(cmd)}.*{re.escape(reply)}"):
                c.execute(cmd, check=True)
        assert c.execute("table_add t a 1 => 2", check=True).endswith("handle 7")   # session lives on


def test_push_runs_one_session_and_stops_at_bmv2_error_replies(fake_cli):
    exe, starts = fake_cli
    cmds = ["table_add t a 1 => 2", "mc_mgrp_create 1", "mc_node_create 1 2",
            "mc_node_associate 1 $n0", "mc_node_create 2 3", "mc_node_associate 1 $n1",
            *[f"register_write MyIngress.r_gen {i} 0" for i in range(4096)]]
    with Bmv2Client(9123, cli=exe, timeout=20) as c:
        replies = push(c, cmds)
    assert len(replies) == len(cmds) and replies[3] == "Associating node 100 to multicast group 1"
    assert replies[5] == "Associating node 101 to multicast group 1"
    assert len(starts()) == 1
    for bad, reply in [("register_write MyIngress.r_gen 4096 0", "INVALID_INDEX"),
                       ("table_add dup a 1 => 2", "DUPLICATE_ENTRY"),
                       ("table_add badkey a 1 => 2", "Invalid match key")]:
        with Bmv2Client(9123, cli=exe, timeout=20) as c:
            with pytest.raises(RuntimeError, match=rf"(?s)switch rejected `{bad}`: .*{reply}.*check that it runs"):
                push(c, cmds[:3] + [bad] + cmds[3:6])


def test_push_checks_replies_of_execute_only_clients():
    class Stub:
        def __init__(self):
            self.lines = []

        def execute(self, line):
            self.lines.append(line)
            if line.startswith("mc_node_create"):
                return "node was created with handle 5"
            return "Invalid table operation (TABLE_FULL)" if "full" in line else ""
    s = Stub()
    assert push(s, ["mc_node_create 1 1", "mc_node_associate 1 $n0"]) == \
        ["node was created with handle 5", ""]
    assert s.lines[-1] == "mc_node_associate 1 5"
    with pytest.raises(RuntimeError, match="switch rejected `table_add full a 1 => 2`: .*TABLE_FULL"):
        push(Stub(), ["table_add ok a 1 => 2", "table_add full a 1 => 2"])
    with pytest.raises(ValueError, match=r"names node \$n1 before its mc_node_create"):
        push(Stub(), ["mc_node_create 1 1", "mc_node_associate 1 $n1"])


def test_unreachable_switch_crash_and_stall_are_connection_errors(fake_cli, monkeypatch):
    exe, _ = fake_cli
    c = Bmv2Client(9123, cli=exe, timeout=20)
    with pytest.raises(RuntimeConnectionError, match="(?s)exited before replying.*thrift transport closed"):
        c.execute("crash")
    assert c.proc is None
    with pytest.raises(RuntimeConnectionError, match="gave no reply within 1.5s"):
        Bmv2Client(9123, cli=exe, timeout=1.5).execute("stall")
    monkeypatch.setenv("FAKE_CLI_UNREACHABLE", "1")
    with pytest.raises(RuntimeConnectionError, match="could not reach the switch on thrift port 9123"):
        Bmv2Client(9123, cli=exe, timeout=20).execute("help")
    with pytest.raises(RuntimeConnectionError, match="not on PATH"):
        Bmv2Client(9123, cli=os.path.join("no", "such_cli")).execute("help")
