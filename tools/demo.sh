#!/usr/bin/env bash
# The demo: SQL in DuckDB calling the allinone worker's functions, shm off then on; DuckDB as a
# server (./quiver server) with its Python client; the HTTP gateway over the example project
# (./quiver gateway); then the RPC spine's own tour (quiver-demo).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
.venv/bin/python examples/sql_demo.py
echo
.venv/bin/python examples/server_demo.py
echo
.venv/bin/python examples/gateway_demo.py
echo
exec target/release/quiver-demo "$@"
