"""What a batch means: data, a log, an error, a shared-memory pointer, or a cancel."""

from __future__ import annotations

from enum import Enum

import pyarrow as pa

from . import keys
from .metadata import BatchMetadata


class BatchRole(Enum):
    """The role of one batch on the wire."""

    DATA = "data"
    LOG = "log"
    ERROR = "error"
    SHM_POINTER = "shm_pointer"
    CANCEL = "cancel"
    EXTERNAL = "external"


def classify(batch: pa.RecordBatch, metadata: BatchMetadata) -> BatchRole:
    """Classifies a batch by its row count and metadata keys.

    Only zero-row batches can be control batches; a zero-row batch without any control
    key (a void result, an empty page) is data.
    """
    if batch.num_rows != 0 or not metadata:
        return BatchRole.DATA
    if keys.LOG_LEVEL in metadata and keys.LOG_MESSAGE in metadata:
        return BatchRole.ERROR if metadata[keys.LOG_LEVEL] == "EXCEPTION" else BatchRole.LOG
    if keys.SHM_OFFSET in metadata:
        return BatchRole.SHM_POINTER
    if keys.CANCEL in metadata:
        return BatchRole.CANCEL
    if keys.LOCATION in metadata:
        return BatchRole.EXTERNAL
    return BatchRole.DATA
