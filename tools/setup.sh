#!/usr/bin/env bash
# Idempotent setup: Rust release build, quiver's Python venv, the oracle venv.
# Everything comes from the package registries; a stamp file skips work that is done.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

log() { printf '[setup] %s\n' "$*" >&2; }

# A venv is rebuilt only when its requirements file changed.
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

# vgi-rpc 0.52.2 needs Python >= 3.13; the image carries one under pyenv.
find_python313() {
    local candidate
    for candidate in python3.14 python3.13 "$HOME"/.pyenv/versions/3.14*/bin/python3 "$HOME"/.pyenv/versions/3.13*/bin/python3; do
        if command -v "$candidate" >/dev/null 2>&1 \
            && "$candidate" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 13) else 1)' 2>/dev/null; then
            command -v "$candidate"
            return 0
        fi
    done
    echo "setup: no Python >= 3.13 found (needed by the vgi-rpc oracle); install one (pyenv install 3.13)" >&2
    return 1
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
    echo "setup: no Python >= 3.11 found" >&2
    return 1
}

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

log "building Rust workspace (release)"
cargo build --release --workspace --locked --quiet
log "building the DuckDB extension"
extension/build.sh
