"""``python -m quiver.serve`` (``./quiver server``): DuckDB 2.0.0 serving ``quiver.server``.

DuckDB with quiver's extension serves the ``quiver.server`` protocol on TCP and Unix sockets, and
Arrow Flight SQL (what ADBC's and JDBC's Flight SQL drivers speak) on a ``grpc://`` or
``grpc+tls://`` listener.

The extension does the serving (``quiver_serve(...)``, crates/quiver-server); this host only opens
the database, starts the server, announces it and waits for the end. On stdout, one line per
listener — ``PORT:<n>`` for TCP, ``UNIX:<absolute path>`` for a Unix socket,
``FLIGHT_SQL:<uri>`` for Flight SQL (the exact URI an ADBC client passes) — then ``TOKEN:<hex>``
when the server generated the token, then ``READY``. TCP and gRPC listeners require the token.

The end: ``SIGTERM``/``SIGINT``, or with ``--watch-stdin`` the end of stdin (the dead-man switch of
a spawning client, which holds the write end open and never writes). Then the server stops
(running statements get ``ServerStoppingError``, open transactions roll back), a file database is
checkpointed, the socket files are removed, and the process exits 0.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Sequence

from .sql import connect

__all__ = ["main"]

#: How often the main thread looks whether it should stop (signals arrive between waits).
STOP_POLL_SECONDS = 0.2


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="quiver server", description="DuckDB with quiver's extension as a quiver.server server."
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
        "--token-env", default="QUIVER_TOKEN", metavar="VAR", help="environment variable holding the TCP token"
    )
    parser.add_argument("--no-auth", action="store_true", help="serve TCP and gRPC without a token (loopback only)")
    parser.add_argument("--watch-stdin", action="store_true", help="stop when stdin reaches end of file")
    parser.add_argument("--threads", type=int, help="DuckDB's threads setting")
    parser.add_argument("--memory-limit", help="DuckDB's memory_limit setting, e.g. 4GB")
    parser.add_argument("--max-connections", type=int, help="sessions served at once (default 64)")
    parser.add_argument("--max-message-bytes", type=int, help="largest message read (default 256 MiB)")
    parser.add_argument("--extension", help="the extension file (default: this tree's build)")
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


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.extension:
        os.environ["QUIVER_EXTENSION"] = args.extension
    config: dict[str, str] = {}
    if args.threads is not None:
        config["threads"] = str(args.threads)
    if args.memory_limit is not None:
        config["memory_limit"] = args.memory_limit
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    con = connect(args.database, config=config)
    try:
        rows = con.execute(_serve_sql(args, args.listen or ["tcp://127.0.0.1:0"])).fetchall()
    except Exception as exc:  # the server's own message says what was refused
        print(f"quiver server: {exc}", file=sys.stderr, flush=True)
        con.close()
        return 2
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
