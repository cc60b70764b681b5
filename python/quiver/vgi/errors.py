"""The errors a worker reports; the class name is the ``exception_type`` the engine sees."""

from __future__ import annotations


class VgiError(Exception):
    """Base class; ``error_code`` travels as ``vgi_rpc.error_code``."""

    error_code = "UNKNOWN"


class NotFoundError(VgiError):
    error_code = "NOT_FOUND"


class InvalidArgumentError(VgiError):
    error_code = "INVALID_ARGUMENT"


class ArgumentValidationError(VgiError):
    error_code = "INVALID_ARGUMENT"


class FilterDeserializationError(VgiError):
    error_code = "INVALID_ARGUMENT"


class OpaqueDataNotRecognizedError(VgiError):
    error_code = "INVALID_ARGUMENT"
    error_kind = "opaque_data_not_recognized"
