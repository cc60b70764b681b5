#!/usr/bin/env bash
# dist/duckdb/: a local DuckDB extension repository holding quiver's extension, so stock DuckDB does
#   INSTALL quiver FROM '<dist/duckdb>'; LOAD quiver;
# (with allow_unsigned_extensions: the extension is unsigned). The layout is DuckDB's own repositories':
# <DuckDB version>/<platform>/quiver.duckdb_extension.gz, both read from the extension's footer, the
# file gzipped as extensions.duckdb.org serves it (a directory served over HTTP works the same).
set -euo pipefail
source tools/package/extension_footer.bash
read_extension_footer "$EXTENSION_FILE"

out=dist/duckdb
rm -rf "${out:?}"/v*
dir="$out/$EXTENSION_DUCKDB_VERSION/$EXTENSION_PLATFORM"
mkdir -p "$dir"
gzip -c "$EXTENSION_FILE" > "$dir/quiver.duckdb_extension.gz.tmp"
mv "$dir/quiver.duckdb_extension.gz.tmp" "$dir/quiver.duckdb_extension.gz"
echo "[package] duckdb: quiver $EXTENSION_VERSION for DuckDB $EXTENSION_DUCKDB_VERSION $EXTENSION_PLATFORM:" \
    "$dir/quiver.duckdb_extension.gz ($(stat -c %s "$dir/quiver.duckdb_extension.gz") bytes)"
