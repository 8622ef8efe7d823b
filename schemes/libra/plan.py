"""Plan of scheme libra (pure): ina's plan for the switch vector, ps's (push touched_rows)
for the cold block, and the hot-set settings every worker turns into the same layout.

Sizes: the switch vector (hot rows x d + the dense part) must fit the job's slots at its
aggregation point(s), one slot per packet of k values, so every hot row has its own fixed
slot and offset (Libra's hot parameters resident in switch memory). hot_rows "auto" fills
the window ina would choose (a budget: ids never seen in the count are not hot, so the
hot set can be smaller; the plan's info gives both); a number of rows raises an "auto" window up to the switch's
slots, and is refused with what to change when it cannot fit.

A dense workload (no row block) runs as ina: every parameter is hot, the whole gradient goes
through the switch and there is no server (README.md).
"""
from __future__ import annotations

import math
from collections import Counter

from control.agg_entries import DEFAULT_SLOTS
from schemes.base import Plan
from schemes.ina.plan import plan_for, tree_for
from schemes.libra.hot import hot_rows_for_slots
from schemes.libra.layout import job_layout
from schemes.libra.options import LibraOptions
from schemes.ps.options import PsOptions
from schemes.ps.plan import plan as ps_plan
from workers.workload import parameter_count, row_blocks

COMMUNICATOR = "schemes.libra.communicator:LibraCommunicator"
SHAPES = {"flat": "ina", "geo": "geo-ina"}


def switch_slots(scenario, tree) -> int:
    """Slots one point of the tree may hold: the program's AGG_SLOTS shared by the points a
    switch hosts."""
    slots = int(scenario.switch.defines.get("AGG_SLOTS", DEFAULT_SLOTS))
    return slots // max(Counter(p.switch for p in tree.points.values()).values())


def sizes(graph, scenario, o: LibraOptions) -> dict:
    """The split of the gradient and the window: values, block, dense values, hot rows,
    switch values, chunks, window, k, tree shape."""
    shape = SHAPES[o.tree]
    tree, k = tree_for(shape, graph, scenario, o.ina_options())
    wl = scenario.workload.model_dump()
    values = parameter_count(wl)
    blocks = row_blocks(wl)
    out = {"shape": shape, "k": k, "values": values, "block": None, "hot_rows": 0,
           "dense_values": values, "switch_values": values, "window": tree.window}
    if not blocks:
        return out
    (block,) = blocks
    off, rows, width = block
    dense = values - rows * width
    cap = switch_slots(scenario, tree)
    if o.hot_rows == "auto":
        hot = hot_rows_for_slots(tree.window, k, dense, width, rows)
    elif o.hot_rows > rows:
        raise ValueError(f"scheme_options.hot_rows: {o.hot_rows} rows but the embedding table has "
                         f"{rows}: lower it or set it to auto")
    else:
        hot = o.hot_rows
    switch_values = hot * width + dense
    chunks = math.ceil(switch_values / k)
    window = tree.window
    if chunks > window:
        if o.window != "auto":
            raise ValueError(f"scheme_options.hot_rows: {hot} hot rows of {width} + {dense} dense "
                             f"values need {chunks} slots of k={k} but window is {window}: raise "
                             f"window or lower hot_rows")
        if chunks > cap:
            raise ValueError(f"scheme_options.hot_rows: {hot} hot rows of {width} + {dense} dense "
                             f"values need {chunks} slots of k={k} but the switch gives this job "
                             f"{cap}: lower hot_rows or compile p4/aggregation.p4 with a larger "
                             f"AGG_SLOTS (switch.defines)")
        window = chunks
    out.update(block=list(block), hot_rows=hot, dense_values=dense, switch_values=switch_values,
               window=window)
    return out


def hot_settings(o: LibraOptions, hot_rows: int) -> dict:
    """What a worker needs to compute the hot set and the layout (schemes/libra/layout.py)."""
    return {"rows": hot_rows, "source": o.hot_source, "sample_fraction": o.sample_fraction,
            "warmup_iterations": o.warmup_iterations, "order": o.order}


def plan(graph, scenario, o: LibraOptions) -> Plan:
    sz = sizes(graph, scenario, o)
    ina = plan_for(sz["shape"])(graph, scenario, o.ina_options(sz["window"]))
    wl = scenario.workload.model_dump()
    hot = hot_settings(o, sz["hot_rows"])
    # what the workers will compute: fewer rows than the budget when fewer ids were seen
    lay = job_layout(wl, scenario.seed, len(ina.workers), hot, sz["k"])
    info = {**ina.info, "tree_shape": o.tree, "values": sz["values"], "hot_rows_budget": sz["hot_rows"],
            "hot_rows": int(lay.hot.size), "switch_values": lay.switch_values,
            "dense_values": sz["dense_values"]}
    common = {"workload": wl, "seed": scenario.seed, "hot": hot}
    if sz["block"] is None:   # dense workload: libra is ina
        info["degenerate"] = "dense workload: every parameter is hot, all through the switch (ina)"
        return Plan(ina.workers, {w: {**common, "ina": ina.comm[w], "ps": None} for w in ina.workers},
                    switch_commands=ina.switch_commands, info=info)
    root_dc = graph.nodes[ina.info["root"]]["dc"]
    ps_opts = PsOptions(server_dc=o.server_dc if o.server_dc is not None else root_dc,
                        base_port=o.base_port, timeout_s=o.timeout_s, push="touched_rows")
    ps = ps_plan(graph, scenario, ps_opts)
    if ps.workers != ina.workers:
        raise ValueError(f"libra: the switch tree's workers {ina.workers} and the server's "
                         f"{ps.workers} differ in order; this is a bug of the plan, report it")
    _, rows, width = sz["block"]
    comm = {}
    for w in ina.workers:
        # the server sees the cold block alone: one row block at offset 0
        comm[w] = {**common, "ina": ina.comm[w],
                   "ps": {**ps.comm[w], "row_blocks": [[0, rows, width]]}}
    info.update(server_hosts=ps.info["server_hosts"], cold_rows=rows - int(lay.hot.size),
                block=sz["block"])
    return Plan(ina.workers, comm, ps.servers, switch_commands=ina.switch_commands, info=info)
