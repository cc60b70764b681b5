# Shared by tools/setup.sh and tools/setup_bench_peers.sh (sourced; each defines log() first):
# virtual environments rebuilt only when their pinned requirements change, and the Pythons to build them.

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
