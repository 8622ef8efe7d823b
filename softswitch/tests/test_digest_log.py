"""digest() in a running switch: logged (rate-limited), counted, and kept bounded."""
import logging
from pathlib import Path

from softswitch.target.switch import Switch

PROGRAM = Path(__file__).parent / "programs" / "pre.p4"
# op 07: the program's digest case (see stf/pre.stf)
FRAME = bytes.fromhex("000000000002" "000000000001" "88b9" "07" "00" "00" "00" "00" "00" "0000" "ee")


def test_digests_are_logged_counted_and_bounded(caplog):
    sw = Switch.from_file(PROGRAM)
    with caplog.at_level(logging.INFO, logger=sw.log.name):
        for _ in range(3 * Switch.DIGESTS_KEPT):
            assert sw.process(1, FRAME), "the digest packet is still forwarded"
    assert sw.stats["digests"] == 3 * Switch.DIGESTS_KEPT
    assert len(sw.digests) <= 2 * Switch.DIGESTS_KEPT
    name, values = sw.digests[-1]
    assert (name, tuple(values)) == ("digest_t", (7, 1))
    logged = [r.getMessage() for r in caplog.records if r.getMessage().startswith("digest ")]
    assert logged and "digest_t" in logged[0]
    assert len(logged) < 20, "a flood of digests must not flood the log"


def test_digests_on_the_compiled_path_are_logged_counted_and_bounded(caplog):
    """The compiled path queues digest() calls for the Python side, which handles them as
    the Python path does: the same count, the same bounded list, the same rate limit."""
    from softswitch.native.switch import CompiledSwitch
    sw = CompiledSwitch(Switch.from_file(PROGRAM))
    with caplog.at_level(logging.INFO, logger=sw.log.name):
        for _ in range(Switch.DIGESTS_KEPT):
            assert sw.process(1, FRAME), "the digest packet is still forwarded"
        assert sw.process_rounds([(1, FRAME)], 2 * Switch.DIGESTS_KEPT) == 2 * Switch.DIGESTS_KEPT
    assert sw.stats["digests"] == 3 * Switch.DIGESTS_KEPT
    assert len(sw.digests) <= 2 * Switch.DIGESTS_KEPT
    name, values = sw.digests[-1]
    assert (name, tuple(values)) == ("digest_t", (7, 1))
    logged = [r.getMessage() for r in caplog.records if r.getMessage().startswith("digest ")]
    assert logged and "digest_t" in logged[0]
    assert len(logged) < 20, "a flood of digests must not flood the log"


def test_log_msg_and_digest_read_alike_on_both_paths(caplog):
    from softswitch.native.switch import CompiledSwitch
    program = Path(__file__).parent / "programs" / "log_events.p4"
    frames = [bytes.fromhex("0a0b0c0d0e0f" "020000000001" "88cc") + bytes(10),
              bytes.fromhex("ffffffffffff" "020000000002" "0800") + bytes(30)]
    logs = []
    for compiled in (False, True):
        sw = Switch.from_file(program, log=logging.getLogger(f"test.log_events.{compiled}"))
        if compiled:
            sw = CompiledSwitch(sw)
        caplog.clear()
        with caplog.at_level(logging.INFO, logger=sw.log.name):
            for port, f in enumerate(frames, 1):
                sw.process(port, f, 1000)
        logs.append(([r.getMessage() for r in caplog.records], list(sw.digests), sw.stats["digests"]))
    assert logs[0] == logs[1]
    lines, digests, count = logs[1]
    assert "log_msg: frame from port 1 type 35020 to 11042563100175" in lines
    assert "log_msg: more braces 35020 {} than values" in lines and "log_msg: lldp seen" in lines
    assert digests == [("learn_t", (0x020000000001, 1))] and count == 1


def test_a_full_event_queue_is_counted_and_logged(caplog):
    """More log_msg calls in one C round than the queue holds: the excess is counted and
    logged once, the rest handled; the packets are unaffected."""
    from softswitch.native.cgen_program import EVENT_CAP
    from softswitch.native.switch import CompiledSwitch
    sw = CompiledSwitch(Switch.from_file(Path(__file__).parent / "programs" / "log_events.p4"))
    frame = bytes.fromhex("ffffffffffff" "020000000002" "0800") + bytes(30)
    with caplog.at_level(logging.INFO, logger=sw.log.name):
        assert sw.process_rounds([(1, frame)], EVENT_CAP) == EVENT_CAP     # 3 calls per frame
    msgs = [r.getMessage() for r in caplog.records]
    assert sum(m.startswith("log_msg: ") for m in msgs) == EVENT_CAP
    assert sum("not logged" in m for m in msgs) == 1 and f" {2 * EVENT_CAP} log_msg" in " ".join(msgs)
