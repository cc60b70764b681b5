#!/usr/bin/env bash
# Idempotent setup: Rust release build, quiver's Python venv, the oracle venv, the JDBC test driver.
# Everything comes from the package registries; a stamp file skips work that is done.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

log() { printf '[setup] %s\n' "$*" >&2; }

# ensure_venv, find_python311, find_python313.
source "$ROOT/tools/venv.sh"

ensure_venv .venv "$(find_python311)" tools/requirements.txt
# quiver's own Python package, editable, in quiver's venv.
if ! .venv/bin/python -c 'import quiver' 2>/dev/null; then
    log "installing the quiver Python package (editable)"
    .venv/bin/pip install --quiet --disable-pip-version-check --no-deps -e python/
fi
ensure_venv .venv-oracle "$(find_python313)" tools/requirements-oracle.txt
# vgi-rpc's own pytest conformance suite (tests/vgi_rpc_suite): the oracle's packages plus pytest.
ensure_venv .venv-suite "$(find_python313)" tools/requirements-suite.txt
# haybarn: a DuckDB-derived host with another source id, which the extension must refuse.
ensure_venv .venv-haybarn "$(find_python311)" tools/requirements-haybarn.txt
# vgi-python, the VGI engine-role client that drives our workers in the tests.
if [[ -f tools/requirements-vgi.txt ]]; then
    ensure_venv .venv-vgi "$(find_python313)" tools/requirements-vgi.txt
fi
# Older vgi-python releases, one venv each, for the version-skew tests
# (tests/test_extension_vgi_versions.py): 0.30.0 speaks VgiProtocol 1.4, 0.39.0 vgi.v2 2.0,
# 0.40.0 vgi.v2 2.1.
for requirements in tools/requirements-vgi-*.txt; do
    [[ -f "$requirements" ]] || continue
    release="${requirements#tools/requirements-vgi-}"
    ensure_venv ".venv-vgi-${release%.txt}" "$(find_python313)" "$requirements"
done

# The Arrow Flight SQL JDBC driver (Maven Central), which tests/test_flight_sql_jdbc.py runs. Without a JDK
# or Maven that one test fails and says why; nothing else needs them.
tools/setup_jdbc.sh || log "no Flight SQL JDBC driver: tests/test_flight_sql_jdbc.py will fail (see above)"

# The Java spine, its conformance worker and the VGI SDK's AllInOne (java/), which tests/test_java_conformance.py,
# tests/test_vgi_allinone.py and tests/test_extension_java_worker.py run.
java/build.sh || log "no Java worker: tests/test_java_conformance.py will fail (see above)"

log "building Rust workspace (release)"
# quiver-node, the Node package's native module, is built by napi-rs's CLI (tools/setup_node.sh).
cargo build --release --workspace --exclude quiver-node --locked --quiet
log "building the DuckDB extension"
extension/build.sh

# The Python native module (quiver_native) and the Node package: both bind quiver-client.
tools/setup_python_native.sh
tools/setup_node.sh || log "no Node package: node/ tests will fail (see above)"
