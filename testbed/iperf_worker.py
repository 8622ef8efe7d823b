"""One iperf demo worker, run inside a Mininet host: iterations of iperf3 to its peer.

    python3 -m testbed.iperf_worker --worker h1r1w1 --peer 10.2.1.1 --bytes 1000000 \
        --iterations 5 --events results/.../events/h1r1w1.jsonl

Each iteration runs `iperf3 -c PEER -n BYTES -J` and appends what iperf3 measured (its
own receiver-side numbers) to the event log, one JSON object per line, timestamps from
CLOCK_MONOTONIC (time.monotonic()). A busy server (another client mid-test) is retried.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time


# iperf3 servers serve one client at a time and briefly reset between tests
RETRYABLE = ("busy", "refused", "reset by peer", "unable to receive control message")


def log_event(f, **ev) -> None:
    f.write(json.dumps(ev) + "\n")
    f.flush()


def iperf_args(a, bytes_: int) -> list[str]:
    args = ["iperf3", "-c", a.peer, "-p", str(a.port), "-n", str(bytes_), "-J"]
    if a.protocol == "udp":
        args += ["-u", "-b", f"{a.udp_rate_mbps}M", "-l", str(a.udp_length)]
    return args


def parse_result(doc: dict, protocol: str) -> dict:
    """The receiver-side numbers of one iperf3 -J run."""
    end = doc["end"]
    if protocol == "udp":
        # the client's UDP "sum" is the sender's rate; what arrived is packets - lost
        s = end["sum"]
        pkts, lost = s.get("packets") or 0, s.get("lost_packets") or 0
        recv_bytes = s["bytes"] * (pkts - lost) / pkts if pkts else 0
        return {"bytes": s["bytes"], "bytes_received": round(recv_bytes),
                "bits_per_second": 8 * recv_bytes / s["seconds"] if s["seconds"] else 0.0,
                "sent_bits_per_second": s["bits_per_second"],
                "seconds": s["seconds"], "lost_packets": s.get("lost_packets"),
                "packets": s.get("packets"), "lost_percent": s.get("lost_percent"),
                "jitter_ms": s.get("jitter_ms")}
    # iperf3 -n stops the clock when the client has written its bytes, and the server stops
    # counting at the end message: bytes still in flight are not in sum_received. So the
    # rate is the receiver's, and the bytes of the iteration are what the client sent.
    r, snt = end["sum_received"], end.get("sum_sent", {})
    return {"bytes": snt.get("bytes", r["bytes"]), "bytes_received": r["bytes"],
            "bits_per_second": r["bits_per_second"], "seconds": r["seconds"],
            "retransmits": snt.get("retransmits")}


def run_once(a) -> dict:
    deadline = time.monotonic() + a.timeout
    while True:
        p = subprocess.run(iperf_args(a, a.bytes), capture_output=True, text=True,
                           timeout=max(1.0, deadline - time.monotonic()))
        try:
            doc = json.loads(p.stdout)
        except ValueError:
            doc = {"error": (p.stderr or p.stdout).strip()[-300:] or f"iperf3 exit {p.returncode}"}
        err = doc.get("error")
        if not err:
            return parse_result(doc, a.protocol)
        if any(m in err for m in RETRYABLE) and time.monotonic() < deadline - 1:
            time.sleep(0.2)   # server busy with another client, restarting, or not up yet
            continue
        raise RuntimeError(f"iperf3 to {a.peer}: {err}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m testbed.iperf_worker")
    ap.add_argument("--worker", required=True)
    ap.add_argument("--index", type=int, default=0)
    ap.add_argument("--peer", required=True)
    ap.add_argument("--port", type=int, default=5201)
    ap.add_argument("--protocol", choices=("tcp", "udp"), default="tcp")
    ap.add_argument("--bytes", type=int, required=True)
    ap.add_argument("--iterations", type=int, required=True)
    ap.add_argument("--duration", type=float, default=None)
    ap.add_argument("--udp-rate-mbps", type=float, default=10.0)
    ap.add_argument("--udp-length", type=int, default=1400)
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--events", required=True)
    a = ap.parse_args(argv)
    t0 = time.monotonic()
    with open(a.events, "a") as f:
        log_event(f, event="worker_start", t=t0, worker=a.worker, index=a.index, pid=os.getpid(),
                  peer=a.peer, protocol=a.protocol)
        it = 0
        try:
            while it < a.iterations and (a.duration is None or time.monotonic() - t0 < a.duration):
                ts = time.monotonic()
                log_event(f, event="iteration_start", t=ts, worker=a.worker, iteration=it)
                res = run_once(a)
                te = time.monotonic()
                log_event(f, event="iteration_end", t=te, t_start=ts, t_end=te, worker=a.worker,
                          iteration=it, **res)
                it += 1
        except Exception as e:   # recorded, then the worker ends: the run reports it
            log_event(f, event="worker_error", t=time.monotonic(), worker=a.worker, iteration=it,
                      error=str(e))
            return 1
        log_event(f, event="worker_end", t=time.monotonic(), worker=a.worker, iterations=it)
    return 0


if __name__ == "__main__":
    sys.exit(main())
