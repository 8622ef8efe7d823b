"""agg_bench.p4 on the softswitch: the aggregated int32 values equal numpy's
int32 sum (with two's complement wrap), duplicates are not counted twice, and
the slot is reusable after completion. Also checks measure_inproc's contract."""
import struct

import numpy as np
import pytest

import softswitch.bench.inproc as B
from softswitch.target.switch import Switch


def agg_frame(slot, worker, fanin, vals):
    payload = struct.pack("!HBBI", slot, worker, fanin, 0) + struct.pack(f"!{len(vals)}i", *vals)
    return B.udp_frame(bytes([10, 0, 9, 9]), bytes([10, 0, 1, 1]), B.AGG_UDP_PORT, payload)


@pytest.fixture(scope="module", params=[32, 64])
def sw(request):
    return request.param, Switch.from_file(B.AGG_BENCH_P4, {"K": str(request.param)})


def test_aggregate_equals_numpy_int32_sum(sw):
    k, s = sw
    rng = np.random.default_rng(7)
    fanin = 3
    vals = rng.integers(-(2**31), 2**31, size=(fanin, k), dtype=np.int64).astype(np.int32)
    outs = []
    for w in range(fanin):
        outs.append(s.process(5, agg_frame(11, w, fanin, [int(v) for v in vals[w]])))
        if w == 0:  # a duplicate of worker 0 is ignored
            assert s.process(5, agg_frame(11, 0, fanin, [int(v) for v in vals[0]])) == []
    assert outs[0] == [] and outs[1] == []
    (port, frame), = outs[2]
    assert port == 5  # the result goes back out of the ingress port
    got = np.array(struct.unpack(f"!{k}i", frame[-4 * k:]), dtype=np.int32)
    want = vals.sum(axis=0, dtype=np.int32)   # numpy int32 wraps the same way
    assert np.array_equal(got, want)
    # the slot was reset: a new round starts from zero
    (_, frame2), = s.process(5, agg_frame(11, 0, 1, [1] * k))
    assert struct.unpack(f"!{k}i", frame2[-4 * k:]) == (1,) * k


def test_measure_inproc_returns_a_positive_rate():
    kpps = B.measure_inproc(B.FORWARD_P4, None, B.forward_packets(), 0.05, B.FORWARD_COMMANDS)
    assert kpps > 1.0
