#!/usr/bin/env bash
# quiver's Node package (node/): its npm dependencies from the registry (`npm ci`, pinned by
# node/package-lock.json), then the native module: crates/quiver-node, built by cargo with the rest of the
# workspace (so it shares every compiled dependency), copied to the file name node/index.js loads
# (quiver.<platform>-<arch>[-gnu].node, napi-rs's naming).
#
# Idempotent: cargo skips a build that is done; npm ci runs only when the lockfile changed. Called by
# tools/setup.sh; without node and npm it says so and exits 1 (setup.sh goes on; the Node tests then fail
# naming what is missing).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

log() { printf '[setup-node] %s\n' "$*" >&2; }

for tool in node npm; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        log "no '$tool' on PATH: quiver's Node package needs Node.js >= 20 with npm"
        exit 1
    fi
done

STAMP=node/node_modules/.quiver-lock.sha256
want="$(sha256sum node/package-lock.json | cut -d' ' -f1)"
if [[ ! -f "$STAMP" || "$(cat "$STAMP")" != "$want" ]]; then
    log "installing node/'s npm dependencies (npm ci)"
    (cd node && npm ci --no-audit --no-fund --loglevel=error)
    echo "$want" > "$STAMP"
fi

cargo build --release --locked --workspace
platform="$(node -p 'process.platform + "-" + process.arch + (process.platform === "linux" ? "-gnu" : "")')"
module="node/quiver.$platform.node"
if [[ ! -f "$module" || target/release/libquiver_node.so -nt "$module" ]]; then
    log "native module: $module"
    cp target/release/libquiver_node.so "$module.tmp" && mv -f "$module.tmp" "$module"
fi
