"""P4Runtime's protobuf messages and gRPC method paths, from the `p4runtime` PyPI package.

That package (p4lang's Python bindings) ships generated code older than protobuf 3.19: it
builds descriptors directly, which the current protobuf runtime refuses unless a whole process
runs the slow pure-Python implementation (PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python), set
before anything imports protobuf. Instead, this module reads the serialized schema each of its
modules carries (the ``serialized_pb=`` literal), loads those into a private descriptor pool and
makes message classes from it. Whatever protobuf backend the process uses, and whatever else
it has imported, the schema is the package's own: nothing of it is copied here.

    from softswitch.p4runtime.proto import p4rt, p4info
    req = p4rt.WriteRequest(device_id=0)
"""
from __future__ import annotations

import ast
import importlib.util
import types

from google.protobuf import any_pb2, descriptor_pb2, descriptor_pool, message_factory

# dependency order: each file's imports come before it
_P4RUNTIME_FILES = ("p4/config/v1/p4types.proto", "p4/config/v1/p4info.proto",
                    "p4/v1/p4data.proto", "p4/v1/p4runtime.proto")
_MODULES = {"p4/config/v1/p4types.proto": "p4.config.v1.p4types_pb2",
            "p4/config/v1/p4info.proto": "p4.config.v1.p4info_pb2",
            "p4/v1/p4data.proto": "p4.v1.p4data_pb2",
            "p4/v1/p4runtime.proto": "p4.v1.p4runtime_pb2"}

SERVICE = "p4.v1.P4Runtime"


class MissingBindings(ImportError):
    pass


def _module_source(module: str) -> str:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin:
        raise MissingBindings(f"Python module {module} not found: install P4Runtime's bindings with "
                              f"`pip install 'p4runtime>=1.3,<2'` (or `pip install -e .` in the project)")
    with open(spec.origin, encoding="utf-8") as f:
        return f.read()


def serialized_schema(module: str) -> bytes:
    """The FileDescriptorProto bytes a generated ``*_pb2`` module carries, new style
    (AddSerializedFile(b'...')) or old (FileDescriptor(serialized_pb=b'...'))."""
    tree = ast.parse(_module_source(module))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            for kw in node.keywords:
                if kw.arg == "serialized_pb" and isinstance(kw.value, ast.Constant):
                    return kw.value.value
            fn = node.func
            if isinstance(fn, ast.Attribute) and fn.attr == "AddSerializedFile" and node.args \
                    and isinstance(node.args[0], ast.Constant):
                return node.args[0].value
    raise MissingBindings(f"{module} holds no serialized schema: an unexpected `p4runtime` package version; "
                          f"install 'p4runtime>=1.3,<2'")


def _proto_of(module) -> descriptor_pb2.FileDescriptorProto:
    fdp = descriptor_pb2.FileDescriptorProto()
    module.DESCRIPTOR.CopyToProto(fdp)
    return fdp


def _load():
    from google.rpc import code_pb2, status_pb2   # googleapis-common-protos: current generated code
    pool = descriptor_pool.DescriptorPool()
    for dep in (any_pb2, status_pb2, code_pb2):
        pool.Add(_proto_of(dep))
    for name in _P4RUNTIME_FILES:
        pool.Add(descriptor_pb2.FileDescriptorProto.FromString(serialized_schema(_MODULES[name])))
    classes = message_factory.GetMessageClassesForFiles(list(_P4RUNTIME_FILES), pool)
    namespaces = {"p4.v1": types.SimpleNamespace(), "p4.config.v1": types.SimpleNamespace()}
    for full, cls in classes.items():
        package, _, short = full.rpartition(".")
        if package in namespaces:          # top-level messages only; nested ones hang off them
            setattr(namespaces[package], short, cls)
    for package, ns in namespaces.items():   # enums: values by name, as generated modules offer
        for fname in _P4RUNTIME_FILES:
            fd = pool.FindFileByName(fname)
            if fd.package != package:
                continue
            for ename, edesc in fd.enum_types_by_name.items():
                setattr(ns, ename, types.SimpleNamespace(**{v.name: v.number for v in edesc.values}))
                for v in edesc.values:
                    setattr(ns, v.name, v.number)
    return namespaces["p4.v1"], namespaces["p4.config.v1"], status_pb2, code_pb2


p4rt, p4info, status_pb2, code_pb2 = _load()


def method(name: str) -> str:
    """The gRPC path of a P4Runtime method ("Write" -> "/p4.v1.P4Runtime/Write")."""
    return f"/{SERVICE}/{name}"
