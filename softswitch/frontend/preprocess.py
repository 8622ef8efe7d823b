"""C-like preprocessor for P4 source, as p4c runs `cpp` before parsing.

Supports `#include <...>` (the softswitch's own core.p4/v1model.p4, then
include dirs), `#include "..."` (relative to the including file first),
object-like `#define`/`#undef`, `#if/#ifdef/#ifndef/#elif/#else/#endif` with
integer expressions and `defined(X)`, `#error`, and `-D NAME=VALUE` from the
caller. The result keeps a line map so later stages report errors against the
original file and line. Comments are blanked (not removed) so columns stay put.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from softswitch.frontend.errors import P4Error
from softswitch.frontend.p4ast import Loc

P4INCLUDE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "p4include")
MAX_INCLUDE_DEPTH = 40

_IDENT = re.compile(r"[A-Za-z_]\w*")
_DIRECTIVE = re.compile(r"^\s*#\s*(\w*)(.*)$")
# Strings and identifiers, so macro expansion never rewrites text inside strings.
_EXPANDABLE = re.compile(r'"(?:\\.|[^"\\])*"|[A-Za-z_]\w*')


@dataclass
class Source:
    """Preprocessed text plus where each of its lines came from."""
    text: str
    line_map: list            # line_map[i] = (file, line) of output line i+1
    files: dict = field(default_factory=dict)    # file -> list of its original lines
    defines: dict = field(default_factory=dict)  # macros in effect at the end
    col_maps: dict = field(default_factory=dict)  # line index -> [(out start, out end, in start, in end)]

    def loc(self, line: int, col: int) -> Loc:
        """Original position of (line, col) in the preprocessed text (1-based)."""
        if 1 <= line <= len(self.line_map):
            f, ln = self.line_map[line - 1]
            return Loc(f, ln, self.original_col(line - 1, col))
        if self.line_map:
            f, ln = self.line_map[-1]
            return Loc(f, ln, col)
        return Loc("<input>", line, col)

    def original_col(self, index: int, col: int) -> int:
        """Column in the source line of output column `col` (1-based): text
        inside a macro's expansion maps to where the macro was used."""
        shift = 0
        for out_start, out_end, in_start, in_end in self.col_maps.get(index, ()):
            if col - 1 < out_start:
                break
            if col - 1 < out_end:
                return in_start + 1
            shift = (in_end - in_start) - (out_end - out_start) + shift
        return col + shift

    def line_text(self, loc: Loc) -> str | None:
        lines = self.files.get(loc.file)
        if lines and 1 <= loc.line <= len(lines):
            return lines[loc.line - 1]
        return None

    def error(self, loc: Loc, message: str) -> P4Error:
        return P4Error(loc, message, self.line_text(loc))


def _blank_comments(text: str) -> str:
    """Replace comments with spaces, keeping newlines and string literals intact."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"' and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


class _Preprocessor:
    def __init__(self, defines: dict | None, include_dirs):
        self.macros: dict[str, str] = {}
        for name, value in (defines or {}).items():
            self.macros[name] = "1" if value is None or value == "" else str(value)
        self.functions: dict[str, tuple[list, str]] = {}  # function-like macros: params, body
        self.include_dirs = [str(d) for d in include_dirs]
        self.out_lines: list[str] = []
        self.line_map: list[tuple[str, int]] = []
        self.col_maps: dict[int, list] = {}  # output line index -> macro spans on it
        self.files: dict[str, list[str]] = {}

    # ---------------------------------------------------------------- files
    def find_include(self, name: str, system: bool, current: str, loc: Loc, line: str) -> str:
        here = [] if system else [os.path.dirname(current) or "."]
        dirs = here + self.include_dirs + [P4INCLUDE]
        for d in dirs:
            candidate = os.path.join(d, name)
            if os.path.isfile(candidate):
                return os.path.normpath(candidate)
        raise P4Error(loc, f"cannot find include file '{name}' (add its folder with -I DIR)", line)

    def run_file(self, path: str, text: str, depth: int = 0) -> None:
        raw_lines = text.split("\n")
        self.files[path] = raw_lines
        lines = _blank_comments(text).split("\n")
        # (active_now, some_branch_taken, parent_active, loc_of_if, seen_else)
        stack: list[list] = []
        active = True
        i = 0
        while i < len(lines):
            first = i
            line = lines[i]
            # Join backslash continuations; the joined line maps to its first line.
            while line.endswith("\\") and i + 1 < len(lines):
                i += 1
                line = line[:-1] + " " + lines[i]
            i += 1
            m = _DIRECTIVE.match(line)
            if not m:
                self.emit(self.expand_line(line, Loc(path, first + 1, 1), raw_lines[first]) if active else "",
                          path, first + 1)
                for k in range(first + 1, i):
                    self.emit("", path, k + 1)
                continue
            for k in range(first, i):
                self.emit("", path, k + 1)
            name, rest = m.group(1), m.group(2).strip()
            loc = Loc(path, first + 1, line.index("#") + 1)
            src = raw_lines[first]
            if name in ("if", "ifdef", "ifndef"):
                if not active:
                    stack.append([False, True, False, loc, False])
                    continue
                if name == "if":
                    cond = self.eval_condition(rest, loc, src)
                else:
                    ident = _IDENT.match(rest)
                    if not ident:
                        raise P4Error(loc, f"#{name} needs a macro name", src)
                    cond = (ident.group(0) in self.macros) == (name == "ifdef")
                stack.append([cond, cond, True, loc, False])
                active = cond
            elif name in ("elif", "else", "endif"):
                if not stack:
                    raise P4Error(loc, f"#{name} without #if", src)
                frame = stack[-1]
                if name == "endif":
                    stack.pop()
                    active = frame[2]
                    continue
                if frame[4]:
                    raise P4Error(loc, f"#{name} after #else", src)
                if name == "else":
                    frame[4] = True
                    frame[0] = frame[2] and not frame[1]
                else:
                    frame[0] = frame[2] and not frame[1] and self.eval_condition(rest, loc, src)
                frame[1] = frame[1] or frame[0]
                active = frame[0]
            elif not active:
                continue
            elif name == "include":
                self.include(rest, path, loc, src, depth)
            elif name == "define":
                self.define(rest, loc, src)
            elif name == "undef":
                ident = _IDENT.match(rest)
                if not ident:
                    raise P4Error(loc, "#undef needs a macro name", src)
                self.macros.pop(ident.group(0), None)
                self.functions.pop(ident.group(0), None)
            elif name == "error":
                raise P4Error(loc, f"#error {rest}", src)
            elif name in ("warning", "pragma", "line", ""):
                continue  # harmless: nothing to do for the softswitch
            else:
                raise P4Error(loc, f"unknown preprocessor directive #{name}", src)
        if stack:
            frame = stack[-1]
            raise P4Error(frame[3], "unterminated #if (missing #endif)", raw_lines[frame[3].line - 1])

    def emit(self, text: str, path: str, line: int) -> None:
        self.out_lines.append(text)
        self.line_map.append((path, line))

    def include(self, rest: str, current: str, loc: Loc, src: str, depth: int) -> None:
        rest = self.expand(rest).strip()
        m = re.match(r'^<([^>]+)>$', rest) or re.match(r'^"([^"]+)"$', rest)
        if not m:
            raise P4Error(loc, '#include expects <file> or "file"', src)
        if depth >= MAX_INCLUDE_DEPTH:
            raise P4Error(loc, f"#include nested deeper than {MAX_INCLUDE_DEPTH} (include cycle?)", src)
        path = self.find_include(m.group(1), rest.startswith("<"), current, loc, src)
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as e:
            raise P4Error(loc, f"cannot read include file '{path}': {e}", src) from None
        self.run_file(path, text, depth + 1)

    def define(self, rest: str, loc: Loc, src: str) -> None:
        m = _IDENT.match(rest)
        if not m:
            raise P4Error(loc, "#define needs a macro name", src)
        name = m.group(0)
        body = rest[m.end():]
        if body.startswith("("):  # function-like: no space between name and '('
            close = body.find(")")
            params = [p.strip() for p in body[1:close].split(",")] if close > 0 else None
            if params == [""]:
                params = []
            if params is None or not all(_IDENT.fullmatch(p) for p in params):
                raise P4Error(loc, f"unsupported: macro parameters of '{name}' "
                                   f"(only plain names, no '...')", src)
            text = body[close + 1:].strip()
            if "#" in text:
                raise P4Error(loc, f"unsupported: '#' or '##' in macro '{name}'", src)
            self.functions[name] = (params, text)
            self.macros[name] = text
            return
        self.functions.pop(name, None)
        self.macros[name] = body.strip()

    # ---------------------------------------------------------------- macros
    def expand(self, text: str, hiding: frozenset = frozenset(), spans: list | None = None) -> str:
        """Replace macros; a macro is not expanded inside its own expansion.
        Function-like macros take balanced-parenthesis arguments on one line.
        `spans` (top level only) collects (output start, output end, input column)
        of each replacement, so errors inside it point at the macro's use."""
        if not self.macros:
            return text
        out, pos = [], 0
        for m in _EXPANDABLE.finditer(text):
            word = m.group(0)
            if word[0] == '"' or word not in self.macros or word in hiding or m.start() < pos:
                continue
            if word in self.functions:
                params, body = self.functions[word]
                args, end = _call_args(text, m.end())
                if args is None:
                    continue  # the name without '(' is left alone, as cpp does
                if len(args) != len(params) and not (not params and args == [""]):
                    raise ValueError(f"macro '{word}' takes {len(params)} argument(s), got {len(args)}")
                values = {p: self.expand(a.strip(), hiding) for p, a in zip(params, args)}
                body = _EXPANDABLE.sub(lambda b: values.get(b.group(0), b.group(0)), body)
                replacement = self.expand(body, hiding | {word})
            else:
                end = m.end()
                replacement = self.expand(self.macros[word], hiding | {word})
            out.append(text[pos:m.start()])
            if spans is not None:
                done = sum(len(x) for x in out)
                spans.append((done, done + len(replacement), m.start(), end))
            out.append(replacement)
            pos = end
        out.append(text[pos:])
        return "".join(out)

    def expand_line(self, text: str, loc: Loc, src: str) -> str:
        spans: list = []
        try:
            out = self.expand(text, spans=spans)
        except ValueError as e:
            raise P4Error(loc, str(e), src) from None
        if spans:
            self.col_maps[len(self.out_lines)] = spans
        return out

    def eval_condition(self, expr: str, loc: Loc, src: str) -> bool:
        # `defined` must be resolved before macro expansion rewrites its operand.
        expr = re.sub(r"\bdefined\s*\(\s*([A-Za-z_]\w*)\s*\)|\bdefined\s+([A-Za-z_]\w*)",
                      lambda m: "1" if (m.group(1) or m.group(2)) in self.macros else "0", expr)
        try:
            expr = self.expand(expr)
            return _CondEval(expr).value() != 0
        except ValueError as e:
            raise P4Error(loc, f"bad #if expression '{expr.strip()}': {e}", src) from None


def _call_args(text: str, pos: int):
    """Arguments of a macro call starting at text[pos] (after the name):
    (list of argument texts, end position) or (None, pos) without '('."""
    i = pos
    while i < len(text) and text[i] in " \t":
        i += 1
    if i >= len(text) or text[i] != "(":
        return None, pos
    depth, args, start = 0, [], i + 1
    for j in range(i, len(text)):
        c = text[j]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                args.append(text[start:j])
                return args, j + 1
        elif c == "," and depth == 1:
            args.append(text[start:j])
            start = j + 1
    raise ValueError("unterminated macro call (arguments must be on one line)")


class _CondEval:
    """Integer expression evaluator for #if (C semantics; unknown names are 0)."""
    _TOKEN = re.compile(r"\s*(0[xX][0-9a-fA-F]+|\d+|[A-Za-z_]\w*|&&|\|\||<<|>>|<=|>=|==|!=|[-+*/%()!~<>&|^?:])")
    _BINARY = [("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", "<=", ">", ">="),
               ("<<", ">>"), ("+", "-"), ("*", "/", "%")]

    def __init__(self, text: str):
        self.tokens, pos = [], 0
        text = text.rstrip()
        while pos < len(text):
            m = self._TOKEN.match(text, pos)
            if not m:
                raise ValueError(f"unexpected '{text[pos:].strip()}'")
            self.tokens.append(m.group(1))
            pos = m.end()
        self.i = 0

    def value(self) -> int:
        if not self.tokens:
            raise ValueError("empty expression")
        v = self.ternary()
        if self.i != len(self.tokens):
            raise ValueError(f"unexpected '{self.tokens[self.i]}'")
        return v

    def peek(self):
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self, tok=None):
        t = self.peek()
        if t is None or (tok is not None and t != tok):
            raise ValueError(f"expected '{tok}'" if tok else "unexpected end")
        self.i += 1
        return t

    def ternary(self) -> int:
        c = self.binary(0)
        if self.peek() == "?":
            self.take()
            a = self.ternary()
            self.take(":")
            b = self.ternary()
            return a if c else b
        return c

    def binary(self, level: int) -> int:
        if level == len(self._BINARY):
            return self.unary()
        v = self.binary(level + 1)
        while self.peek() in self._BINARY[level]:
            op = self.take()
            r = self.binary(level + 1)
            if op in ("/", "%") and r == 0:
                raise ValueError("division by zero")
            v = {"||": lambda: int(bool(v) or bool(r)), "&&": lambda: int(bool(v) and bool(r)),
                 "|": lambda: v | r, "^": lambda: v ^ r, "&": lambda: v & r,
                 "==": lambda: int(v == r), "!=": lambda: int(v != r), "<": lambda: int(v < r),
                 "<=": lambda: int(v <= r), ">": lambda: int(v > r), ">=": lambda: int(v >= r),
                 "<<": lambda: v << r, ">>": lambda: v >> r, "+": lambda: v + r, "-": lambda: v - r,
                 "*": lambda: v * r, "/": lambda: int(v / r), "%": lambda: v - r * int(v / r)}[op]()
        return v

    def unary(self) -> int:
        t = self.take()
        if t == "(":
            v = self.ternary()
            self.take(")")
            return v
        if t == "!":
            return int(not self.unary())
        if t == "~":
            return ~self.unary()
        if t == "-":
            return -self.unary()
        if t == "+":
            return self.unary()
        if t[0].isdigit():
            return int(t, 0) if not re.fullmatch(r"0\d+", t) else int(t, 8)
        if t[0].isalpha() or t[0] == "_":
            return 0  # an undefined macro name counts as 0, as in C
        raise ValueError(f"unexpected '{t}'")


def preprocess(path: str | None = None, text: str | None = None, filename: str | None = None,
               defines: dict | None = None, include_dirs=()) -> Source:
    """Preprocess a file (`path`) or a string (`text` named `filename`)."""
    pp = _Preprocessor(defines, include_dirs)
    if text is None:
        if path is None:
            raise ValueError("preprocess needs a path or a text")
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as e:
            raise P4Error(Loc(path, 0, 0), f"cannot read P4 program: {e}") from None
        filename = path
    filename = filename or "<string>"
    pp.run_file(filename, text)
    return Source("\n".join(pp.out_lines), pp.line_map, pp.files, dict(pp.macros), pp.col_maps)


def parse_define_args(items) -> dict:
    """['A=1', 'B'] (the -D flags) -> {'A': '1', 'B': '1'}."""
    out = {}
    for item in items or ():
        name, _, value = item.partition("=")
        if not _IDENT.fullmatch(name):
            raise ValueError(f"bad -D '{item}': expected NAME or NAME=VALUE")
        out[name] = value if value != "" else "1"
    return out
