"""Helpers for the adversarial git tests: a remote that accepts connections and never answers."""
from __future__ import annotations

import socket
import threading
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def silent_remote(lifetime: float = 30.0) -> Iterator[str]:
    """An http:// URL on 127.0.0.1 whose server accepts every connection and never sends a byte.

    It holds the sockets open until the block ends, or `lifetime` seconds pass, whichever comes
    first: a test without a deadline of its own then fails instead of hanging."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()
    held: list[socket.socket] = []

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            held.append(conn)
        for conn in held:  # closing is the first answer a client ever gets
            conn.close()
        server.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    timer = threading.Timer(lifetime, stop.set)
    timer.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}/repo.git"
    finally:
        stop.set()
        timer.cancel()
        thread.join()
