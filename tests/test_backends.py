"""Switch backend selection; the bmv2 end-to-end test skips where BMv2/p4c are absent."""
import shutil

import pytest

from testbed import backends

ALL = {"simple_switch", "simple_switch_CLI", "p4c"}


def which_of(present):
    return lambda name: f"/usr/bin/{name}" if name in present else None


def test_auto_picks_bmv2_only_when_all_tools_are_on_path():
    assert backends.choose_backend("auto", which_of(ALL))[0] == "bmv2"
    for missing in ALL:
        backend, reason = backends.choose_backend("auto", which_of(ALL - {missing}))
        assert backend == "softswitch"
        assert missing in reason


def test_p4c_bm2_ss_counts_as_p4c():
    assert backends.choose_backend("auto", which_of({"simple_switch", "simple_switch_CLI",
                                                     "p4c-bm2-ss"}))[0] == "bmv2"


def test_forced_backends():
    assert backends.choose_backend("softswitch", which_of(ALL))[0] == "softswitch"
    assert backends.choose_backend("bmv2", which_of(ALL))[0] == "bmv2"
    with pytest.raises(backends.BackendError, match="needs simple_switch, p4c"):
        backends.choose_backend("bmv2", which_of(set()))
    with pytest.raises(backends.BackendError, match="unknown switch backend"):
        backends.choose_backend("ovs", which_of(ALL))


def test_each_backend_gets_its_runtime_client_on_the_switch_port():
    from types import SimpleNamespace as Node
    from softswitch.control.client import RuntimeClient, SoftswitchClient
    from softswitch.p4runtime.cli_client import P4RuntimeClient
    from testbed.bmv2 import Bmv2Client
    soft = backends.client_for("softswitch", Node(thrift_port=9999, control="cli"))
    bm = backends.client_for("bmv2", Node(thrift_port=9998))
    p4rt = backends.client_for("softswitch", Node(thrift_port=9997, control="p4runtime", grpc_port=9559, device_id=3))
    assert type(soft) is SoftswitchClient and type(bm) is Bmv2Client and type(p4rt) is P4RuntimeClient
    assert all(isinstance(c, RuntimeClient) for c in (soft, bm, p4rt))   # one interface
    assert (soft.port, bm.port) == (9999, 9998)
    assert (p4rt.address, p4rt.device_id) == ("127.0.0.1:9559", 3)   # not connected until used


@pytest.mark.bmv2
@pytest.mark.skipif(bool(backends.bmv2_missing_tools()),
                    reason="bmv2 backend test skipped: " + ", ".join(backends.bmv2_missing_tools())
                    + " not on PATH (BMv2 and p4c are not installable from Debian/PyPI here)")
def test_bmv2_is_chosen_on_this_machine():
    assert backends.choose_backend("auto")[0] == "bmv2"
    assert shutil.which("simple_switch")
