# Sourced by tools/package/{python,duckdb}.sh: what quiver's DuckDB extension declares in its metadata
# footer (written by extension/build.sh), so a package is laid out by exactly what DuckDB's loader
# will check. The footer's last 256 bytes are the signature; before them, 32-byte NUL-padded fields
# from the end: 1 the magic "4", 2 the platform, 3 the DuckDB version, 4 the extension version.

EXTENSION_FILE="${CARGO_TARGET_DIR:-target}/extension/quiver.duckdb_extension"

extension_footer_field() {
    tail -c $((256 + 32 * $2)) "$1" | head -c 32 | tr -d '\0'
}

# Sets EXTENSION_PLATFORM, EXTENSION_DUCKDB_VERSION, EXTENSION_VERSION; fails on a file without a footer.
read_extension_footer() {
    [[ -f "$1" ]] || { echo "no DuckDB extension at $1: run ./quiver setup (extension/build.sh)" >&2; return 1; }
    [[ "$(extension_footer_field "$1" 1)" == 4 ]] \
        || { echo "$1 has no DuckDB metadata footer" >&2; return 1; }
    EXTENSION_PLATFORM="$(extension_footer_field "$1" 2)"
    EXTENSION_DUCKDB_VERSION="$(extension_footer_field "$1" 3)"
    EXTENSION_VERSION="$(extension_footer_field "$1" 4)"
}
