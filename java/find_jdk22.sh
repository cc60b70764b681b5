# find_jdk22: prints the home of a JDK 22+, which compiles the shared-memory classes (java.lang.foreign)
# into the jar's META-INF/versions/22: QUIVER_JAVA22_HOME if set, else the first under /usr/lib/jvm (the
# image has Temurin 25); nothing when there is none. Sourced by java/build.sh and tools/package/java.sh.
find_jdk22() {
    if [[ -n "${QUIVER_JAVA22_HOME:-}" ]]; then
        printf '%s\n' "$QUIVER_JAVA22_HOME"
        return
    fi
    local javac major
    for javac in /usr/lib/jvm/*/bin/javac; do
        [[ -x "$javac" ]] || continue
        major="$("$javac" -version 2>&1 | sed -n 's/^javac \([0-9][0-9]*\).*/\1/p')"
        if [[ -n "$major" && "$major" -ge 22 ]]; then
            dirname "$(dirname "$javac")"
            return
        fi
    done
}
