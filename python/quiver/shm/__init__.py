"""POSIX shared-memory segments in the vgi-rpc "VGIS" layout, with zero-copy regions."""

from .config import ShmConfig, ShmConfigError
from .layout import ALLOCATIONS_MAX, HEADER_BYTES
from .segment import BudgetExceeded, Segment, reserved_segment_bytes
from .table import ShmError

__all__ = [
    "ALLOCATIONS_MAX",
    "HEADER_BYTES",
    "BudgetExceeded",
    "Segment",
    "ShmConfig",
    "ShmConfigError",
    "ShmError",
    "reserved_segment_bytes",
]
