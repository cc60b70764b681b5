#!/usr/bin/env bash
# The Arrow Flight SQL JDBC driver, a test dependency: tests/test_flight_sql_jdbc.py runs a Java program
# (tests/flight_sql_jdbc/) through it against `./quiver server`'s Flight SQL listener.
#
# Maven (its ordinary client and its cache, ~/.m2) copies the driver's one shaded jar from Maven Central;
# the jar's checksum is pinned here, and it lands under a fixed name the test knows without the version:
#
#   tests/flight_sql_jdbc/build/flight-sql-jdbc-driver.jar
#
# Idempotent: a stamp naming the artifact and its checksum skips all work when present. The version is
# pinned here and nowhere else. Called by tools/setup.sh; without a JDK or Maven it says so and exits 1
# (setup.sh goes on; the JDBC test then fails naming what is missing).
set -euo pipefail

GROUP="org.apache.arrow"
ARTIFACT="flight-sql-jdbc-driver"
VERSION="18.3.0"
JAR_SHA256="3f418b46c880e263558c5de669bdbede2c5d4375527ced116fb29f795b03704c"
# The plugin that does the copy, pinned too (Maven would otherwise pick whichever version it resolves).
DEPENDENCY_PLUGIN="org.apache.maven.plugins:maven-dependency-plugin:3.8.1"

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$ROOT/tests/flight_sql_jdbc/build"
JAR="$OUT/$ARTIFACT.jar"
STAMP="$OUT/.stamp"
WANT_STAMP="$GROUP:$ARTIFACT:$VERSION $JAR_SHA256"

log() { printf '[setup-jdbc] %s\n' "$*" >&2; }

if [[ -f "$STAMP" && -f "$JAR" && "$(cat "$STAMP")" == "$WANT_STAMP" ]]; then
    log "$ARTIFACT $VERSION already in $JAR"
    exit 0
fi

for tool in mvn java javac; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        log "no '$tool' on PATH: the Flight SQL JDBC test needs a JDK (>= 11) and Maven; install them and rerun"
        exit 1
    fi
done

mkdir -p "$OUT"
TMP="$OUT/download.tmp"
rm -rf "$TMP"
mkdir -p "$TMP"
log "fetching $GROUP:$ARTIFACT:$VERSION from Maven Central (about 45 MB, once)"
# Batch mode prints one line per download, which is the progress a log can carry; the whole output is
# kept for a failure.
if ! (cd "$TMP" && mvn --batch-mode -Dstyle.color=never "$DEPENDENCY_PLUGIN:copy" \
    -Dartifact="$GROUP:$ARTIFACT:$VERSION" -DoutputDirectory="$TMP" 2>&1 \
    | tee "$TMP/mvn.log" | { grep -E --line-buffered 'Download|Configured Artifact' >&2 || true; }); then
    tail -n 20 "$TMP/mvn.log" >&2
    log "mvn could not fetch $ARTIFACT $VERSION (it needs network access to Maven Central once)"
    exit 1
fi

GOT_SHA="$(sha256sum "$TMP/$ARTIFACT-$VERSION.jar" | cut -d' ' -f1)"
if [[ "$GOT_SHA" != "$JAR_SHA256" ]]; then
    log "$ARTIFACT-$VERSION.jar has sha256 $GOT_SHA, expected $JAR_SHA256"
    exit 1
fi
mv "$TMP/$ARTIFACT-$VERSION.jar" "$JAR"
rm -rf "$TMP"
echo "$WANT_STAMP" > "$STAMP"
log "$ARTIFACT $VERSION in $JAR"
