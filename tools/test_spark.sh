#!/usr/bin/env bash
# The Spark tests (tests/test_spark.py), opt-in because a JVM and two executors take a while to start:
# quiver workers under PySpark 4.3 in local-cluster mode, checked against DuckDB running the same
# functions. `./quiver test-spark` sets up first (tools/setup.sh demo, tools/setup_spark.sh).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export QUIVER_BIN="$ROOT/target/release"
exec .venv-spark/bin/python -m pytest -q tests/test_spark.py "$@"
