"""The scapy layer and the fast codec describe the same bytes."""
import numpy as np
import pytest
from hypothesis import given, strategies as st
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.utils import rdpcap, wrpcap

from workers import agg_packet as ap


@given(job=st.integers(0, 255), flags=st.integers(0, 15), slot=st.integers(0, 2**15 - 1),
       gen=st.integers(1, 2**32 - 1), offset=st.integers(0, 2**32 - 1), sender=st.integers(0, 31),
       fan_in=st.integers(1, 32), exponent=st.integers(-128, 127), k=st.sampled_from([32, 64]),
       seed=st.integers(0, 2**31))
def test_codec_and_scapy_agree(job, flags, slot, gen, offset, sender, fan_in, exponent, k, seed):
    vals = np.random.default_rng(seed).integers(-2**31, 2**31, size=k, dtype=np.int64).astype(np.int32)
    payload = ap.encode(job, flags, slot, gen, offset, sender, fan_in, exponent, vals)
    assert len(payload) == ap.AGG_HEADER_LEN + 4 * k
    scapy_bytes = bytes(ap.AggHeader(job=job, flags=flags, slot=slot, shadow=gen & 1, gen=gen,
                                     offset=offset, sender=sender, fan_in=fan_in,
                                     exponent=exponent, values=[int(v) for v in vals]))
    assert scapy_bytes == payload
    f = ap.decode(payload)
    assert (f.job, f.flags, f.slot, f.shadow, f.gen, f.offset, f.sender, f.fan_in, f.exponent) == \
        (job, flags, slot, gen & 1, gen, offset, sender, fan_in, exponent)
    np.testing.assert_array_equal(f.values, vals)


def test_frame_dissects_as_aggregation_through_udp_port():
    payload = ap.encode(7, ap.DATA | ap.RETX, 3, 2, 96, 1, 4, -5, np.arange(32, dtype=np.int32))
    frame = ap.udp_frame("00:00:0a:01:01:01", "00:00:0a:01:01:fd", "10.1.1.1", "10.1.1.254", payload)
    assert ap.ipv4_checksum_ok(frame)
    pkt = Ether(frame)
    assert pkt[IP].dst == "10.1.1.254" and pkt[UDP].dport == ap.AGG_UDP_PORT
    h = pkt[ap.AggHeader]
    assert h.job == 7 and h.flags == ap.DATA | ap.RETX and h.shadow == 0 and h.gen == 2
    assert h.k == 32 and h.values[5] == 5
    assert "RETX" in h.sprintf("%flags%")
    assert ap.udp_payload(frame) == ("10.1.1.1", "10.1.1.254", payload)
    assert bytes(ap.parse(frame)) == payload


def test_pcap_round_trip(tmp_path):
    frames = [ap.udp_frame("00:00:0a:01:01:01", "00:00:0a:01:01:fd", "10.1.1.1", "10.1.1.254",
                           ap.encode(1, ap.DATA, s, 1, 32 * s, 0, 2, 0, np.full(32, s, np.int32)))
              for s in range(3)]
    path = tmp_path / "agg.pcap"
    wrpcap(str(path), [Ether(f) for f in frames])
    pkts = rdpcap(str(path))
    assert [p[ap.AggHeader].slot for p in pkts] == [0, 1, 2]
    assert [p[ap.AggHeader].values[0] for p in pkts] == [0, 1, 2]


def test_other_udp_is_not_dissected_as_aggregation():
    frame = bytes(Ether() / IP(dst="10.1.1.2") / UDP(sport=1234, dport=5201) / (b"x" * 20))
    assert ap.parse(frame) is None
    assert ap.udp_payload(frame) is None


@pytest.mark.parametrize("cut", [0, 5, 15, 16, 100])
def test_truncated_payload_decodes_to_none(cut):
    payload = ap.encode(1, ap.DATA, 0, 1, 0, 0, 1, 0, np.zeros(32, np.int32))
    assert ap.decode(payload[:cut]) is None


def test_encode_rejects_bad_slot_and_gen():
    with pytest.raises(ValueError, match="15 bits"):
        ap.encode(1, ap.DATA, 2**15, 1, 0, 0, 1, 0, np.zeros(32, np.int32))
    with pytest.raises(ValueError, match="start at 1"):
        ap.encode(1, ap.DATA, 0, 0, 0, 0, 1, 0, np.zeros(32, np.int32))
