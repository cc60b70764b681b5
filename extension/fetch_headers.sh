#!/usr/bin/env bash
# Fetch the DuckDB 2.0.0 source headers (source id d54cbbe3df) that quiver's extension compiles against.
#
# They come from the crates.io package libduckdb-sys 1.20000.1, which bundles DuckDB's amalgamated sources
# as duckdb.tar.gz. A throwaway cargo project depending on exactly that version lets `cargo fetch`
# download the .crate through cargo's ordinary client (and its cache in $CARGO_HOME); the .crate's
# checksum is pinned here, and only headers are extracted:
#
#   extension/build/duckdb-headers/src/include/...        DuckDB's public and internal headers
#   extension/build/duckdb-headers/third_party/...        header files of DuckDB's vendored libraries
#   extension/build/duckdb-headers/SOURCE_ID, VERSION     read from the sources, checked against the pins
#
# Idempotent: a stamp naming the crate and its checksum skips all work when present.
set -euo pipefail

CRATE_VERSION="1.20000.1"
CRATE_SHA256="0140448c472968ee5cf5ba697435deebe558b366ef1e5c080d24d9696b600725"
EXPECT_SOURCE_ID="d54cbbe3df"
EXPECT_VERSION="v2.0.0"

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BUILD="$HERE/build"
OUT="$BUILD/duckdb-headers"
STAMP="$OUT/.stamp"
WANT_STAMP="libduckdb-sys $CRATE_VERSION $CRATE_SHA256"

if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$WANT_STAMP" ]]; then
    exit 0
fi

log() { printf '[fetch_headers] %s\n' "$*" >&2; }

# 1. Let cargo download the crate into its registry cache.
PROJ="$BUILD/fetch-libduckdb-sys"
mkdir -p "$PROJ/src"
cat > "$PROJ/Cargo.toml" <<EOF
# Throwaway project: only here so that cargo fetches libduckdb-sys $CRATE_VERSION (see ../../fetch_headers.sh).
[package]
name = "fetch-libduckdb-sys"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
libduckdb-sys = { version = "=$CRATE_VERSION", default-features = false }

[workspace]
EOF
echo 'fn main() {}' > "$PROJ/src/main.rs"
log "cargo fetch libduckdb-sys $CRATE_VERSION"
(cd "$PROJ" && cargo fetch --quiet --target x86_64-unknown-linux-gnu)

# 2. Find the .crate in cargo's cache and check it is the one we pinned.
CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}"
CRATE=""
for candidate in "$CARGO_HOME"/registry/cache/*/"libduckdb-sys-$CRATE_VERSION.crate"; do
    if [[ -f "$candidate" ]]; then
        CRATE="$candidate"
        break
    fi
done
if [[ -z "$CRATE" ]]; then
    echo "fetch_headers: libduckdb-sys-$CRATE_VERSION.crate not found under $CARGO_HOME/registry/cache" >&2
    exit 1
fi
GOT_SHA="$(sha256sum "$CRATE" | cut -d' ' -f1)"
if [[ "$GOT_SHA" != "$CRATE_SHA256" ]]; then
    echo "fetch_headers: $CRATE has sha256 $GOT_SHA, expected $CRATE_SHA256" >&2
    exit 1
fi

# 3. Extract only headers (and the file that states the source id) from the bundled duckdb.tar.gz.
TMP="$OUT.tmp"
rm -rf "$TMP"
mkdir -p "$TMP"
log "extracting headers from $(basename "$CRATE")"
tar -xzOf "$CRATE" "libduckdb-sys-$CRATE_VERSION/duckdb.tar.gz" \
    | tar -xz -C "$TMP" --strip-components=1 --wildcards \
        'duckdb/src/include/*' \
        'duckdb/third_party/*.h' \
        'duckdb/third_party/*.hpp' \
        'duckdb/src/function/table/version/pragma_version.cpp'

# 4. Check the source id and version the sources declare.
PV="$TMP/src/function/table/version/pragma_version.cpp"
SOURCE_ID="$(sed -n 's/^#define DUCKDB_SOURCE_ID "\(.*\)"$/\1/p' "$PV")"
VERSION="$(sed -n 's/^#define DUCKDB_VERSION "\(.*\)"$/\1/p' "$PV")"
if [[ "$SOURCE_ID" != "$EXPECT_SOURCE_ID" || "$VERSION" != "$EXPECT_VERSION" ]]; then
    echo "fetch_headers: sources are $VERSION ($SOURCE_ID), expected $EXPECT_VERSION ($EXPECT_SOURCE_ID)" >&2
    exit 1
fi
echo "$SOURCE_ID" > "$TMP/SOURCE_ID"
echo "$VERSION" > "$TMP/VERSION"
echo "$WANT_STAMP" > "$TMP/.stamp"

rm -rf "$OUT"
mv "$TMP" "$OUT"
log "DuckDB $VERSION ($SOURCE_ID) headers in $OUT ($(du -sh "$OUT" | cut -f1))"
