#!/usr/bin/env bash
# dist/node/: quiver's Node package as npm tarballs, in napi-rs's per-platform layout:
#   quiver-node-<version>.tgz                  @quiver/node: index.js, index.d.ts; the platform package
#                                              as an optional dependency
#   quiver-node-<platform>-<version>.tgz       @quiver/node-<platform>: the native module, stripped
#                                              (node/npm/<platform>/package.json says os, cpu, libc)
# A user installs both: `npm install dist/node/*.tgz`. The native module is the one tools/setup.sh built
# with the workspace (target/release/libquiver_node.so); this machine's platform is the one packaged.
set -euo pipefail

log() { printf '[package-node] %s\n' "$*" >&2; }

for tool in node npm strip; do
    command -v "$tool" >/dev/null 2>&1 || { log "no '$tool' on PATH"; exit 1; }
done
module=target/release/libquiver_node.so
[[ -f "$module" ]] || { log "$module is missing: run ./quiver setup"; exit 1; }
platform="$(node -p 'process.platform + "-" + process.arch + (process.platform === "linux" ? "-gnu" : "")')"
[[ -f "node/npm/$platform/package.json" ]] || { log "no platform package for $platform (node/npm/$platform/)"; exit 1; }
version="$(node -p 'require("./node/package.json").version')"

out="$PWD/dist/node"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
rm -f "$out"/*.tgz

# The platform package: its manifest, its README and the module without symbols (they are for a debugger,
# which `cargo build --profile profiling -p quiver-node` serves).
mkdir "$stage/platform"
cp "node/npm/$platform/package.json" "node/npm/$platform/README.md" "$stage/platform/"
strip --strip-unneeded -o "$stage/platform/quiver.$platform.node" "$module"

# The main package: node/'s files (its package.json `files` names them), with the platform packages as
# optional dependencies at this version (what `napi pre-publish` writes) and no development scripts.
mkdir "$stage/main"
cp node/package.json node/index.js node/index.d.ts "$stage/main/"
[[ -f LICENSE ]] && cp LICENSE "$stage/main/" && cp LICENSE "$stage/platform/"
node - "$stage/main/package.json" "$version" node/npm <<'EOF'
const fs = require('node:fs')
const [file, version, npmDir] = process.argv.slice(2)
const manifest = JSON.parse(fs.readFileSync(file, 'utf8'))
delete manifest.scripts
manifest.optionalDependencies = Object.fromEntries(
  fs.readdirSync(npmDir).sort().map((platform) => [`@quiver/node-${platform}`, version]),
)
fs.writeFileSync(file, JSON.stringify(manifest, null, 2) + '\n')
EOF

for package in main platform; do
    (cd "$stage/$package" && npm pack --silent --pack-destination "$out" >/dev/null)
done
for tarball in "$out"/*.tgz; do
    log "$(basename "$tarball"): $(du -h "$tarball" | cut -f1)"
done
