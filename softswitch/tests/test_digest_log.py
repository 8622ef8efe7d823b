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
