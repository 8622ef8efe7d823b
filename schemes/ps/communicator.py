"""Worker side of ps and hier-ps: stream the gradient to the shard servers in chunks of at
most chunk_values float32 values while the sums of earlier chunks stream back (pulling
chunk j overlaps pushing chunk j+1, as MXNet's PS slices large tensors into keys).

comm (written by schemes/ps/plan.py, schemes/hier_ps/plan.py or schemes/mxnet_ps/plan.py):
    servers    [[ip, port], ...]   one per shard, in shard order
    child_rank this worker's child index at its server(s)
    timeout_s  emulated seconds of silence before a peer counts as dead
    bounds     optional [[lo, hi], ...] per shard, contiguous from 0 to the tensor's size
               (mxnet-ps: MXNet's split); default: workers.framing.shard_bounds
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from workers import framing as fr
from workers.communicator import CommunicatorBase, Counters, Me


class PSCommunicator(CommunicatorBase):
    def __init__(self, comm: dict, me: Me, chunk_values: int = fr.DEFAULT_CHUNK_VALUES):
        servers = [tuple(s) for s in comm["servers"]]
        if not servers:
            raise ValueError("ps: the plan gave this worker no server")
        timeout = float(comm["timeout_s"])
        self.chunk_values = chunk_values
        self.bounds = [tuple(b) for b in comm["bounds"]] if comm.get("bounds") else None
        if self.bounds is not None and len(self.bounds) != len(servers):
            raise ValueError(f"ps: {len(self.bounds)} shard bounds for {len(servers)} servers")
        self.chans: list[fr.Channel] = []
        try:
            for h, p in servers:
                self.chans.append(fr.connect(h, p, f"{me.name}: server {h}:{p}", timeout, timeout))
                self.chans[-1].send(fr.HELLO, int(comm["child_rank"]))
        except BaseException:
            self.close()
            raise
        self.pool = ThreadPoolExecutor(2 * len(servers))

    def allreduce(self, grad: np.ndarray, iteration: int) -> np.ndarray:
        vec = np.ascontiguousarray(grad, dtype=np.float32)
        out = np.empty_like(vec)
        jobs = []
        bounds = self.bounds or fr.shard_bounds(vec.size, len(self.chans))
        if bounds[0][0] != 0 or bounds[-1][1] != vec.size or \
                any(a[1] != b[0] for a, b in zip(bounds, bounds[1:])):
            raise ValueError(f"ps: shard bounds {bounds} do not cover the {vec.size} values "
                             f"contiguously (the plan sized them for another tensor?)")
        for ch, (lo, hi) in zip(self.chans, bounds):
            pieces = fr.chunk_bounds(lo, hi, self.chunk_values)
            jobs.append(self.pool.submit(self._push, ch, vec, pieces, iteration))
            jobs.append(self.pool.submit(self._pull, ch, out, pieces, iteration))
        try:
            for j in jobs:
                j.result()
        except BaseException:
            for c in self.chans:   # unblock the other jobs; this worker is finished anyway
                c.close()
            raise
        return out

    @staticmethod
    def _push(ch, vec, pieces, iteration) -> None:
        for j, (a, b) in enumerate(pieces):
            ch.send(fr.DATA_END if j == len(pieces) - 1 else fr.DATA, fr.chunk_tag(iteration, j),
                    vec[a:b])

    @staticmethod
    def _pull(ch, out, pieces, iteration) -> None:
        for j, (a, b) in enumerate(pieces):
            _, _, got = ch.recv(fr.RESULT, fr.chunk_tag(iteration, j),
                                what=f"the sum of chunk {j} of iteration {iteration}")
            if got.size != b - a:
                raise fr.PeerError(f"{ch.peer}: result has {got.size} values, expected {b - a}")
            out[a:b] = got

    def counters(self) -> Counters:
        return fr.channel_counters(self.chans)

    def describe(self) -> dict:
        return {"servers": len(self.chans), "tcp_congestion_control": self.chans[0].congestion_control()}

    def close(self) -> None:
        for c in self.chans:
            try:
                c.send(fr.BYE, 0)
            except fr.PeerError:
                pass   # the server is gone already; nothing left to tell it
            c.close()
        if getattr(self, "pool", None):
            self.pool.shutdown(wait=False)
