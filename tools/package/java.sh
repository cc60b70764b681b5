#!/usr/bin/env bash
# dist/java/repository: the Java SDK as the Maven artefact dev.quiver:quiver-java (jar, sources jar, POM),
# installed into a Maven repository a project depends on by coordinates:
#   <repository><url>file:///.../dist/java/repository</url></repository>   (or copy it into ~/.m2/repository)
# The jar is java/pom.xml's `sdk` profile: the SDK's packages without the conformance worker and the
# examples, multi-release with the shared-memory classes when a JDK 22+ is present (as java/build.sh).
# Third-party artefacts come from ~/.m2 (the Java build of tools/setup.sh fetched them); the install
# plugin is fetched once from Maven Central.
set -euo pipefail

log() { printf '[package-java] %s\n' "$*" >&2; }

for tool in mvn java jar; do
    command -v "$tool" >/dev/null 2>&1 || { log "no '$tool' on PATH: the Java package needs a JDK (>= 17) and Maven"; exit 1; }
done
# The plugin that writes into a repository other than ~/.m2, pinned.
INSTALL_PLUGIN="org.apache.maven.plugins:maven-install-plugin:3.1.4"

source java/find_jdk22.sh
jdk22="$(find_jdk22)"
version="$(sed -n 's|^  <version>\(.*\)</version>$|\1|p' java/pom.xml | head -1)"
repository="$PWD/dist/java/repository"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT

# Quiet: only errors, without the colour resets Maven prints even so.
mvn_quiet() { mvn -B -q -Dstyle.color=never "$@" 2>&1 | sed -e 's/\x1b\[[0-9;]*m//g' >&2; }

if [[ -n "$jdk22" ]]; then
    (cd java && mvn_quiet -Psdk "-Djava22.home=$jdk22" -Dmaven.test.skip=true package)
else
    log "no JDK 22+: the jar has the JDK 17 classes only (shared memory stays off)"
    (cd java && mvn_quiet -Psdk -Dmaven.test.skip=true package)
fi
jar="java/target/sdk/quiver-java-$version.jar"
if unzip -l "$jar" | grep -qE 'dev/quiver/(conformance|vgi/examples)/'; then
    log "$jar carries conformance or example classes"
    exit 1
fi

# The sources of the same packages, for IDEs.
cp -r java/src/main/java "$stage/sources"
rm -rf "$stage/sources/dev/quiver/conformance" "$stage/sources/dev/quiver/vgi/examples"
jar --create --file "$stage/quiver-java-$version-sources.jar" -C "$stage/sources" .

rm -rf "$repository"
mkdir -p "$repository"
mvn_quiet "$INSTALL_PLUGIN:install-file" -Dfile="$jar" -DpomFile=java/pom.xml \
    -Dsources="$stage/quiver-java-$version-sources.jar" -DlocalRepositoryPath="$repository"
# Local-repository bookkeeping a file repository does not need.
find "$repository" -name _remote.repositories -delete
for file in "$repository"/dev/quiver/quiver-java/"$version"/*.jar; do
    log "dev.quiver:quiver-java:$version $(basename "$file"): $(du -h "$file" | cut -f1)"
done
