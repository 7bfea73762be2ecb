"""Free ports on loopback: one, and a row of them (the supervisor's engines take `engine_port` + k)."""

from __future__ import annotations

import socket

import pytest

from app.core.net import free_port, free_ports

pytestmark = pytest.mark.unit


def test_a_free_port_can_be_bound() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", free_port()))  # raises if taken


def test_the_engines_ports_are_free_in_a_row() -> None:
    first = free_ports(3)
    for port in range(first, first + 3):
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))  # raises if taken
