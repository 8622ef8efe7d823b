"""Tiny constructors for hand-built p4ast programs (compiler tests that must not
depend on the front end). Names mirror what the front end produces."""
import softswitch.frontend.p4ast as A
B = A.BitT
BOOL = A.BoolT()


def lit(v, t=None):
    return A.Literal(v, type=t if t is not None else (BOOL if isinstance(v, bool) else A.InfIntT()))


def param(name, t):
    return A.PathExpr(name, "param", type=t)


def local(name, t):
    return A.PathExpr(name, "local", type=t)


def mem(e, name):
    for f in e.type.fields:
        if f.name == name:
            return A.Member(e, name, type=f.type)
    raise KeyError(name)


def binop(op, a, b, t=None):
    if t is None:
        t = BOOL if op in ("==", "!=", "<", "<=", ">", ">=", "&&", "||") else a.type
    return A.Binary(op, a, b, type=t)


def header(name, *fields):
    return A.HeaderT(name, tuple(A.FieldDef(n, B(w) if isinstance(w, int) else w) for n, w in fields))


def struct(name, *fields):
    return A.StructT(name, tuple(A.FieldDef(n, t) for n, t in fields))


SM = struct("standard_metadata_t", *[(n, B(w)) for n, w in [
    ("ingress_port", 9), ("egress_spec", 9), ("egress_port", 9), ("instance_type", 32),
    ("packet_length", 32), ("enq_timestamp", 32), ("enq_qdepth", 19), ("deq_timedelta", 32),
    ("deq_qdepth", 19), ("ingress_global_timestamp", 48), ("egress_global_timestamp", 48),
    ("mcast_grp", 16), ("egress_rid", 16), ("checksum_error", 1)]],
    ("parser_error", A.ErrorT()), ("priority", B(3)))

ERRORS = ["NoError", "PacketTooShort", "NoMatch", "StackOutOfBounds", "HeaderTooShort",
          "ParserTimeout", "ParserInvalidArgument"]


def program(hdr_t, meta_t, parser_states, ingress_body, ingress_locals=(), egress_body=None,
            deparse_headers=(), verify_body=None, compute_body=None):
    pin = A.ExternT("packet_in")
    pout = A.ExternT("packet_out")
    P = [A.Param("packet", "", pin), A.Param("hdr", "out", hdr_t), A.Param("meta", "inout", meta_t),
         A.Param("standard_metadata", "inout", SM)]
    C = [A.Param("hdr", "inout", hdr_t), A.Param("meta", "inout", meta_t),
         A.Param("standard_metadata", "inout", SM)]
    C2 = C[:2]
    hdr = param("hdr", hdr_t)
    dep = A.Block([A.ExprStmt(A.MethodCall(param("packet", pout), "emit", [mem(hdr, h)]))
                   for h in deparse_headers])
    ctls = {
        "MyVerify": A.ControlDecl("MyVerify", C2, [], verify_body or A.Block([])),
        "MyIngress": A.ControlDecl("MyIngress", C, list(ingress_locals), ingress_body),
        "MyEgress": A.ControlDecl("MyEgress", C, [], egress_body or A.Block([])),
        "MyCompute": A.ControlDecl("MyCompute", C2, [], compute_body or A.Block([])),
        "MyDeparser": A.ControlDecl("MyDeparser", [A.Param("packet", "", pout), A.Param("hdr", "in", hdr_t)], [], dep),
    }
    parser = A.ParserDecl("MyParser", P, [], {s.name: s for s in parser_states})
    return A.Program(
        main={"parser": "MyParser", "verify_checksum": "MyVerify", "ingress": "MyIngress",
              "egress": "MyEgress", "compute_checksum": "MyCompute", "deparser": "MyDeparser"},
        parsers={"MyParser": parser}, controls=ctls, types={}, errors=list(ERRORS))


def extract(hdr_expr):
    return A.ExprStmt(A.MethodCall(param("packet", A.ExternT("packet_in")), "extract", [hdr_expr]))
