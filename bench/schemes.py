"""Scheme benchmark: iteration time of every scheme and speedup over ps, at three WAN rates.

    python3 run.py bench schemes [--bandwidths 25,50,100] [--iterations 6] [--parameters 262144]
                                 [--dilation 10] [--schemes ps,hier-ps,ring,ina,geo-ina] [--loss 0]
                                 [--out DIR]

Scenario: 3 datacenters (Washington DC, Frankfurt, Tokyo: catalog RTTs 91/165/233 ms), one
rack of 4 workers each (12 workers), full-mesh WAN at each bandwidth (real-world Mbps),
1 Gbps LAN, zero compute time (so iteration time is synchronisation time), synthetic
gradients of --parameters float32 values, --loss percent of packets lost per WAN link and
direction (the model has the loss term too). Time dilation (default 10) keeps the software
switches' packet rate below what they carry; every figure is reported back in real-world
seconds. ps runs its server in the first datacenter (co-located with a worker, as MXNet
is usually deployed); hier-ps's global server too; INA uses k = 64 values per packet.
`--schemes` takes any registered scheme (default the five classic ones); one that does not
run bsp runs in its own mode (mlfabric: asp), so its row is not a bsp speedup.

Per bandwidth and scheme, from each run's row (analysis/measure.py, the first iteration
left out as everywhere): time per iteration (the job's pace, iteration_period_s),
communication time per iteration, bytes the workers sent and WAN bytes per iteration, and speedup over ps (analysis/speedup.py).
Bound ratios at the middle bandwidth, S = 4 x parameters bytes, B = WAN rate:
  ps   measured comm (comm_time_mean_s) / (4 S / B): the 4 workers of a remote datacenter must push their
       S bytes each over that datacenter's WAN link into the server's datacenter
  ina  measured comm of geo-ina / (S / B): at least one gradient-sized partial sum must
       cross a WAN link (the issue's INA bound; flat ina, which sends every remote
       worker's packets over the WAN, is bounded by 4 S / B like ps)
Model: every row also has the scheme's model (schemes/<name>/model.py, model output, real-world
seconds) and measured / model; model_ratio_max is the worst (largest) ratio at the middle
bandwidth, with its scheme. Last line:
schemes: speedup_geo_ina_vs_ps=... speedup_ring_vs_ps=... bound_ratio_ps=... bound_ratio_ina=...
         model_ratio_max=... (scheme)
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import yaml

from analysis.rundata import RunData
from analysis.speedup import speedup_table
import schemes

PREFIX = "bs"
SCHEMES = ("ps", "hier-ps", "ring", "ina", "geo-ina")
WORKERS_PER_DC = 4


def scenario(scheme: str, wan_mbps: float, parameters: int, iterations: int, dilation: float,
             loss_pct: float = 0.0) -> dict:
    scn = {"name": f"bench-schemes-{scheme}-{wan_mbps:g}", "seed": 11, "time_dilation": dilation,
           "datacenters": [{"name": n, "region": r, "racks": 1, "workers_per_rack": WORKERS_PER_DC}
                           for n, r in (("wdc", "ibm:us-east"), ("fra", "ibm:eu-de"), ("tok", "ibm:jp-tok"))],
           "wan": {"topology": "full-mesh", "default": {"bandwidth_mbps": float(wan_mbps)}},
           "intra_dc": {"access": {"bandwidth_mbps": 1000.0, "delay_ms": 0.0},
                        "uplink": {"bandwidth_mbps": 1000.0, "delay_ms": 0.0}},
           "scheme": scheme, "workload": {"kind": "synthetic", "parameters": parameters},
           "compute_time": {"model": "constant", "value_ms": 0.0}, "iterations": iterations}
    if loss_pct:
        scn["wan"]["default"]["loss_pct"] = float(loss_pct)
    modes = schemes.get(scheme).modes
    if "bsp" not in modes:      # mlfabric runs asp only: its own mode, said in the table's name
        scn["training"] = {"mode": modes[0]}
    if scheme in ("ina", "geo-ina"):
        scn["switch"] = {"program": "p4/aggregation.p4", "defines": {"AGG_K": 64}}
    return scn


def run_one(scn: dict, workdir: Path, out: Path) -> dict:
    """One run; its row (RunData.metrics) with the run's warnings and folder added."""
    from testbed.lifecycle import RunOptions, run_scenario
    path = workdir / f"{scn['name']}.yaml"
    path.write_text(yaml.safe_dump(scn))
    (d,) = run_scenario(RunOptions(str(path), [], str(out), prefix=PREFIX, show_progress=False,
                                   timeout_s=900), log=lambda *a, **k: None)
    run = RunData.load(d)
    if not run.summary.get("complete"):
        raise RuntimeError(f"{scn['name']}: run incomplete ({run.summary.get('reason')}); see {d}")
    model = run.summary.get("model") or {}
    return dict(run.metrics(), _warnings=run.summary.get("warnings") or [], _dir=str(d),
                _model_s=model.get("model_iteration_time_s"), _ratio=model.get("measured_over_model"),
                _largest=max((model.get("terms") or {}).items(), key=lambda kv: kv[1], default=("", 0))[0])


def bound_ratios(rows: dict, parameters: int, wan_mbps: float) -> dict:
    s_bits = 4 * parameters * 8
    out = {}
    if rows.get("ps", {}).get("comm_time_mean_s") is not None:
        out["ps"] = rows["ps"]["comm_time_mean_s"] / (WORKERS_PER_DC * s_bits / (wan_mbps * 1e6))
    if rows.get("geo-ina", {}).get("comm_time_mean_s") is not None:
        out["ina"] = rows["geo-ina"]["comm_time_mean_s"] / (s_bits / (wan_mbps * 1e6))
    return out


def _f(v, nd=3):
    return "-" if v is None else f"{v:.{nd}f}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="gdml bench schemes")
    ap.add_argument("--bandwidths", default="25,50,100", help="WAN Mbps (real world), comma-separated")
    ap.add_argument("--iterations", type=int, default=6,
                    help="iterations per run, the first one warm-up (TCP windows take a few to grow)")
    ap.add_argument("--parameters", type=int, default=262144)
    ap.add_argument("--dilation", type=float, default=10.0)
    ap.add_argument("--schemes", default=",".join(SCHEMES))
    ap.add_argument("--loss", type=float, default=0.0, help="WAN loss, percent per link and direction")
    ap.add_argument("--out", default=None, help="keep the runs' results here (default: a temp folder)")
    a = ap.parse_args(argv)
    bws = [float(x) for x in a.bandwidths.split(",")]
    schemes = [s.strip() for s in a.schemes.split(",")]
    if "ps" not in schemes:
        raise SystemExit("error: --schemes must include ps (the speedup baseline)")
    if not 0 <= a.loss < 100:
        raise SystemExit(f"error: --loss {a.loss:g}: a percentage in [0, 100)")
    if a.iterations < 2:
        raise SystemExit("error: --iterations must be >= 2 (the first one is warm-up)")
    results: dict[float, dict] = {}
    with tempfile.TemporaryDirectory(prefix="gdml-bench-schemes-") as tmp:
        out = Path(a.out) if a.out else Path(tmp) / "results"
        for bw in bws:
            results[bw] = {}
            for s in schemes:
                row = run_one(scenario(s, bw, a.parameters, a.iterations, a.dilation, a.loss), Path(tmp), out)
                results[bw][s] = row
                print(f"  {bw:g} Mbps {s}: {_f(row['iteration_period_s'])} s/iteration "
                      f"({len(row['_warnings'])} warning(s))", flush=True)
    print(f"\n{a.parameters} float32 parameters ({4 * a.parameters / 1e6:.2f} MB) per worker, "
          f"3 DC x {WORKERS_PER_DC} workers, WAN loss {a.loss:g}%, time dilation {a.dilation:g}, "
          f"real-world seconds")
    print(f"{'WAN Mbps':>8} {'scheme':>8} {'s/iter':>8} {'model s':>8} {'ratio':>6} {'comm s':>8} "
          f"{'MB/iter':>8} {'WAN MB':>8} {'speedup':>8}  switch-limited  (model: analytic, "
          f"schemes/<name>/model.py; ratio = measured / model)")
    mb = lambda v: _f(None if v is None else v / 1e6, 2)
    for bw, rows in results.items():
        for line in speedup_table(rows, "ps"):
            limited = any("limited" in w for w in rows[line["scheme"]]["_warnings"])
            row = rows[line["scheme"]]
            print(f"{bw:>8g} {line['scheme']:>8} {_f(line['time_per_iteration_s']):>8} "
                  f"{_f(row.get('_model_s')):>8} {_f(row.get('_ratio'), 2):>6} "
                  f"{_f(line['comm_per_iteration_s']):>8} {mb(line['bytes_sent_per_iteration']):>8} "
                  f"{mb(line['wan_bytes_per_iteration']):>8} "
                  f"{_f(line['speedup_iteration'], 2):>8}  {'yes' if limited else 'no'}")
    mid = bws[len(bws) // 2]
    table = {r["scheme"]: r for r in speedup_table(results[mid], "ps")}
    b = bound_ratios(results[mid], a.parameters, mid)
    get = lambda s: _f(table[s]["speedup_iteration"], 2) if s in table else "-"
    worst = max(((r["_ratio"], s) for s, r in results[mid].items() if r.get("_ratio") is not None),
                default=(None, None))
    if worst[1]:
        print(f"worst measured/model at {mid:g} Mbps: {worst[1]} (largest model term: "
              f"{results[mid][worst[1]]['_largest']})")
    print(f"schemes: speedup_geo_ina_vs_ps={get('geo-ina')} speedup_ring_vs_ps={get('ring')} "
          f"bound_ratio_ps={_f(b.get('ps'), 2)} bound_ratio_ina={_f(b.get('ina'), 2)} "
          f"model_ratio_max={_f(worst[0], 2)}{'' if worst[1] is None else f' ({worst[1]})'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
