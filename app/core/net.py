"""Free ports on loopback: for the processes the kit starts as children (the GPU check's `dgemma run`)
and for the harnesses and tests that start servers."""

from __future__ import annotations

import contextlib
import socket


def free_port() -> int:
    """A port free on 127.0.0.1 now (another process may take it before it is bound)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def free_ports(n: int) -> int:
    """The first of `n` consecutive free ports: the supervisor's engines take `engine_port` + k."""
    for _ in range(100):
        first = free_port()
        with contextlib.ExitStack() as held:
            try:
                for k in range(1, n):
                    s = held.enter_context(socket.socket())
                    s.bind(("127.0.0.1", first + k))
            except OSError:
                continue
        return first
    raise OSError(f"no {n} consecutive free ports on 127.0.0.1")
