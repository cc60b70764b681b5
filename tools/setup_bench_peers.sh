#!/usr/bin/env bash
# The venvs of `./quiver bench server`'s peers (Hyper, Quack, PostgreSQL's clients), one per peer, each
# pinned by tools/requirements-bench-<peer>.txt. Benchmark-only: ./quiver setup, test and demo never
# call this; tools/bench.sh server does. A venv is rebuilt only when its requirements file changed
# (the rule of ensure_venv in tools/setup.sh).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

log() { printf '[setup-bench-peers] %s\n' "$*" >&2; }

ensure_venv() {
    local dir="$1" python="$2" requirements="$3"
    local stamp="$dir/.requirements.sha256"
    local want
    want="$(sha256sum "$requirements" | cut -d' ' -f1)"
    if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
        return 0
    fi
    log "creating $dir with $("$python" --version 2>&1)"
    rm -rf "$dir"
    "$python" -m venv "$dir"
    "$dir/bin/pip" install --quiet --disable-pip-version-check -r "$requirements"
    echo "$want" > "$stamp"
}

find_python311() {
    local candidate
    for candidate in python3.11 python3 "$HOME"/.pyenv/versions/3.11*/bin/python3; do
        if command -v "$candidate" >/dev/null 2>&1 \
            && "$candidate" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
            command -v "$candidate"
            return 0
        fi
    done
    echo "setup-bench-peers: no Python >= 3.11 found" >&2
    return 1
}

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
