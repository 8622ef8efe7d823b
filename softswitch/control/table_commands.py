"""Table commands of the simple_switch_CLI language (a mixin of RuntimeAPI):
table_add/modify/delete/set_default/dump/... and show_tables/show_actions.
Reply texts follow bmv2's tools/runtime_CLI.py; see commands.py."""
from __future__ import annotations

from softswitch.control.arguments import (ArgError, CmdError, expect_min_args, expect_nargs, colon_hex, match_to_dump, match_to_str,
                           parse_match_field, parse_value, plain_hex)
from softswitch.runtime.state import TableError


class TableCommands:
    # ------------------------------------------------------------ helpers
    def _table(self, name):
        return self.state.tables.resolve(name)

    @staticmethod
    def _action(table, name):
        try:
            return table.action(name)
        except TableError as e:   # a command error in simple_switch_CLI, not a table operation
            raise CmdError(e.message) from None

    @staticmethod
    def _runtime_data(action, params):
        if len(params) != len(action.params):
            names = ", ".join(f"{n}(bit<{w}>)" for n, w in action.params) or "none"
            raise CmdError(f"Action {action.name} needs {len(action.params)} parameters "
                           f"({names}), got {len(params)}")
        out = []
        for text, (pname, width) in zip(params, action.params):
            try:
                out.append(parse_value(text, width))
            except ArgError as e:
                raise ArgError(f"Invalid runtime data: Error while parsing {text} "
                               f"(parameter {pname} of {action.name}) - {e}") from None
        return out

    @staticmethod
    def _match(t, typed_name, keys):
        if len(keys) != len(t.keys):
            names = ", ".join(f"{k.name}({k.match_kind})" for k in t.keys)
            raise CmdError(f"Table {typed_name} needs {len(t.keys)} key fields ({names}), got {len(keys)}")
        match = []
        for text, k in zip(keys, t.keys):
            try:
                match.append(parse_match_field(text, k.match_kind, k.width))
            except ArgError as e:
                raise ArgError(f"Invalid match key: {e} (key {k.name}, {k.match_kind}, bit<{k.width}>)") from None
        return match

    @staticmethod
    def _data_str(action, args, sep="\t", fmt=colon_hex):
        return sep.join(fmt(v, w) for v, (_, w) in zip(args, action.params))

    @staticmethod
    def _handle(text):
        try:
            return int(text, 0)
        except ValueError:
            raise CmdError(f"Bad format for entry handle: {text!r} is not an integer") from None

    # ------------------------------------------------------------ tables
    def do_show_tables(self, args):
        "List tables defined in the P4 program: show_tables"
        expect_nargs(args, 0, "show_tables")
        return [self._table_str(t) for _, t in sorted(self.state.tables.items())]

    @staticmethod
    def _table_str(t):
        mk = ",\t".join(f"{k.name}({k.match_kind}, {k.width})" for k in t.keys)
        return "{0:30} [{1}, mk={2}]".format(t.name, "implementation=None", mk)

    @staticmethod
    def _action_str(a):
        return "{0:30} [{1}]".format(a.name, ",\t".join(f"{n}({w})" for n, w in a.params))

    def do_show_actions(self, args):
        "List actions defined in the P4 program: show_actions"
        expect_nargs(args, 0, "show_actions")
        return [self._action_str(a) for _, a in sorted(self.state.actions.items())]

    def do_table_show_actions(self, args):
        "List one table's actions: table_show_actions <table name>"
        expect_nargs(args, 1, "table_show_actions <table name>")
        t = self._table(args[0])
        return [self._action_str(t.actions[a]) for a in sorted(t.actions)]

    def do_table_info(self, args):
        "Show info about a table: table_info <table name>"
        expect_nargs(args, 1, "table_info <table name>")
        t = self._table(args[0])
        out = [self._table_str(t), "*" * 80]
        out += [self._action_str(t.actions[a]) for a in sorted(t.actions)]
        out.append(f"match type: {t.match_type}, size: {t.size}, entries: {t.num_entries()}, "
                   f"default: {t.default_action.name}"
                   + (" (const)" if t.const_default else "")
                   + (", const entries" if t.const_entries else ""))
        return out

    def do_table_num_entries(self, args):
        "Number of entries in a match table: table_num_entries <table name>"
        expect_nargs(args, 1, "table_num_entries <table name>")
        return str(self._table(args[0]).num_entries())

    def do_table_clear(self, args):
        "Clear all entries in a match table, but not the default entry: table_clear <table name>"
        expect_nargs(args, 1, "table_clear <table name>")
        self._table(args[0]).clear()
        return ""

    def do_table_set_default(self, args):
        "Set default action for a match table: table_set_default <table name> <action name> <action parameters>"
        expect_min_args(args, 2, "table_set_default <table name> <action name> <action parameters>")
        t = self._table(args[0])
        a = self._action(t, args[1])
        data = self._runtime_data(a, args[2:])
        t.set_default(a.name, data)
        return [f"Setting default action of {args[0]}",
                "{0:20} {1}".format("action:", args[1]),
                "{0:20} {1}".format("runtime data:", self._data_str(a, data))]

    def do_table_reset_default(self, args):
        "Reset default entry for a match table: table_reset_default <table name>"
        expect_nargs(args, 1, "table_reset_default <table name>")
        t = self._table(args[0])
        if t.const_default:
            raise TableError("DEFAULT_ACTION_IS_CONST", f"table {t.name} has a const default_action")
        t.reset_default()
        return ""

    def do_table_add(self, args):
        "Add entry to a match table: table_add <table name> <action name> <match fields> => <action parameters> [priority]"
        usage = "table_add <table name> <action name> <match fields> => <action parameters> [priority]"
        expect_min_args(args, 3, usage)
        t = self._table(args[0])
        a = self._action(t, args[1])
        rest = args[2:]
        priority = None
        if t.needs_priority:
            try:
                priority = int(rest[-1])
            except (ValueError, IndexError):
                raise CmdError(f"Table is {t.match_type}, but could not extract a valid priority from args "
                               f"(give it last; the lowest number wins)") from None
            rest = rest[:-1]
        if "=>" in rest:
            i = rest.index("=>")
            keys, params = rest[:i], rest[i + 1:]
        else:
            keys, params = rest, []
        if len(keys) != len(t.keys):
            self._match(t, args[0], keys)      # raises the key-count error
        data = self._runtime_data(a, params)
        match = self._match(t, args[0], keys)
        handle = t.add(match, a.name, data, priority)
        return [f"Adding entry to {t.match_type} match table {args[0]}",
                "{0:20} {1}".format("match key:", "\t".join(
                    match_to_str(k.match_kind, m, k.width) for k, m in zip(t.keys, match))),
                "{0:20} {1}".format("action:", args[1]),
                "{0:20} {1}".format("runtime data:", self._data_str(a, data)),
                f"Entry has been added with handle {handle}"]

    def do_table_modify(self, args):
        "Modify an entry: table_modify <table name> <action name> <entry handle> [action parameters]"
        expect_min_args(args, 3, "table_modify <table name> <action name> <entry handle> [action parameters]")
        t = self._table(args[0])
        a = self._action(t, args[1])
        handle = self._handle(args[2])
        params = args[3:]
        if params[:1] == ["=>"]:   # tolerated by simple_switch_CLI too
            params = params[1:]
        data = self._runtime_data(a, params)
        t.modify(handle, a.name, data)
        return f"Modifying entry {handle} for {t.match_type} match table {args[0]}"

    def do_table_delete(self, args):
        "Delete entry from a match table: table_delete <table name> <entry handle>"
        expect_nargs(args, 2, "table_delete <table name> <entry handle>")
        t = self._table(args[0])
        handle = self._handle(args[1])
        t.delete(handle)
        return f"Deleting entry {handle} from {args[0]}"

    def _dump_entry(self, t, e):
        w = max([20] + [len(k.name) for k in t.keys])
        out = [f"Dumping entry {hex(e.handle)}", "Match key:"]
        for k, m in zip(t.keys, e.match):
            kind = "ternary" if k.match_kind == "optional" else k.match_kind
            out.append("* {0:{w}}: {1:10}{2}".format(k.name, kind.upper(),
                                                   match_to_dump(k.match_kind, m, k.width), w=w))
        if e.priority is not None:
            out.append(f"Priority: {e.priority}")
        out.append(self._action_entry(e.action, e.args))
        return out

    def _action_entry(self, action, args):
        return f"Action entry: {action.name} - {self._data_str(action, args, ', ', plain_hex)}"

    def do_table_dump(self, args):
        "Display entries in a match-table: table_dump <table name>"
        expect_nargs(args, 1, "table_dump <table name>")
        t = self._table(args[0])
        out = ["==========", "TABLE ENTRIES"]
        for e in t.entries():
            out.append("**********")
            out += self._dump_entry(t, e)
        out += ["==========", "Dumping default entry",
                self._action_entry(t.default_action, t.default_args), "=========="]
        return out

    def do_table_dump_entry(self, args):
        "Display some information about a table entry: table_dump_entry <table name> <entry handle>"
        expect_nargs(args, 2, "table_dump_entry <table name> <entry handle>")
        t = self._table(args[0])
        return self._dump_entry(t, t.get_entry(self._handle(args[1])))

    def do_table_dump_entry_from_key(self, args):
        "Display some information about a table entry: table_dump_entry_from_key <table name> <match fields> [priority]"
        expect_min_args(args, 1, "table_dump_entry_from_key <table name> <match fields> [priority]")
        t = self._table(args[0])
        keys, priority = args[1:], None
        if t.needs_priority:
            try:
                priority = int(keys.pop())
            except (ValueError, IndexError):
                raise CmdError(f"Table is {t.match_type}, but could not extract a valid priority from args") from None
        match = self._match(t, args[0], keys)
        return self._dump_entry(t, t.find(match, priority))
