"""The benchmark measures what it says: its workloads take the intended pipeline paths."""
import numpy as np

from softswitch.bench.veth import _read_frames, _write_frames
from softswitch.bench.workloads import agg_frame_source, aggregation_workload, forward_workload
from softswitch.control.commands import RuntimeAPI
from softswitch.target.switch import Switch
from workers.agg_packet import RESULT, decode, udp_payload


def _switch(wl):
    sw = Switch.from_file(wl.program, defines=wl.defines)
    api = RuntimeAPI(sw.state)
    for cmd in wl.commands:
        reply = api.execute(cmd)
        assert not reply.startswith("Error"), (cmd, reply)
    return sw


def test_frame_file_round_trip():
    frames = [b"a" * 60, b"", bytes(range(256)) * 6]
    assert _read_frames(_write_frames(frames)) == frames


def test_forward_workload_goes_out_of_port_2_with_ttl_decremented():
    wl = forward_workload()
    sw = _switch(wl)
    for frame in wl.frames:
        out = sw.process(1, frame)
        assert len(out) == 1 and out[0][0] == 2
        assert out[0][1][22] == frame[22] - 1


def test_agg_frame_source_counts_generations_per_slot():
    wl = aggregation_workload(32, slots=4)
    nxt = agg_frame_source(wl.frames)
    seen = [decode(udp_payload(nxt())[2]) for _ in range(12)]
    assert [(f.slot, f.gen, f.shadow) for f in seen[:5]] == [(0, 1, 1), (1, 1, 1), (2, 1, 1), (3, 1, 1), (0, 2, 0)]
    assert all(f.slot == i % 4 and f.gen == i // 4 + 1 for i, f in enumerate(seen))


def test_every_aggregation_frame_completes_its_slot_and_is_multicast_to_port_2():
    for k in (32, 64):
        wl = aggregation_workload(k, slots=8)
        sw = _switch(wl)
        nxt = agg_frame_source(wl.frames)
        for _ in range(40):               # five uses of every slot: fresh generations each time
            frame = nxt()
            sent = decode(udp_payload(frame)[2])
            out = sw.process(1, frame)
            assert len(out) == 1 and out[0][0] == 2, out
            src, dst, payload = udp_payload(out[0][1])
            got = decode(payload)
            assert dst == "10.0.2.2"
            assert got.flags & RESULT and got.gen == sent.gen and got.slot == sent.slot
            np.testing.assert_array_equal(got.values, sent.values)   # fan-in 1: the sum is the value


def test_the_c_relay_forwards_on_veths_and_says_what_is_wrong(tmp_path):
    """The bench's do-nothing C forwarder: built, relays real frames across a veth bed,
    stops on SIGTERM, and explains a bad interface."""
    import os
    import subprocess
    from argparse import Namespace

    import pytest

    from softswitch.bench.veth import VethBed, forward_workload, measure_c_relay, measure_veth_rate
    from softswitch.native.build import build_executable

    if os.geteuid() != 0:
        pytest.skip("needs root (veths and namespaces)")
    exe = build_executable(os.path.join(os.path.dirname(__file__), "..", "bench", "c_relay.c"))
    bad = subprocess.run([str(exe), "no-such-if0", "no-such-if1"], capture_output=True, text=True, timeout=10)
    assert bad.returncode == 1 and "cannot open AF_PACKET sockets on no-such-if0" in bad.stderr
    bed = VethBed(f"xt{os.getpid() % 100000}")
    try:
        bed.up()
        assert measure_veth_rate(bed, forward_workload().frames, 0.2, 0.3)[0] == 0   # nothing relays yet
        assert measure_c_relay(bed, Namespace(warmup=0.2, window=0.5)) > 1000
    finally:
        bed.down()
    assert bed.leftovers() == []
