#!/usr/bin/env bash
# What `./quiver test-spark` and `./quiver bench spark` need beyond `tools/setup.sh demo` (the Rust
# workspace, the DuckDB extension): .venv-spark (PySpark 4.3 and the libraries pinned in
# tools/requirements-spark.txt) holding quiver, editable, and the native module (crates/quiver-python:
# the engine role quiver.spark drives), and the Java example worker. Spark runs on the machine's JDK
# (17 or newer); idempotent, each part redone only when what it is made of changed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
log() { printf '[setup-spark] %s\n' "$*" >&2; }

# ensure_venv, find_python311.
source "$ROOT/tools/venv.sh"

if ! java -version >/dev/null 2>&1; then
    log "no java on PATH: Spark needs a JDK (17 or newer); install one (e.g. apt-get install openjdk-17-jdk-headless)"
    exit 1
fi

ensure_venv .venv-spark "$(find_python311)" tools/requirements-spark.txt
if ! .venv-spark/bin/python -c 'import quiver' 2>/dev/null; then
    log "installing the quiver Python package (editable) into .venv-spark"
    .venv-spark/bin/pip install --quiet --disable-pip-version-check --no-deps -e python/
fi

# The native module, from the crates it is made of (the same wheel tools/setup_python_native.sh builds).
stamp=.venv-spark/.quiver-native.sha256
wheels=target/wheels/quiver-native-spark
sources="$(find crates/quiver-python crates/quiver-client crates/quiver-duckdb crates/quiver-vgi-contract \
    crates/quiver-secret crates/quiver-process crates/quiver-rpc crates/quiver-wire crates/quiver-shm \
    crates/quiver-transport crates/quiver-server-protocol -type f | sort | xargs sha256sum | cat - Cargo.lock \
    | sha256sum | cut -d' ' -f1)"
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$sources" ]] || ! .venv-spark/bin/python -c 'import quiver_native; quiver_native.VgiWorker' 2>/dev/null; then
    log "building and installing the native module (quiver-native) into .venv-spark"
    rm -rf "$wheels"
    .venv-spark/bin/pip wheel --quiet --disable-pip-version-check --no-deps -w "$wheels" crates/quiver-python
    .venv-spark/bin/pip install --quiet --disable-pip-version-check --no-deps --force-reinstall "$wheels"/quiver_native-*.whl
    echo "$sources" > "$stamp"
fi

# The Java example worker, one of the three SDKs tests/test_spark.py reads split plans from.
java/build.sh || log "no Java worker: tests/test_spark.py's Java case will fail (see above)"
