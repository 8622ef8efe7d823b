"""P4Runtime over gRPC for the softswitch process (simple_switch_grpc's --grpc-server-addr).

gRPC serves each call on a thread of its own pool; the switch is one selectors loop that also
forwards packets. A call is therefore handed to the loop (LoopBridge: a queue and a wake-up
socket registered in the loop) and its thread waits for the answer, so the switch's state is
only ever touched between two packets, by the loop.

The StreamChannel of each controller gets its own outgoing queue: arbitration notices go to
every connected stream (who is primary changed), errors to the stream that caused them.
"""
from __future__ import annotations

import collections
import concurrent.futures
import ipaddress
import queue
import selectors
import socket
import threading

import grpc

from softswitch.p4runtime.errors import P4RuntimeError
from softswitch.p4runtime.proto import code_pb2, method, p4rt, status_pb2
from softswitch.p4runtime.service import P4RuntimeService

CALL_TIMEOUT_S = 60


class LoopBridge:
    """Runs functions on the switch loop's thread; ``call`` blocks the caller until done."""

    def __init__(self):
        self._rsock, self._wsock = socket.socketpair()
        self._rsock.setblocking(False)
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._closed = False

    def register(self, selector: selectors.BaseSelector):
        selector.register(self._rsock, selectors.EVENT_READ, self._drain)

    def call(self, fn, *args):
        fut: concurrent.futures.Future = concurrent.futures.Future()
        with self._lock:
            if self._closed:
                raise LoopStopped("the switch is stopping")
            self._queue.put((fn, args, fut))
            try:
                self._wsock.send(b"x")
            except BlockingIOError:
                pass   # a wake-up is already pending
        return fut.result(timeout=CALL_TIMEOUT_S)

    def _drain(self, _mask):
        try:
            self._rsock.recv(4096)
        except BlockingIOError:
            pass
        while True:
            try:
                fn, args, fut = self._queue.get_nowait()
            except queue.Empty:
                return
            try:
                fut.set_result(fn(*args))
            except BaseException as e:   # noqa: B036 - handed to the waiting gRPC thread
                fut.set_exception(e)

    def close(self):
        """Once the loop has stopped: calls still waiting for it, and any made later, fail
        at once. A gRPC thread left waiting (a stream's goodbye racing SIGTERM) would hold
        the process's exit for CALL_TIMEOUT_S: the pool's threads are joined at exit."""
        with self._lock:
            self._closed = True
            while True:
                try:
                    _fn, _args, fut = self._queue.get_nowait()
                except queue.Empty:
                    break
                fut.set_exception(LoopStopped("the switch is stopping"))
            self._rsock.close()
            self._wsock.close()


class LoopStopped(RuntimeError):
    """A call handed to a switch loop that has stopped."""


class _Status(collections.namedtuple("_Status", ("code", "details", "trailing_metadata")), grpc.Status):
    pass


def _abort(context, e: P4RuntimeError):
    code = grpc.StatusCode[e.code]
    status = status_pb2.Status(code=getattr(code_pb2, e.code), message=e.message)
    for err in getattr(e, "errors", ()):   # BatchError: one p4.v1.Error per update
        status.details.add().Pack(err)
    context.abort_with_status(_Status(code, e.message, (("grpc-status-details-bin", status.SerializeToString()),)))


def check_address(addr: str) -> tuple[str, int]:
    host, _, port = addr.rpartition(":")
    host = host.strip("[]")
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
        port_n = int(port)
    except ValueError:
        raise ValueError(f"--grpc-server-addr {addr!r}: expected HOST:PORT, e.g. 127.0.0.1:9559") from None
    if not loopback:
        raise ValueError(f"--grpc-server-addr {addr!r}: the P4Runtime server listens on localhost only "
                         f"(the testbed's rule: no remote control of switches); use 127.0.0.1:{port}")
    return host, port_n


class P4RuntimeServer:
    def __init__(self, service: P4RuntimeService, bridge: LoopBridge, address: str, log=None):
        host, port = check_address(address)
        self.service, self.bridge, self.log = service, bridge, log
        self.server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix="p4rt"))
        unary = {"Write": (service.write, p4rt.WriteRequest, p4rt.WriteResponse),
                 "SetForwardingPipelineConfig": (service.set_pipeline, p4rt.SetForwardingPipelineConfigRequest,
                                                 p4rt.SetForwardingPipelineConfigResponse),
                 "GetForwardingPipelineConfig": (service.get_pipeline, p4rt.GetForwardingPipelineConfigRequest,
                                                 p4rt.GetForwardingPipelineConfigResponse),
                 "Capabilities": (service.capabilities, p4rt.CapabilitiesRequest, p4rt.CapabilitiesResponse)}
        handlers = {name: grpc.unary_unary_rpc_method_handler(
            self._unary(fn), request_deserializer=req.FromString, response_serializer=resp.SerializeToString)
            for name, (fn, req, resp) in unary.items()}
        handlers["Read"] = grpc.unary_stream_rpc_method_handler(
            self._read, request_deserializer=p4rt.ReadRequest.FromString,
            response_serializer=p4rt.ReadResponse.SerializeToString)
        handlers["StreamChannel"] = grpc.stream_stream_rpc_method_handler(
            self._stream, request_deserializer=p4rt.StreamMessageRequest.FromString,
            response_serializer=p4rt.StreamMessageResponse.SerializeToString)
        self.server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(method("")[1:-1], handlers),))
        try:
            bound = self.server.add_insecure_port(f"{'[' + host + ']' if ':' in host else host}:{port}")
        except RuntimeError:   # newer grpcio raises where older ones returned 0
            bound = 0
        if not bound:
            raise OSError(f"cannot listen on {host}:{port} for P4Runtime (Address already in use?): is another switch using "
                          f"--grpc-server-addr {address}? (check with: ss -ltnp 'sport = :{port}')")
        self.address = f"{host}:{bound}"
        self._queues: dict[object, queue.SimpleQueue] = {}
        self._lock = threading.Lock()

    def start(self):
        self.server.start()

    def stop(self):
        self.server.stop(grace=0.5).wait(2)

    def _unary(self, fn):
        def handle(request, context):
            try:
                return self.bridge.call(fn, request)
            except P4RuntimeError as e:
                _abort(context, e)
        return handle

    def _read(self, request, context):
        try:
            yield self.bridge.call(self.service.read, request)
        except P4RuntimeError as e:
            _abort(context, e)

    # ---------------------------------------------------------------- streams
    def _deliver(self, notices):
        with self._lock:
            for stream, msg in notices:
                q = self._queues.get(stream)
                if q is not None:
                    q.put(msg)

    def _stream(self, request_iterator, context):
        stream, out = object(), queue.SimpleQueue()
        with self._lock:
            self._queues[stream] = out

        def read_requests():
            try:
                for req in request_iterator:
                    kind = req.WhichOneof("update")
                    if kind == "arbitration":
                        try:
                            self._deliver(self.bridge.call(self.service.arbitrate, stream, req.arbitration))
                        except P4RuntimeError as e:
                            out.put(e)
                            return
                    else:
                        err = p4rt.StreamMessageResponse()
                        err.error.canonical_code = code_pb2.UNIMPLEMENTED
                        err.error.message = f"{kind} is not supported by the softswitch (no CPU port)"
                        if kind == "packet":
                            err.error.packet_out.packet_out.CopyFrom(req.packet)
                        out.put(err)
            except grpc.RpcError:
                pass
            finally:
                out.put(None)

        reader = threading.Thread(target=read_requests, name="p4rt-stream", daemon=True)
        reader.start()
        try:
            while True:
                msg = out.get()
                if msg is None:
                    return
                if isinstance(msg, P4RuntimeError):
                    _abort(context, msg)
                yield msg
        finally:
            with self._lock:
                self._queues.pop(stream, None)
            try:
                self._deliver(self.bridge.call(self.service.disconnect, stream))
            except Exception:   # the loop is gone (switch stopping): nobody to notify
                pass

