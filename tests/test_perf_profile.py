"""bench switch --profile's perf summary: parsing perf's report and grouping by where code lives."""
from softswitch.bench import perf_profile as pp

REPORT = """
# comment lines and blank ones are skipped

    15.50%  pipeline-fa4b7fef.so  [.] ss_ingress_pass.part.0.constprop.0
     6.60%  [kernel.kallsyms]     [k] _copy_to_iter
    10.80%  pipeline-fa4b7fef.so  [.] ss_egress.part.0
     2.00%  python3.11            [.] _PyEval_EvalFrameDefault
     0.60%  libc.so.6             [.] __memmove_evex_unaligned_erms
     0.10%  libffi.so.8           [.] ffi_call
  garbage%  line
"""


def test_report_lines_become_shares_largest_first():
    rows = pp.parse_report(REPORT)
    assert rows[0] == (15.5, "pipeline-fa4b7fef.so", "ss_ingress_pass.part.0.constprop.0")
    assert [r[0] for r in rows] == [15.5, 10.8, 6.6, 2.0, 0.6, 0.1]
    assert rows[2][2] == "_copy_to_iter"


def test_shares_are_grouped_by_where_the_code_lives():
    g = pp.group_shares(pp.parse_report(REPORT))
    assert round(g["pipeline + packet loop (generated C)"], 2) == 26.3
    assert g["kernel (sockets, veth, softirq)"] == 6.6
    assert g["Python interpreter (control rounds)"] == 2.0
    assert g["libc"] == 0.6 and g["other"] == 0.1


def test_summary_says_why_when_there_are_no_samples():
    assert "perf not installed" in pp.summary([])
    text = pp.summary(pp.parse_report(REPORT), top=2)
    assert "top 2 symbols" in text and "ss_egress.part.0" in text and "_copy_to_iter" not in text
