#!/usr/bin/env bash
# The lint gate, run by tools/test.sh before the tests: rustfmt, clippy with warnings as errors
# (on the release profile, so it reuses the release build), and ruff (rules in python/pyproject.toml,
# applied outside the package by ./ruff.toml). Each step prints what it runs; the first failure stops
# the gate with the step's name.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

# Every Python file in the repository (ruff skips what .gitignore ignores, e.g. extension/build/).
PYTHON_PATHS=(python tests bench examples tools crates extension fuzz)
RUFF="$ROOT/.venv/bin/ruff"

step() {
    printf '[lint] $ %s\n' "$*" >&2
    if ! "$@"; then
        printf '[lint] FAILED: %s\n' "$*" >&2
        printf '[lint] fix it (cargo fmt --all; ruff format / ruff check --fix) and run tools/lint.sh again\n' >&2
        exit 1
    fi
}

if [[ ! -x "$RUFF" ]]; then
    printf '[lint] FAILED: %s is missing; run tools/setup.sh (ruff is pinned in tools/requirements.txt)\n' "$RUFF" >&2
    exit 1
fi

step cargo fmt --all --check
# With the bench flavour's feature, whose only effect is one more module (quiver-duckdb's numbers.rs,
# the in-process ceiling): one pass checks every line, where a second pass without it would check the
# engine and everything above it again.
step cargo clippy --workspace --all-targets --release --locked --features quiver-duckdb/bench-functions -- -D warnings
step "$RUFF" check --no-cache "${PYTHON_PATHS[@]}"
step "$RUFF" format --check --no-cache "${PYTHON_PATHS[@]}"
printf '[lint] passed\n' >&2
