# Shared by tools/setup.sh and tools/setup_bench_peers.sh (sourced; each defines log() first):
# virtual environments rebuilt only when their pinned requirements change, and the Pythons to build them.

# Venvs are made by uv (pinned here), which installs from its cache by hard links: seconds where pip
# takes minutes for the dozen venvs the tests use. uv itself lives in .venv-uv, made once with pip.
UV_VERSION="0.13.9"

uv_binary() {
    local uv="$ROOT/.venv-uv/bin/uv"
    if [[ ! -x "$uv" ]] || [[ "$("$uv" --version 2>/dev/null)" != "uv $UV_VERSION"* ]]; then
        rm -rf "$ROOT/.venv-uv"
        "$(find_python311)" -m venv "$ROOT/.venv-uv" >&2
        "$ROOT/.venv-uv/bin/pip" install --quiet --disable-pip-version-check "uv==$UV_VERSION" >&2
    fi
    printf '%s\n' "$uv"
}

# A venv is rebuilt only when its requirements file changed. It keeps pip (--seed): the setup scripts
# install quiver's own packages with it.
ensure_venv() {
    local dir="$1" python="$2" requirements="$3"
    local stamp="$dir/.requirements.sha256"
    local want uv
    want="$(sha256sum "$requirements" | cut -d' ' -f1)"
    if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
        return 0
    fi
    log "creating $dir with $("$python" --version 2>&1)"
    uv="$(uv_binary)"
    rm -rf "$dir"
    "$uv" venv --quiet --seed --python "$python" "$dir"
    "$uv" pip install --quiet --python "$dir/bin/python" -r "$requirements"
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
