"""The server: protocols hosted by implementation objects, served on any connection."""

from __future__ import annotations

import inspect
import secrets
import threading
from collections.abc import Callable
from typing import Any

from ..shm.config import ShmConfig
from ..transport.connection import Connection
from ..transport.pipe import pipe_pair
from ..wire.limits import DEFAULT_LIMITS, Limits
from .dispatch import BoundMethod, HostedProtocol
from .method import CONTEXT_PARAMETER, MethodSpec, protocol_spec
from .reflection import REFLECTION_PROTOCOL, Reflection, ReflectionImpl
from .session import Session


class Server:
    """Serves one or more protocols, each backed by an implementation object.

    An implementation method receives the wire parameters positionally, in the order the
    protocol declares them, plus ``ctx=`` (a :class:`CallContext`) when it has a ``ctx``
    parameter. Each connection is served by its own :class:`Session`.

    >>> server = Server(Calculator, CalculatorImpl())
    >>> serve_stdio(server)
    """

    def __init__(
        self,
        protocol: type | None = None,
        implementation: object | None = None,
        *,
        limits: Limits = DEFAULT_LIMITS,
        shm: ShmConfig | None = None,
        server_id: str | None = None,
    ) -> None:
        self.limits = limits
        self.shm = ShmConfig.from_env() if shm is None else shm
        self.server_id = server_id or secrets.token_hex(6)
        self.protocols: dict[str, HostedProtocol] = {}
        self.add(Reflection, ReflectionImpl(self))
        if protocol is not None:
            self.add(protocol, implementation)

    def add(self, protocol: type, implementation: object) -> Server:
        """Hosts ``protocol``, answered by the methods of ``implementation``."""
        spec = protocol_spec(protocol)
        missing = [name for name in spec.methods if not callable(getattr(implementation, name, None))]
        if missing:
            raise TypeError(f"{type(implementation).__name__} does not implement {spec.name}: {', '.join(missing)}")
        methods = {name: _bind(method, getattr(implementation, name)) for name, method in spec.methods.items()}
        self.protocols[spec.name] = HostedProtocol(spec.name, spec.version, methods)
        # Reflection stays last so the first hosted protocol is the application's (the HTTP health route names it).
        if REFLECTION_PROTOCOL in self.protocols:
            self.protocols[REFLECTION_PROTOCOL] = self.protocols.pop(REFLECTION_PROTOCOL)
        return self

    def serve(self, connection: Connection) -> None:
        """Serves requests on ``connection`` until the client closes it; then closes it."""
        Session(self.protocols, connection, limits=self.limits, shm=self.shm, server_id=self.server_id).run()

    def in_process(self) -> Connection:
        """Serves a fresh pipe pair on a daemon thread; returns the client end."""
        client, server = pipe_pair()
        threading.Thread(target=self.serve, args=(server,), name="quiver in-process server", daemon=True).start()
        return client


def _bind(spec: MethodSpec, function: Callable[..., Any]) -> BoundMethod:
    """Checks that ``function`` takes the wire parameters positionally (and maybe ``ctx``)."""
    signature = inspect.signature(function)
    wants_ctx = CONTEXT_PARAMETER in signature.parameters
    try:
        signature.bind(*spec.params, **({CONTEXT_PARAMETER: None} if wants_ctx else {}))
    except TypeError as exc:
        raise TypeError(f"{spec.name}{signature} cannot take the protocol's parameters positionally: {exc}") from exc
    return BoundMethod(spec, function, wants_ctx)
