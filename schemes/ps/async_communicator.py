"""Worker side of ps in ssp and asp: push the gradient to the asynchronous server, get back
the model it releases (schemes/ps/async_server.py has the protocol and the semantics).

comm (written by schemes/ps/plan.py):
    servers    [[ip, port]]   the one server
    child_rank this worker's rank at the server
    timeout_s  emulated seconds of silence before the server counts as dead; under ssp a
               worker also waits this long at most for the slowest worker to catch up
    mode       ssp | asp
"""
from __future__ import annotations

import numpy as np

from workers import framing as fr
from workers.communicator import CommunicatorBase, Counters, Me, Pulled


class AsyncPSCommunicator(CommunicatorBase):
    def __init__(self, comm: dict, me: Me):
        servers = [tuple(s) for s in comm["servers"]]
        if len(servers) != 1:
            raise ValueError(f"ps in {comm.get('mode')}: the plan gave this worker {len(servers)} "
                             f"servers, the asynchronous server is one; re-plan with shards: 1")
        (h, p), timeout = servers[0], float(comm["timeout_s"])
        self.mode = comm.get("mode")
        self.size: int | None = None
        self.chan = fr.connect(h, p, f"{me.name}: server {h}:{p}", timeout, timeout)
        try:
            self.chan.send(fr.HELLO, int(comm["child_rank"]))
        except BaseException:
            self.chan.close()
            raise

    def init_model(self, model: np.ndarray) -> None:
        self.size = send_initial_model(self.chan, model)

    def push_pull(self, grad: np.ndarray, iteration: int) -> Pulled:
        vec = update_vector(grad, self.size, "ps")
        self.chan.send(fr.DATA_END, iteration, vec)
        nxt = iteration + 1
        what = f"the model to start iteration {nxt} ({self.mode}: the server holds it back while the " \
               f"slowest worker is too far behind)"
        _, _, head = self.chan.recv(fr.MODEL_VERSION, nxt, what=what)
        _, _, model = self.chan.recv(fr.MODEL, nxt, what=what)
        if head.size != 4 or int(head[0]) != nxt or model.size != self.size:
            raise fr.PeerError(f"{self.chan.peer}: release {head.tolist()} with a model of {model.size} "
                               f"values, expected iteration {nxt} and {self.size} values")
        return Pulled(model, int(head[1]), int(head[2]), int(head[3]))

    def counters(self) -> Counters:
        return fr.channel_counters([self.chan])

    def describe(self) -> dict:
        return {"servers": 1, "mode": self.mode, "tcp_congestion_control": self.chan.congestion_control()}

    def close(self) -> None:
        try:
            self.chan.send(fr.BYE, 0)
        except fr.PeerError:
            pass   # the server is gone already; nothing left to tell it
        self.chan.close()


def send_initial_model(chan: fr.Channel, model: np.ndarray) -> int:
    """Send the worker's initial model (float32) to its server; its size."""
    vec = np.ascontiguousarray(model, dtype=np.float32)
    chan.send(fr.MODEL_INIT, 0, vec)
    return vec.size


def update_vector(grad: np.ndarray, size: int | None, scheme: str) -> np.ndarray:
    """A gradient as the float32 update an asynchronous server takes, checked against the
    model's size (None: init_model was not called)."""
    if size is None:
        raise RuntimeError(f"{scheme}: push_pull before init_model: the worker loop must send the "
                           "initial model first")
    vec = np.ascontiguousarray(grad, dtype=np.float32)
    if vec.size != size:
        raise ValueError(f"{scheme}: gradient of {vec.size} values for a model of {size}")
    return vec
