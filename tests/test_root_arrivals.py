"""analysis/root_arrivals.py on a hand-made pcap: per iteration, each datacenter's last
chunk's first arrival at the global point, re-sends and other traffic ignored; spreads."""
import numpy as np
import pytest

from analysis.root_arrivals import arrivals, read_pcap, root_arrivals, spreads
from tests.bmv2_harness import write_pcap as write_frames
from workers import agg_packet as ap

ROOT = "10.0.0.1"


def frame(src, slot, gen, flags=ap.DATA, job=1, dst=ROOT):
    payload = ap.encode(job, flags, slot, gen, 0, 0, 2, 0, np.zeros(32, np.int32))
    return ap.udp_frame("00:00:00:00:00:01", "00:00:00:00:00:02", src, dst, payload)


def write_pcap(path, records):
    """(time in s, frame) records, through the BMv2 harness's writer (microseconds after 0)."""
    write_frames(path, [(round(t * 1e6), fr) for t, fr in records], t0=0)


def test_last_chunk_per_datacenter_and_iteration(tmp_path):
    # window 2, 3 chunks per iteration: seq 0..2 iteration 0, 3..5 iteration 1
    # seq = (gen - 1) * 2 + slot: seq 0 (0,1), 1 (1,1), 2 (0,2), 3 (1,2), 4 (0,3), 5 (1,3)
    recs = [(1.0, frame("10.1.1.254", 0, 1)), (1.1, frame("10.2.0.254", 0, 1)),
            (1.2, frame("10.1.1.254", 1, 1)), (1.5, frame("10.2.0.254", 1, 1)),
            (1.3, frame("10.1.1.254", 0, 2)), (2.0, frame("10.2.0.254", 0, 2)),
            (2.5, frame("10.2.0.254", 0, 2, ap.DATA | ap.RETX)),        # a re-send: later, ignored
            (3.0, frame("10.1.1.254", 1, 2)), (3.4, frame("10.2.0.254", 1, 2)),
            (3.1, frame("10.1.1.254", 0, 3)), (3.2, frame("10.2.0.254", 0, 3)),
            (3.3, frame("10.1.1.254", 1, 3)), (3.9, frame("10.2.0.254", 1, 3)),
            (4.0, frame("10.2.0.254", 1, 3, ap.RESULT)),                # not a contribution
            (4.1, frame("10.3.0.254", 1, 3, job=2)),                    # another job
            (4.2, frame("10.3.0.254", 1, 3, dst="10.0.0.2"))]           # another point
    write_pcap(tmp_path / "g1-eth1_in.pcap", recs[:7])
    write_pcap(tmp_path / "g1-eth2_in.pcap", recs[7:])
    assert [t for t, _ in read_pcap(tmp_path / "g1-eth1_in.pcap")] == pytest.approx([r[0] for r in recs[:7]])
    arr = root_arrivals(tmp_path, "g1", ROOT, 1, window=2, chunks=3)
    assert arr == {0: pytest.approx({1: 1.3, 2: 2.0}), 1: pytest.approx({1: 3.3, 2: 3.9})}
    assert spreads(arr) == pytest.approx({0: 0.7, 1: 0.6})
    from analysis.root_arrivals import chunk_arrivals, chunk_spreads, root_frames
    by_chunk = chunk_arrivals(root_frames(tmp_path, "g1"), ROOT, 1, window=2)
    assert by_chunk[2] == pytest.approx({1: 1.3, 2: 2.0})         # the re-send does not count
    # iteration 0: chunks 0, 1, 2 spread 0.1, 0.3, 0.7; iteration 1: 0.4, 0.1, 0.6
    assert chunk_spreads(by_chunk, 3) == pytest.approx({0: 1.1 / 3, 1: 1.1 / 3})
    assert arrivals([], ROOT, 1, 2, 3) == {} and spreads({}) == {}


def test_missing_or_foreign_files_say_what_to_do(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"switch.pcap: \[g1\]"):
        root_arrivals(tmp_path, "g1", ROOT, 1, 2, 3)
    (tmp_path / "g1-eth1_in.pcap").write_bytes(b"\x00" * 40)
    with pytest.raises(ValueError, match="not a little-endian pcap"):
        root_arrivals(tmp_path, "g1", ROOT, 1, 2, 3)
