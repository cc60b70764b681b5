#!/usr/bin/env bash
# Benchmark suites; results land in bench/results/<suite>.md and .json.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
suite="${1:-}"
case "$suite" in
    rpc) shift; exec target/release/quiver-bench rpc --oracle-bin "$ROOT/.venv-oracle/bin" --out bench/results "$@" ;;
    *) echo "usage: ./quiver bench rpc" >&2; exit 2 ;;
esac
