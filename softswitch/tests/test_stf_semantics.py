"""Semantics the softswitch shares with BMv2, each checked by a hand-written .p4/.stf pair in
softswitch/tests/p4c_stf (one per behaviour p4c's corpus exposed), on the softswitch and, when
it is installed, on BMv2 with the same files; plus the pure pieces behind them."""
from pathlib import Path

import pytest

from softswitch.stf.runner import run_test
from softswitch.stf.target_bmv2 import Bmv2Target, missing_tools
from softswitch.stf.target_softswitch import SoftswitchTarget

PAIRS = Path(__file__).parent / "p4c_stf"
# tables and refused are the runner's own fixtures (test_stf_runner.py)
SEMANTICS = ["entry_priority", "eval_order", "list_values", "action_exit", "table_bound", "header_union"]


@pytest.mark.parametrize("name", SEMANTICS)
def test_pair_passes_on_the_softswitch(name):
    out = run_test(PAIRS / f"{name}.stf", PAIRS / f"{name}.p4", SoftswitchTarget())
    assert (out.status, out.cause) == ("pass", ""), out.detail


@pytest.mark.bmv2
@pytest.mark.skipif(bool(missing_tools()), reason="BMv2 (simple_switch, p4c-bm2-ss) not on PATH")
@pytest.mark.parametrize("name", SEMANTICS)
def test_pair_passes_on_bmv2(name):
    out = run_test(PAIRS / f"{name}.stf", PAIRS / f"{name}.p4", Bmv2Target(settle=0.5))
    assert (out.status, out.cause) == ("pass", ""), out.detail


# ------------------------------------------------------------------ const entry priorities
def _entries(*prios):
    from softswitch.frontend import p4ast as A
    return [A.ConstEntry([], None, p, f) for p, f in prios]


def test_priority_annotations_are_bmv2_priorities_as_p4c_writes_them():
    from softswitch.compiler.pipeline import _bmv2_priorities
    assert _bmv2_priorities(_entries((None, ""), (None, ""), (None, ""))) == [1, 2, 3]
    # p4c: @priority(N) is N itself; the others keep their position, ties allowed
    assert _bmv2_priorities(_entries((3, "annotation"), (None, ""), (1, "annotation"))) == [3, 2, 1]
    assert _bmv2_priorities(_entries((None, ""), (1, "annotation"))) == [1, 1]


def test_priority_property_keeps_p4_16_order_largest_first():
    from softswitch.compiler.pipeline import BMV2_PRIORITY_BASE as B, _bmv2_priorities
    # P4-16 14.2.1.4: largest wins; one without a priority ranks just below the one before it
    got = _bmv2_priorities(_entries((None, ""), (5, "property"), (1, "annotation"), (None, "")))
    assert got == [B - 9, B - 5, B - 1, B - 0]
    assert sorted(range(4), key=got.__getitem__) == [0, 1, 2, 3]


def test_front_end_reads_priority_after_the_action_and_refuses_two(tmp_path):
    from softswitch.frontend.errors import P4Error
    from softswitch.frontend.parser import load
    prog = load(str(PAIRS / "entry_priority.p4"))
    table = next(d for d in prog.controls["Ing"].locals if getattr(d, "const_entries", None))
    assert [(e.priority, e.priority_from) for e in table.const_entries] == [
        (3, "annotation"), (None, ""), (1, "annotation"), (None, ""), (4, "annotation")]
    bad = (PAIRS / "entry_priority.p4").read_text().replace(
        "0x11          : set(2, 0xa2);", "priority=7: 0x11 : set(2, 0xa2) @priority(2);")
    (tmp_path / "bad.p4").write_text(bad)
    with pytest.raises(P4Error, match=r"entry priority given twice \(@priority and priority=\)"):
        load(str(tmp_path / "bad.p4"))


# ------------------------------------------------------------------ header unions
def test_pop_front_of_a_union_stack_invalidates_every_member_of_the_vacated_element(tmp_path):
    """The P4-16 rule (BMv2 1.15 leaves a member valid here: docs/softswitch.md, Differences)."""
    program = (PAIRS / "header_union.p4").read_text().replace(
        "        }\n        hdr.h.f =", "        }\n        if (hdr.h.op == 3) { hdr.us.pop_front(1); }\n        hdr.h.f =")
    assert "pop_front(1)" in program
    (tmp_path / "u.p4").write_text(program)
    # us[0].a and us[1].b extracted; after pop_front us[0] is the b, us[1] (its a) is invalid
    (tmp_path / "u.stf").write_text("expect 1 03 00 1234 $\npacket 0 03 00 aa 1234\n")
    out = run_test(tmp_path / "u.stf", tmp_path / "u.p4", SoftswitchTarget())
    assert (out.status, out.cause) == ("pass", ""), out.detail
    (tmp_path / "u.stf").write_text("expect 1 03 00 1234 aa $\npacket 0 03 00 aa 1234\n")
    out = run_test(tmp_path / "u.stf", tmp_path / "u.p4", SoftswitchTarget())
    assert out.status == "fail" and "4 bytes, expected at least 5" in out.detail, out.detail
