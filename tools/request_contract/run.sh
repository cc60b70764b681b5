#!/usr/bin/env bash
# vgi-rpc 0.52.2's request-contract tests against quiver's Rust and Python workers and the
# reference worker: ./tools/request_contract/run.sh [pytest args]. Needs the release build and a
# Python with vgi_rpc and pytest (QUIVER_SUITE_PYTHON, default .venv-suite/bin/python).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PYTHON="${QUIVER_SUITE_PYTHON:-$ROOT/.venv-suite/bin/python}"
cd "$ROOT"
exec "$PYTHON" -m pytest -q -p no:cacheprovider tools/request_contract "$@"
