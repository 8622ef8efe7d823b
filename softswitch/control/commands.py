"""The simple_switch_CLI command language on a SwitchState.

``RuntimeAPI(state).execute(line) -> str`` runs one command and returns its
reply text (lines joined by '\\n', no trailing newline; '' for commands that
print nothing in simple_switch_CLI either). Argument syntax and successful
replies follow bmv2's tools/runtime_CLI.py and sswitch_CLI.py, so scripts that
parse simple_switch_CLI output ("Entry has been added with handle 0",
"r[0]= 5", "c[1]= (64 bytes, 1 packets)") work on both backends.

Every refused command gets a reply starting with ``Error:`` followed by the
text simple_switch_CLI would print (for example
``Error: Invalid table operation (DUPLICATE_ENTRY): ...``) and an explanation
naming the problem. ``execute`` never raises.
"""
from __future__ import annotations

from softswitch.control.arguments import ArgError, CmdError, expect_min_args, expect_nargs, parse_int, parse_rate, port_map_str
from softswitch.control.table_commands import TableCommands
from softswitch.runtime.state import StateError, SwitchState, TableError

# error reply prefixes per command family, as simple_switch_CLI names them
_OPERATION = {"mc": "PRE", "register": "register", "counter": "counter",
              "meter": "meter", "mirroring": "mirroring"}

# simple_switch_CLI commands the softswitch does not implement, and why
_UNSUPPORTED = {
    **{c: "action profiles/selectors are not supported by the softswitch" for c in (
        "act_prof_create_member", "act_prof_delete_member", "act_prof_modify_member", "act_prof_create_group",
        "act_prof_delete_group", "act_prof_add_member_to_group", "act_prof_remove_member_from_group",
        "act_prof_dump", "act_prof_dump_member", "act_prof_dump_group", "table_indirect_add",
        "table_indirect_add_with_group", "table_indirect_delete", "table_indirect_set_default",
        "table_indirect_set_default_with_group", "table_indirect_reset_default",
        "table_indirect_create_member", "table_indirect_delete_member", "table_indirect_modify_member",
        "table_indirect_create_group", "table_indirect_delete_group", "table_indirect_add_member_to_group",
        "table_indirect_remove_member_from_group", "table_dump_member", "table_dump_group")},
    "table_set_timeout": "entry ageing (support_timeout) is not supported by the softswitch",
    **{c: "parser value sets are not supported by the softswitch" for c in (
        "show_pvs", "pvs_add", "pvs_remove", "pvs_get", "pvs_clear")},
    **{c: "the switch's P4 program is fixed at start: restart it with the new program" for c in (
        "load_new_config_file", "swap_configs", "write_config_to_file", "serialize_state")},
    **{c: "ports are given at start with -i PORT@IFACE" for c in ("port_add", "port_remove")},
    **{c: "the softswitch has no traffic-manager queues: shape links with the testbed's link emulation"
       for c in ("set_queue_depth", "set_queue_rate", "set_all_queue_depths", "set_all_queue_rates")},
    **{c: "custom CRC parameters are not supported by the softswitch" for c in (
        "set_crc16_parameters", "set_crc32_parameters", "set_toeplitz_hash_key")},
    "mirroring_add_mc": "mirroring to a multicast group is not supported yet: use mirroring_add <id> <port>",
    "mc_set_lag_membership": "LAGs are not supported (the PRE is SimplePre)",
    "shell": "running shell commands through the switch's control port is not allowed",
}


class RuntimeAPI(TableCommands):
    def __init__(self, state: SwitchState):
        self.state = state
        self.commands = {name[3:]: getattr(self, name) for name in dir(self) if name.startswith("do_")}

    # ------------------------------------------------------------ dispatch
    def execute(self, line: str) -> str:
        try:
            line = line.strip()
            if not line or line.startswith("#"):
                return ""
            name, _, rest = line.partition(" ")
            fn = self.commands.get(name)
            if fn is None and name in _UNSUPPORTED:
                return f"Error: {name} is not supported: {_UNSUPPORTED[name]}"
            if fn is None:
                return (f"Error: Unknown command '{name}'; 'help' lists the commands "
                        f"(simple_switch_CLI syntax)")
            try:
                out = fn(rest.split())
            except CmdError as e:
                return f"Error: {e}"
            except ArgError as e:
                return f"Error: {e}"
            except KeyError as e:
                return f"Error: {e.args[0]}"
            except TableError as e:
                return f"Error: Invalid table operation ({e.code}): {e.message}"
            except StateError as e:
                family = _OPERATION.get(name.split("_")[0], "runtime")
                return f"Error: Invalid {family} operation ({e.code}): {e.message}"
            return "\n".join(out) if isinstance(out, list) else (out or "")
        except Exception as e:   # a bug here must not take the switch down
            return f"Error: internal error while running {line!r}: {type(e).__name__}: {e} (please report)"

    # ------------------------------------------------------------ registers
    def do_register_read(self, args):
        "Read register value: register_read <name> [index]"
        expect_min_args(args, 1, "register_read <name> [index]")
        r = self.state.registers.resolve(args[0])
        if len(args) == 1:
            return f"{args[0]}= " + ", ".join(str(v) for v in r.values)
        expect_nargs(args, 2, "register_read <name> [index]")
        index = parse_int(args[1], "index")
        return f"{args[0]}[{index}]= {r.read(index)}"

    def do_register_write(self, args):
        "Write register value: register_write <name> <index> <value>"
        expect_nargs(args, 3, "register_write <name> <index> <value>")
        r = self.state.registers.resolve(args[0])
        index = parse_int(args[1], "index")
        try:
            value = int(args[2], 0)
        except ValueError:
            raise CmdError(f"Bad format for value, must be an integer (got {args[2]!r})") from None
        lo = -(1 << (r.width - 1)) if r.signed or value < 0 else 0
        if not lo <= value < (1 << r.width):
            raise CmdError(f"value {value} does not fit register {r.name} (bit<{r.width}>, "
                           f"range {lo}..{(1 << r.width) - 1})")
        r.write(index, value)
        return ""

    def do_register_reset(self, args):
        "Reset all the cells in the register array to 0: register_reset <name>"
        expect_nargs(args, 1, "register_reset <name>")
        self.state.registers.resolve(args[0]).reset()
        return ""

    # ------------------------------------------------------------ counters
    def do_counter_read(self, args):
        "Read counter value: counter_read <name> <index>"
        expect_nargs(args, 2, "counter_read <name> <index>")
        c = self.state.counters.resolve(args[0])
        index = parse_int(args[1], "index")
        packets, nbytes = c.read(index)
        out = [f"this is the direct counter for table {c.table.name}"] if c.direct else []
        out.append("%s[%d]= (%d bytes, %d packets)" % (args[0], index, nbytes, packets))
        return out

    def do_counter_write(self, args):
        "Write counter value: counter_write <name> <index> <packets> <bytes>"
        expect_nargs(args, 4, "counter_write <name> <index> <packets> <bytes>")
        c = self.state.counters.resolve(args[0])
        index = parse_int(args[1], "index")
        packets, nbytes = parse_int(args[2], "packets"), parse_int(args[3], "bytes")
        if packets < 0 or nbytes < 0:
            raise CmdError("packets and bytes must be >= 0")
        c.write(index, packets, nbytes)
        return f"{args[0]}[{index}] has been updated"

    def do_counter_reset(self, args):
        "Reset counter: counter_reset <name>"
        expect_nargs(args, 1, "counter_reset <name>")
        c = self.state.counters.resolve(args[0])
        c.reset()
        return f"this is the direct counter for table {c.table.name}" if c.direct else ""

    # ------------------------------------------------------------ meters
    def do_meter_set_rates(self, args):
        "Configure rates for a meter: meter_set_rates <name> <index> <rate_1>:<burst_1> <rate_2>:<burst_2>\n" \
            "Rate uses units/microsecond and burst uses units where units is bytes or packets"
        expect_min_args(args, 2, "meter_set_rates <name> <index> <cir>:<cburst> <pir>:<pburst>")
        m = self.state.meters.resolve(args[0])
        index = parse_int(args[1], "index")
        if len(args) - 2 != 2:
            raise CmdError(f"Invalid number of rates, expected 2 but got {len(args) - 2} "
                           f"(committed rate:burst, then peak rate:burst)")
        m.set_rates(index, [parse_rate(a) for a in args[2:]])
        return ""

    def do_meter_array_set_rates(self, args):
        "Configure rates for an entire meter array: meter_array_set_rates <name> <rate_1>:<burst_1> <rate_2>:<burst_2>"
        expect_min_args(args, 1, "meter_array_set_rates <name> <cir>:<cburst> <pir>:<pburst>")
        m = self.state.meters.resolve(args[0])
        if len(args) - 1 != 2:
            raise CmdError(f"Invalid number of rates, expected 2 but got {len(args) - 1}")
        m.set_rates(None, [parse_rate(a) for a in args[1:]])
        return ""

    def do_meter_get_rates(self, args):
        "Retrieve rates for a meter: meter_get_rates <name> <index>"
        expect_nargs(args, 2, "meter_get_rates <name> <index>")
        m = self.state.meters.resolve(args[0])
        rates = m.get_rates(parse_int(args[1], "index"))
        return [f"{i}: info rate = {r}, burst size = {b}" for i, (r, b) in enumerate(rates)]

    # ------------------------------------------------------------ multicast
    def _ports(self, texts):
        ports = []
        for s in texts:
            try:
                p = int(s)
            except ValueError:
                raise CmdError(f"'{s}' is not a valid port number") from None
            if p < 0:
                raise CmdError(f"'{s}' is not a valid port number")
            if p in ports:
                raise CmdError(f"Found duplicate port number '{p}'")
            ports.append(p)
        return ports

    def do_mc_mgrp_create(self, args):
        "Create multicast group: mc_mgrp_create <group id>"
        expect_nargs(args, 1, "mc_mgrp_create <group id>")
        g = parse_int(args[0], "multicast group id")
        self.state.pre.mgrp_create(g)
        return f"Creating multicast group {g}"

    def do_mc_mgrp_destroy(self, args):
        "Destroy multicast group: mc_mgrp_destroy <group id>"
        expect_nargs(args, 1, "mc_mgrp_destroy <group id>")
        g = parse_int(args[0], "multicast group id")
        self.state.pre.mgrp_destroy(g)
        return f"Destroying multicast group {g}"

    def do_mc_node_create(self, args):
        "Create multicast node: mc_node_create <rid> <space-separated port list>"
        expect_min_args(args, 1, "mc_node_create <rid> <space-separated port list>")
        rid = parse_int(args[0], "rid")
        ports = self._ports(args[1:])
        handle = self.state.pre.node_create(rid, ports)
        return [f"Creating node with rid {rid} and with port map {port_map_str(ports)}",
                f"node was created with handle {handle}"]

    def do_mc_node_update(self, args):
        "Update multicast node: mc_node_update <node handle> <space-separated port list>"
        expect_min_args(args, 2, "mc_node_update <node handle> <space-separated port list>")
        handle = parse_int(args[0], "node handle")
        ports = self._ports(args[1:])
        self.state.pre.node_update(handle, ports)
        return f"Updating node {handle} with port map {port_map_str(ports)}"

    def do_mc_node_associate(self, args):
        "Associate node to multicast group: mc_node_associate <group id> <node handle>"
        expect_nargs(args, 2, "mc_node_associate <group id> <node handle>")
        g, h = parse_int(args[0], "multicast group id"), parse_int(args[1], "node handle")
        self.state.pre.associate(g, h)
        return f"Associating node {h} to multicast group {g}"

    def do_mc_node_dissociate(self, args):
        "Dissociate node from multicast group: mc_node_dissociate <group id> <node handle>"
        expect_nargs(args, 2, "mc_node_dissociate <group id> <node handle>")
        g, h = parse_int(args[0], "multicast group id"), parse_int(args[1], "node handle")
        self.state.pre.dissociate(g, h)
        return f"Dissociating node {h} from multicast group {g}"

    def do_mc_node_destroy(self, args):
        "Destroy multicast node: mc_node_destroy <node handle>"
        expect_nargs(args, 1, "mc_node_destroy <node handle>")
        h = parse_int(args[0], "node handle")
        self.state.pre.node_destroy(h)
        return f"Destroying node {h}"

    def do_mc_dump(self, args):
        "Dump entries in multicast engine: mc_dump"
        expect_nargs(args, 0, "mc_dump")
        pre = self.state.pre
        out = ["==========", "MC ENTRIES"]
        for g in sorted(pre.groups):
            out += ["**********", f"mgrp({g})"]
            for h in pre.groups[g]:
                rid, ports = pre.nodes[h]
                out.append(f"  -> (L1h={h}, rid={rid}) -> (ports=[{', '.join(str(p) for p in sorted(ports))}], lags=[])")
        out += ["==========", "LAGS", "None for this PRE type", "=========="]
        return out

    # ------------------------------------------------------------ mirroring
    def do_mirroring_add(self, args):
        "Add mirroring session to unicast port: mirroring_add <mirror_id> <egress_port>"
        expect_nargs(args, 2, "mirroring_add <mirror_id> <egress_port>")
        self.state.mirroring.add(parse_int(args[0], "mirror_id"), parse_int(args[1], "egress_port"))
        return ""

    def do_mirroring_delete(self, args):
        "Delete mirroring session: mirroring_delete <mirror_id>"
        expect_nargs(args, 1, "mirroring_delete <mirror_id>")
        self.state.mirroring.delete(parse_int(args[0], "mirror_id"))
        return ""

    def do_mirroring_get(self, args):
        "Display mirroring session: mirroring_get <mirror_id>"
        expect_nargs(args, 1, "mirroring_get <mirror_id>")
        port = self.state.mirroring.get(parse_int(args[0], "mirror_id"))
        return f"MirroringSessionConfig(port={port}, mgid=None)"

    # ------------------------------------------------------------ misc
    def do_reset_state(self, args):
        "Reset all state in the switch (table entries, registers, ...), but P4 config is preserved: reset_state"
        expect_nargs(args, 0, "reset_state")
        self.state.reset()
        return ""

    def do_help(self, args):
        "List commands, or show one command's usage: help [command]"
        if args:
            fn = self.commands.get(args[0])
            if fn is None:
                raise CmdError(f"No help on {args[0]}: unknown command")
            return fn.__doc__
        names = sorted(self.commands)
        out = ["Documented commands (type help <topic>):", "=" * 40]
        for i in range(0, len(names), 4):
            out.append("  ".join(f"{n:24}" for n in names[i:i + 4]).rstrip())
        return out
