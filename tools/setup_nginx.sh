#!/usr/bin/env bash
# nginx, a test dependency: tests/test_http_replicas.py puts three replicas of the example worker behind it
# (round robin, no stickiness) and starts it itself, unprivileged, with its own configuration under the
# test's temporary directory. Only the binary is needed, so any nginx on PATH will do; without one this
# installs the distribution's package (Debian's `nginx`) with apt-get and stops the service the package
# starts, which the tests never use.
#
# Idempotent: a stamp naming the nginx found skips all work. Called by tools/setup.sh; when nginx cannot be
# installed it says why and exits 1 (setup.sh goes on; the replica test then fails naming what is missing).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STAMP="$ROOT/target/.nginx-stamp"

log() { printf '[setup-nginx] %s\n' "$*" >&2; }

found() {
    # Debian installs it under /usr/sbin, which a user's PATH may not list.
    PATH="$PATH:/usr/sbin:/sbin" command -v nginx 2>/dev/null
}

NGINX="$(found || true)"
if [[ -n "$NGINX" && -f "$STAMP" && "$(cat "$STAMP")" == "$NGINX" ]]; then
    log "nginx already at $NGINX"
    exit 0
fi

if [[ -z "$NGINX" ]]; then
    if ! command -v apt-get >/dev/null 2>&1; then
        log "no nginx on PATH and no apt-get to install it: install nginx (any recent release) and rerun"
        exit 1
    fi
    SUDO=()
    if [[ "$(id -u)" != 0 ]]; then
        if ! command -v sudo >/dev/null 2>&1; then
            log "no nginx on PATH, and installing it with apt-get needs root (no sudo here): install nginx and rerun"
            exit 1
        fi
        SUDO=(sudo -n)
    fi
    log "installing Debian's nginx package with apt-get"
    install() { "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends nginx >&2; }
    # A stale package index cannot find the current release: refresh it once and retry.
    if ! install && ! { "${SUDO[@]}" apt-get update >&2 && install; }; then
        log "apt-get could not install nginx (see above): install it and rerun"
        exit 1
    fi
    # The package starts its own service on port 80; the tests start their own nginx instead.
    "${SUDO[@]}" service nginx stop >/dev/null 2>&1 || true
    NGINX="$(found || true)"
    if [[ -z "$NGINX" ]]; then
        log "apt-get reported success but no nginx binary is on PATH or in /usr/sbin"
        exit 1
    fi
fi

"$NGINX" -v
mkdir -p "$(dirname "$STAMP")"
printf '%s' "$NGINX" >"$STAMP"
log "nginx at $NGINX"
