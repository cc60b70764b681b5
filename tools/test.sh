#!/usr/bin/env bash
# Every test: the lint gate (tools/lint.sh), Rust unit and integration tests, then the
# cross-implementation suite (the vgi-rpc oracle against our worker and our client against the oracle).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export QUIVER_ORACLE_PYTHON="$ROOT/.venv-oracle/bin/python"
export QUIVER_ORACLE_BIN="$ROOT/.venv-oracle/bin"
export QUIVER_BIN="$ROOT/target/release"
export QUIVER_VGI_PYTHON="$ROOT/.venv-vgi/bin/python"
export QUIVER_HAYBARN_PYTHON="$ROOT/.venv-haybarn/bin/python"
export QUIVER_SUITE_PYTHON="$ROOT/.venv-suite/bin/python"
# The JDK the Java worker is also checked on (the default java runs it too): Temurin 25 where present.
export QUIVER_JAVA_ALT="${QUIVER_JAVA_ALT:-/usr/lib/jvm/temurin-25-jdk-amd64/bin/java}"

tools/lint.sh
cargo test --release --workspace --locked
# tests/test_spark.py runs in .venv-spark, by ./quiver test-spark (opt-in: a JVM and executors).
# One pytest worker per core, each taking whole files (a file's module fixtures start once); the
# slowest tests are named at the end, so a run that grows shows where.
.venv/bin/python -m pytest -q --numprocesses auto --dist loadfile --durations=15 \
    tests python/tests --ignore=tests/test_spark.py "$@"
# The Node package against a real server (node/test/; the server is python -m quiver.serve).
(cd node && PYTHONPATH="$ROOT/python" node --test test/*.test.js)
