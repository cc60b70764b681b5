"""Spawning a worker as a child process and talking to it over its stdin and stdout."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence

from .connection import FdConnection
from .pipe import grow_pipe

EXIT_WAIT_SECONDS = 10.0


class ProcessConnection(FdConnection):
    """A connection to a child process's stdin and stdout.

    Closing it closes the child's stdin (a worker exits at end of input), waits up to
    :data:`EXIT_WAIT_SECONDS` for it, then kills it.
    """

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        read_fd, write_fd = os.dup(process.stdout.fileno()), os.dup(process.stdin.fileno())
        process.stdout.close()
        process.stdin.close()
        super().__init__(read_fd, write_fd, peer=f"pid:{process.pid}")

    def _close(self) -> None:
        super()._close()
        try:
            self.process.wait(timeout=EXIT_WAIT_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def spawn(argv: Sequence[str], *, env: Mapping[str, str] | None = None, stderr: int | None = None) -> ProcessConnection:
    """Starts ``argv`` and connects to its stdin/stdout (its stderr is inherited by default)."""
    process = subprocess.Popen(
        list(argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        env=None if env is None else dict(env),
        bufsize=0,
    )
    assert process.stdin is not None and process.stdout is not None
    grow_pipe(process.stdin.fileno())
    grow_pipe(process.stdout.fileno())
    return ProcessConnection(process)
