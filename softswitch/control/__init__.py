"""Control: the simple_switch_CLI command language and how it reaches a switch.

    commands.py        RuntimeAPI(state).execute(line) -> reply text
    table_commands.py  the table_* commands
    arguments.py       argument parsing (values, match keys, rates) and error replies
    server.py          ControlServer: the line protocol on 127.0.0.1
    client.py          RuntimeClient and SoftswitchClient, and the reply parsers
    cli.py             python3 -m softswitch.cli: simple_switch_CLI's front for the softswitch

Works on softswitch.runtime's state only; knows nothing of P4 source or the compiler.
"""
