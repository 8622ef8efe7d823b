"""Run-time part of scheme l3dml: at the end of a run, the aggregation events of the
switches that repair WAN losses and of the root's switch (timers' re-sends, timers ended or
given up, duplicates answered), read from their agg_events counters into summary.json
(app["switch_repair"]). The rate-synchronization controller will live here too."""
from __future__ import annotations

from control.agg_entries import event_reads, parse_events


class RepairCounters:
    summary_key = "switch_repair"        # where scheme_app records summary()

    def __init__(self, switches: list[str], push):
        self.switches, self.push = switches, push
        self.events: dict[str, dict[str, int]] = {}
        self.error: str | None = None

    def start(self) -> None:
        pass

    def stop(self) -> None:
        if self.events or self.error:
            return
        try:
            for sw in self.switches:
                self.events[sw] = parse_events(self.push(sw, event_reads()))
        except Exception as e:      # the run's results stand without these counts: say why
            self.error = f"reading the switches' agg_events failed: {e}"

    def summary(self) -> dict:
        return {"events": self.events, "error": self.error}


def controller(graph, scenario, options, plan, hooks):
    """RepairCounters over the repairing switches and the root's, or None without repair."""
    if not plan.timer_loops:
        return None
    switches = sorted(plan.timer_loops) + [plan.info["root"]]
    return RepairCounters(switches, hooks.push)
