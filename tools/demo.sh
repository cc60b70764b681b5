#!/usr/bin/env bash
# The demo: an RPC round trip through the conformance worker over every transport.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
exec target/release/quiver-demo "$@"
