"""Command-line runtime client, a stand-in for simple_switch_CLI.

    python3 -m softswitch.cli --thrift-port 9090 < commands.txt
    python3 -m softswitch.cli --thrift-port 9090          # interactive with a tty

Output imitates simple_switch_CLI's (a ``RuntimeCmd: `` prompt before each
reply) so scripts that parse simple_switch_CLI output keep working; ``--quiet``
prints the replies only. Exits 1 if the switch cannot be reached; with
``--fail-on-error`` exits 2 if any command got an error reply.
"""
from __future__ import annotations

import argparse
import sys

from softswitch.control.client import CLI_PROMPT, RuntimeConnectionError, SoftswitchClient, is_error

PROMPT = CLI_PROMPT
INTRO = "Control utility for runtime P4 table manipulation"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python3 -m softswitch.cli",
                                description="softswitch runtime CLI (simple_switch_CLI command language)")
    p.add_argument("--thrift-port", type=int, default=9090,
                   help="the switch's runtime port (default 9090 = 9090 + device id 0)")
    p.add_argument("--thrift-ip", default="127.0.0.1", help="the switch listens on localhost only")
    p.add_argument("--json", help="accepted for simple_switch_CLI compatibility; not needed")
    p.add_argument("--pre", help="accepted for simple_switch_CLI compatibility; SimplePre is used")
    p.add_argument("--quiet", "-q", action="store_true", help="print replies only, no intro or prompts")
    p.add_argument("--fail-on-error", action="store_true", help="exit with status 2 if any command failed")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for a reply")
    return p


def _unreachable(args, err) -> int:
    print(f"Could not connect to thrift client on port {args.thrift_port}\n"
          f"Make sure the switch is running and that you have the right port: {err}",
          file=sys.stderr)
    return 1


def completion_words(client) -> tuple[list[str], list[str]]:
    """(command names, resource names) asked from the switch itself, so the
    completion always matches the running program."""
    commands = [w for line in client.execute("help").split("\n")[2:] for w in line.split()]
    names = set()
    for cmd in ("show_tables", "show_actions"):
        for line in client.execute(cmd).split("\n"):
            if line.strip():
                full = line.split()[0]
                names.add(full)
                names.add(full.rsplit(".", 1)[-1])   # short names resolve too
    return sorted(commands), sorted(names)


def make_completer(commands, names):
    def complete(text, state, _line=None):
        import readline
        line = _line if _line is not None else readline.get_line_buffer()
        first_word = not line[:len(line) - len(text)].strip()
        pool = commands if first_word else names
        matches = [w for w in pool if w.startswith(text)]
        return matches[state] if state < len(matches) else None
    return complete


def _enable_completion(client):
    try:
        import readline
    except ImportError:       # line editing is a convenience, not a requirement
        return
    commands, names = completion_words(client)
    readline.set_completer(make_completer(commands, names))
    readline.set_completer_delims(" \t")
    readline.parse_and_bind("tab: complete")


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    client = SoftswitchClient(args.thrift_port, host=args.thrift_ip, timeout=args.timeout)
    try:
        client.connect()
    except RuntimeConnectionError as e:
        return _unreachable(args, e)
    interactive = sys.stdin.isatty()
    if interactive:
        _enable_completion(client)
    show_prompt = not args.quiet
    failed = False
    if show_prompt:
        print(INTRO)
    try:
        while True:
            if interactive:
                try:
                    line = input(PROMPT if show_prompt else "")
                except EOFError:
                    print()
                    break
                except KeyboardInterrupt:
                    print()
                    continue
            else:
                if show_prompt:
                    sys.stdout.write(PROMPT)
                line = sys.stdin.readline()
                if not line:
                    if show_prompt:
                        print()
                    break
            line = line.strip()
            if line in ("EOF", "exit", "quit"):
                break
            if not line or line.startswith("#"):
                continue
            reply = client.execute(line)
            if is_error(reply):
                failed = True
            if reply:
                print(reply, flush=True)
    except RuntimeConnectionError as e:
        print(f"lost the connection to the switch on port {args.thrift_port}: {e}", file=sys.stderr)
        return 1
    finally:
        client.close()
        sys.stdout.flush()
    return 2 if failed and args.fail_on_error else 0


if __name__ == "__main__":
    sys.exit(main())
