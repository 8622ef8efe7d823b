"""Quantization: no int32 overflow for up to 1024 workers, error within the stated bound."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from workers.quantize import (INT32_MAX, block_exponents, choose_exponent, dequantize, quantize,
                              sum_error_bound)


@pytest.mark.parametrize("n", [1, 2, 3, 8, 100, 1024])
@pytest.mark.parametrize("max_abs", [1e-30, 1e-6, 0.37, 1.0, 2.0, 1000.0, 3e38])
def test_exponent_is_the_largest_that_cannot_overflow(n, max_abs):
    e = choose_exponent(max_abs, n)
    limit = INT32_MAX // n
    assert max_abs * 2.0**e <= limit or e == -128
    if e < 127:
        assert max_abs * 2.0 ** (e + 1) > limit  # one more bit would overflow


def test_worst_case_sum_of_1024_workers_fits_int32():
    n, m = 1024, 0.5
    e = choose_exponent(m, n)
    q, sat = quantize(np.array([m, -m]), e, n)
    assert not sat
    total = q.astype(np.int64) * n           # all workers at the extreme
    assert total.max() <= INT32_MAX and total.min() >= -INT32_MAX


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 1024), seed=st.integers(0, 2**32 - 1),
       scale=st.floats(1e-8, 1e6), length=st.integers(1, 300))
def test_round_trip_sum_within_bound(n, seed, scale, length):
    rng = np.random.default_rng(seed)
    workers = min(n, 16)   # simulate a few workers; the bound uses n (the exponent's headroom)
    xs = (rng.uniform(-1, 1, size=(workers, length)) * scale).astype(np.float32)
    m = float(np.abs(xs).max())
    e = choose_exponent(m, n)
    qs = []
    for x in xs:
        q, sat = quantize(x, e, n)
        assert not sat and q.dtype == np.int32
        qs.append(q)
    qsum = np.sum(np.array(qs, dtype=np.int64), axis=0)
    assert np.abs(qsum).max() <= INT32_MAX
    err = np.abs(dequantize(qsum, e) - xs.astype(np.float64).sum(axis=0)).max()
    assert err <= sum_error_bound(e, workers)


def test_error_bound_is_tight_enough_to_matter():
    # 4 workers, gradients in [-1, 1]: the bound must be far below the values.
    e = choose_exponent(1.0, 4)
    assert sum_error_bound(e, 4) < 1e-8


def test_clipping_is_reported():
    e = choose_exponent(1.0, 4)
    q, sat = quantize(np.array([0.5, 3.0, -7.0]), e, 4)
    assert sat
    assert q[1] == INT32_MAX // 4 and q[2] == -(INT32_MAX // 4)
    _, sat = quantize(np.array([0.5, -1.0]), e, 4)
    assert not sat


def test_zero_tensor():
    e = choose_exponent(0.0, 8)
    q, sat = quantize(np.zeros(5), e, 8)
    assert not sat and not q.any()


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -1.0])
def test_bad_max_abs_is_rejected_with_advice(bad):
    with pytest.raises(ValueError, match="finite"):
        choose_exponent(bad, 4)


def test_too_many_workers_rejected():
    with pytest.raises(ValueError, match="1..1024"):
        choose_exponent(1.0, 1025)


def test_nan_values_rejected():
    with pytest.raises(ValueError, match="NaN"):
        quantize(np.array([1.0, np.nan]), 3, 2)


def test_block_exponents_follow_block_maxima():
    x = np.concatenate([np.full(4, 1e-3), np.full(4, 100.0), np.full(2, 0.5)])
    es = block_exponents(x, 4, 8)
    assert list(es) == [choose_exponent(1e-3, 8), choose_exponent(100.0, 8), choose_exponent(0.5, 8)]
    assert es[0] > es[2] > es[1]


@settings(max_examples=60, deadline=None)
@given(e=st.integers(-128, 127), n=st.integers(1, 1024), seed=st.integers(0, 2**32 - 1),
       log_scale=st.integers(-40, 40))
def test_scaling_is_exactly_ldexp(e, n, seed, log_scale):
    """quantize/dequantize scale by multiplying with 2**e: the same numbers as ldexp, the
    definition (docs/ina.md), including clipped values and subnormal or huge products."""
    x = np.random.default_rng(seed).normal(size=257) * 2.0**log_scale
    x[:3] = [0.0, -0.0, 5e-324]
    limit = INT32_MAX // n
    want = np.clip(np.rint(np.ldexp(x, e)), -limit, limit).astype(np.int32)
    q, sat = quantize(x, e, n)
    np.testing.assert_array_equal(q, want)
    assert sat == bool(np.any(np.abs(np.rint(np.ldexp(x, e))) > limit))
    np.testing.assert_array_equal(dequantize(q, e), np.ldexp(q.astype(np.float64), -e))


def test_empty_and_infinite_inputs():
    q, sat = quantize(np.array([]), 3, 2)
    assert q.size == 0 and q.dtype == np.int32 and not sat
    with pytest.raises(ValueError, match="NaN or inf"):
        quantize(np.array([1.0, -np.inf]), 3, 2)


def test_quantize_with_kept_buffers_gives_the_same_values_and_reuses_them():
    from workers.quantize import Scratch
    rng = np.random.default_rng(3)
    scratch = Scratch()
    x = rng.normal(0, 2, 1000)
    x[:3] = [9.0, -9.0, 0.0]                            # saturated both ways
    e = choose_exponent(4.0, 4)
    q1, s1 = quantize(x, e, 4, scratch)
    want, s_want = quantize(x, e, 4)
    assert s1 == s_want and q1.dtype == np.int32 and np.array_equal(q1, want)
    q2, _ = quantize(x[::-1], e, 4, scratch)
    assert q2 is q1 and np.array_equal(q2, want[::-1])  # the same buffer, overwritten
    q3, _ = quantize(x[:10], e, 4, scratch)
    assert q3 is not q1 and np.array_equal(q3, want[:10])
