"""A P4Runtime controller connection: the stream, arbitration, and the unary calls.

    with P4RuntimeConnection("127.0.0.1:9559", device_id=0) as c:   # becomes primary (election id 1)
        c.write([update, ...])
        entities = c.read([entity, ...])
        info = c.get_p4info()

Works against the softswitch's server and BMv2's simple_switch_grpc alike. A refused Write
raises P4RuntimeCallError, whose ``errors`` are the per-update p4.v1.Error messages.
"""
from __future__ import annotations

import queue
import threading

import grpc

from softswitch.p4runtime.proto import code_pb2, method, p4rt, status_pb2

ARBITRATION_TIMEOUT_S = 10


class P4RuntimeCallError(RuntimeError):
    def __init__(self, what: str, err: grpc.RpcError):
        self.code = err.code()
        self.details = err.details()
        self.errors = _update_errors(err)
        first = next((e.message for e in self.errors if e.canonical_code != code_pb2.OK), "")
        super().__init__(f"P4Runtime {what} failed: {self.code.name}: {self.details}"
                         + (f" ({first})" if first and first not in (self.details or "") else ""))


def _update_errors(err) -> list:
    for key, value in (err.trailing_metadata() or ()):
        if key == "grpc-status-details-bin":
            status = status_pb2.Status.FromString(value)
            out = []
            for d in status.details:
                e = p4rt.Error()
                if d.Unpack(e):
                    out.append(e)
            return out
    return []


class P4RuntimeConnection:
    def __init__(self, address: str, device_id: int = 0, election_id: tuple[int, int] = (0, 1),
                 arbitrate: bool = True, timeout: float = 30.0):
        self.address, self.device_id, self.election_id, self.timeout = address, device_id, election_id, timeout
        self.channel = grpc.insecure_channel(address)
        self._calls = {}
        self._requests: queue.SimpleQueue = queue.SimpleQueue()
        self.stream_messages: queue.SimpleQueue = queue.SimpleQueue()
        self._stream = None
        self.is_primary = None
        if arbitrate:
            self.arbitrate()

    def _call(self, name, req_cls, resp_cls, kind="unary_unary"):
        if name not in self._calls:
            self._calls[name] = getattr(self.channel, kind)(
                method(name), request_serializer=req_cls.SerializeToString, response_deserializer=resp_cls.FromString)
        return self._calls[name]

    # ---------------------------------------------------------------- stream
    def arbitrate(self):
        """Open the stream and send the MasterArbitrationUpdate; returns the arbitration reply
        (status OK: primary; ALREADY_EXISTS: backup)."""
        if self._stream is None:
            call = self._call("StreamChannel", p4rt.StreamMessageRequest, p4rt.StreamMessageResponse, "stream_stream")
            self._stream = call(iter(self._requests.get, None))
            threading.Thread(target=self._pump, name="p4rt-client-stream", daemon=True).start()
        req = p4rt.StreamMessageRequest()
        req.arbitration.device_id = self.device_id
        req.arbitration.election_id.high, req.arbitration.election_id.low = self.election_id
        self._requests.put(req)
        try:
            while True:
                msg = self.stream_messages.get(timeout=ARBITRATION_TIMEOUT_S)
                if isinstance(msg, grpc.RpcError):
                    raise P4RuntimeCallError("arbitration", msg)
                if msg is not None and msg.WhichOneof("update") == "arbitration":
                    a = msg.arbitration
                    self.is_primary = a.status.code == code_pb2.OK
                    return a
        except queue.Empty:
            raise TimeoutError(f"no arbitration reply from the P4Runtime server at {self.address} in "
                               f"{ARBITRATION_TIMEOUT_S} s: is the switch running with --grpc-server-addr?") from None

    def _pump(self):
        try:
            for msg in self._stream:
                self.stream_messages.put(msg)
        except grpc.RpcError as e:
            self.stream_messages.put(e)

    def send_stream(self, req):
        self._requests.put(req)

    # ---------------------------------------------------------------- unary calls
    def _election(self, req):
        req.device_id = self.device_id
        req.election_id.high, req.election_id.low = self.election_id
        return req

    def write(self, updates):
        req = self._election(p4rt.WriteRequest())
        req.updates.extend(updates)
        try:
            return self._call("Write", p4rt.WriteRequest, p4rt.WriteResponse)(req, timeout=self.timeout)
        except grpc.RpcError as e:
            raise P4RuntimeCallError("Write", e) from None

    def read(self, entities) -> list:
        req = p4rt.ReadRequest(device_id=self.device_id)
        req.entities.extend(entities)
        try:
            return [e for resp in self._call("Read", p4rt.ReadRequest, p4rt.ReadResponse, "unary_stream")(
                req, timeout=self.timeout) for e in resp.entities]
        except grpc.RpcError as e:
            raise P4RuntimeCallError("Read", e) from None

    def set_pipeline(self, p4info, device_config: bytes = b"", action: str = "VERIFY_AND_COMMIT", cookie: int = 0):
        req = self._election(p4rt.SetForwardingPipelineConfigRequest())
        req.action = getattr(p4rt.SetForwardingPipelineConfigRequest, action)
        req.config.p4info.CopyFrom(p4info)
        req.config.p4_device_config = device_config
        req.config.cookie.cookie = cookie
        try:
            return self._call("SetForwardingPipelineConfig", p4rt.SetForwardingPipelineConfigRequest,
                              p4rt.SetForwardingPipelineConfigResponse)(req, timeout=self.timeout)
        except grpc.RpcError as e:
            raise P4RuntimeCallError("SetForwardingPipelineConfig", e) from None

    def get_p4info(self):
        req = p4rt.GetForwardingPipelineConfigRequest(
            device_id=self.device_id, response_type=p4rt.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE)
        try:
            return self._call("GetForwardingPipelineConfig", p4rt.GetForwardingPipelineConfigRequest,
                              p4rt.GetForwardingPipelineConfigResponse)(req, timeout=self.timeout).config.p4info
        except grpc.RpcError as e:
            raise P4RuntimeCallError("GetForwardingPipelineConfig", e) from None

    def close(self):
        self._requests.put(None)
        self.channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
