"""Switch ports: AF_PACKET raw sockets bound to Linux interfaces.

Design choices (and why):
- Non-blocking sockets driven by the process's one selectors loop; a readable port is
  drained in a batch (read until EAGAIN, bounded so one busy port cannot starve the others),
  because one select() per frame would cost more than the frame itself.
- The switch must never take its own transmitted frames as input: AF_PACKET with ETH_P_ALL
  also sees outgoing frames. The kernel option PACKET_IGNORE_OUTGOING (Linux >= 4.20) stops
  them in the kernel; where it is missing, each frame's sll_pkttype is checked instead
  (recvfrom's address tuple) and PACKET_OUTGOING frames are skipped.
- Large socket buffers (SO_RCVBUFFORCE as root) absorb bursts while the pipeline is busy.
- Frames longer than the interface MTU plus link headers (GRO/TSO super-frames when
  offloads are left on, or jumbo frames) are counted and dropped, never passed on
  truncated; MSG_TRUNC tells us the real length.
"""
from __future__ import annotations

import errno
import socket
import struct

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_IGNORE_OUTGOING = 23   # linux/if_packet.h, Linux >= 4.20
PACKET_OUTGOING = 4           # sll_pkttype of frames this host sent
SOCKET_BUFFER_BYTES = 8 << 20
LINK_HEADER_ALLOWANCE = 18    # Ethernet header + one VLAN tag
MAX_BATCH = 256               # frames drained per readiness event
PACKET_STATISTICS = 6        # struct tpacket_stats {tp_packets, tp_drops}, reset on each read
SO_SNDBUFFORCE = 32           # asm-generic/socket.h; Python's socket module lacks these two
SO_RCVBUFFORCE = 33


def interface_mtu(ifname: str) -> int:
    try:
        with open(f"/sys/class/net/{ifname}/mtu") as f:
            return int(f.read())
    except OSError:
        return 1500


class PortError(OSError):
    """A port could not be opened; the message says which interface and what to check."""


class Port:
    """One switch port: an AF_PACKET socket bound to `ifname`, addressed as `number`."""

    def __init__(self, number: int, ifname: str, max_frame: int | None = None):
        self.number = number
        self.ifname = ifname
        self.max_frame = max_frame or interface_mtu(ifname) + LINK_HEADER_ALLOWANCE
        self.rx_packets = 0
        self.tx_packets = self.tx_bytes = 0
        self.rx_oversized = 0
        self.rx_socket_drops = 0     # frames the kernel dropped because the switch fell behind
        self.tx_errors = 0
        try:
            sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        except PermissionError as e:
            raise PortError(e.errno, f"cannot open a raw socket for port {number} ({ifname}): "
                                     "run the switch as root (AF_PACKET needs CAP_NET_RAW)") from e
        try:
            sock.bind((ifname, ETH_P_ALL))
        except OSError as e:
            sock.close()
            raise PortError(e.errno, f"cannot bind port {number} to interface {ifname!r}: {e.strerror}; "
                                     "check that the interface exists (ip link show) in this namespace") from e
        self.kernel_ignores_outgoing = _try_ignore_outgoing(sock)
        _grow_buffers(sock)
        sock.setblocking(False)
        self.sock = sock
        # Receive buffer one byte larger than the biggest legal frame, so MSG_TRUNC
        # reports oversized frames as longer than max_frame.
        self._bufsize = self.max_frame + 1

    def fileno(self) -> int:
        return self.sock.fileno()

    def read_batch(self, limit: int = MAX_BATCH) -> list[bytes]:
        """Drains up to `limit` frames without blocking; returns the accepted ones."""
        frames = []
        recv = self.sock.recv
        recvfrom = self.sock.recvfrom
        trunc = socket.MSG_TRUNC
        max_frame = self.max_frame
        bufsize = self._bufsize
        ignore = self.kernel_ignores_outgoing
        for _ in range(limit):
            try:
                if ignore:
                    data = recv(bufsize, trunc)
                else:
                    data, addr = recvfrom(bufsize, trunc)
                    if addr[2] == PACKET_OUTGOING:
                        continue
            except (BlockingIOError, InterruptedError):
                break
            except OSError as e:
                if e.errno in (errno.ENETDOWN, errno.ENXIO, errno.ENODEV):
                    break   # interface went away/down (teardown in progress): nothing to read
                raise
            # With MSG_TRUNC a packet socket returns the frame's real length, so anything
            # longer than max_frame (the buffer holds max_frame + 1) is oversized.
            if len(data) > max_frame:
                self.rx_oversized += 1
                continue
            frames.append(data)
        self.rx_packets += len(frames)
        return frames

    def send(self, frame: bytes) -> bool:
        """Transmits one frame; a full device queue or a down link counts as a tx error."""
        try:
            self.sock.send(frame)
        except (BlockingIOError, InterruptedError):
            self.tx_errors += 1
            return False
        except OSError as e:
            if e.errno in (errno.ENOBUFS, errno.ENETDOWN, errno.ENXIO, errno.EMSGSIZE, errno.ENODEV):
                self.tx_errors += 1
                return False
            raise
        self.tx_packets += 1
        self.tx_bytes += len(frame)
        return True

    def socket_drops(self) -> int:
        """Frames dropped by the kernel since the port opened: the receive buffer was full
        because the pipeline was slower than the offered load."""
        try:
            _packets, drops = struct.unpack("II", self.sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
        except OSError:
            return self.rx_socket_drops
        self.rx_socket_drops += drops
        return self.rx_socket_drops

    def counters(self) -> dict:
        return {"rx_packets": self.rx_packets, "tx_packets": self.tx_packets, "tx_bytes": self.tx_bytes,
                "rx_oversized": self.rx_oversized, "rx_socket_drops": self.socket_drops(),
                "tx_errors": self.tx_errors}

    def close(self) -> None:
        self.sock.close()


def _try_ignore_outgoing(sock: socket.socket) -> bool:
    try:
        sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
        return True
    except OSError:
        return False


def _grow_buffers(sock: socket.socket) -> None:
    # SO_*BUFFORCE ignores net.core.[rw]mem_max but needs CAP_NET_ADMIN; fall back to the capped ones.
    for force, plain in ((SO_RCVBUFFORCE, socket.SO_RCVBUF), (SO_SNDBUFFORCE, socket.SO_SNDBUF)):
        try:
            sock.setsockopt(socket.SOL_SOCKET, force, SOCKET_BUFFER_BYTES)
        except OSError:
            sock.setsockopt(socket.SOL_SOCKET, plain, SOCKET_BUFFER_BYTES)


def parse_interface_spec(spec: str) -> tuple[int, str]:
    """'1@s1-eth1' -> (1, 's1-eth1'), as simple_switch's -i takes it."""
    num, sep, name = spec.partition("@")
    if not sep or not name or not num.isdigit():
        raise ValueError(f"bad interface {spec!r}: expected PORT@IFNAME, for example 1@s1-eth1")
    port = int(num)
    if port >= 511:
        raise ValueError(f"bad interface {spec!r}: port {port} is reserved (511 is v1model's drop port); use 0..510")
    return port, name
