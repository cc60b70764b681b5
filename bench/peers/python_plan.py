"""What ``./quiver bench python`` measures and in how many repetitions: sizes, payloads, transports,
and the names its report gives them (shared by the harness and its report).
"""

from __future__ import annotations

from dataclasses import dataclass

SMALL_ROWS = 1024
LARGE_ROWS = 2 * 1024 * 1024
NATIVE = "quiver native"

PAYLOAD_NAMES = {
    "f": "float",
    "s": "string (43 chars)",
    "lf": "list of 100 floats",
    "d": "dict of 50 str→int",
    "nd": "nested dataclass",
    "cx": "complex dataclass (lists, enums, nested, map)",
    "b1k": "1K-row batch (3 columns)",
    "b100k": "100K-row batch (3 columns)",
}


@dataclass
class Plan:
    reps: int = 5
    unary_warmup: int = 200
    unary_ops: int = 1000
    stream_warmup: int = 100
    stream_ops: int = 1000
    large_warmup: int = 2
    large_ops: int = 10
    codec_ops: int = 2000
    codec_ops_large: int = 100

    @classmethod
    def quick(cls) -> Plan:
        return cls(3, 50, 300, 30, 300, 1, 4, 500, 20)


TRANSPORT_NAMES = {
    "pipe": "in-process pipe",
    "shm": "in-process pipe + 64 MiB shm",
    "unix": "unix socket (server process)",
    "subprocess": "subprocess stdio",
    "subprocess+shm": "subprocess stdio + 64 MiB shm",
    "http": "HTTP, loopback (server process)",
    "http-wsgi": "HTTP, in-process WSGI (no socket)",
    "rust": "Python client → Rust server (subprocess)",
}

TRANSPORT_PLAN = [
    ("pipe", ("unary", "producer", "exchange")),
    ("shm", ("unary", "large")),
    ("unix", ("unary",)),
    ("subprocess", ("unary", "producer", "exchange")),
    ("subprocess+shm", ("large",)),
    ("http", ("unary", "producer", "exchange")),
    ("http-wsgi", ("unary",)),
    ("rust", ("unary", "producer", "exchange")),
]
