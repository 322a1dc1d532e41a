"""A TCP proxy that cuts, refuses, slows and rations connections: how the chaos campaign puts
a fault between the gateways and their PostgreSQL or Redis (issue 27).

Written by hand (threads and sockets, ~100 lines) rather than taken from Toxiproxy: that is a
Go server from outside the registries this machine may use, and the campaign needs only these
four behaviours, switched from the test's own thread.
"""

from __future__ import annotations

import select
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class TcpProxy:
    """Listens on a free loopback port and forwards to target; the switches apply at once."""

    target_port: int
    target_host: str = "127.0.0.1"
    # refuse: new connections are accepted and closed at once (the server is down)
    refuse: bool = False
    # delay: seconds added before each chunk is forwarded, both ways (a slow server)
    delay: float = 0.0
    # max_connections: connections beyond this many are closed at once (exhaustion)
    max_connections: int | None = None
    # listen_port: 0 for any free one; tap: sees every chunk the clients send, in order
    listen_port: int = 0
    tap: Callable[[bytes], None] | None = None
    port: int = 0
    _server: socket.socket | None = None
    _pairs: set[tuple[socket.socket, socket.socket]] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stopped: threading.Event = field(default_factory=threading.Event)
    refused: int = 0

    def start(self) -> TcpProxy:
        server = socket.socket()
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", self.listen_port))
        server.listen(256)
        self._server, self.port = server, server.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        if self._server is not None:
            self._server.close()
        self.cut()

    def cut(self) -> int:
        """Close every open connection, both sides; returns how many were cut."""
        with self._lock:
            pairs, self._pairs = list(self._pairs), set()
        for pair in pairs:
            for sock in pair:
                _close(sock)
        return len(pairs)

    def set(
        self, *, refuse: bool = False, delay: float = 0.0, max_connections: int | None = None
    ) -> None:
        self.refuse, self.delay, self.max_connections = refuse, delay, max_connections

    def _accept(self) -> None:
        assert self._server is not None
        while not self._stopped.is_set():
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            with self._lock:
                full = self.max_connections is not None and len(self._pairs) >= self.max_connections
            if self.refuse or full:
                self.refused += 1
                _close(client)
                continue
            try:
                upstream = socket.create_connection((self.target_host, self.target_port), 5)
            except OSError:
                _close(client)
                continue
            pair = (client, upstream)
            with self._lock:
                self._pairs.add(pair)
            threading.Thread(target=self._pump, args=(pair,), daemon=True).start()

    def _pump(self, pair: tuple[socket.socket, socket.socket]) -> None:
        client, upstream = pair
        other = {client: upstream, upstream: client}
        try:
            while not self._stopped.is_set():
                readable, _, _ = select.select([client, upstream], [], [], 0.5)
                for sock in readable:
                    chunk = sock.recv(65536)
                    if not chunk:
                        return
                    if self.delay:
                        time.sleep(self.delay)
                    if sock is client and self.tap is not None:
                        self.tap(chunk)
                    other[sock].sendall(chunk)
        except (OSError, ValueError):
            return
        finally:
            with self._lock:
                self._pairs.discard(pair)
            _close(client)
            _close(upstream)


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()
