#!/usr/bin/env bash
# Runs quiver-wire's fuzz targets (cargo-fuzz, libFuzzer) for a time budget each.
# Not part of the test suite.
#
#   tools/fuzz.sh [SECONDS] [TARGET...]      default: 60 seconds, every target
#
# Needs a nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz --locked`).
# New inputs go to fuzz/corpus/<target> (gitignored); fuzz/seeds/ is read as an
# extra, read-only corpus (regenerate with `python fuzz/gen_seeds.py`). Crashes
# land in fuzz/artifacts/<target>/; replay one with
#   cargo +nightly fuzz run <target> fuzz/artifacts/<target>/<file>
# Extra libFuzzer flags can be passed in FUZZ_FLAGS, e.g. FUZZ_FLAGS="-jobs=4".
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT/fuzz"

seconds="${1:-60}"
shift || true
targets=("$@")
if [ "${#targets[@]}" -eq 0 ]; then
    targets=(stream_reader decode_region)
fi
case "$seconds" in
    ''|*[!0-9]*) echo "usage: tools/fuzz.sh [SECONDS] [TARGET...]" >&2; exit 2 ;;
esac

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "cargo-fuzz is missing: cargo install cargo-fuzz --locked" >&2
    exit 1
fi

status=0
for target in "${targets[@]}"; do
    mkdir -p "corpus/$target" "artifacts/$target" target/fuzz-logs
    log="target/fuzz-logs/$target.log"
    echo "== $target: ${seconds}s (log: fuzz/$log)"
    # Timeouts and memory limits are bugs too: decoding runs under small Limits
    # (fuzz/src/lib.rs), so no input may need much memory or time.
    if ! cargo +nightly fuzz run "$target" "corpus/$target" seeds -- \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=512 \
        -max_len=16384 -dict=wire.dict -print_final_stats=1 ${FUZZ_FLAGS:-} >"$log" 2>&1; then
        status=1
        echo "   FAILED: see fuzz/$log and fuzz/artifacts/$target/" >&2
        tail -40 "$log" >&2
    fi
    execs="$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' | tail -1 || true)"
    rate="$(grep -oE 'stat::average_exec_per_sec: *[0-9]+' "$log" | grep -oE '[0-9]+$' | tail -1 || true)"
    cov="$(grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+' "$log" | tail -1 || true)"
    echo "   executions: ${execs:-?} (${rate:-?}/s); ${cov:-no coverage line}"
done
exit "$status"
