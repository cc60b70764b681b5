#!/usr/bin/env bash
# The native module (crates/quiver-python, distribution quiver-native): one abi3 wheel built by maturin
# (in the workspace's target/), installed into .venv and into the oracle's venv, where
# `./quiver bench python` runs; rebuilt only when the Rust it is made of changes.
set -euo pipefail
cd "$(dirname "$0")/.."
log() { printf '[setup-native] %s\n' "$*" >&2; }

native_stamp=.venv/.quiver-native.sha256
native_wheels=target/wheels/quiver-native
native_sources="$(find crates/quiver-python crates/quiver-client crates/quiver-process crates/quiver-rpc \
    crates/quiver-wire crates/quiver-shm crates/quiver-transport crates/quiver-server-protocol -type f | sort \
    | xargs sha256sum | cat - Cargo.lock | sha256sum | cut -d' ' -f1)"
if [[ ! -f "$native_stamp" || "$(cat "$native_stamp")" != "$native_sources" ]] \
    || ! .venv/bin/python -c 'import quiver_native' 2>/dev/null \
    || ! .venv-oracle/bin/python -c 'import quiver_native' 2>/dev/null; then
    log "building and installing the native module (quiver-native)"
    # maturin builds crates/quiver-python alone; its Cargo.toml aligns the features of what it shares
    # with the workspace, so after setup's workspace build nothing but the module itself compiles.
    # Say so when that list has gone stale (a dependency compiled again costs every cold setup).
    recompiled="$(cargo build --release --locked -p quiver-python --message-format=json 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if message.get("reason") == "compiler-artifact" and not message["fresh"] and "registry+" in message["package_id"]:
        print(message["package_id"].rsplit("#", 1)[-1])
' | sort -u | xargs)"
    [[ -z "$recompiled" ]] \
        || log "note: crates/quiver-python's feature alignment is stale; compiled again: $recompiled"
    rm -rf "$native_wheels"
    .venv/bin/pip wheel --quiet --disable-pip-version-check --no-deps -w "$native_wheels" crates/quiver-python
    for venv in .venv .venv-oracle; do
        "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps --force-reinstall \
            "$native_wheels"/quiver_native-*.whl
    done
    echo "$native_sources" > "$native_stamp"
fi
