"""Model of hier-ps (docs/model.md): workers stream to their datacenter's server over the
LAN, each local server streams one partial sum to the global server over the WAN and the
sums stream back the same way; ps's terms on that two-level tree (its depth adds the
LAN round trip to the WAN one)."""
from __future__ import annotations

from schemes import model as M
from schemes.hier_ps.options import HierPsOptions
from schemes.hier_ps.plan import plan
from schemes import model_chain as ch
from schemes.ps.model import simulated_tree, tcp_tree_terms, tree_fits, with_simulation
from workers.framing import DEFAULT_CHUNK_VALUES, HEADER


def predict(graph, scenario, o: HierPsOptions) -> M.Prediction:
    pl = plan(graph, scenario, o)
    net = M.Net(graph)
    load = M.Load(net)
    per = M.framed(M.parameters(scenario), DEFAULT_CHUNK_VALUES, HEADER.size)
    g_host = pl.info["global_host"]
    local = {graph.nodes[w]["dc_index"]: pl.comm[w]["servers"][0][0] for w in pl.workers}
    ip_host = {graph.nodes[h]["ip"]: h for h in graph.nodes if graph.nodes[h]["role"] == "host"}
    local = {dc: ip_host[ip] for dc, ip in local.items()}
    lan, wan = [], []
    for w in pl.workers:
        h = local[graph.nodes[w]["dc_index"]]
        if w != h:
            load.tcp(w, h, per)
            load.tcp(h, w, per)
            lan += [(w, h, per), (h, w, per)]
    for h in local.values():
        if h != g_host:
            load.tcp(h, g_host, per)
            load.tcp(g_host, h, per)
            wan += [(h, g_host, per), (g_host, h, per)]
    comp = M.compute(graph, scenario, pl.workers)
    notes, caveats = [], []
    limits = M.tcp_limits(load, lan + wan, scenario)
    add = tcp_tree_terms(net, load, wan or lan, comp, scenario, 4 * DEFAULT_CHUNK_VALUES + HEADER.size,
                         notes, caveats)
    add["propagation (tree depth: longest worker-local server round trip)"] = \
        max((net.rtt(a, b) for a, b, _ in lan), default=0.0) if wan else 0.0
    dcs = {w: graph.nodes[w]["dc_index"] for w in pl.workers}
    lossy = any(net.path_loss(a, b) > 0 for a, b, _ in lan + wan)
    sim = simulated_tree(net, load, *tree_flows(dcs, local, g_host, M.parameters(scenario)), comp,
                         scenario) if tree_fits(net, lan + wan, scenario, lossy) else None
    if sim is None:
        caveats.append("each WAN link carries one stream per direction: its window grows over the "
                       "first iterations (not simulated here, too large or a schedule step: the closed form "
                       "is the steady state)")
    limits, add = with_simulation(limits, add, sim, comp, lossy, caveats, notes, "hier-ps's streams")
    return M.assemble("hier-ps", comp, limits, add, load.wan_bytes(), notes + M.common_notes(graph),
                      caveats)


def tree_flows(dcs: dict, local: dict, g_host, values) -> tuple[list, dict]:
    """hier-ps's streams for ps.model.simulated_tree: workers to their datacenter's server,
    each server's partial sum to the global server (chunk c once its workers' chunk c is
    in), the sums back (once every datacenter's chunk c is in), and to the workers.
    dcs: worker -> its datacenter index; local: datacenter index -> its server host."""
    segs = ch.chunk_segments(values, DEFAULT_CHUNK_VALUES, HEADER.size, M.MSS)
    flows, up, down = [], {}, {}
    by_dc = {dc: [w for w in dcs if dcs[w] == dc] for dc in local}
    for dc, h in local.items():
        ins = []
        for w in by_dc[dc]:
            ins.append(len(flows))
            flows.append((w, h, segs, (), w))
        up[dc] = len(flows)
        flows.append((h, g_host, segs, tuple(ins), None))
    for dc, h in local.items():
        down[dc] = len(flows)
        flows.append((g_host, h, segs, tuple(up.values()), None))
    results = {}
    for dc, h in local.items():
        for w in by_dc[dc]:
            results[w] = [len(flows)]
            flows.append((h, w, segs, (down[dc],), None))
    return flows, results
