"""Worker side of ps and hier-ps: stream the gradient to the shard servers in chunks of at
most chunk_values float32 values while the sums of earlier chunks stream back (pulling
chunk j overlaps pushing chunk j+1, as MXNet's PS slices large tensors into keys).

comm (written by schemes/ps/plan.py, schemes/hier_ps/plan.py or schemes/mxnet_ps/plan.py):
    servers    [[ip, port], ...]   one per shard, in shard order
    child_rank this worker's child index at its server(s)
    timeout_s  emulated seconds of silence before a peer counts as dead
    bounds     optional [[lo, hi], ...] per shard, contiguous from 0 to the tensor's size
               (mxnet-ps: MXNet's split); default: workers.framing.shard_bounds
    push       optional "dense" (default) | "touched_rows" (ps's option push)
    row_blocks with touched_rows: [[offset, rows, width], ...], workers.workload.row_blocks

With touched_rows, each row block goes as the rows this worker touched (any value not
+0.0), one ROWS frame per shard part of the block (schemes/ps/pieces.py); the server sums
them per row and sends back the union of every worker's rows with their sums, which this
side writes into zeros: the same bits as the dense sum (workers.framing.sum_rows_in_order).
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from schemes.ps.pieces import PUSH_MODES, Dense, align_bounds, check_blocks, shard_pieces
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
        self.push = comm.get("push", "dense")
        if self.push not in PUSH_MODES:
            raise ValueError(f"ps: push {self.push!r} is not one of {', '.join(PUSH_MODES)}")
        self.row_blocks = [tuple(b) for b in comm.get("row_blocks", [])] \
            if self.push == "touched_rows" else []
        self._rows = {"rows_pushed": 0, "rows_pulled": 0}   # this iteration's (stats)
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
        bounds = self.bounds or fr.shard_bounds(vec.size, len(self.chans))
        if bounds[0][0] != 0 or bounds[-1][1] != vec.size or \
                any(a[1] != b[0] for a, b in zip(bounds, bounds[1:])):
            raise ValueError(f"ps: shard bounds {bounds} do not cover the {vec.size} values "
                             f"contiguously (the plan sized them for another tensor?)")
        blocks = check_blocks(self.row_blocks, vec.size)
        if blocks:
            bounds = align_bounds(bounds, blocks)
        pushes, pulls = [], []
        for ch, (lo, hi) in zip(self.chans, bounds):
            pieces = shard_pieces(lo, hi, blocks, self.chunk_values)
            pushes.append(self.pool.submit(self._push, ch, vec, pieces, iteration))
            pulls.append(self.pool.submit(self._pull, ch, out, pieces, iteration))
        try:
            self._rows = {"rows_pushed": sum(j.result() for j in pushes),
                          "rows_pulled": sum(j.result() for j in pulls)}
        except BaseException:
            for c in self.chans:   # unblock the other jobs; this worker is finished anyway
                c.close()
            raise
        return out

    @staticmethod
    def _push(ch, vec, pieces, iteration) -> int:
        """Send every piece; -> rows sent."""
        rows = 0
        for j, p in enumerate(pieces):
            last, tag = j == len(pieces) - 1, fr.chunk_tag(iteration, j)
            if isinstance(p, Dense):
                ch.send(fr.DATA_END if last else fr.DATA, tag, vec[p.lo:p.hi])
                continue
            block = vec[p.lo:p.hi].reshape(-1, p.width)
            ids = fr.touched_rows(block)
            ch.send(fr.ROWS_END if last else fr.ROWS, tag, fr.encode_rows(ids + p.r0, block[ids]))
            rows += len(ids)
        return rows

    @staticmethod
    def _pull(ch, out, pieces, iteration) -> int:
        """Receive every piece's sum into out; -> rows received."""
        rows = 0
        for j, p in enumerate(pieces):
            tag, what = fr.chunk_tag(iteration, j), f"the sum of chunk {j} of iteration {iteration}"
            if isinstance(p, Dense):
                _, _, got = ch.recv(fr.RESULT, tag, what=what)
                if got.size != p.hi - p.lo:
                    raise fr.PeerError(f"{ch.peer}: result has {got.size} values, expected {p.hi - p.lo}")
                out[p.lo:p.hi] = got
                continue
            _, _, payload = ch.recv(fr.ROWS_RESULT, tag, what=what)
            ids, values = fr.decode_rows(payload, ch.peer, p.width)
            if len(ids) and not (p.r0 <= ids[0] and ids[-1] < p.r1):
                raise fr.PeerError(f"{ch.peer}: summed rows {ids[0]}..{ids[-1]} outside the piece's "
                                   f"rows {p.r0}..{p.r1 - 1}: same scenario everywhere?")
            block = out[p.lo:p.hi].reshape(-1, p.width)
            block[...] = 0.0
            block[ids.astype(np.int64) - p.r0] = values
            rows += len(ids)
        return rows

    def counters(self) -> Counters:
        return fr.channel_counters(self.chans)

    def stats(self) -> dict:
        """With touched_rows: the rows this worker pushed and the summed rows it pulled in
        the last iteration."""
        return dict(self._rows) if self.row_blocks else {}

    def describe(self) -> dict:
        return {"servers": len(self.chans), "tcp_congestion_control": self.chans[0].congestion_control(),
                "push": self.push, "row_blocks": [list(b) for b in self.row_blocks]}

    def close(self) -> None:
        for c in self.chans:
            try:
                c.send(fr.BYE, 0)
            except fr.PeerError:
                pass   # the server is gone already; nothing left to tell it
            c.close()
        if getattr(self, "pool", None):
            self.pool.shutdown(wait=False)
