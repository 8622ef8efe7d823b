"""The switches' repair delay in the model (schemes/ina/repair_delay.py): a repaired chunk
waits for the timer loop's passes, and the iteration for the slowest slot's chain."""
import numpy as np
import pytest
from scipy.stats import binom

from schemes.ina.repair_delay import chunk_passes, repair_pass, slowest_chain_passes


def test_attempts_go_on_passes_1_2_4_8_16_then_every_backoff():
    assert [repair_pass(r, 7) for r in range(1, 9)] == [1, 2, 4, 8, 16, 24, 32, 40]
    assert [repair_pass(r, 0) for r in range(5, 8)] == [16, 17, 18]


def test_one_chunk_waits_the_pass_of_the_attempt_that_gets_through():
    p, q = 0.1, 0.2
    d = chunk_passes(p, q, 7)
    assert d.sum() == pytest.approx(1.0)
    assert d[0] == pytest.approx(0.9)
    assert d[1] == pytest.approx(p * (1 - q))
    assert d[2] == pytest.approx(p * q * (1 - q))
    assert d[3] == 0.0
    assert d[4] == pytest.approx(p * q * q * (1 - q))
    assert d[24] == pytest.approx(p * q ** 5 * (1 - q))
    assert list(chunk_passes(0.0, 0.5, 7)) == [1.0]


def test_the_last_window_s_worst_chunk_by_hand():
    # chains of one chunk: P(some chunk waits >= k passes) = 1 - (1 - p q^(r_k - 1))^n, with
    # r_k the first attempt whose pass is >= k (k = 1: 1, k = 2: 2, k = 3..4: 3, 5..8: 4, ...)
    p, q, n = 0.039, 0.02, 1024
    first_attempt = lambda k: next(r for r in range(1, 100) if repair_pass(r, 7) >= k)
    by_hand = sum(1 - (1 - p * q ** (first_attempt(k) - 1)) ** n for k in range(1, 200))
    assert slowest_chain_passes(n, n, p, q, 7) == pytest.approx(by_hand, rel=1e-6)
    assert 1.5 < by_hand < 1.7             # nearly every window has a chunk repaired twice


def test_without_repeats_a_chain_is_binomial_and_the_slowest_of_w_is_its_max():
    n, w, p = 8, 1024, 0.039               # bench schemes' 1 MB point: 8192 chunks on 1024 slots
    cdf = lambda k: binom.cdf(k, n, p)
    expected = sum(1 - cdf(k - 1) ** w for k in range(1, n + 1))
    assert slowest_chain_passes(n * w, w, p, 0.0, 7) == pytest.approx(expected, rel=1e-9)
    assert expected > 3 * n * p            # the slowest chain, far above the mean one


def test_uneven_chains_and_repeats_against_a_monte_carlo_count():
    rng = np.random.default_rng(7)
    chunks, slots, p, q, trials = 50, 16, 0.15, 0.3, 20000
    # each chunk: does it need a repair, and which attempt gets through (geometric in 1 - q)
    need = rng.random((trials, chunks)) < p
    attempt = rng.geometric(1 - q, size=(trials, chunks))
    delay = np.where(need, np.vectorize(lambda r: repair_pass(r, 7))(attempt), 0)
    per_slot = np.zeros((trials, slots))
    for j in range(chunks):                # chunk j rides slot j mod W, after j - W
        per_slot[:, j % slots] += delay[:, j]
    sampled = per_slot.max(axis=1)
    se = sampled.std() / np.sqrt(trials)
    assert slowest_chain_passes(chunks, slots, p, q, 7) == pytest.approx(sampled.mean(), abs=4 * se)


def test_no_loss_no_wait():
    assert slowest_chain_passes(8192, 1024, 0.0, 0.0, 7) == 0.0
    assert slowest_chain_passes(0, 1024, 0.1, 0.1, 7) == 0.0
    # fewer chunks than slots: one chain per chunk
    assert slowest_chain_passes(10, 1024, 0.1, 0.0, 7) == pytest.approx(1 - 0.9 ** 10)
