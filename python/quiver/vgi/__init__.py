"""quiver.vgi: write VGI workers (``vgi.v2`` 2.2.0) in a few lines.

::

    worker = Worker("demo")

    @worker.scalar(returns=pa.string(), args=[Arg("s", pa.string())])
    def shout(s):
        "upper-cases s"
        return pc.utf8_upper(s)

    worker.main()     # stdio; --unix PATH [--idle-timeout SECS]

Scalar, table (with projection, the filter subset of :mod:`quiver.vgi.filters` and
parallel scans over a shared counter) and table-in-out functions (with finalize);
``python -m quiver.vgi.allinone`` is the example worker.
"""

from .docs import Docs, Example, Schema
from .errors import (
    ArgumentValidationError,
    FilterDeserializationError,
    InvalidArgumentError,
    NotFoundError,
    OpaqueDataNotRecognizedError,
    VgiError,
)
from .function import Arg, Function
from .worker import Worker

__all__ = [
    "Arg",
    "ArgumentValidationError",
    "Docs",
    "Example",
    "FilterDeserializationError",
    "Function",
    "InvalidArgumentError",
    "NotFoundError",
    "OpaqueDataNotRecognizedError",
    "Schema",
    "VgiError",
    "Worker",
]
