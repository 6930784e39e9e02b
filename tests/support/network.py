"""A local socket that counts who tried to reach the network."""

from __future__ import annotations

import socket
import threading


class ConnectionCounter:
    """A socket on 127.0.0.1 that accepts and counts connections, closing each at once: point every host a
    command could reach (a proxy, a service's base URL) here, and a count above zero means something tried."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self.sock.close()
