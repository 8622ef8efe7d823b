"""Frame kinds of scheme mlfabric (workers/framing.py frames; kinds 1-11 are framing's own).

worker -> PS        HELLO rank, MODEL_INIT model; per iteration c: REQUEST tag c int64
                    [bytes], then, once granted, DATA_END tag <group> gradient (straight to
                    the PS) or nothing (dropped); at the end BYE
PS -> worker        GRANT tag c int64 [group, route, members] (route: DIRECT, DROP); then
                    the release: MODEL_VERSION tag c+1 [c+1, version, clock, applied_at
                    (NOT_APPLIED: dropped)] and MODEL tag c+1 model (as ps's async server)
primary -> replica  data channel: HELLO DATA_CHANNEL, MODEL_INIT model, then REPL tag v
                    update (the float32 vector applied to make version v), BYE at a normal
                    end; heads channel: HELLO HEADS_CHANNEL, then HEAD tag v as soon as
                    version v exists and LEFT tag rank when a worker ended (tiny frames on
                    their own connection, so they are not queued behind REPL payloads)
replica -> primary  REPL_ACK tag v: the replica's model is version v
worker -> replica   after the primary died: HELLO rank, FAILOVER tag c+1 (the iteration it
                    starts next; its update of c is lost), then as with the PS
"""
REQUEST = 40
GRANT = 41
REPL = 42
REPL_ACK = 43
HEAD = 44
LEFT = 45
FAILOVER = 46

DIRECT = -1        # GRANT route: send the gradient to the PS
DROP = -2          # GRANT route: do not send it (tau_max)
NOT_APPLIED = -1   # release's applied_at for a dropped update

DATA_CHANNEL = 0   # HELLO tags of the primary's two connections to the replica
HEADS_CHANNEL = 1
