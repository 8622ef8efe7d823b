"""P4 width semantics of generated expressions, checked against numpy's fixed-width
integers (two's complement wrap) and against the P4-16 spec's definitions
(saturation, shifts >= width, slices, concatenation, casts). Pure: no front end, no root."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import softswitch.frontend.p4ast as A
from softswitch.compiler.codegen_control import FnGen
from softswitch.compiler.codegen_types import RUNTIME_NAMES, sign_extend
from softswitch.tests.astbuild import B, BOOL, binop, lit, param

NP = {(8, False): np.uint8, (16, False): np.uint16, (32, False): np.uint32, (64, False): np.uint64,
      (8, True): np.int8, (16, True): np.int16, (32, True): np.int32, (64, True): np.int64}


class _Unit:
    def __init__(self):
        self.n = itertools.count()

    def fresh(self, p):
        return f"{p}{next(self.n)}"

    def error_code(self, name):
        return 0


def T(w, signed):
    return A.IntT(w) if signed else A.BitT(w)


def evaluate(e, **env):
    g = FnGen(_Unit())
    code = g.expr(e)
    assert not g.lines
    return eval(code, dict(RUNTIME_NAMES), {"p_" + k: v for k, v in env.items()})


def run_assign(lhs, rhs, **env):
    g = FnGen(_Unit())
    g.ind = 0
    g.assign(lhs, g.expr(rhs), rhs)
    scope = {"p_" + k: v for k, v in env.items()}
    exec("\n".join(g.lines), dict(RUNTIME_NAMES), scope)
    return {k[2:]: v for k, v in scope.items()}


def np_op(op, a, b, w, signed):
    t = NP[(w, signed)]
    x, y = np.array([a], dtype=t), np.array([b], dtype=t)
    with np.errstate(over="ignore"):
        r = {"+": x + y, "-": x - y, "*": x * y}[op]
    return int(r.astype(t)[0])


def val(w, signed):
    return st.integers(-(1 << (w - 1)), (1 << (w - 1)) - 1) if signed else st.integers(0, (1 << w) - 1)


@pytest.mark.parametrize("w,signed", list(NP))
@pytest.mark.parametrize("op", ["+", "-", "*"])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_arithmetic_wraps_like_numpy(op, w, signed, data):
    a, b = data.draw(val(w, signed)), data.draw(val(w, signed))
    t = T(w, signed)
    got = evaluate(binop(op, param("a", t), param("b", t)), a=a, b=b)
    assert got == np_op(op, a, b, w, signed)


@settings(max_examples=200, deadline=None)
@given(a=st.integers(0, 255), b=st.integers(0, 255), x=st.integers(-128, 127), y=st.integers(-128, 127))
def test_saturating_ops_clamp(a, b, x, y):
    u, s = B(8), A.IntT(8)
    assert evaluate(binop("|+|", param("a", u), param("b", u)), a=a, b=b) == min(a + b, 255)
    assert evaluate(binop("|-|", param("a", u), param("b", u)), a=a, b=b) == max(a - b, 0)
    assert evaluate(binop("|+|", param("x", s), param("y", s)), x=x, y=y) == max(-128, min(127, x + y))
    assert evaluate(binop("|-|", param("x", s), param("y", s)), x=x, y=y) == max(-128, min(127, x - y))


@pytest.mark.parametrize("s", range(0, 40))
def test_shifts_including_amount_at_least_width(s):
    u, i = B(8), A.IntT(8)
    shl = evaluate(binop("<<", param("a", u), param("s", B(8))), a=0xB5, s=s)
    assert shl == ((0xB5 << s) & 0xFF if s < 8 else 0)
    assert evaluate(binop(">>", param("a", u), param("s", B(8))), a=0xB5, s=s) == (0xB5 >> s if s < 8 else 0)
    # signed right shift is arithmetic: numpy's right_shift on int8 for s < 8, all sign bits beyond
    got = evaluate(binop(">>", param("x", i), param("s", B(8))), x=-75, s=s)
    assert got == (int(np.right_shift(np.int8(-75), s)) if s < 8 else -1)
    got = evaluate(binop("<<", param("x", i), param("s", B(8))), x=-75, s=s)
    assert got == (int(np.left_shift(np.array([-75], np.int8), s)[0]) if s < 8 else 0)
    # a constant shift amount is folded the same way
    assert evaluate(binop("<<", param("a", u), lit(s, B(8))), a=0xB5) == ((0xB5 << s) & 0xFF if s < 8 else 0)


def test_huge_runtime_shift_amount_does_not_build_huge_ints():
    assert evaluate(binop("<<", param("a", B(32)), param("s", B(32))), a=1, s=0xFFFFFFFF) == 0


@settings(max_examples=200, deadline=None)
@given(a=st.integers(0, 0xFFFF), x=st.integers(-(1 << 15), (1 << 15) - 1))
def test_unary_minus_and_complement(a, x):
    assert evaluate(A.Unary("-", param("a", B(16)), type=B(16)), a=a) == (-a) % (1 << 16)
    assert evaluate(A.Unary("~", param("a", B(16)), type=B(16)), a=a) == int(np.invert(np.uint16(a)))
    assert evaluate(A.Unary("-", param("x", A.IntT(16)), type=A.IntT(16)), x=x) == \
        int(np.negative(np.array([x], np.int16))[0])
    assert evaluate(A.Unary("~", param("x", A.IntT(16)), type=A.IntT(16)), x=x) == int(np.invert(np.int16(x)))


@settings(max_examples=200, deadline=None)
@given(a=st.integers(0, 0xFFFF), b=st.integers(0, 0xFFFF))
def test_division_and_modulo_on_unsigned(a, b):
    assert evaluate(binop("/", param("a", B(16)), param("b", B(16))), a=a, b=b) == (a // b if b else 0)
    assert evaluate(binop("%", param("a", B(16)), param("b", B(16))), a=a, b=b) == (a % b if b else 0)


def test_division_of_signed_values_is_refused():
    from softswitch.compiler.codegen_expr import CodegenError
    with pytest.raises(CodegenError, match="unsupported"):
        evaluate(binop("/", param("x", A.IntT(8)), param("y", A.IntT(8))), x=1, y=1)


@settings(max_examples=200, deadline=None)
@given(a=st.integers(0, 0xFFFFFFFF), x=st.integers(-(1 << 31), (1 << 31) - 1),
       hi=st.integers(0, 31), span=st.integers(0, 31))
def test_slice_rvalue(a, x, hi, span):
    lo = max(0, hi - span)
    e = A.Slice(param("a", B(32)), hi, lo, type=B(hi - lo + 1))
    assert evaluate(e, a=a) == (a >> lo) & ((1 << (hi - lo + 1)) - 1)
    e = A.Slice(param("x", A.IntT(32)), hi, lo, type=B(hi - lo + 1))
    assert evaluate(e, x=x) == ((x & 0xFFFFFFFF) >> lo) & ((1 << (hi - lo + 1)) - 1)


@settings(max_examples=200, deadline=None)
@given(a=st.integers(0, 0xFFFF), v=st.integers(0, 0xFF), x=st.integers(-(1 << 15), (1 << 15) - 1))
def test_slice_lvalue_changes_only_its_bits(a, v, x):
    lhs = A.Slice(param("a", B(16)), 11, 4, type=B(8))
    out = run_assign(lhs, param("v", B(8)), a=a, v=v)
    assert out["a"] == (a & ~0x0FF0) | (v << 4)
    # on int<16> the result is re-read as two's complement
    lhs = A.Slice(param("x", A.IntT(16)), 15, 8, type=B(8))
    out = run_assign(lhs, param("v", B(8)), x=x, v=v)
    assert out["x"] == int(np.array([((x & 0xFF) | (v << 8))], np.uint16).view(np.int16)[0])


@settings(max_examples=200, deadline=None)
@given(a=st.integers(0, 0xFF), b=st.integers(0, 0xFFF), x=st.integers(-128, 127))
def test_concatenation(a, b, x):
    e = binop("++", param("a", B(8)), param("b", B(12)), t=B(20))
    assert evaluate(e, a=a, b=b) == (a << 12) | b
    e = binop("++", param("x", A.IntT(8)), param("b", B(12)), t=A.IntT(20))
    assert evaluate(e, x=x, b=b) == sign_extend(((x & 0xFF) << 12) | b, 20)


@settings(max_examples=200, deadline=None)
@given(a=st.integers(0, 0xFFFF), x=st.integers(-(1 << 15), (1 << 15) - 1))
def test_casts(a, x):
    def cast(e, t):
        return A.Cast(e, type=t)
    assert evaluate(cast(param("a", B(16)), B(8)), a=a) == int(np.uint16(a).astype(np.uint8))
    assert evaluate(cast(param("a", B(16)), B(32)), a=a) == a
    assert evaluate(cast(param("a", B(16)), A.IntT(16)), a=a) == int(np.uint16(a).view(np.int16))
    assert evaluate(cast(param("x", A.IntT(16)), B(16)), x=x) == int(np.int16(x).view(np.uint16))
    assert evaluate(cast(param("x", A.IntT(16)), A.IntT(32)), x=x) == x
    assert evaluate(cast(param("x", A.IntT(16)), A.IntT(8)), x=x) == int(np.int16(x).astype(np.int8))
    assert evaluate(cast(param("a", B(1)), BOOL), a=a & 1) is bool(a & 1)
    assert evaluate(cast(param("c", BOOL), B(1)), c=bool(a & 1)) == (a & 1)


def test_literal_of_width_wraps():
    assert evaluate(lit(300, B(8))) == 44
    assert evaluate(lit(200, A.IntT(8))) == -56
    assert evaluate(A.Cast(lit(-1), type=B(12))) == 0xFFF


def test_comparisons_and_booleans():
    t = A.IntT(8)
    assert evaluate(binop("<", param("x", t), param("y", t)), x=-3, y=2) is True
    assert evaluate(binop("&&", param("p", BOOL), A.Unary("!", param("q", BOOL), type=BOOL)), p=True, q=False)
    e = A.Ternary(param("p", BOOL), lit(1, B(4)), lit(2, B(4)), type=B(4))
    assert evaluate(e, p=False) == 2
