"""``python -m quiver.conformance``: serve ``ConformanceService`` over stdio, a Unix socket, TCP or HTTP."""

from __future__ import annotations

import argparse
import signal
import sys
from types import FrameType

from ..rpc.serve import serve_stdio, serve_tcp, serve_unix
from ..rpc.server import Server
from ..shm.config import ShmConfigError
from . import make_server


def main(argv: list[str] | None = None) -> int:
    """Runs the worker; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m quiver.conformance", description=__doc__)
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--unix", metavar="PATH", help="listen on a Unix socket (prints UNIX:<path>)")
    where.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP; port 0 picks one (prints PORT:<n>)")
    where.add_argument(
        "--http",
        metavar="[HOST:]PORT",
        nargs="?",
        const="0",
        help="serve HTTP (vgi-rpc's routes) on 127.0.0.1 unless HOST is given; no PORT picks one (prints PORT:<n>)",
    )
    parser.add_argument("--prefix", default="", help="HTTP: URL path prefix of every route (default: none)")
    parser.add_argument(
        "--max-response-bytes", type=int, metavar="N", help="HTTP: refuse answers larger than N bytes (N >= 65536)"
    )
    args = parser.parse_args(argv)
    try:
        server = make_server()
    except ShmConfigError as exc:
        print(f"quiver-conformance: {exc}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _exit_on_signal)
    try:
        _serve(server, args)
    except KeyboardInterrupt:
        pass
    except (OSError, ValueError) as exc:
        print(f"quiver-conformance: {exc}", file=sys.stderr)
        return 1
    return 0


def _serve(server: Server, args: argparse.Namespace) -> None:
    if args.unix:
        serve_unix(server, args.unix)
    elif args.http is not None:
        from ..transport.http import WsgiApp, serve_http

        host, _, port = args.http.rpartition(":")
        app = WsgiApp(server, prefix=args.prefix, max_response_bytes=args.max_response_bytes)
        serve_http(app, host or "127.0.0.1", int(port))
    elif args.tcp:
        host, _, port = args.tcp.rpartition(":")
        serve_tcp(server, host or "127.0.0.1", int(port))
    else:
        serve_stdio(server)


def _exit_on_signal(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(0)


if __name__ == "__main__":
    sys.exit(main())
