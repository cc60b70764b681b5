"""Shared-memory settings from the environment (same variables as the Rust spine).

``VGI_RPC_SHM_SIZE_BYTES``       a client creates (owns, unlinks) a segment of this size
``VGI_RPC_SHM_DISABLE=1``        never use shared memory, in either direction
``VGI_RPC_SHM_DEBUG=1``          log attach / resolve / fallback events and a close summary
``VGI_RPC_SHM_MIN_BATCH_BYTES``  batches smaller than this stay inline (default 128 KiB)
``VGI_RPC_SHM_PROCESS_MAX_BYTES`` most bytes of segments one process creates (default 4 GiB); a
                                 connection whose segment would exceed it runs inline

A variable that is set but malformed is an error naming the variable: a typo in a
tuning knob should not silently become the default.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from .layout import HEADER_BYTES, SEGMENT_BYTES_MAX

ENV_SIZE_BYTES = "VGI_RPC_SHM_SIZE_BYTES"
ENV_DISABLE = "VGI_RPC_SHM_DISABLE"
ENV_DEBUG = "VGI_RPC_SHM_DEBUG"
ENV_MIN_BATCH_BYTES = "VGI_RPC_SHM_MIN_BATCH_BYTES"
ENV_PROCESS_MAX_BYTES = "VGI_RPC_SHM_PROCESS_MAX_BYTES"

MIN_BATCH_BYTES_DEFAULT = 128 * 1024
# Why 4 GiB: see PROCESS_MAX_BYTES_DEFAULT in crates/quiver-shm/src/config.rs.
PROCESS_MAX_BYTES_DEFAULT = 4 << 30

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


class ShmConfigError(ValueError):
    """An environment variable is set to something unusable."""


@dataclass(frozen=True, slots=True)
class ShmConfig:
    """Parsed shared-memory settings."""

    segment_size_bytes: int | None = None
    """Size of the segment a client should create; ``None`` when shm is not requested."""
    disabled: bool = False
    debug: bool = False
    min_batch_bytes: int = MIN_BATCH_BYTES_DEFAULT
    process_max_bytes: int = PROCESS_MAX_BYTES_DEFAULT
    """Most bytes of segments this process may have created at once."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ShmConfig:
        """Reads the settings from ``environ`` (default: the process environment)."""
        env = os.environ if environ is None else environ

        def get(name: str) -> str | None:
            value = env.get(name)
            return value if value is not None and value.strip() else None

        size = get(ENV_SIZE_BYTES)
        threshold = get(ENV_MIN_BATCH_BYTES)
        budget = get(ENV_PROCESS_MAX_BYTES)
        return cls(
            segment_size_bytes=None if size is None else _parse_segment_size(size),
            disabled=_parse_flag(ENV_DISABLE, get(ENV_DISABLE)),
            debug=_parse_flag(ENV_DEBUG, get(ENV_DEBUG)),
            min_batch_bytes=MIN_BATCH_BYTES_DEFAULT if threshold is None else _parse_threshold(threshold),
            process_max_bytes=PROCESS_MAX_BYTES_DEFAULT
            if budget is None
            else _parse_bytes(ENV_PROCESS_MAX_BYTES, budget),
        )

    def segment_to_create(self) -> int | None:
        """The size of the segment a client should create now, if any."""
        return None if self.disabled else self.segment_size_bytes

    def wants_shm_for(self, num_rows: int, batch_bytes: int) -> bool:
        """Whether a batch is worth sending through shm: never empty, never below the threshold."""
        return not self.disabled and num_rows > 0 and batch_bytes >= self.min_batch_bytes


def _parse_segment_size(value: str) -> int:
    size = _parse_bytes(ENV_SIZE_BYTES, value)
    if size <= HEADER_BYTES:
        raise _invalid(ENV_SIZE_BYTES, value, f"must exceed the {HEADER_BYTES}-byte segment header")
    if size > SEGMENT_BYTES_MAX:
        raise _invalid(ENV_SIZE_BYTES, value, "exceeds the 64 GiB limit")
    return size


def _parse_threshold(value: str) -> int:
    threshold = _parse_bytes(ENV_MIN_BATCH_BYTES, value)
    if threshold > SEGMENT_BYTES_MAX:
        raise _invalid(ENV_MIN_BATCH_BYTES, value, "exceeds the 64 GiB segment limit")
    return threshold


def _parse_bytes(name: str, value: str) -> int:
    digits = value.strip()
    if not digits.isascii() or not digits.isdigit():
        raise _invalid(name, value, "expected a plain decimal number of bytes (no sign, unit or separator)")
    return int(digits)


def _parse_flag(name: str, value: str | None) -> bool:
    if value is None:
        return False
    word = value.strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise _invalid(name, value, "expected 1/0, true/false, yes/no or on/off")


def _invalid(name: str, value: str, reason: str) -> ShmConfigError:
    return ShmConfigError(f"{name}={value!r} is invalid: {reason}")
