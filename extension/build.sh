#!/usr/bin/env bash
# Builds target/extension/quiver.duckdb_extension: quiver's C++ DuckDB extension for the PyPI
# duckdb==2.0.0 wheel (linux_amd64), compiled against DuckDB's headers only (see README.md here).
#
#   1. fetch_headers.sh    DuckDB 2.0.0 headers from crates.io (cached in extension/build/)
#   2. cargo build         the Rust side, crates/quiver-extension (the engine core quiver-duckdb and the
#                          server quiver-server), as one static library (release)
#   3. make                the C++ glue + the Rust core -> libquiver_impl.so, embedded in the loader
#                          shim -> quiver.so (objects cached in extension/build/obj, rebuilt on change)
#   4. footer              DuckDB's 534-byte metadata footer appended -> quiver.duckdb_extension
#
# Incremental: each step is skipped by its own tool when its inputs did not change.
# Environment: CXX (default g++), CARGO_TARGET_DIR (default <repo>/target), JOBS (default nproc).
#
# QUIVER_BENCH_FUNCTIONS=1 builds the bench flavour instead, into
# target/extension/bench/quiver.duckdb_extension: the product plus quiver_numbers(n), the
# in-process ceiling that ./quiver bench vgi measures workers against. The product never ships it.
set -euo pipefail

EXT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$EXT/.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
HEADERS="$EXT/build/duckdb-headers"
if [[ "${QUIVER_BENCH_FUNCTIONS:-0}" == 1 ]]; then
    BENCH=1
    CARGO_FEATURES=(--features bench-functions)
    BUILD="$EXT/build/bench"
    OUT_DIR="$TARGET/extension/bench"
else
    BENCH=0
    CARGO_FEATURES=()
    BUILD="$EXT/build"
    OUT_DIR="$TARGET/extension"
fi
OUT="$OUT_DIR/quiver.duckdb_extension"

# What the footer declares; DuckDB's loader checks all of these but the extension version.
PLATFORM="linux_amd64"
DUCKDB_VERSION="v2.0.0"
ABI_TYPE="CPP"

log() { printf '[extension] %s\n' "$*" >&2; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f s", b - a }'; }

# One build at a time (two test workers, a bench beside a test run): both flavours write
# target/release/libquiver_extension.a and the temporary files below.
mkdir -p "$EXT/build"
exec 9>"$EXT/build/.lock"
flock 9

t_all="$(now)"

t="$(now)"
"$EXT/fetch_headers.sh"
log "headers: $(cat "$HEADERS/VERSION") ($(cat "$HEADERS/SOURCE_ID")) [$(since "$t")]"

t="$(now)"
# quiver-extension alone: through crates/quiver-workspace-hack it asks for the dependency features the
# whole workspace resolves, so after tools/setup.sh's workspace build nothing but the engine compiles.
(cd "$ROOT" && cargo build --release --locked --quiet -p quiver-extension "${CARGO_FEATURES[@]}")
# Both flavours' cargo builds write the same path; each flavour links its own copy (the mtime kept,
# so make relinks only when the core changed).
mkdir -p "$BUILD"
RUST_LIB="$BUILD/libquiver_extension.a"
cp -p "$TARGET/release/libquiver_extension.a" "$RUST_LIB.tmp"
mv "$RUST_LIB.tmp" "$RUST_LIB"
log "rust core: $RUST_LIB [$(since "$t")]"

t="$(now)"
make --no-print-directory -C "$EXT" -j"${JOBS:-$(nproc)}" \
    BUILD="$EXT/build" BENCH="$BENCH" HEADERS="$HEADERS" RUST_LIB="$RUST_LIB" CXX="${CXX:-g++}" >&2
log "c++ glue + shim [$(since "$t")]"

# Every symbol the real extension leaves undefined must be exported by the host wheel (when it is
# installed here): a missing one would otherwise surface only as a failed LOAD.
IMPL="$BUILD/libquiver_impl.so"
HOST_LIB="$(ls "$ROOT"/.venv/lib/python3*/site-packages/_duckdb*.so 2>/dev/null | head -1 || true)"
if [[ -n "$HOST_LIB" && "$IMPL" -nt "$BUILD/.symbols-checked" ]]; then
    missing="$(comm -23 \
        <(nm -D --undefined-only "$IMPL" | awk '$1 == "U" && $2 !~ /@/ { print $2 }' | sort -u) \
        <(nm -D --defined-only "$HOST_LIB" | awk '{ print $3 }' | sort -u))"
    if [[ -n "$missing" ]]; then
        echo "build.sh: symbols the extension needs but $HOST_LIB does not export:" >&2
        echo "$missing" | c++filt >&2
        exit 1
    fi
    touch "$BUILD/.symbols-checked"
fi

# DuckDB's metadata footer (design.md §4): a WebAssembly-style custom section header (0x00, LEB128 531,
# name length 16, "duckdb_signature", LEB128 512), eight 32-byte NUL-padded fields in reverse order
# (three unused, ABI type, extension version, DuckDB version, platform, magic "4"), then a 256-byte
# signature, left zero: quiver is unsigned, so hosts must set allow_unsigned_extensions.
field() {
    printf '%s' "$1"
    head -c $((32 - ${#1})) /dev/zero
}
footer() {
    printf '\x00\x93\x04\x10duckdb_signature\x80\x04'
    field ""
    field ""
    field ""
    field "$ABI_TYPE"
    field "v$1"
    field "$DUCKDB_VERSION"
    field "$PLATFORM"
    field "4"
    head -c 256 /dev/zero
}

SHIM="$BUILD/quiver.so"
if [[ ! -f "$OUT" || "$SHIM" -nt "$OUT" ]]; then
    EXT_VERSION="$(sed -n '/^\[workspace.package\]/,/^\[/ s/^version = "\(.*\)"/\1/p' "$ROOT/Cargo.toml")"
    mkdir -p "$OUT_DIR"
    { cat "$SHIM"; footer "$EXT_VERSION"; } > "$OUT.tmp"
    mv "$OUT.tmp" "$OUT"
fi
log "$OUT ($(stat -c %s "$OUT") bytes) [total $(since "$t_all")]"
