"""P4-16 front end: preprocess, parse (lark, LALR), check, and return the typed AST.

    prog = load("basic.p4", defines={"N": "4"}, include_dirs=["include"])

Every problem is raised as `softswitch.frontend.errors.P4Error` pointing at the
original file, line and column.
"""
from __future__ import annotations

import os
import re
from functools import lru_cache

import lark
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

import softswitch.frontend.p4ast as p4ast
from softswitch.frontend.errors import P4Error
from softswitch.frontend.preprocess import Source, preprocess

GRAMMAR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "p4.lark")

# Names that denote types, found before parsing so the lexer can tell `H x;`
# from `a = b;` (the same trick p4c's lexer uses).
_TYPE_DECL = re.compile(
    r"\b(?:header|header_union|struct|parser|control|package)\s+([A-Za-z_]\w*)"
    r"|\benum\s+(?:(?:bit|int)\s*<[^>]*>\s*|[A-Za-z_]\w*\s+(?=[A-Za-z_]))?([A-Za-z_]\w*)\s*\{"
    r"|\bextern\s+([A-Za-z_]\w*)\s*(?:<[^>{;(]*>\s*)?\{"
    # typedef/type only where a declaration starts: `meta.type = x;` must not count
    r"|(?:^|[;{}])\s*(?:@\w+(?:\([^()]*\))?\s*)*(?:typedef|type)\s[^;{}=]*?([A-Za-z_]\w*)\s*;", re.M)
# Type parameters: `extern register<T, I>`, `void hash<O, T, D, M>(`, `parser Parser<H, M>(`.
_TYPE_PARAMS = re.compile(r"\b(?:extern|parser|control|package)\s+[A-Za-z_]\w*\s*<([^<>;{}()]*)>"
                          r"|\b[A-Za-z_]\w*\s*<([A-Z][\w\s,]*)>\s*\(")

_STRING = re.compile(r'"(?:\\.|[^"\\])*"')

_NAMES_HOLDER: dict = {"types": frozenset()}


def _scan_type_names(text: str) -> frozenset:
    text = _STRING.sub('""', text)  # log_msg("struct x") declares nothing
    names = set()
    for m in _TYPE_DECL.finditer(text):
        names.add(next(g for g in m.groups() if g))
    for m in _TYPE_PARAMS.finditer(text):
        for part in (m.group(1) or m.group(2)).split(","):
            part = part.strip()
            if re.fullmatch(r"[A-Za-z_]\w*", part):
                names.add(part)
    return frozenset(names)


def _classify_ident(token: lark.Token) -> lark.Token:
    if token.value in _NAMES_HOLDER["types"]:
        token.type = "TYPE_IDENT"
    return token


@lru_cache(maxsize=1)
def _parser() -> lark.Lark:
    with open(GRAMMAR, encoding="utf-8") as f:
        grammar = f.read()
    # cache=True keeps the built LALR tables in the temp dir: ~10x faster start-up.
    return lark.Lark(grammar, parser="lalr", lexer="basic", propagate_positions=True, cache=True,
                     maybe_placeholders=False, lexer_callbacks={"IDENT": _classify_ident})


# What a user should read instead of lark's terminal names.
_TOKEN_WORDS = {
    "SEMICOLON": "';'", "LBRACE": "'{'", "RBRACE": "'}'", "LPAR": "'('", "RPAR": "')'",
    "COMMA": "','", "COLON": "':'", "EQUAL": "'='", "DOT": "'.'", "LSQB": "'['", "RSQB": "']'",
    "IDENT": "a name", "TYPE_IDENT": "a type name", "NUMBER": "a number", "STRING": "a string",
    "MORETHAN": "'>'", "LESSTHAN": "'<'", "SHR_GT": "'>'", "GENERIC_LT": "'<'",
}


def _describe(token: lark.Token) -> str:
    if token.type == "$END":
        return "end of input"
    if token.type == "TYPE_IDENT":
        return f"type name '{token.value}'"
    return f"'{token.value}'"


def _expected(expected) -> str:
    words = sorted({_TOKEN_WORDS.get(e, f"'{e[3:].lower()}'" if e.startswith("KW_") else e)
                    for e in expected})
    if len(words) > 6:
        return ""
    return " (expected " + ", ".join(words) + ")"


# Known P4 constructs the softswitch does not implement, named rather than "unknown type".
_UNSUPPORTED_TYPES = {
    "value_set": "parser value sets; use a table or constants in select",
    "action_selector": "action selectors",
    "Checksum16": "the Checksum16 extern; use verify_checksum/update_checksum",
}

_KEYWORDS = {"if", "else", "return", "exit", "apply", "state", "transition", "select", "const",
             "action", "table", "key", "actions", "default", "true", "false", "in", "out", "inout"}


def _unknown_type(text: str, tok, expected):
    """(name, line, col) when a syntax error is really an undeclared type name:
    `foo_t x;` lexes as two plain names because foo_t was never declared."""
    if tok.type == "IDENT" and "TYPE_IDENT" in expected:
        return str(tok), tok.line, tok.column
    if tok.type not in ("IDENT", "TYPE_IDENT"):
        return None
    m = re.search(r"([A-Za-z_]\w*)(\s+)$", text[:tok.start_pos])
    if not m or m.group(1) in _KEYWORDS or m.group(1) in _NAMES_HOLDER["types"]:
        return None
    start = m.start(1)
    line = text.count("\n", 0, start) + 1
    col = start - (text.rfind("\n", 0, start) + 1) + 1
    return m.group(1), line, col


def parse(source: Source) -> lark.Tree:
    """Parse preprocessed text into a lark tree; syntax errors become P4Error."""
    _NAMES_HOLDER["types"] = _scan_type_names(source.text)
    try:
        return _parser().parse(source.text)
    except UnexpectedToken as e:
        tok = e.token
        if tok.type == "$END":
            loc = source.loc(len(source.line_map), 1)
            raise source.error(loc, "syntax error: unexpected end of input") from None
        unknown = _unknown_type(source.text, tok, e.expected)
        if unknown is not None:
            name, line, col = unknown
            if name in _UNSUPPORTED_TYPES:
                raise source.error(source.loc(line, col), f"unsupported: {name} ({_UNSUPPORTED_TYPES[name]})") from None
            raise source.error(source.loc(line, col), f"unknown type '{name}'") from None
        loc = source.loc(tok.line, tok.column)
        hint = _expected(e.expected)
        before = source.text[:tok.start_pos].rstrip()
        if "SEMICOLON" in e.expected and before.count("\n") + 1 < tok.line and not before.endswith(";"):
            hint = " (missing ';' at the end of the line before?)"
        raise source.error(loc, f"syntax error: unexpected {_describe(tok)}{hint}") from None
    except UnexpectedCharacters as e:
        loc = source.loc(e.line, e.column)
        raise source.error(loc, f"syntax error: unexpected character '{e.char}'") from None
    except UnexpectedEOF:
        loc = source.loc(len(source.line_map), 1)
        raise source.error(loc, "syntax error: unexpected end of input") from None
    except UnexpectedInput as e:  # any other lark complaint still gets a position
        loc = source.loc(getattr(e, "line", 0), getattr(e, "column", 0))
        raise source.error(loc, f"syntax error: {e}") from None


def load_source(source: Source) -> p4ast.Program:
    from softswitch.frontend.typecheck import check_program  # late import: keeps parse() usable alone
    tree = parse(source)
    try:
        return check_program(tree, source)
    except RecursionError:
        main_file = source.line_map[-1][0] if source.line_map else "<input>"
        raise P4Error(p4ast.Loc(main_file, 0, 0), "unsupported: expressions or blocks nested too "
                                                 "deeply for the front end (split them up)") from None


def load(path, defines: dict | None = None, include_dirs=()) -> p4ast.Program:
    """Load and check a P4-16 v1model program from a file."""
    return load_source(preprocess(path=str(path), defines=defines, include_dirs=include_dirs))


def load_string(text: str, filename: str = "<string>", defines: dict | None = None,
                include_dirs=()) -> p4ast.Program:
    """Load and check a P4-16 program given as text (`filename` names it in errors)."""
    return load_source(preprocess(text=text, filename=filename, defines=defines,
                                  include_dirs=include_dirs))
