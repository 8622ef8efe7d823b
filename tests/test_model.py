"""The schemes' models (schemes/<name>/model.py) against hand-worked cases, predict at a
scale the emulation cannot hold, and the fidelity fields of a run's summary (no root)."""
from __future__ import annotations

import math
import re
import time
from pathlib import Path

import pytest
import yaml

import schemes
from schemes import model as M
from schemes.ina.model import most_resends
from testbed.scenario import ScenarioError, parse_scenario
from topologies.graph import build_graph
from workers.agg_packet import frame_bytes

REPO = Path(__file__).resolve().parent.parent
N = 262144                       # 1 MiB of float32
S = 4 * N


def scn(scheme="ps", dcs=2, per_dc=1, mbps=50.0, delay=50.0, compute="{model: constant, value_ms: 0}",
        extra="", limits=True, loss=0.0, values: int | None = None):
    names = "".join(f"\n  - {{name: d{i}, lat: 0, lon: {i * 3}, racks: 1, workers_per_rack: {per_dc}}}"
                    for i in range(dcs))
    text = f"""
name: m
datacenters:{names}
wan: {{default: {{bandwidth_mbps: {mbps}, delay_ms: {delay}, loss_pct: {loss}}}}}
intra_dc:
  access: {{bandwidth_mbps: 1000, delay_ms: 0}}
  uplink: {{bandwidth_mbps: 1000, delay_ms: 0}}
scheme: {scheme}
workload: {{kind: synthetic, parameters: {values or N}}}
compute_time: {compute}
iterations: 50
{extra}
"""
    return parse_scenario(text, "<model>", emulation_limits=limits)


def predict(sc, closed: bool = False):
    """closed: the closed forms only (no simulation), as for a bandwidth schedule's steps:
    what the hand-worked cases check; the simulations have their own tests
    (test_model_chain.py, test_model_packets.py)."""
    g = build_graph(sc)
    if closed:
        g.graph[M.CLOSED_FORM_ONLY] = True
    return M.predict(sc.scheme, g, sc)


def tcp_bytes(payload, acks=False):
    """Bytes of a stream on the wire; acks: plus the ACKs of the stream coming the other
    way on the same link (push and pull share each direction with the other's ACKs)."""
    segs = math.ceil(payload / M.MSS)
    return payload + segs * M.SEG_OVERHEAD + (math.ceil(segs / 2) * 66 if acks else 0)


def test_every_scheme_has_a_model_whose_terms_add_up():
    for name in schemes.NAMES:
        assert schemes.get(name).model is not None, name
        modes = schemes.get(name).modes
        p = predict(scn(name, 2, 2, extra="" if "bsp" in modes else f"training: {{mode: {modes[0]}}}"))
        assert p.kind == "model"
        assert p.iteration_s == pytest.approx(sum(p.terms.values()))
        assert p.iteration_s > 0 and p.wan_bytes_per_iteration > 0


def test_ps_one_bottleneck_known_rtt():
    # 2 DCs x 1 worker: the server on d0's worker; d1's worker pushes S over the WAN
    # (50 Mbps, one-way 50 ms) and pulls the sum back: serialization of S + framing +
    # TCP/IP/Ethernet headers, plus one round trip, plus the last chunk's return
    p = predict(scn("ps"), closed=True)
    payload = S + (N // 4096) * 24
    ser = 8 * tcp_bytes(payload, acks=True) / 50e6
    last = 8 * tcp_bytes(4 * 4096 + 24) / 50e6
    assert p.terms["serialization at g2->g1 (wan 50 Mbps)"] == pytest.approx(ser, rel=1e-3)
    assert p.iteration_s == pytest.approx(ser + 0.100 + last, rel=1e-3)
    data, acks = M.tcp_wire(payload)
    assert p.wan_bytes_per_iteration == pytest.approx(2 * (data + acks))


def test_mxnet_ps_split_over_every_datacenter_hand_worked():
    # 3 DCs x 1 worker, full mesh at 50 Mbps, one-way 50 ms, no compute; bigarray_bound 1000 <
    # N = 262144: MXNet's parts 87381, 87382, 87381 on the servers beside the workers of d0,
    # d1, d2. Directed link g1->g2 carries w1's push of part 1 to d1's server and the pull of
    # part 0 from d0's server to w2, plus the ACKs of the opposite streams (w2's push of part
    # 0, the pull of part 1 to w1): the two parts' bytes with headers and ACKs, the most of
    # any link (g2-g3, with parts 1 and 2, ties). Plus one round trip and the last chunk of
    # the link's 2 streams
    sc = scn("mxnet-ps", dcs=3, extra="scheme_options: {bigarray_bound: 1000}")
    p = predict(sc, closed=True)
    framed = lambda v: 4 * v + math.ceil(v / 4096) * 24
    ser = 8 * (tcp_bytes(framed(87381), acks=True) + tcp_bytes(framed(87382), acks=True)) / 50e6
    last = 8 * 2 * tcp_bytes(4 * 4096 + 24) / 50e6
    (name, t), = [(k, v) for k, v in p.terms.items() if k.startswith("serialization")]
    assert name in {f"serialization at {a}->{b} (wan 50 Mbps)" for a, b in
                    (("g1", "g2"), ("g2", "g1"), ("g2", "g3"), ("g3", "g2"))}
    assert t == pytest.approx(ser, rel=1e-6)
    assert p.iteration_s == pytest.approx(ser + 0.100 + last, rel=1e-6)
    # the 6 WAN link directions carry two parts each, data and ACKs: every part 4 times
    wire = lambda v: sum(M.tcp_wire(framed(v)))
    assert p.wan_bytes_per_iteration == pytest.approx(4 * (2 * wire(87381) + wire(87382)), rel=1e-9)
    # ps with its one server in d0 pushes whole gradients through d0's links: 3/2 the bytes
    ps = predict(scn("ps", dcs=3), closed=True)
    ps_ser = next(v for k, v in ps.terms.items() if k.startswith("serialization"))
    assert ps_ser / t == pytest.approx(1.5, rel=1e-3)


def test_mxnet_ps_below_the_bound_is_ps():
    # N = 262144 < 1,000,000: the whole tensor on server 0, the first datacenter's: ps's
    # placement with its server on d0's first host, and ps's prediction
    a, b = predict(scn("mxnet-ps", dcs=3, per_dc=2)), predict(scn("ps", dcs=3, per_dc=2))
    assert a.iteration_s == pytest.approx(b.iteration_s, rel=1e-12)
    assert list(a.terms.values()) == pytest.approx(list(b.terms.values()), rel=1e-12)
    assert any("whole on the first datacenter's server" in n for n in a.notes)


def test_hier_ps_two_level_tree():
    # 2 DCs x 2 workers: the WAN carries one partial sum per direction; the tree's depth adds
    # the LAN round trip (0 here: LAN delay 0) to the WAN one
    p = predict(scn("hier-ps", per_dc=2), closed=True)
    ser = 8 * tcp_bytes(S + (N // 4096) * 24, acks=True) / 50e6
    assert max(p.limits.values()) == pytest.approx(ser, rel=1e-3)
    assert p.terms["propagation (longest worker-server round trip)"] == pytest.approx(0.100)
    p4 = predict(scn("ps", per_dc=2), closed=True)   # flat ps pushes 2 gradients over the WAN
    assert max(p4.limits.values()) == pytest.approx(2 * ser, rel=1e-3)


def test_ring_cycle_of_two_hops():
    # 2 workers, one per DC: 2 steps per iteration, each a chunk of S/2 over the WAN one
    # way; the ring's cycle is both hops (serialization + 50 ms each) and an iteration is
    # 2 (W-1) / W = 1 round of it (the closed form; simulated: test_model_packets.py)
    p = predict(scn("ring"), closed=True)
    chunk = 4 * (N // 2) + 24
    ser = 8 * tcp_bytes(chunk) / 50e6
    (cycle,) = [k for k in p.terms if k.startswith("ring cycle")]
    assert p.terms[cycle] == pytest.approx(2 * ser + 0.100, rel=1e-3)
    assert p.iteration_s == pytest.approx(2 * ser + 0.100, rel=1e-3)


def test_ring_period_is_rounds_of_the_ring_not_a_chain_from_a_common_start():
    # 3 DCs x 2 workers, LAN hops instantaneous: 10 steps per iteration = 10/6 rounds of a
    # ring that crosses 3 WAN links (50 ms each) -> 10/6 x (3 x (ser + 0.050)) with ser
    # the WAN hop's chunk of S/6; the LAN hops add their 1 Gbps serialization only
    p = predict(scn("ring", dcs=3, per_dc=2), closed=True)
    chunk = 4 * -(-N // 6) + 24
    wan, lan = 8 * tcp_bytes(chunk) / 50e6, 8 * tcp_bytes(chunk) / 1e9
    assert p.iteration_s == pytest.approx(10 / 6 * (3 * (wan + 0.050) + 3 * lan), rel=1e-3)


def test_ina_serialization_and_window_limits():
    # flat ina, 2 DCs x 2 workers, root in d0 (tie: lowest index): d1's 2 workers send
    # ceil(N/32) frames of 186 bytes each over the WAN
    sc = scn("ina", per_dc=2)
    p = predict(sc)
    chunks = N // 32
    ser = 8 * 2 * chunks * frame_bytes(32) / 50e6
    ser_key = next(k for k in p.limits if k.startswith("serialization"))
    assert p.limits[ser_key] == pytest.approx(ser, rel=1e-6)
    win_key = next(k for k in p.limits if k.startswith("window"))
    w = int(win_key.split()[1])
    # (rounds - 1) round trips of 100 ms, then the last window's frames through the WAN link
    assert p.limits[win_key] == pytest.approx((chunks / w - 1) * 0.100 + ser * w / chunks, rel=1e-6)
    # geo-ina: one partial sum per DC crosses, so half the WAN serialization
    g = predict(scn("geo-ina", per_dc=2))
    gk = next(k for k in g.limits if k.startswith("serialization"))
    assert g.limits[gk] == pytest.approx(ser / 2, rel=1e-6)
    assert g.wan_bytes_per_iteration == pytest.approx(2 * chunks * frame_bytes(32))


def test_the_worst_chunks_resends_by_hand():
    # one chunk losing each try with p = 0.5: a geometric number of re-sends, mean p / (1 - p)
    assert most_resends(0.5, 1) == pytest.approx(1.0)
    # the larger of two: sum over r of 1 - (1 - p^r)^2 = 2 p / (1 - p) - p^2 / (1 - p^2)
    assert most_resends(0.5, 2) == pytest.approx(2 - 0.25 / 0.75)
    assert most_resends(0.0, 1000) == 0.0
    # the bench point's fixed window: 1024 chunks at 8.6 %: one re-send surely, a second
    # almost surely, a third about every other time
    assert 2.4 < most_resends(0.086, 1024) < 2.7


def test_ina_loss_caps_the_window_by_the_response_function():
    from schemes.model import loss_window, response_window
    # geo-ina, 2 DCs x 2: a chunk needs d1's partial sum up the WAN and, for d1's workers,
    # the result back down it: 1 - 0.99^2 of the chunks are lost at 1 % per WAN direction
    p_chunk = 1 - 0.99 ** 2
    chunks = N // 32

    def event_window(f):
        # at most one cut per round trip: the fixed point of W = f(loss events per chunk)
        w = f(p_chunk)
        for _ in range(200):
            w = f((1 - (1 - p_chunk) ** w) / w)
        return w

    for law, f in (("reno", lambda p: math.sqrt(1.5 / p)),             # Mathis: 1.22 / sqrt(p)
                   ("cubic", lambda p: math.sqrt(1.7 / (0.6 * p)))):   # AIMD at beta 0.7: the floor
        w = event_window(f)
        assert f(p_chunk) < w < 1.1 * f(p_chunk)
        p = predict(scn("geo-ina", per_dc=2, loss=1, extra=f"scheme_options: {{congestion_law: {law}}}"))
        (key,) = [k for k in p.limits if k.startswith("loss")]
        assert f"{100 * p_chunk:.2g} %" in key
        # one window of w chunks per 100 ms round trip
        assert p.limits[key] == pytest.approx(chunks / w * 0.100, rel=1e-6)
        # + the last window's recovery: its worst chunk's re-sends, 1.25 round trips each
        tail = most_resends(p_chunk, w) * 1.25 * 0.100
        assert p.iteration_s == pytest.approx(chunks / w * 0.100 + 0.100 + tail, rel=1e-6)
        assert f"{w:.1f} chunks" in key
    # cubic's own response (RFC 8312, 5.1) wins on long round trips and little loss
    c = 1.93
    assert response_window(1e-4, 1.0, "cubic", c) == pytest.approx(
        (c * 3.7 / 1.2) ** 0.25 * (1.0 / 1e-4) ** 0.75)
    assert loss_window(0.0, 0.1, "cubic", c) == math.inf
    # backlog: a random loss is only re-sent, the window stays: the frames again, no cap
    b = predict(scn("geo-ina", per_dc=2, loss=1, extra="scheme_options: {loss_response: backlog}"))
    assert not [k for k in b.limits if k.startswith("loss")]
    (key,) = [k for k in b.terms if k.startswith("loss") and "re-sent" in k]
    ser = next(v for k, v in b.limits.items() if k.startswith("serialization"))
    assert b.terms[key] == pytest.approx(p_chunk * ser)
    (tail,) = [k for k in b.terms if k.startswith("loss: the last window")]
    (slots,) = [int(re.search(r"window: (\d+) slots", k).group(1)) for k in b.limits if k.startswith("window")]
    last = min(slots, chunks)                # the chunks in flight at the end
    assert f"of {last} x" in tail
    assert b.terms[tail] == pytest.approx(most_resends(p_chunk, last) * 1.25 * 0.100)
    # no loss configured: no loss term at all
    assert not [k for k in predict(scn("geo-ina", per_dc=2)).terms if "loss" in k]


def test_ina_under_loss_names_the_out_of_step_pace_as_a_caveat():
    # flat ina, 2 DCs x 2, 1 % per WAN direction: a remote worker's chunk is lost when any
    # of the two remote contributions up or its result down is (1 - 0.99^3: the in-step
    # model); its own frames lose 1 - 0.99^2. Once the others run ahead, that is what its
    # window sees (docs/ina.md): a caveat with that pace, which the fidelity warning names
    # when a run is faster than the model
    from schemes.model import loss_window
    from testbed.fidelity import suspects
    from workers.congestion import cubic_c
    chunks = N // 32
    p = predict(scn("ina", per_dc=2, loss=1))
    (key,) = [k for k in p.limits if k.startswith("loss")]
    assert f"{100 * (1 - 0.99 ** 3):.2g} %" in key
    (c,) = [c for c in p.caveats if c.startswith(M.FASTER)]
    assert "out of step" in c
    own = chunks / loss_window(1 - 0.99 ** 2, 0.100, "cubic", cubic_c(frame_bytes(32))) * 0.100
    assert f"about {own:.3g} s" in c and f"{p.limits[key]:.3g} s with every worker in step" in c
    assert suspects(0.5, p.caveats, {}, 0.01)[1:] == [c]       # faster than the model: named
    assert suspects(1.5, p.caveats, {}, 0.01) == []                # slower: not this one
    # without loss, or without cuts (backlog re-sends only), nothing to say
    assert not predict(scn("ina", per_dc=2)).caveats
    assert not [c for c in predict(scn("ina", per_dc=2, loss=1, extra="scheme_options: {loss_response: backlog}")).caveats
                if c.startswith(M.FASTER)]


def test_l3dml_model_moves_wan_losses_from_the_workers_to_the_switches_repair():
    # 2 DCs x 2, 1 % per WAN direction: geo-ina's workers lose 1 - 0.99^2 of the chunks and
    # cut their window; with l3dml the switches repair them: no loss at the workers, a
    # repaired chunk's result comes the timer loop's passes (timeout 1.5 x the 100 ms round
    # trip) later, and the iteration waits for the slowest slot's chain of chunks
    from schemes.ina.repair_delay import slowest_chain_passes
    p_chunk = 1 - 0.99 ** 2
    chunks = N // 32
    clean = predict(scn("l3dml", per_dc=2))
    assert clean.iteration_s == pytest.approx(predict(scn("geo-ina", per_dc=2)).iteration_s)
    p = predict(scn("l3dml", per_dc=2, loss=1))
    assert not [k for k in list(p.limits) + list(p.terms) if k.startswith("loss")]
    timeout = 1.5 * 0.100
    (key,) = [k for k in p.limits if k.startswith("window")]
    assert f"{100 * p_chunk:.2g} % of chunks repaired" in key
    w = int(re.search(r"(\d+) slots", key).group(1))
    ser = next(v for k, v in p.limits.items() if k.startswith("serialization"))
    # a repair lost again (the link's round trip: again 1 - 0.99^2) waits for the next pass
    passes = lambda n: slowest_chain_passes(n, w, p_chunk, p_chunk, 7)
    assert passes(chunks) > passes(min(w, chunks)) > 1 - (1 - p_chunk) ** min(w, chunks) + 0.01
    assert p.limits[key] == pytest.approx(max(0, chunks / w - 1) * 0.100 + ser * min(1.0, w / chunks)
                                          + (passes(chunks) - passes(min(w, chunks))) * timeout)
    # the last window's worst chunk
    (tail,) = [k for k in p.terms if "repairs" in k]
    assert p.terms[tail] == pytest.approx(passes(min(w, chunks)) * timeout)
    assert p.iteration_s == pytest.approx(sum(p.terms.values()))
    assert not p.caveats
    # workers that wait for one repair attempt cut on a repair lost again: named, not modelled
    one = predict(scn("l3dml", per_dc=2, loss=1, extra="scheme_options: {worker_waits_repairs: 1}"))
    (c,) = one.caveats
    assert "worker_waits_repairs: 1" in c and one.iteration_s == pytest.approx(p.iteration_s)
    assert not predict(scn("l3dml", per_dc=2, extra="scheme_options: {worker_waits_repairs: 1}")).caveats
    geo = predict(scn("geo-ina", per_dc=2, loss=1))
    assert p.iteration_s < geo.iteration_s / 5          # the workers' cut windows cost far more
    # repair off: geo-ina's model, loss at the workers
    off = predict(scn("l3dml", per_dc=2, loss=1, extra="scheme_options: {repair: false}"))
    assert off.iteration_s == pytest.approx(geo.iteration_s)


def test_ina_models_name_spurious_timeouts_behind_a_strong_straggler():
    # 2 DCs x 2, 100 ms round trip: d1's two workers 4x slower (200 ms -> 800 ms) keep the
    # root holding the others' chunks 300 ms past the mean (500 ms), over 1.5 round trips
    strag = "stragglers: {persistent: [{dc: d1, factor: 4}]}"
    for scheme in ("geo-ina", "ina", "l3dml"):
        p = predict(scn(scheme, per_dc=2, compute="{model: constant, value_ms: 200}", extra=strag))
        (c,) = [c for c in p.caveats if c.startswith("stragglers")]
        assert "0.30 s longer than the mean" in c and "0.100 s round trip" in c
    mild = predict(scn("geo-ina", per_dc=2, compute="{model: constant, value_ms: 200}",
                       extra=strag.replace("factor: 4", "factor: 1.5")))
    assert not [c for c in mild.caveats if c.startswith("stragglers")]
    # the workers' timeout is SRTT + rto_margin_ms: auto (100 ms here) 0.2 s, a user's 500 ms
    # 0.6 s, longer than the root holds the chunks: no spurious timeouts to name
    assert "about 0.200 s on the" in c
    patient = predict(scn("geo-ina", per_dc=2, compute="{model: constant, value_ms: 200}",
                          extra=strag + "\nscheme_options: {rto_margin_ms: 500}"))
    assert not [c for c in patient.caveats if c.startswith("stragglers")]


def test_bandwidth_step_halves_the_serialization_term():
    a, b = predict(scn("ps", mbps=50), closed=True), predict(scn("ps", mbps=25), closed=True)
    ka = next(k for k in a.terms if k.startswith("serialization"))
    kb = next(k for k in b.terms if k.startswith("serialization"))
    assert b.terms[kb] == pytest.approx(2 * a.terms[ka])


def test_compute_and_stragglers_bsp_waits_for_the_slowest():
    p = predict(scn("ps", extra="stragglers: {persistent: [{worker: 1, factor: 3}]}",
                    compute="{model: constant, value_ms: 100}"))
    assert p.terms["compute (slowest worker; exact (constant model))"] == pytest.approx(0.300)
    assert p.compute_s == pytest.approx(0.200)
    # random model: estimated from the workers' own seeded draws
    r = predict(scn("ps", compute="{model: shifted_exp, shift_ms: 100, scale_ms: 50}"))
    ck = next(k for k in r.terms if k.startswith("compute"))
    assert 0.150 < r.terms[ck] < 0.300 and "seeded draws" in ck


def test_slow_start_after_idle_when_compute_exceeds_the_rto():
    idle = predict(scn("ps", compute="{model: constant, value_ms: 1000}"), closed=True)
    busy = predict(scn("ps"), closed=True)
    assert idle.terms.get("slow start after idle", 0) > 0
    assert busy.terms.get("slow start after idle", 0) == 0
    off = predict(scn("ps", compute="{model: constant, value_ms: 1000}",
                      extra="tcp: {slow_start_after_idle: false}"), closed=True)
    assert off.terms.get("slow start after idle", 0) == 0


def test_predict_many_datacenters_is_model_output_and_fast(capsys):
    from testbed.fidelity import main
    with pytest.raises(ScenarioError):
        scn("ps", dcs=50, per_dc=4)            # run's limits stay
    t = time.monotonic()
    p = predict(scn("geo-ina", dcs=32, per_dc=4, limits=False))     # INA fan-in <= 32
    assert p.kind == "model" and p.iteration_s > 0
    path = REPO / "scenarios" / "quickstart.yaml"    # ps, hier-ps and ring at 50 x 4
    assert main(str(path), ["datacenters=" + "[" + ",".join(
        f"{{name: d{i}, lat: 0, lon: {i}, workers_per_rack: 4}}" for i in range(50)) + "]"],
        "ps,hier-ps,ring,geo-ina") == 0
    assert time.monotonic() - t < 90
    out = capsys.readouterr().out
    assert "MODEL OUTPUT" in out and "50 datacenters" in out
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.split()}
    for name in ("ps", "hier-ps", "ring"):
        assert float(rows[name][1]) > 0, out
    assert re.search(r"geo-ina: no prediction: aggregation point 1:global:g\d+ has fan-in 50", out)


def test_summary_fidelity_fields_of_a_synthetic_run(tmp_path):
    from synthetic_runs import write_run
    import json
    d = write_run(tmp_path, REPO / "scenarios" / "quickstart.yaml", ["iterations=4"])
    s = json.loads((d / "summary.json").read_text())
    m = s["model"]
    assert m["kind"] == "model" and m["terms"]
    ratio = s["metrics"]["iteration_period_s"] / m["model_iteration_time_s"]
    assert m["measured_over_model"] == pytest.approx(ratio, rel=1e-3)
    outside = not 0.9 <= ratio <= 1.2
    assert any("largest term" in w for w in s["warnings"]) == outside


def test_fidelity_warning_names_the_largest_term():
    from testbed.fidelity import model_section
    sc = scn("ps")
    sec, warns = model_section(sc, {"iteration_period_s": 10.0})
    assert sec["measured_over_model"] > 1.2
    # ps's streams simulated through the links' queues (schemes/model_packets.py)
    assert len(warns) == 1 and "largest term: streams through the links' drop-tail queues" in warns[0]
    sec, warns = model_section(sc, {"iteration_period_s": sec["model_iteration_time_s"]})
    assert warns == [] and sec["measured_over_model"] == pytest.approx(1.0)


def test_fidelity_warning_names_its_suspects_from_the_run_and_the_models_caveats():
    from testbed.fidelity import model_section, suspects
    slow = {"iteration_period_s": 10.0, "retransmissions": 120, "retransmission_rate": 0.012}
    _, (w,) = model_section(scn("ps"), slow)
    # congestion loss (1.2% retransmitted on a lossless WAN) against a model that simulated
    # the queues (and with them the gated pull: not a caveat then)
    assert "suspect: loss recovery: 120 segment(s) retransmitted (1.20%" in w
    assert "the model simulated the queues" in w and "the pull follows the slowest push stream" not in w
    _, (w,) = model_section(scn("ps", loss=1.0), slow)       # 1.2% against 1% per link: expected
    # under random loss the round-level simulation binds: it has no shared queue
    assert "loss recovery" not in w and "the pull follows the slowest push stream" in w
    _, (w,) = model_section(scn("hier-ps"), dict(slow, retransmission_rate=0.0))
    # hier-ps's window growth over the first iterations and its gated pull are simulated
    assert "loss recovery" not in w and "the pull follows the slowest push stream" not in w
    assert "its window grows over the first iterations" not in w
    # a model of the closed forms only names congestion loss as missing from it
    (w,) = suspects(2.0, [], slow, 0.0)
    assert "congestion loss is not in the model" in w
    # hier-ps's WAN streams are its servers' sockets: their retransmissions count too
    quiet = dict(slow, retransmissions=0, retransmission_rate=0.0, packets_sent=10000)
    servers = {"global": {"tcp_retransmissions": 300, "tcp_segments_sent": 10000, "host": "h"},
               "local1": {"stats": "missing", "host": "h"}}
    _, (w,) = model_section(scn("hier-ps"), quiet)
    assert "loss recovery" not in w
    _, (w,) = model_section(scn("hier-ps"), quiet, servers)
    assert "loss recovery: 300 segment(s) retransmitted (1.50% of those its workers and servers sent)" in w
    _, (w,) = model_section(scn("ring"), dict(slow, retransmission_rate=0.0))
    assert "suspect" not in w                               # nothing known: the largest term only
    _, (w,) = model_section(scn("ps"), {"iteration_period_s": 1e-3})
    assert w.endswith("suspect: the model over-estimates (its largest term above is the first to check)")


def test_sweep_in_model_mode_predicts_every_point_without_running(tmp_path):
    """run.py sweep --model: one model row per point, every column named model_*; a point
    the scheme's plan refuses is a row with its error, not a crash."""
    import csv

    from testbed.sweep import predict_sweep
    from testbed.sweep_model import load_sweep
    repo = Path(__file__).resolve().parent.parent
    sweep = tmp_path / "s.yaml"
    sweep.write_text(f"""name: msweep
base: {repo / 'scenarios' / 'quickstart.yaml'}
set: ["workload={{kind: synthetic, parameters: 262144}}"]
axes:
  scheme: [ina, geo-ina]
  wan.default.bandwidth_mbps: [10, 100]
  scheme_options.root: [wdc, mars]
mode: product
repetitions: 2
""")
    folder = predict_sweep(load_sweep(str(sweep)), tmp_path / "out", log=lambda *a: None)
    rows = list(csv.DictReader(open(folder / "model_table.csv")))
    assert folder.name == "msweep-model" and len(rows) == 8        # repetitions coincide
    ok = [r for r in rows if not r["error"]]
    assert {r["kind"] for r in rows} == {"model"} and all(float(r["model_iteration_time_s"]) > 0 for r in ok)
    assert len(ok) == 4 and all("mars" in r["error"] for r in rows if r["error"])
    t = {(r["scheme"], r["wan.default.bandwidth_mbps"]): float(r["model_iteration_time_s"])
         for r in ok}
    assert t[("geo-ina", "10")] > t[("geo-ina", "100")]     # 1 MB gradients: bandwidth-bound


# ---------------------------------------------------------------- under a bandwidth schedule

def test_bandwidth_step_on_one_bottleneck_hand_worked():
    # ps, 2 DCs x 1 worker, one WAN link (the bottleneck) at 50 Mbps that steps to 25 Mbps at
    # t = 10 s: two steps; in each the iteration is the push's serialization at that rate,
    # one round trip (100 ms) and the last chunk's return at that rate; no compute, so the
    # communication time is the iteration and goodput = 8 S / it
    from schemes.model_schedule import predict_schedule, schedule_steps
    sc = scn("ps", extra="wan: {default: {bandwidth_mbps: 50, delay_ms: 50}, "
                         "bandwidth_schedule: [{t_s: 10, mbps: 25}]}")
    g = build_graph(sc)
    steps = schedule_steps(g)
    assert [(st.t_start_s, st.t_end_s, st.rates_mbps) for st in steps] == \
        [(0.0, 10.0, {"g1-g2": 50.0}), (10.0, None, {"g1-g2": 25.0})]
    payload = S + (N // 4096) * 24
    for sp, rate in zip(predict_schedule("ps", g, sc), (50e6, 25e6)):
        it = 8 * tcp_bytes(payload, acks=True) / rate + 0.100 + 8 * tcp_bytes(4 * 4096 + 24) / rate
        assert sp.kind == "model" and sp.bandwidth_bound
        assert sp.prediction.iteration_s == pytest.approx(it, rel=1e-3)
        assert sp.goodput_mbps == pytest.approx(8 * S / it / 1e6, rel=1e-3)
        assert sp.job_goodput_mbps == pytest.approx(2 * 8 * S / it / 1e6, rel=1e-3)
        assert not any("not modelled" in n and "schedule" in n for n in sp.prediction.notes)
    # halving the rate doubles the bandwidth part, not the round trip
    a, b = predict_schedule("ps", g, sc)
    assert b.prediction.iteration_s - a.prediction.iteration_s == \
        pytest.approx(a.prediction.iteration_s - 0.100, rel=1e-6)


def test_schedule_steps_group_edges_and_keep_the_others_rates():
    from schemes.model_schedule import predict_at, schedule_steps
    # 3 DCs: only g1-g2 has a schedule (a point at 0 and one at 5 s); the other links keep 50
    sc = scn("hier-ps", dcs=3, extra="wan: {default: {bandwidth_mbps: 50, delay_ms: 10}, "
                                     "edges: [{a: d0, b: d1, bandwidth_schedule: "
                                     "[{t_s: 0, mbps: 10}, {t_s: 5, mbps: 20}]}]}")
    g = build_graph(sc)
    steps = schedule_steps(g, horizon_s=12)
    assert [(s.t_start_s, s.t_end_s, s.bottleneck_mbps) for s in steps] == [(0.0, 5.0, 10.0), (5.0, 12.0, 20.0)]
    assert all(s.rates_mbps["g1-g3"] == 50.0 and s.rates_mbps["g2-g3"] == 50.0 for s in steps)
    slow, fast = (predict_at("hier-ps", g, sc, s.rates_mbps) for s in steps)
    assert slow.goodput_mbps < fast.goodput_mbps
    assert "g1-g2" in slow.binding or "g2->g1" in slow.binding or "g1->g2" in slow.binding


def test_per_direction_rates_reach_the_model_hand_worked():
    # ps, 2 DCs x 1 worker: d1's worker pushes over g2->g1 and pulls over g1->g2; each
    # direction carries the gradient plus the other stream's ACKs. A slow direction binds
    # with its own rate and name, whichever it is; the other direction's rate does not matter
    from schemes.model_schedule import at_rates, predict_at
    sc = scn("ps")
    g = build_graph(sc)
    ser = 8 * tcp_bytes(S + (N // 4096) * 24, acks=True) / 25e6
    up = predict_at("ps", g, sc, {"g2>g1": 25, "g1>g2": 50})
    assert up.prediction.limits["serialization at g2->g1 (wan 25 Mbps)"] == pytest.approx(ser, rel=1e-3)
    down = predict_at("ps", g, sc, {"g1>g2": 25, "g2>g1": 50})
    assert down.binding == "serialization at g1->g2 (wan 25 Mbps)"
    assert down.prediction.limits[down.binding] == pytest.approx(ser, rel=1e-3)
    net = M.Net(at_rates(g, {"g1>g2": 25, "g2>g1": 50}))
    assert (net.rate_bps("g1", "g2"), net.rate_bps("g2", "g1")) == (25e6, 50e6)
    # an edge rate replaces directions set before; the original graph is untouched
    again = at_rates(at_rates(g, {"g1>g2": 25}), {"g1-g2": 40})
    assert M.Net(again).rate_bps("g1", "g2") == M.Net(again).rate_bps("g2", "g1") == 40e6
    assert "direction_mbps" not in g.edges["g1", "g2"]
    with pytest.raises(ValueError, match="no WAN edge g3>g1"):
        predict_at("ps", g, sc, {"g3>g1": 10})


def test_per_direction_schedule_steps_carry_both_directions():
    from schemes.model_schedule import predict_schedule, schedule_steps
    from topologies.schedule import bandwidth_events, rate_at
    sc = scn("ps", extra="wan: {default: {bandwidth_mbps: 150, delay_ms: 50}, bandwidth_schedule: "
                         "{min_mbps: 20, max_mbps: 155, every_s: 180, per_direction: true, integer: true}}")
    g = build_graph(sc)
    steps = schedule_steps(g, 540)
    ev = bandwidth_events(g, 540)
    assert [(st.t_start_s, st.t_end_s) for st in steps] == [(0.0, 180.0), (180.0, 360.0), (360.0, 540.0)]
    for st in steps:
        assert set(st.rates_mbps) == {"g1>g2", "g2>g1"}
        assert st.rates_mbps["g1>g2"] == rate_at(g, ev, ("g1", "g2"), st.t_start_s, "g1")
        assert st.rates_mbps["g2>g1"] == rate_at(g, ev, ("g1", "g2"), st.t_start_s, "g2")
        assert st.bottleneck_mbps == min(st.rates_mbps.values())
    for sp in predict_schedule("ps", g, sc, 540):
        slow = min(sp.step.rates_mbps, key=sp.step.rates_mbps.get).replace(">", "->")
        assert sp.binding == f"serialization at {slow} (wan {sp.step.bottleneck_mbps:g} Mbps)"


def test_schedule_model_failure_paths():
    from schemes.model_schedule import predict_at, predict_schedule, schedule_steps
    from testbed.dilation import dilate_graph
    sc = scn("ps")
    g = build_graph(sc)
    assert schedule_steps(g) == [] and predict_schedule("ps", g, sc) == []   # no schedule
    with pytest.raises(ValueError, match="no WAN edge g7-g9"):
        predict_at("ps", g, sc, {"g7-g9": 10})
    with pytest.raises(ValueError, match="> 0"):
        predict_at("ps", g, sc, {"g1-g2": 0})
    rnd = scn("ps", extra="wan: {default: {bandwidth_mbps: 50}, "
                          "bandwidth_schedule: {min_mbps: 10, max_mbps: 20, every_s: 5}}")
    with pytest.raises(ValueError, match="horizon_s"):
        schedule_steps(build_graph(rnd))                      # random: needs the horizon
    assert len(schedule_steps(build_graph(rnd), 12)) == 3     # redraws at 0, 5, 10
    with pytest.raises(ValueError, match="real-world graph"):
        schedule_steps(dilate_graph(build_graph(rnd), 2), 12)


def test_predict_prints_the_model_per_schedule_step(capsys):
    from testbed.fidelity import main
    assert main(str(REPO / "scenarios" / "goodput-schedule.yaml"), [], "ps,geo-ina") == 0
    out = capsys.readouterr().out
    assert "model per bandwidth-schedule step" in out
    table = out.split("model per bandwidth-schedule step")[1].splitlines()
    rows = [l.split() for l in table if l.startswith(("ps ", "geo-ina "))]
    assert [(r[0], r[1], r[3]) for r in rows] == [(s, t, b) for s in ("ps", "geo-ina")
                                                  for t, b in (("0", "40"), ("15", "20"), ("30", "30"))]
    assert all("serialization" in " ".join(r[7:]) for r in rows)    # bandwidth-bound in every step
    main(str(REPO / "scenarios" / "quickstart.yaml"), [], "ps")
    assert "schedule step" not in capsys.readouterr().out          # no schedule: no table


def test_no_measured_over_model_for_a_run_under_a_bandwidth_schedule():
    # the pace spans every step, the model is at the configured rates: no ratio, no warning
    from testbed.fidelity import has_schedule, model_section
    sc = parse_scenario(f"""
name: m
datacenters:
  - {{name: d0, lat: 0, lon: 0, racks: 1, workers_per_rack: 1}}
  - {{name: d1, lat: 0, lon: 3, racks: 1, workers_per_rack: 1}}
wan: {{default: {{bandwidth_mbps: 50, delay_ms: 50}}, bandwidth_schedule: [{{t_s: 5, mbps: 10}}]}}
scheme: ps
workload: {{kind: synthetic, parameters: {N}}}
iterations: 50
""", "<model>")
    assert has_schedule(sc) and not has_schedule(scn("ps"))
    sec, warns = model_section(sc, {"iteration_period_s": 10.0})
    assert sec["measured_over_model"] is None and warns == []
    assert any("bandwidth schedule" in n for n in sec["notes"])


def test_model_columns_follow_todays_model_and_the_row_beside_them():
    # a summary stored by older code (another model time and ratio): with the scenario file,
    # the model is predicted again; with the row, the ratio is the row's pace over it
    from testbed.fidelity import model_columns, predict_scenario
    from testbed.scenario import load_scenario
    path = REPO / "scenarios" / "quickstart.yaml"
    today = predict_scenario(load_scenario(str(path), [], emulation_limits=False)).iteration_s
    old = {"model": {"model_iteration_time_s": 123.0, "measured_over_model": 9.9}}
    row = {"iteration_period_s": 2 * today, "iteration_time_mean_s": 5 * today}
    cols = model_columns(old, row, path)
    assert cols["model_iteration_time_s"] == pytest.approx(today, rel=1e-5)
    assert cols["measured_over_model"] == pytest.approx(2.0, rel=1e-3)
    assert model_columns(old) == {"model_iteration_time_s": 123.0, "measured_over_model": 9.9}
    assert model_columns(old, row)["measured_over_model"] == pytest.approx(2 * today / 123.0, abs=1e-4)
    assert model_columns({"model": {"model_iteration_time_s": 1.0, "measured_over_model": None}},
                         row)["measured_over_model"] is None   # a schedule's stored None stays


def test_an_ina_round_trip_follows_the_tree_not_the_direct_path():
    # three datacenters 50 ms apart (each pair), a worker of d1 aggregated at d2's rack
    # switch for a root beside d0's: its chunk goes d1 -> d2 -> d0 and the result back the
    # same points, 4 x 50 ms, where the direct round trip is 2 x 50 ms (inart's plans put
    # workers on other datacenters' points)
    from types import SimpleNamespace as NS
    from schemes.ina.model import tree_rtt
    g = build_graph(scn("ina", dcs=3, per_dc=1, delay=50.0))
    net = M.Net(g)
    host = {g.nodes[h]["dc_index"]: h for h in g.nodes if g.nodes[h]["role"] == "host"}
    rack = {g.nodes[h]["dc_index"]: next(iter(g.neighbors(h))) for h in host.values()}
    d0, d1, d2 = sorted(host)
    root = NS(id="root", switch=host[d0], parent=None, children=[NS(node=rack[d2], point="far")])
    far = NS(id="far", switch=rack[d2], parent="root", children=[NS(node=host[d1], point=None)])
    tree = NS(points={"root": root, "far": far}, root="root")
    assert net.rtt(host[d1], host[d0]) == pytest.approx(0.1)
    assert tree_rtt(net, tree, host[d1]) == pytest.approx(0.2)


def test_workers_whose_results_come_later_than_the_retransmission_margin_are_named():
    # the same detour with a second worker on the root's own rack: its results come at
    # once, the far one's 100 ms later (d0 -> d2 -> d1); the workers' margin (auto) is half
    # the longest direct round trip (100 ms), at least 100 ms: not more than the skew
    from types import SimpleNamespace as NS
    from schemes.ina.model import result_skew_s, rto_margin_s, tree_rtt
    from schemes.ina.options import InaTransportOptions
    sc = scn("ina", dcs=3, per_dc=1, delay=50.0)
    g = build_graph(sc)
    net = M.Net(g)
    host = {g.nodes[h]["dc_index"]: h for h in g.nodes if g.nodes[h]["role"] == "host"}
    rack = {g.nodes[h]["dc_index"]: next(iter(g.neighbors(h))) for h in host.values()}
    d0, d1, d2 = sorted(host)
    root = NS(id="root", switch=rack[d0], parent=None,
              children=[NS(node=host[d0], point=None), NS(node=rack[d2], point="far")])
    far = NS(id="far", switch=rack[d2], parent="root", children=[NS(node=host[d1], point=None)])
    tree = NS(points={"root": root, "far": far}, root="root", workers=[host[d0], host[d1]])
    assert result_skew_s(net, tree) == pytest.approx(0.1)
    longest = max(tree_rtt(net, tree, w) for w in tree.workers)
    assert longest == pytest.approx(0.2)
    assert rto_margin_s(InaTransportOptions(), longest, sc) == pytest.approx(0.1)
    assert rto_margin_s(InaTransportOptions(rto_margin_ms=50), longest, sc) == pytest.approx(0.05)


def test_inart_at_the_bench_point_is_out_of_phase_only_with_a_margin_below_the_skew():
    # a Frankfurt worker aggregated at Tokyo's rack gets its results 199 ms after
    # Washington's workers: the plan's margin, half the tree's longest round trip (398 ms),
    # covers it; a margin set below it (50 ms emulated x s = 10: 50 ms real) is named
    # (measured with the direct round trip's 82 ms: a timeout and a cut every iteration)
    from bench.schemes import scenario as bench_scenario
    doc = bench_scenario("inart", 50, 262144, 6, 10)
    sc = parse_scenario(yaml.safe_dump(doc), "<bench>")
    assert not any("out of phase" in c for c in M.predict("inart", build_graph(sc), sc).caveats)
    doc["scheme_options"] = {"rto_margin_ms": 500}
    tight = parse_scenario(yaml.safe_dump(doc), "<bench>")
    p = M.predict("inart", build_graph(tight), tight)
    assert any("workers out of phase" in c and "199 ms" in c for c in p.caveats)


def test_alltoall_under_loss_waits_for_the_slowest_of_its_streams():
    # 2 DCs x 2, every worker to every other: without loss its streams go through the
    # links' queues segment by segment (no slower than the busiest link's serialization);
    # under 1 % loss they are simulated round by round and the iteration waits for the
    # slowest of the 12, each loss holding its stream a recovery round: slower than the
    # closed form's loss limit
    clean = predict(scn("alltoall", per_dc=2))
    (queued,) = [k for k in clean.terms if "drop-tail queues" in k]
    assert clean.terms[queued] >= max(v for k, v in clean.limits.items() if k.startswith("serialization at"))
    lossy = predict(scn("alltoall", per_dc=2, loss=1))
    (term,) = [k for k in lossy.limits if k.startswith("streams under loss")]
    assert "once every stream into it is in" in term and lossy.largest_term()[0] == term
    closed = predict(scn("alltoall", per_dc=2, loss=1), closed=True)
    assert lossy.iteration_s > closed.iteration_s > clean.iteration_s
