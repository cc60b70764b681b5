"""Sticky HTTP sessions on the client side: a stack of scopes, each a token and its echo headers.

A scope opts every request into a session (``VGI-Session-Accept: true``) and presents the
token the server minted (``VGI-Session``) together with the ``VGI-Echo-*`` values the
session-opening response asked the client to carry back. Responses update the top scope: a
new ``VGI-Session`` token replaces the old one, ``VGI-Session-Close: true`` clears it.

Scopes nest. Beginning one while another is open pushes; ending pops and the enclosing
scope applies again, so a block that opens an inner session and leaves it keeps using the
outer one. The stack is bounded (:data:`SCOPES_MAX`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

SESSION = "VGI-Session"
SESSION_ACCEPT = "VGI-Session-Accept"
SESSION_CLOSE = "VGI-Session-Close"
ECHO_PREFIX = "VGI-Echo-"
#: The route of the server's session teardown (``DELETE``), beside the protocols.
SESSION_ROUTE = "/__session__"
#: The deepest nesting of scopes one client holds; deeper is a caller's runaway loop.
SCOPES_MAX = 64
#: The most echo headers kept for one scope; a server asking for more is refused the rest.
ECHO_HEADERS_MAX = 32


@dataclass(slots=True)
class SessionScope:
    """One ``begin_session`` scope: its token (``None`` until minted) and captured echo headers."""

    token: str | None
    echo_headers: dict[str, str] = field(default_factory=dict)
    #: Detached: the session outlives the scope, so ending it sends no ``DELETE``.
    detached: bool = False


class SessionStack:
    """The client's open scopes, innermost last."""

    __slots__ = ("_scopes",)

    def __init__(self) -> None:
        self._scopes: list[SessionScope] = []

    @property
    def top(self) -> SessionScope | None:
        return self._scopes[-1] if self._scopes else None

    def __len__(self) -> int:
        return len(self._scopes)

    def push(self, token: str | None) -> SessionScope:
        """Opens a scope; ``token`` resumes an existing session (empty or ``None``: let the server mint)."""
        if len(self._scopes) >= SCOPES_MAX:
            raise RuntimeError(f"more than {SCOPES_MAX} nested session scopes")
        scope = SessionScope(token or None)
        self._scopes.append(scope)
        return scope

    def pop(self) -> SessionScope | None:
        """Closes the innermost scope (``None`` when none is open); the enclosing one applies again."""
        return self._scopes.pop() if self._scopes else None

    def request_headers(self) -> dict[str, str]:
        """The headers the top scope adds to a request (none outside every scope)."""
        scope = self.top
        if scope is None:
            return {}
        headers = {f"{ECHO_PREFIX}{name}": value for name, value in scope.echo_headers.items()}
        headers[SESSION_ACCEPT] = "true"
        if scope.token is not None:
            headers[SESSION] = scope.token
        return headers

    def capture(self, headers: Mapping[str, str]) -> None:
        """Applies a response's session headers (lower-case names) to the top scope."""
        scope = self.top
        if scope is None:
            return
        token = headers.get(SESSION.lower())
        if token:
            scope.token = token
        prefix = ECHO_PREFIX.lower()
        for name, value in headers.items():
            if name.startswith(prefix) and len(scope.echo_headers) < ECHO_HEADERS_MAX:
                scope.echo_headers[name[len(prefix) :]] = value
        if (headers.get(SESSION_CLOSE.lower()) or "").strip().lower() == "true":
            scope.token = None
            scope.echo_headers.clear()
