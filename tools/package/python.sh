#!/usr/bin/env bash
# dist/python/: the two wheels `pip install dist/python/*.whl` takes.
#   quiver-arrow  (py3-none-any, from python/): `import quiver` (the wire, the VGI worker SDK, the DB-API
#                 client), the commands quiver (sql | server | gateway) and quiver-server.
#   quiver-native (cp311-abi3-manylinux, from crates/quiver-python): quiver_native (the Rust client), the
#                 DuckDB extension at DuckDB's Python-package place, <site-packages>/.duckdb_extensions/
#                 <DuckDB version>/<platform>/quiver.duckdb_extension, and the quiver-gateway binary as a
#                 script (so it sits beside quiver-server, the server it starts).
# Two wheels because the pure half runs anywhere (a worker or a client on macOS or ARM) while the native
# half exists per platform and is pinned to the DuckDB its extension is built for; quiver-arrow depends
# on quiver-native where one is built (Linux x86_64).
# Reuses what tools/setup.sh built: the native module's cargo build, the extension and
# target/release/quiver-gateway. Wheel editing is pypa's `wheel` tool, pinned.
set -euo pipefail
source tools/package/extension_footer.bash
UV=.venv-uv/bin/uv
WHEEL_TOOL=("$UV" tool run --quiet --from wheel==0.48.0 wheel)
TARGET="${CARGO_TARGET_DIR:-target}"
GATEWAY="$TARGET/release/quiver-gateway"
out=dist/python

version="$(sed -n '/^\[workspace.package\]/,/^\[/ s/^version = "\(.*\)"/\1/p' Cargo.toml)"
python_version="$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' python/quiver/__init__.py)"
[[ "$python_version" == "$version" ]] \
    || { echo "python/quiver/__init__.py says $python_version, Cargo.toml's workspace $version" >&2; exit 1; }
grep -q "\"quiver-native==$version;" python/pyproject.toml \
    || { echo "python/pyproject.toml does not depend on quiver-native==$version" >&2; exit 1; }
read_extension_footer "$EXTENSION_FILE"
[[ "$EXTENSION_VERSION" == "v$version" ]] \
    || { echo "$EXTENSION_FILE is $EXTENSION_VERSION, not v$version: run ./quiver setup" >&2; exit 1; }
[[ -x "$GATEWAY" ]] || { echo "no $GATEWAY: run ./quiver setup" >&2; exit 1; }
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT

# maturin's wheel of crates/quiver-python; its cargo build is setup's (the same target/, flags and
# profile), so this relinks nothing when setup has built the module.
"$UV" build --quiet --python .venv/bin/python --wheel --out-dir "$stage/maturin" crates/quiver-python
native_wheel="$(ls "$stage"/maturin/quiver_native-"$version"-*.whl)"

# The pure half, built from a copy so no build output lands in python/.
mkdir -p "$stage/pure"
cp -r python/pyproject.toml python/README.md LICENSE "$stage/pure/"
tar -C python --exclude=__pycache__ -cf - quiver | tar -C "$stage/pure" -xf -
"$UV" build --quiet --python .venv/bin/python --wheel --out-dir "$stage/wheels" "$stage/pure"

# The native half: maturin's wheel plus the extension and the gateway.
"${WHEEL_TOOL[@]}" unpack --dest "$stage/native" "$native_wheel" >/dev/null
root="$stage/native/quiver_native-$version"
extensions="$root/.duckdb_extensions/$EXTENSION_DUCKDB_VERSION/$EXTENSION_PLATFORM"
mkdir -p "$extensions" "$root/quiver_native-$version.data/scripts"
cp "$EXTENSION_FILE" "$extensions/"
cp "$GATEWAY" "$root/quiver_native-$version.data/scripts/"
cp LICENSE "$root/quiver_native-$version.dist-info/"

# The manylinux tag is the newest glibc any ELF file in the wheel needs (the extension's embedded
# library, extension/build/libquiver_impl.so, which auditwheel cannot see, included);
# tests/test_install_python.py holds it to `auditwheel show`, which also weighs libstdc++'s versions.
elves=("$root"/quiver_native/*.so "$GATEWAY" "$EXTENSION_FILE" extension/build/libquiver_impl.so)
glibc_minor=0
for elf in "${elves[@]}"; do
    [[ -f "$elf" ]] || { echo "no $elf to read glibc versions from" >&2; exit 1; }
    needed="$(objdump -T "$elf" | grep -oE 'GLIBC_2\.[0-9]+' | sed 's/GLIBC_2\.//' | sort -n | tail -1)"
    if (( needed > glibc_minor )); then glibc_minor=$needed; fi
done
# The tag goes into WHEEL before packing (`wheel pack` names the file after it): one compression pass.
sed -i "s/^Tag: \(.*\)-linux_x86_64\$/Tag: \1-manylinux_2_${glibc_minor}_x86_64/" "$root/quiver_native-$version.dist-info/WHEEL"
grep -q "^Tag: .*-manylinux_2_${glibc_minor}_x86_64\$" "$root/quiver_native-$version.dist-info/WHEEL" \
    || { echo "maturin's wheel is not tagged linux_x86_64: $(grep '^Tag:' "$root"/*.dist-info/WHEEL)" >&2; exit 1; }
"${WHEEL_TOOL[@]}" pack --dest-dir "$stage/wheels" "$root" >/dev/null

rm -f "$out"/*.whl
mv "$stage"/wheels/*.whl "$out/"
for wheel in "$out"/*.whl; do
    echo "[package] python: $wheel ($(stat -c %s "$wheel") bytes)"
done
