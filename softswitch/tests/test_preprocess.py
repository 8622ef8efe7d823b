"""The C-like preprocessor: includes, macros, conditionals, -D, and the line map."""
import pytest

from softswitch.frontend.errors import P4Error
from softswitch.frontend.preprocess import P4INCLUDE, parse_define_args, preprocess


def lines(src):
    return src.text.split("\n")


def test_object_macros_expand_but_not_inside_strings_or_other_words():
    src = preprocess(text='#define N 4\n#define M (N + 1)\nbit<M> x = N; @name("N") NN;\n',
                     filename="m.p4")
    assert lines(src)[2] == 'bit<(4 + 1)> x = 4; @name("N") NN;'


def test_self_referencing_macro_does_not_loop():
    src = preprocess(text="#define A A + 1\nA\n", filename="m.p4")
    assert lines(src)[1] == "A + 1"


def test_function_like_macros():
    text = ("#define IS(m) (m.x == 3)\n#define ADD(a, b) ((a) + (b))\n#define N 4\n#define E() 7\n"
            "if (IS(sm)) y = ADD(N, f(1, 2)); IS\n" 'E() "IS(q)" ADD(ADD(1, 2), 3)\n')
    out = lines(preprocess(text=text, filename="f.p4"))
    assert out[4] == "if ((sm.x == 3)) y = ((4) + (f(1, 2))); IS"
    assert out[5] == '7 "IS(q)" ((((1) + (2))) + (3))'


def test_undef_removes_a_macro():
    src = preprocess(text="#define A 1\n#undef A\nA\n", filename="m.p4")
    assert lines(src)[2] == "A"


@pytest.mark.parametrize("cond,taken", [
    ("1", True), ("0", False), ("defined(X)", True), ("defined Y", False), ("!defined(Y)", True),
    ("X == 3 && V >= 20200408", True), ("X > 3 || 0", False), ("(X << 2) == 12", True),
    ("UNKNOWN", False), ("X ? 0 : 1", False), ("0x10 == 16", True), ("-1 < 0", True),
    ("7 / 2 == 3 && 7 % 2 == 1", True),
])
def test_if_expressions(cond, taken):
    src = preprocess(text=f"#define X 3\n#define V 20200408\n#if {cond}\nyes\n#else\nno\n#endif\n",
                     filename="c.p4")
    body = [l for l in lines(src) if l.strip()]
    assert body == (["yes"] if taken else ["no"])


def test_elif_chain_takes_first_true_branch_only():
    text = "#if 0\na\n#elif 1\nb\n#elif 1\nc\n#else\nd\n#endif\n"
    assert [l for l in lines(preprocess(text=text, filename="e.p4")) if l.strip()] == ["b"]


def test_nested_conditionals_in_a_false_branch_stay_off():
    text = "#ifdef NOPE\n#if 1\na\n#else\nb\n#endif\n#endif\nc\n"
    assert [l for l in lines(preprocess(text=text, filename="n.p4")) if l.strip()] == ["c"]


def test_command_line_defines_and_ifndef_defaults():
    text = "#ifndef K\n#define K 32\n#endif\nK\n"
    assert lines(preprocess(text=text, filename="k.p4"))[3] == "32"
    assert lines(preprocess(text=text, filename="k.p4", defines={"K": "64"}))[3] == "64"


def test_parse_define_args():
    assert parse_define_args(["A=1", "B", "C="]) == {"A": "1", "B": "1", "C": "1"}
    with pytest.raises(ValueError, match="bad -D '1X'"):
        parse_define_args(["1X"])


def test_comments_are_blanked_keeping_columns_and_lines():
    text = "a /* x\n y */ b // c\n\"/* not a comment */\"\n"
    out = lines(preprocess(text=text, filename="c.p4"))
    assert out[0] == "a     "
    assert out[1] == "      b     "
    assert out[2] == '"/* not a comment */"'


def test_line_map_points_into_included_files(tmp_path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "h.p4").write_text("// header\nheader_line\n")
    (tmp_path / "main.p4").write_text('first\n#include "inc/h.p4"\nlast\n')
    src = preprocess(path=str(tmp_path / "main.p4"))
    out = lines(src)
    i = out.index("header_line")
    assert src.loc(i + 1, 1).file.endswith("inc/h.p4") and src.loc(i + 1, 1).line == 2
    j = out.index("last")
    assert src.loc(j + 1, 3).line == 3 and src.loc(j + 1, 3).col == 3
    assert str(tmp_path / "main.p4") in src.files


def test_local_include_searches_including_folder_then_include_dirs(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "main.p4").write_text('#include "common.p4"\n')
    (tmp_path / "b" / "common.p4").write_text("from_b\n")
    with pytest.raises(P4Error, match="cannot find include file 'common.p4'"):
        preprocess(path=str(tmp_path / "a" / "main.p4"))
    src = preprocess(path=str(tmp_path / "a" / "main.p4"), include_dirs=[tmp_path / "b"])
    assert "from_b" in src.text
    (tmp_path / "a" / "common.p4").write_text("from_a\n")
    assert "from_a" in preprocess(path=str(tmp_path / "a" / "main.p4"), include_dirs=[tmp_path / "b"]).text


def test_system_includes_come_from_softswitch_p4include():
    src = preprocess(text="#include <core.p4>\n#include <v1model.p4>\n#include <core.p4>\n", filename="s.p4")
    assert any(f.startswith(P4INCLUDE) and f.endswith("v1model.p4") for f in src.files)
    assert src.text.count("extern packet_in") == 1  # include guard works


def test_include_cycle_is_reported(tmp_path):
    (tmp_path / "x.p4").write_text('#include "x.p4"\n')
    with pytest.raises(P4Error, match="include cycle"):
        preprocess(path=str(tmp_path / "x.p4"))


def test_line_continuation_joins_define():
    src = preprocess(text="#define LONG 1 + \\\n  2\nLONG\n", filename="l.p4")
    assert lines(src)[2].split() == ["1", "+", "2"]


@pytest.mark.parametrize("text,line,message", [
    ("#if 1\nx\n", 1, "unterminated #if (missing #endif)"),
    ("#endif\n", 1, "#endif without #if"),
    ("#if 1\n#else\n#else\n#endif\n", 3, "#else after #else"),
    ("#if 1 +\n#endif\n", 1, "bad #if expression '1 +': unexpected end"),
    ("#if 1 / 0\n#endif\n", 1, "bad #if expression '1 / 0': division by zero"),
    ("#ifdef\n#endif\n", 1, "#ifdef needs a macro name"),
    ("#include nothing\n", 1, '#include expects <file> or "file"'),
    ("#error stop here\n", 1, "#error stop here"),
    ("#frobnicate\n", 1, "unknown preprocessor directive #frobnicate"),
    ("x\n  #define F(a, 1) a\n", 2, "unsupported: macro parameters of 'F' (only plain names, no '...')"),
    ("#define F(a) a\n\nF(1, 2)\n", 3, "macro 'F' takes 1 argument(s), got 2"),
    ("#define F(a) a\nF((1, 2)\n", 2, "unterminated macro call (arguments must be on one line)"),
])
def test_errors_name_file_and_line(text, line, message):
    with pytest.raises(P4Error) as e:
        preprocess(text=text, filename="bad.p4")
    assert e.value.loc.file == "bad.p4" and e.value.loc.line == line
    assert e.value.message == message


def test_columns_after_a_macro_map_back_to_the_source_line():
    src = preprocess(text="#define LONG_NAME 1\n#define S 123456789\nx = LONG_NAME + S + y;\n", filename="c.p4")
    out = lines(src)[2]
    assert out == "x = 1 + 123456789 + y;"
    assert src.loc(3, out.index("y") + 1).col == "x = LONG_NAME + S + y;".index("y") + 1
    assert src.loc(3, out.index("123") + 5).col == "x = LONG_NAME + S + y;".index("S") + 1
    assert src.loc(3, 1).col == 1
