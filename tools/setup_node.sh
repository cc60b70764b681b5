#!/usr/bin/env bash
# quiver's Node package (node/): its npm dependencies from the registry (`npm ci`, pinned by
# node/package-lock.json), then the native module (crates/quiver-node) built in release by
# napi-rs's CLI into node/quiver.<platform>.node.
#
# Idempotent: a stamp holds the hash of everything the build reads (the lockfiles and the
# crates' sources); when it matches and the module is there, nothing runs. Called by
# tools/setup.sh; without node and npm it says so and exits 1 (setup.sh goes on; the Node tests
# then fail naming what is missing).
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

STAMP=node/.setup-stamp
want="$({
    sha256sum node/package-lock.json Cargo.lock
    find crates -path '*/target' -prune -o \( -name '*.rs' -o -name Cargo.toml \) -type f -print \
        | LC_ALL=C sort | xargs sha256sum
} | sha256sum | cut -d' ' -f1)"
module="$(ls node/quiver.*.node 2>/dev/null | head -1 || true)"
if [[ -f "$STAMP" && -n "$module" && -d node/node_modules && "$(cat "$STAMP")" == "$want" ]]; then
    exit 0
fi

log "installing node/'s npm dependencies (npm ci)"
(cd node && npm ci --no-audit --no-fund --loglevel=error)
log "building the native module (napi build, release)"
(cd node && npm run --silent build)
echo "$want" > "$STAMP"
