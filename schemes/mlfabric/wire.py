"""Frame kinds of scheme mlfabric (workers/framing.py frames; kinds 1-11 are framing's own).

worker -> PS        HELLO rank, MODEL_INIT model; per iteration c: REQUEST tag c int64
                    [bytes], then, once granted, DATA_END tag <group> gradient (straight to
                    the PS), or nothing (dropped, or sent to an aggregator); AGG_FAIL tag
                    <group> when its aggregator cannot be reached; at the end BYE
PS -> worker        GRANT tag c int64 [group, route, members] (route: DIRECT, DROP, or the
                    index >= 0 of the aggregator in the worker's comm list); a second GRANT
                    tag c [group, DIRECT, members] when the group fell back (its aggregator
                    timed out or died: send to the PS now); then the release: MODEL_VERSION
                    tag c+1 [c+1, version, clock, applied_at (NOT_APPLIED: dropped)] and
                    MODEL tag c+1 model (as ps's async server)
worker -> aggregator  HELLO rank (once, on first use), DATA_END tag <group> gradient, BYE
PS -> aggregator    AGG_JOIN (first frame), AGG_GROUP tag <group> int64 [member ranks in
                    rank order], AGG_CANCEL tag <group> (it fell back: drop its parts), BYE
aggregator -> PS    AGG_MEMBERS tag <group> int64 [ranks summed], then AGG_SUM tag <group>
                    the float32 sum of their gradients in that order
primary -> replica  data channel: HELLO DATA_CHANNEL, MODEL_INIT model, then REPL tag v
                    update (the float32 vector applied to make version v), BYE at a normal
                    end; heads channel: HELLO HEADS_CHANNEL, then HEAD tag v int64 [rank,
                    iteration, ...] (the updates that made it) as soon as version v
                    exists, and LEFT tag rank when a worker ended (small frames on their
                    own connection, so they are not queued behind REPL payloads)
replica -> primary  REPL_ACK tag v: the replica's model is version v
worker -> replica   after the primary died: HELLO rank, FAILOVER tag c+1 (the iteration it
                    starts next), then as with the PS; the first release's applied_at is
                    the version its update of c was applied to if the replica holds that
                    version (the primary applied it, the reply died with it), else
                    NOT_APPLIED (the update is lost)
"""
REQUEST = 40
GRANT = 41
REPL = 42
REPL_ACK = 43
HEAD = 44
LEFT = 45
FAILOVER = 46
AGG_JOIN = 47      # the PS's connection to an aggregator
AGG_GROUP = 48
AGG_CANCEL = 49
AGG_MEMBERS = 50
AGG_SUM = 51
AGG_FAIL = 52

DIRECT = -1        # GRANT route: send the gradient to the PS
DROP = -2          # GRANT route: do not send it (tau_max)
NOT_APPLIED = -1   # release's applied_at for a dropped update

DATA_CHANNEL = 0   # HELLO tags of the primary's two connections to the replica
HEADS_CHANNEL = 1
