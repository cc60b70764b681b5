#!/usr/bin/env bash
# Idempotent setup. Everything comes from the package registries; stamps skip work that is done.
#
#   tools/setup.sh demo   what the demo, `quiver sql`, `quiver server` and `quiver gateway` run: quiver's venv,
#                         the DuckDB extension and the binaries the demo starts
#   tools/setup.sh        (or `all`) that, plus what the tests use: the oracle venvs, the JDBC driver, the
#                         Java spine, the whole Rust workspace, the Python native module, the Node package
#
# Each step prints a line when it starts and one with its duration when it ends; with QUIVER_SETUP_QUIET=1
# (how `./quiver sql|server|gateway` call it) a step that has nothing to do prints nothing.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

SCOPE="${1:-all}"
case "$SCOPE" in
    demo | all) ;;
    *) printf 'tools/setup.sh: unknown scope %s (demo | all)\n' "$SCOPE" >&2; exit 2 ;;
esac
QUIET="${QUIVER_SETUP_QUIET:-0}"
SETUP_START="${EPOCHREALTIME/./}"

log() { printf '[setup] %s\n' "$*" >&2; }
# Times are microseconds since the epoch ($EPOCHREALTIME without its dot); durations print as seconds.
now_us() { printf '%s' "${EPOCHREALTIME/./}"; }
seconds_since() {
    local tenths=$((($(now_us) - $1) / 100000))
    printf '%d.%d' $((tenths / 10)) $((tenths % 10))
}

# step NAME COMMAND...: runs the command between a start line and a line with its duration. A quiet run
# shows a step (with its output from the start) only once it has run for two seconds or when it fails,
# and its duration only past five.
step() {
    local name="$1" start status=0
    start="$(now_us)"
    shift
    if [[ "$QUIET" == 1 ]]; then
        quiet_run "$name" "$@" || status=$?
    else
        log "$name ..."
        "$@" || status=$?
    fi
    if (( status != 0 )); then
        log "$name: FAILED (exit $status) after $(seconds_since "$start") s"
        exit "$status"
    fi
    if [[ "$QUIET" != 1 ]] || (( $(now_us) - start > 5000000 )); then
        log "$name: done in $(seconds_since "$start") s"
    fi
}

quiet_run() {
    local name="$1" output status=0 ticks=0
    shift
    output="$(mktemp)"
    "$@" >"$output" 2>&1 &
    local pid=$!
    while kill -0 "$pid" 2>/dev/null && (( ticks < 20 )); do
        sleep 0.1
        ticks=$((ticks + 1))
    done
    if kill -0 "$pid" 2>/dev/null; then
        log "$name ..."
        tail -n +1 -f --pid="$pid" "$output" >&2
        wait "$pid" || status=$?
    else
        wait "$pid" || status=$?
        (( status == 0 )) || cat "$output" >&2
    fi
    rm -f "$output"
    return "$status"
}

# Cargo's own progress: a bar on a terminal, a line per crate in a log.
cargo_build() {
    cargo build --release --locked "$@"
}

# What the demo starts: the extension (the server is the extension serving), the example worker, the
# gateway, and the spine's tour (quiver-demo) with the conformance worker it calls.
DEMO_CRATES=(quiver-extension quiver-allinone quiver-gateway quiver-demo quiver-conformance)

# Members built alone (the demo's binaries; the extension by extension/build.sh; quiver-python by
# maturin) must find every dependency the workspace build compiled: cargo resolves features per
# invocation, and crates/quiver-workspace-hack is what makes the two agree. After a dependency change
# this names what would be compiled a second time, for that crate's list.
members_alone_reuse_the_build() {
    local recompiled
    recompiled="$(cargo build --release --locked --message-format=json \
        "${DEMO_CRATES[@]/#/--package=}" --package=quiver-python 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if message.get("reason") == "compiler-artifact" and not message["fresh"] and "registry+" in message["package_id"]:
        print(message["package_id"].rsplit("#", 1)[-1])
' | sort -u | xargs)"
    [[ -z "$recompiled" ]] \
        || log "note: crates/quiver-workspace-hack/Cargo.toml is stale; compiled a second time: $recompiled"
}

# ensure_venv, find_python311, find_python313.
source "$ROOT/tools/venv.sh"

quiver_venv() {
    ensure_venv .venv "$(find_python311)" tools/requirements.txt
    # quiver's own Python package, editable, in quiver's venv.
    if ! .venv/bin/python -c 'import quiver' 2>/dev/null; then
        log "installing the quiver Python package (editable)"
        .venv/bin/pip install --quiet --disable-pip-version-check --no-deps -e python/
    fi
}

test_venvs() {
    ensure_venv .venv-oracle "$(find_python313)" tools/requirements-oracle.txt
    # vgi-rpc's own pytest conformance suite (tests/vgi_rpc_suite): the oracle's packages plus pytest.
    ensure_venv .venv-suite "$(find_python313)" tools/requirements-suite.txt
    # haybarn: a DuckDB-derived host with another source id, which the extension must refuse.
    ensure_venv .venv-haybarn "$(find_python311)" tools/requirements-haybarn.txt
    # vgi-python, the VGI engine-role client that drives our workers in the tests.
    ensure_venv .venv-vgi "$(find_python313)" tools/requirements-vgi.txt
    # Older vgi-python releases, one venv each, for the version-skew tests
    # (tests/test_extension_vgi_versions.py): 0.30.0 speaks VgiProtocol 1.4, 0.39.0 vgi.v2 2.0,
    # 0.40.0 vgi.v2 2.1.
    local requirements release
    for requirements in tools/requirements-vgi-*.txt; do
        release="${requirements#tools/requirements-vgi-}"
        ensure_venv ".venv-vgi-${release%.txt}" "$(find_python313)" "$requirements"
    done
}

# The Arrow Flight SQL JDBC driver (Maven Central), which tests/test_flight_sql_jdbc.py runs. Without a JDK
# or Maven that one test fails and says why; nothing else needs them.
jdbc_driver() {
    tools/setup_jdbc.sh || log "no Flight SQL JDBC driver: tests/test_flight_sql_jdbc.py will fail (see above)"
}

# The Java spine, its conformance worker and the VGI SDK's AllInOne (java/), which tests/test_java_conformance.py,
# tests/test_vgi_allinone.py and tests/test_extension_java_worker.py run.
java_spine() {
    java/build.sh || log "no Java worker: tests/test_java_conformance.py will fail (see above)"
}

# nginx (Debian's package), which tests/test_http_replicas.py puts in front of three worker replicas.
nginx_balancer() {
    tools/setup_nginx.sh || log "no nginx: tests/test_http_replicas.py will fail (see above)"
}

step "quiver's Python venv (.venv)" quiver_venv
if [[ "$SCOPE" == demo ]]; then
    # Only the binaries the demo starts (and the extension, below). Each depends on
    # crates/quiver-workspace-hack, so they resolve the features the whole workspace does and a later
    # `./quiver test` compiles no dependency a second time.
    step "the demo's Rust binaries (release)" cargo_build "${DEMO_CRATES[@]/#/--package=}"
    step "the DuckDB extension" extension/build.sh
else
    step "the test venvs (oracles, vgi-python releases, haybarn)" test_venvs
    step "the Flight SQL JDBC driver" jdbc_driver
    step "the Java spine" java_spine
    # quiver-node is a member like any other, so the Node module shares every compiled dependency.
    step "the Rust workspace (release)" cargo_build --workspace
    step "the members built alone reuse the workspace's build" members_alone_reuse_the_build
    step "the DuckDB extension" extension/build.sh
    # The Python native module (quiver_native) and the Node package: both bind quiver-client.
    step "the Python native module" tools/setup_python_native.sh
    step "the Node package" bash -c 'tools/setup_node.sh || printf "[setup] no Node package: node/ tests will fail (see above)\n" >&2'
    step "nginx (the replica tests' load balancer)" nginx_balancer
fi
[[ "$QUIET" == 1 ]] || log "ready ($SCOPE) in $(seconds_since "$SETUP_START") s"
