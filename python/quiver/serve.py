"""``python -m quiver.serve`` (``./quiver server``): DuckDB 2.0.0 serving ``quiver.server``.

DuckDB with quiver's extension serves the ``quiver.server`` protocol on TCP and Unix sockets, and
Arrow Flight SQL (what ADBC's and JDBC's Flight SQL drivers speak) on a ``grpc://`` or
``grpc+tls://`` listener.

The extension does the serving (``quiver_serve(...)``, crates/quiver-server); this host only opens
the database, starts the server, announces it and waits for the end. On stdout, one line per
listener — ``PORT:<n>`` for TCP, ``UNIX:<absolute path>`` for a Unix socket,
``FLIGHT_SQL:<uri>`` for Flight SQL (the exact URI an ADBC client passes) — then ``TOKEN:<hex>``
when the server generated the token, then ``READY``. TCP and gRPC listeners require the token.

With ``--metrics tcp://127.0.0.1:0`` a Prometheus ``/metrics`` listener is announced as
``METRICS:<url>``. Events (sessions, failed authentication, failed and slow statements) are
logged on stderr, as JSON lines with ``--log-format json``.

The end: ``SIGTERM``/``SIGINT``, or with ``--watch-stdin`` the end of stdin (the dead-man switch of
a spawning client, which holds the write end open and never writes). Then the server stops
(running statements get ``ServerStoppingError``, open transactions roll back), a file database is
checkpointed, the socket files are removed, and the process exits 0. A server that cannot start
(a bad flag, a database it cannot open or that another process holds, a listener it cannot bind)
says why in one line on stderr and exits 2.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Sequence

from . import __version__
from .sql import connect

__all__ = ["main"]

#: How often the main thread looks whether it should stop (signals arrive between waits).
STOP_POLL_SECONDS = 0.2


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text}")
    return value


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {text}")
    return value


def _version() -> str:
    import duckdb

    return f"quiver server {__version__} (DuckDB {duckdb.__version__})"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="quiver server", description="DuckDB with quiver's extension as a quiver.server and Flight SQL server."
    )
    parser.add_argument("--database", default=":memory:", help="database file (default: in memory)")
    parser.add_argument(
        "--listen",
        action="append",
        metavar="URL",
        help="tcp://HOST:PORT, unix:///PATH, or one Flight SQL listener grpc://HOST:PORT or "
        "grpc+tls://HOST:PORT (announced as FLIGHT_SQL:<uri>); repeatable (default: tcp://127.0.0.1:0)",
    )
    parser.add_argument("--tls-cert", metavar="PEM", help="certificate chain of a grpc+tls:// listener")
    parser.add_argument("--tls-key", metavar="PEM", help="private key of a grpc+tls:// listener")
    parser.add_argument(
        "--token-env", default="QUIVER_TOKEN", metavar="VAR", help="environment variable holding the TCP and gRPC token"
    )
    parser.add_argument("--no-auth", action="store_true", help="serve TCP and gRPC without a token (loopback only)")
    parser.add_argument("--watch-stdin", action="store_true", help="stop when stdin reaches end of file")
    parser.add_argument("--threads", type=_positive_int, help="DuckDB's threads setting")
    parser.add_argument("--memory-limit", help="DuckDB's memory_limit setting, e.g. 4GB")
    parser.add_argument("--max-connections", type=_positive_int, help="sessions served at once (default 64)")
    parser.add_argument("--max-message-bytes", type=_positive_int, help="largest message read (default 256 MiB)")
    parser.add_argument(
        "--auth-deadline",
        type=_positive_seconds,
        metavar="SECONDS",
        help="time a connection has to authenticate before it is closed (default 10)",
    )
    parser.add_argument(
        "--max-unauthenticated",
        type=_positive_int,
        metavar="N",
        help="connections each listener holds before they authenticate; the oldest make room (default 16)",
    )
    parser.add_argument(
        "--slow-statement",
        type=_seconds,
        metavar="SECONDS",
        help="log statements that take at least this long, 0 for every one (default: none)",
    )
    parser.add_argument("--log-format", choices=("text", "json"), default="text", help="stderr events (default text)")
    parser.add_argument(
        "--metrics",
        metavar="URL",
        help="serve Prometheus /metrics on tcp://HOST:PORT (announced as METRICS:<url>); use a loopback host",
    )
    parser.add_argument(
        "--extension", help="the extension file (default: the installed one, else this checkout's build)"
    )
    parser.add_argument("--version", action="version", version=_version(), help="print the version and exit")
    return parser


def _serve_sql(args: argparse.Namespace, listen: Sequence[str]) -> str:
    options = []
    token = None if args.no_auth else os.environ.get(args.token_env)
    if token is not None:
        options.append(f"token := {_literal(token)}")
    if args.no_auth:
        options.append("no_auth := true")
    if args.max_connections is not None:
        options.append(f"max_connections := {int(args.max_connections)}")
    if args.max_message_bytes is not None:
        options.append(f"message_bytes_max := {int(args.max_message_bytes)}")
    if args.tls_cert is not None:
        options.append(f"tls_cert := {_literal(os.path.abspath(args.tls_cert))}")
    if args.tls_key is not None:
        options.append(f"tls_key := {_literal(os.path.abspath(args.tls_key))}")
    if args.auth_deadline is not None:
        options.append(f"auth_deadline_ms := {max(1, round(args.auth_deadline * 1000))}")
    if args.max_unauthenticated is not None:
        options.append(f"unauthenticated_max := {int(args.max_unauthenticated)}")
    if args.slow_statement is not None:
        options.append(f"slow_statement_ms := {round(args.slow_statement * 1000)}")
    if args.log_format == "json":
        options.append("log_json := true")
    if args.metrics is not None:
        options.append(f"metrics := {_literal(args.metrics)}")
    arguments = ", ".join([_literal(",".join(listen)), *options])
    return f"SELECT kind, value FROM quiver_serve({arguments})"


def _watch_stdin(stop: threading.Event) -> None:
    # Raw reads of the descriptor: a thread blocked inside sys.stdin's buffered reader would hold its
    # lock while the interpreter shuts down, which aborts the process.
    try:
        while os.read(sys.stdin.fileno(), 4096):
            pass
    except (OSError, ValueError):
        pass
    stop.set()


def _fail(message: object) -> int:
    """One line on stderr (DuckDB's messages may span several: the first says what failed)."""
    text = str(message).strip().splitlines()
    print(f"quiver server: {text[0] if text else 'failed'}", file=sys.stderr, flush=True)
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.extension:
        if not os.path.isfile(args.extension):
            return _fail(f"no extension file at {args.extension}")
        os.environ["QUIVER_EXTENSION"] = args.extension
    config: dict[str, str] = {}
    if args.threads is not None:
        config["threads"] = str(args.threads)
    if args.memory_limit is not None:
        config["memory_limit"] = args.memory_limit
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    try:
        con = connect(args.database, config=config)
    except Exception as exc:  # a path it cannot open, a database another process holds, a bad setting
        return _fail(exc)
    try:
        rows = con.execute(_serve_sql(args, args.listen or ["tcp://127.0.0.1:0"])).fetchall()
    except Exception as exc:  # the server's own message says what was refused
        con.close()
        return _fail(exc)
    for kind, value in rows:
        print(f"{kind}:{value}")
    print("READY", flush=True)
    if args.watch_stdin:
        threading.Thread(target=_watch_stdin, args=(stop,), daemon=True, name="watch-stdin").start()
    while not stop.wait(STOP_POLL_SECONDS):
        pass
    con.execute("SELECT * FROM quiver_serve_stop()").fetchall()
    if args.database != ":memory:":
        con.execute("CHECKPOINT")
    con.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
