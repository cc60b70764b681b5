#!/usr/bin/env bash
# dist/rust/: every library crate of the workspace as the .crate file `cargo publish` would upload
# (quiver-wire, quiver-rpc, quiver-client, quiver-vgi, ...). One `cargo package` over all of them: cargo
# resolves the path dependencies between them through a local registry of the crates it has just packed,
# and verifies each one by building it from its .crate alone (in the dev profile: the first run compiles
# the dependency tree once, later runs only quiver's crates).
#
# Binaries (quiver-gateway, quiver-allinone, ...) and the crates that build the extension, the Python and
# the Node modules (staticlib, cdylib, `publish = false`) ship in those packages instead.
# QUIVER_PACKAGE_RUST_VERIFY=0 skips the verification build, for a caller that builds the crates itself.
set -euo pipefail

log() { printf '[package-rust] %s\n' "$*" >&2; }

# Members with a Rust library target that may be published (`publish = false` marks the internals of
# the extension and of the gateway binary), from cargo's own description of the workspace.
mapfile -t crates < <(cargo metadata --no-deps --format-version 1 --locked | python3 -c '
import json, sys
for package in json.load(sys.stdin)["packages"]:
    library = any({"lib", "rlib"} & set(target["kind"]) for target in package["targets"])
    if library and package["publish"] != []:
        print(package["name"])
')
[[ ${#crates[@]} -gt 0 ]] || { log "cargo metadata lists no library crate"; exit 1; }

verify=()
[[ "${QUIVER_PACKAGE_RUST_VERIFY:-1}" == 0 ]] && verify=(--no-verify)
# --allow-dirty: packages are built from the working tree as it is, committed or not. --offline: every
# dependency is in cargo's cache once the workspace is built (the packages' lockfiles resolve from it).
cargo package --locked --offline --allow-dirty "${verify[@]}" "${crates[@]/#/--package=}"

out=dist/rust
rm -rf "$out"/*.crate "$out/crates" "$out/config.toml"
mkdir -p "$out/crates"
target="$(cargo metadata --no-deps --format-version 1 | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
# Beside the .crate files: the crates unpacked, and a cargo configuration that patches crates.io with
# them, so a project depends on `quiver-client = "0.1"` and builds with
# `cargo build --config <this folder>/config.toml`.
{
    echo "# cargo --config $PWD/$out/config.toml: quiver's crates from $PWD/$out/crates"
    echo "[patch.crates-io]"
    for crate in "${crates[@]}"; do
        version="$(cargo pkgid --package "$crate" | sed 's/.*[@#]//')"
        cp "$target/package/$crate-$version.crate" "$out/"
        tar -xzf "$out/$crate-$version.crate" -C "$out/crates"
        printf '%s = { path = "%s" }\n' "$crate" "$PWD/$out/crates/$crate-$version"
        log "$crate-$version.crate: $(du -h "$out/$crate-$version.crate" | cut -f1)"
    done
} > "$out/config.toml"
