#!/usr/bin/env bash
# Builds the Java spine (java/target: the jar and its runtime dependencies in lib/) with the
# machine's default JDK and Maven; dependencies come from Maven Central. Idempotent: a stamp
# holding a hash of the sources skips the build when nothing changed.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$HERE"

log() { printf '[setup] %s\n' "$*" >&2; }

if ! command -v java >/dev/null || ! command -v mvn >/dev/null; then
    log "no JDK or Maven on PATH: the Java worker is not built (tests/test_java_conformance.py will fail)"
    exit 1
fi
stamp=target/.source-hash
hash="$(find pom.xml build.sh bin src -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$hash" && -f target/quiver-java-0.1.0.jar ]]; then
    exit 0
fi
log "building the Java spine (Maven, $(java -version 2>&1 | head -1))"
mvn -B -q -Dstyle.color=never package -DskipTests
printf '%s\n' "$hash" > "$stamp"
