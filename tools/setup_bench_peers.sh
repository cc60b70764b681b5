#!/usr/bin/env bash
# The venvs of the benchmarks' peers, one per peer, each pinned by tools/requirements-bench-<peer>.txt:
# `./quiver bench server`'s (Hyper, Quack, PostgreSQL's clients) and `./quiver bench gateway`'s (ROAPI,
# Datasette); and the gateway suite's Debian packages, wrk (the load generator) and nginx (the
# ceiling). Benchmark-only: ./quiver setup, test and demo never call this; tools/bench.sh does. A venv is rebuilt only when its requirements file changed
# (ensure_venv in tools/venv.sh, shared with tools/setup.sh).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

log() { printf '[setup-bench-peers] %s\n' "$*" >&2; }

# ensure_venv, find_python311.
source "$ROOT/tools/venv.sh"

python="$(find_python311)"
for requirements in tools/requirements-bench-*.txt; do
    peer="${requirements#tools/requirements-bench-}"
    peer="${peer%.txt}"
    # One peer failing to install (a registry hiccup) leaves the others usable; the suite reports it.
    ensure_venv ".venv-bench-$peer" "$python" "$requirements" || log "could not set up the $peer peer"
done
# wrk and nginx from Debian, installed only when missing (root, or sudo without a password).
missing=()
command -v wrk >/dev/null 2>&1 || missing+=(wrk)
command -v nginx >/dev/null 2>&1 || [[ -x /usr/sbin/nginx ]] || missing+=(nginx-light)
if ((${#missing[@]})); then
    sudo=()
    [[ "$(id -u)" == 0 ]] || sudo=(sudo -n)
    log "installing ${missing[*]} (Debian packages, for ./quiver bench gateway)"
    if ! { "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null \
        || { "${sudo[@]}" apt-get update -qq && "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}" >/dev/null; }; }; then
        log "could not install ${missing[*]}: the gateway suite needs them (apt-get install ${missing[*]})"
    fi
fi
if [[ ! -x /usr/lib/postgresql/15/bin/initdb ]]; then
    log "no PostgreSQL 15 binaries (Debian package postgresql-15): the postgres peer will not run"
fi
