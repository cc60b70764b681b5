"""vgi-rpc 0.52.2's request-contract tests, collected here against the fixtures in conftest.py."""

from vgi_rpc.conformance._adversarial_http import TestAdversarialHttpRequestContract
from vgi_rpc.conformance._adversarial_raw import TestAdversarialRawRequestContract

__all__ = ["TestAdversarialHttpRequestContract", "TestAdversarialRawRequestContract"]
