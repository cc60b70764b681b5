"""Split scans (``table_function_plan``): planning a scan into splits and redeeming them.

A table function that declares ``splits`` names its work as payloads; the engine plans (page by
page, following cursors) and redeems each split with an ``init`` carrying its token, on any
connection.

A token is the payload in VGI's envelope (format 1): ``version | flags | anchor_len (u16 LE) |
bind fingerprint (16 bytes) | anchor | payload``. This SDK holds no signing key: it never seals a
payload and refuses a sealed token, and it only redeems a token minted for the same bind.
"""

from __future__ import annotations

import hashlib
import struct
from typing import TYPE_CHECKING, Any

from . import wire
from .bind import bind
from .errors import InvalidArgumentError

if TYPE_CHECKING:
    from .function import Function

FORMAT_VERSION = 1
_SEALED = 0x01
_HEADER = struct.Struct("<BBH")
_FINGERPRINT = 16
_HEADER_LEN = _HEADER.size + _FINGERPRINT
# Splits one plan page carries when the engine sets no ``max_splits_per_response``.
PAGE_SPLITS = 1024


class SplitTokenInvalid(InvalidArgumentError):
    """A token that is malformed, sealed, or minted for another bind (``[SPLIT_TOKEN_INVALID]``)."""

    def __init__(self, message: str) -> None:
        super().__init__(f"[SPLIT_TOKEN_INVALID] {message}")


def fingerprint(bind_call: dict[str, Any]) -> bytes:
    """The 16 bytes binding a token to its bind: function, schema and arguments."""
    digest = hashlib.sha256(b"quiver.split_token.v1\x00")
    for key in ("function_name", "schema_path", "arguments"):
        digest.update(key.encode() + b"\x00" + repr(bind_call.get(key)).encode() + b"\x00")
    return digest.digest()[:_FINGERPRINT]


def build_token(payload: bytes, print_: bytes) -> bytes:
    return _HEADER.pack(FORMAT_VERSION, 0, 0) + print_ + payload


def open_token(token: bytes, print_: bytes) -> bytes:
    """The payload of ``token``, checked as vgi-python checks it on a worker without a key."""
    if len(token) < _HEADER_LEN:
        raise SplitTokenInvalid(f"split token too short: {len(token)} bytes, need at least {_HEADER_LEN}")
    version, flags, anchor_len = _HEADER.unpack_from(token, 0)
    if version != FORMAT_VERSION:
        raise SplitTokenInvalid(f"unsupported split-token format_version {version}; this worker speaks 1")
    if flags & ~_SEALED:
        raise SplitTokenInvalid(f"split token sets reserved flag bits (flags=0x{flags:02x})")
    if flags & _SEALED:
        raise SplitTokenInvalid("split token is sealed but this worker holds no signing key; cannot open it")
    end = _HEADER_LEN + anchor_len
    if len(token) < end:
        raise SplitTokenInvalid(f"split token truncated: anchor_len={anchor_len} exceeds token length {len(token)}")
    if token[_HEADER.size : _HEADER_LEN] != print_:
        raise SplitTokenInvalid("split token was minted for a different bind (fingerprint mismatch)")
    return token[end:]


def plan(function: Function, args: dict[str, Any], bind_call: dict[str, Any], request: dict[str, Any]) -> bytes:
    """One page of ``function``'s plan: the splits from ``cursor`` (an 8-byte offset) on."""
    payloads = list(function.splits(args))
    start = struct.unpack("<q", request["cursor"])[0] if request.get("cursor") else 0
    if not 0 <= start <= len(payloads):
        raise InvalidArgumentError(f"{function.name}(): plan cursor {start} is outside the plan")
    per_page = min(request.get("max_splits_per_response") or PAGE_SPLITS, function.splits_per_page or PAGE_SPLITS)
    end = min(len(payloads), start + max(1, per_page))
    print_ = fingerprint(bind_call)
    splits = [
        wire.row_bytes(wire.SCAN_SPLIT, {"payload": p, "token": build_token(p, print_), "rows_exact": False})
        for p in payloads[start:end]
    ]
    return wire.row_bytes(
        wire.PLAN_RESPONSE,
        {
            "splits": splits,
            "next_cursors": [struct.pack("<q", end)] if end < len(payloads) else None,
            "max_workers": function.max_workers,
            "estimated_total_splits": len(payloads),
            "scope": "catalog",
        },
    )


class PlanMethods:
    """``table_function_plan`` of :class:`~quiver.vgi.protocol.VgiV2`."""

    worker: Any

    def table_function_plan(self, request: bytes) -> bytes:
        row = wire.read_row(request)
        bind_call = wire.read_row(row["bind_call"])
        bound = bind(self.worker, bind_call)
        if bound.function.splits is None:
            # Not split-capable: one split standing for the whole scan, as vgi-python answers.
            return wire.row_bytes(
                wire.PLAN_RESPONSE,
                {
                    "splits": [wire.row_bytes(wire.SCAN_SPLIT, {"payload": b"", "token": b"", "rows_exact": False})],
                    "scope": "catalog",
                },
            )
        return plan(bound.function, bound.args, bind_call, row)
