"""The softswitch's P4Info against p4c's own (--p4runtime-files) for the testbed's programs:
the same resources, names, ids, match fields, parameters, sizes and scopes (annotations aside)."""
from __future__ import annotations

import shutil
import subprocess

import pytest
from google.protobuf import text_format

from softswitch.p4runtime.p4info import build_p4info
from softswitch.p4runtime.proto import p4info as P
from softswitch.target.switch import Switch
from tests.bmv2_harness import AGGREGATION, FORWARD, skip_unless_bmv2

pytestmark = pytest.mark.bmv2
KINDS = ("tables", "actions", "counters", "direct_counters", "meters", "direct_meters", "registers")


def _comparable(info) -> dict:
    out = {}
    for kind in KINDS:
        for m in getattr(info, kind):
            c = type(m)()
            c.CopyFrom(m)
            c.preamble.ClearField("annotations")
            for sub in ("match_fields", "params", "action_refs"):
                for x in getattr(c, sub, ()):
                    x.ClearField("annotations")
            out[(kind, m.preamble.name)] = text_format.MessageToString(c)
    return out


@pytest.mark.parametrize("program,defines", [(FORWARD, {}), (AGGREGATION, {"AGG_K": "32"}),
                                             (AGGREGATION, {"AGG_K": "64"})])
def test_p4info_matches_p4cs(program, defines, tmp_path):
    skip_unless_bmv2()
    p4c = shutil.which("p4c-bm2-ss")
    if p4c is None:
        pytest.skip("p4c-bm2-ss not on PATH (the p4c driver alone does not take --p4runtime-files here)")
    txt = tmp_path / "p4info.txt"
    subprocess.run([p4c, *[f"-D{k}={v}" for k, v in defines.items()], "--p4runtime-files", str(txt),
                    "-o", str(tmp_path / "out.json"), str(program)], check=True, capture_output=True, timeout=300)
    ref = text_format.Parse(txt.read_text(), P.P4Info())
    mine = build_p4info(Switch.from_file(program, defines or None).state)
    a, b = _comparable(ref), _comparable(mine)
    assert sorted(a) == sorted(b)
    for key in a:
        assert a[key] == b[key], key
