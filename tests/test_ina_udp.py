"""The UDP driver over real sockets (loopback, no root): the aggregation point is the
P4 program in the in-process softswitch behind a UDP <-> frame bridge that loses
packets, so the driver's timers and retransmissions run in real time."""
import socket
import threading

import numpy as np
import pytest

from control.agg_entries import push
from tests.agg_switches import factory, flat_point_commands, udp_bridge
from workers.ina_client import ClientConfig
from workers.ina_core import make_client
from workers.ina_udp import aggregate, open_socket

AGG_IP, WORKERS = "127.0.0.2", ["127.0.0.3", "127.0.0.4", "127.0.0.5"]


@pytest.mark.parametrize("plain,core", [(False, "python"), (True, "python"), (False, "c")])
def test_driver_aggregates_over_lossy_udp(plain, core, monkeypatch):
    """With sendmmsg/recvmmsg, and with the fallback that loops over sendto/recvmsg; with
    the client's Python state machine and its C core."""
    if plain:
        from workers import mmsg
        monkeypatch.setattr(mmsg, "_SENDMMSG", None)
        monkeypatch.setattr(mmsg, "_RECVMMSG", None)
    agg = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    agg.bind((AGG_IP, 0))
    agg.settimeout(0.05)
    port = agg.getsockname()[1]
    sw = factory("softswitch")()
    push(sw, flat_point_commands(AGG_IP, WORKERS, 4))
    stop = threading.Event()
    t = threading.Thread(target=udp_bridge, args=(sw, agg, stop, 0.1, np.random.default_rng(3)), daemon=True)
    t.start()
    rng = np.random.default_rng(0)
    tensors = [rng.integers(-2**20, 2**20, size=1000).astype(np.int32) for _ in WORKERS]
    results, clients, errors = {}, {}, []

    def worker(i, ip):
        try:
            c = make_client(ClientConfig(job=1, agg_ip=AGG_IP, sender=i, fan_in=len(WORKERS),
                                         window=4, initial_rto=0.05, min_rto=0.02, core=core))
            clients[i] = c
            with open_socket(ip, port) as s:
                results[i] = aggregate(s, c, tensors[i], port=port, timeout_s=60)
        except Exception as e:      # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i, ip)) for i, ip in enumerate(WORKERS)]
    try:
        for th in threads:
            th.start()
        for th in threads:
            th.join(90)
    finally:
        stop.set()
        t.join(2)
        agg.close()
    assert not errors, errors
    want = np.sum([x.astype(np.int64) for x in tensors], axis=0)
    for i in range(len(WORKERS)):
        np.testing.assert_array_equal(results[i].astype(np.int64), want)
    assert sum(c.stats.retransmissions for c in clients.values()) > 0   # 10% loss each way


def test_bind_conflict_explains_itself():
    with open_socket("127.0.0.6", 0) as a:
        port = a.getsockname()[1]
        try:
            open_socket("127.0.0.6", port)
        except OSError as e:
            assert "another worker" in str(e)
        else:
            raise AssertionError("second bind should fail")
