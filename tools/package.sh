#!/usr/bin/env bash
# ./quiver package [ecosystem...]: build the packages a user installs into dist/<ecosystem>/.
# Each ecosystem is one script, tools/package/<ecosystem>.sh, run from the repository root after
# `tools/setup.sh` has built what it packages; with no argument every script runs, in name order.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

available() {
    local script
    for script in tools/package/*.sh; do
        [[ -e "$script" ]] && basename "$script" .sh
    done
}

ecosystems=("$@")
[[ ${#ecosystems[@]} -gt 0 ]] || mapfile -t ecosystems < <(available)
[[ ${#ecosystems[@]} -gt 0 ]] || { echo "[package] no package scripts in tools/package/" >&2; exit 1; }

for ecosystem in "${ecosystems[@]}"; do
    script="tools/package/$ecosystem.sh"
    [[ -f "$script" ]] || { echo "[package] unknown ecosystem '$ecosystem' (have: $(available | xargs))" >&2; exit 2; }
    started=$SECONDS
    echo "[package] $ecosystem ..."
    mkdir -p "dist/$ecosystem"
    bash "$script"
    echo "[package] $ecosystem: done in $((SECONDS - started)) s -> dist/$ecosystem/"
done
