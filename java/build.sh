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
# find_jdk22
source "$HERE/find_jdk22.sh"
jdk22="$(find_jdk22)"
stamp=target/.source-hash
hash="$( (find pom.xml build.sh find_jdk22.sh bin src -type f -print0 | sort -z | xargs -0 sha256sum; echo "$jdk22") | sha256sum | cut -d' ' -f1)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$hash" && -f target/quiver-java-0.1.0.jar ]]; then
    exit 0
fi
if [[ -n "$jdk22" ]]; then
    log "building the Java spine (Maven, $(java -version 2>&1 | head -1); shared memory with $jdk22)"
    mvn -B -q -Dstyle.color=never "-Djava22.home=$jdk22" package -DskipTests
else
    log "building the Java spine (Maven, $(java -version 2>&1 | head -1)); no JDK 22+ found: shared memory stays off"
    mvn -B -q -Dstyle.color=never package -DskipTests
fi
printf '%s\n' "$hash" > "$stamp"
