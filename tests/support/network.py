"""A local socket that counts who tried to reach the network."""

from __future__ import annotations

import socket
import threading


class ConnectionCounter:
    """A socket that accepts and counts connections, closing each at once: point every host a command could reach
    (a proxy, a service's base URL) here, and a count above zero means something tried. It listens on 127.0.0.2,
    not 127.0.0.1: the suite's other processes connect to 127.0.0.1 ports that were theirs (a stopped server's, a
    port a test holds closed), and the kernel hands the same port numbers out again, so a counter there could count
    another test's connection."""

    HOST = "127.0.0.2"  # loopback (all of 127.0.0.0/8 is), outside the NO_PROXY the tests set (127.0.0.1, localhost)

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind((self.HOST, 0))
        self.sock.listen(64)
        self.url = f"http://{self.HOST}:{self.sock.getsockname()[1]}"
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
