#!/usr/bin/env bash
# The venvs of `./quiver bench server`'s peers (Hyper, Quack, PostgreSQL's clients), one per peer, each
# pinned by tools/requirements-bench-<peer>.txt. Benchmark-only: ./quiver setup, test and demo never
# call this; tools/bench.sh server does. A venv is rebuilt only when its requirements file changed
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
if [[ ! -x /usr/lib/postgresql/15/bin/initdb ]]; then
    log "no PostgreSQL 15 binaries (Debian package postgresql-15): the postgres peer will not run"
fi
