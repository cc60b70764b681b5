#!/usr/bin/env bash
# The native module (crates/quiver-python, distribution quiver-native): one abi3 wheel built by maturin
# (in the workspace's target/), installed into .venv and into the oracle's venv, where
# `./quiver bench python` runs; rebuilt only when the Rust it is made of changes.
set -euo pipefail
cd "$(dirname "$0")/.."
log() { printf '[setup-native] %s\n' "$*" >&2; }

native_stamp=.venv/.quiver-native.sha256
native_wheels=target/wheels/quiver-native
native_sources="$(find crates/quiver-python crates/quiver-client crates/quiver-duckdb crates/quiver-vgi-contract \
    crates/quiver-secret crates/quiver-process crates/quiver-rpc crates/quiver-wire crates/quiver-shm crates/quiver-transport crates/quiver-server-protocol -type f | sort \
    | xargs sha256sum | cat - Cargo.lock | sha256sum | cut -d' ' -f1)"
if [[ ! -f "$native_stamp" || "$(cat "$native_stamp")" != "$native_sources" ]] \
    || ! .venv/bin/python -c 'import quiver_native' 2>/dev/null \
    || ! .venv-oracle/bin/python -c 'import quiver_native' 2>/dev/null; then
    log "building and installing the native module (quiver-native)"
    rm -rf "$native_wheels"
    .venv/bin/pip wheel --quiet --disable-pip-version-check --no-deps -w "$native_wheels" crates/quiver-python
    for venv in .venv .venv-oracle; do
        "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps --force-reinstall \
            "$native_wheels"/quiver_native-*.whl
    done
    echo "$native_sources" > "$native_stamp"
fi
