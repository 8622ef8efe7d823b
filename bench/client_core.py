"""CPU of the INA worker's client per result, the Python state machine against its C core
(docs/ina.md, "The client core"). No network, no root: `gdml bench client [--batch 16]`.

A steady stream: window 128, k = 64, every send answered one round trip later, the
results handed over `batch` at a time with one `now`, and per batch the calls the UDP
driver (workers/ina_udp.py) makes per wake-up: next_deadline, on_packets, on_timer_batch.
Only those calls are timed; the best of `repeat` runs of `tensors` x `chunks` results.
"""
from __future__ import annotations

import argparse
import time
from collections import deque

import numpy as np

from workers import agg_packet as wire
from workers.ina_client import ClientConfig
from workers.ina_core import make_client

RECV_BYTES = 2048           # the width of the UDP receiver's rows (workers/ina_udp.py)


def us_per_result(core: str, batch: int = 16, chunks: int = 20000, tensors: int = 3,
                  window: int = 128, k: int = 64) -> float:
    client = make_client(ClientConfig(job=1, agg_ip="10.0.0.254", sender=0, fan_in=2,
                                      window=window, k=k, initial_rto=0.2, min_rto=0.05, core=core))
    width = 16 + 4 * k
    in_flight: deque = deque()      # the answers of what was sent, in send order

    def answer(sends) -> None:
        if len(sends):
            rows = np.zeros((len(sends), RECV_BYTES), np.uint8)
            rows[:, :width] = sends.payloads
            rows[:, 1] = wire.RESULT            # the switch's result: same chunk, same values
            in_flight.extend(rows)

    now, spent, results = 0.0, 0.0, 0
    for _ in range(tensors):
        answer(client.start_batch(np.arange(chunks * k, dtype=np.int32), now))
        while not client.done:
            now += batch * 50e-6                # 20,000 results/s
            m = min(batch, len(in_flight))
            rows = np.stack([in_flight.popleft() for _ in range(m)]) if m else \
                np.zeros((0, RECV_BYTES), np.uint8)     # waiting for the pacer or a timer
            lengths, arrivals = [width] * m, [now - 1e-5] * m
            t0 = time.perf_counter()
            client.next_deadline()
            a = client.on_packets(rows, lengths, now, arrivals)
            b = client.on_timer_batch(now)
            spent += time.perf_counter() - t0
            results += m
            answer(a)
            answer(b)
    return spent / results * 1e6


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="gdml bench client", description=__doc__.split("\n\n")[0])
    p.add_argument("--batch", type=int, default=16, help="results per wake-up (default 16)")
    p.add_argument("--chunks", type=int, default=20000, help="chunks per tensor")
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args(argv)
    for core in ("python", "c"):
        best = min(us_per_result(core, a.batch, a.chunks) for _ in range(a.repeat))
        print(f"{core:>6}: {best:.2f} us per result ({a.batch} results per wake-up)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
