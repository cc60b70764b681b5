#!/usr/bin/env bash
# Benchmark suites; results land in bench/results/<suite>.md and .json.
#   ./tools/bench.sh rpc [--oracle-bin DIR] [--reps N] [--quick]   (see quiver-bench rpc --help)
#   ./tools/bench.sh python [--reps N] [--quick]                   (quiver's Python SDK vs vgi-rpc)
#   ./tools/bench.sh vgi [--warmup W] [--measured R] [--quick] [--workloads all|page|vgi] [--vgi-rows N]
#                                                                  (VGI's benchmark: the allinone workers under DuckDB;
#                                                                   vgi = VGI's own scalar_multiply, scalar_upper_case)
#   ./tools/bench.sh server [--rows N] [--workers N] [--warmup W] [--measured R] [--quick] [--peers a,b]
#                           [--quiver-cmd CMD]                     (seed 002's suite: quiver's server vs its peers)
#   ./tools/bench.sh gateway [--rows N] [--duration S] [--passes P] [--quick] [--peers a,b] [--scenarios a,b]
#                                                                  (seed 004's suite: the gateway vs nginx, ROAPI, Datasette)
#   ./tools/bench.sh soak [--clients N] [--duration S] [--rows N]   (a mixed load on one server: exact counts, RSS)
#   ./tools/bench.sh remote [--warmup W] [--measured R] [--quick]  (launch: vs HTTP vs replicas behind nginx)
#   ./tools/bench.sh spark [--rows N] [--warmup W] [--measured R]   (Spark + a quiver worker vs Spark's own Arrow UDF)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
suite="${1:-}"
case "$suite" in
    rpc)
        shift
        oracle="$ROOT/.venv-oracle/bin"
        if [[ ! -x "$oracle/python" ]]; then
            echo "bench: no vgi-rpc oracle at $oracle (run ./quiver setup, or pass --oracle-bin DIR)" >&2
        fi
        # A later --oracle-bin on the command line overrides this one.
        exec target/release/quiver-bench rpc --oracle-bin "$oracle" --out bench/results "$@"
        ;;
    python)
        shift
        # Both libraries in one interpreter: the oracle venv's (vgi-rpc needs Python >= 3.13);
        # quiver is imported from python/. The Rust worker is the cross-language peer.
        oracle="$ROOT/.venv-oracle/bin"
        if [[ ! -x "$oracle/python" ]]; then
            echo "bench: no vgi-rpc oracle at $oracle (run ./quiver setup)" >&2
            exit 1
        fi
        exec "$oracle/python" bench/peers/python_bench.py run --out bench/results "$@"
        ;;
    vgi)
        shift
        # The extension in DuckDB 2.0.0 (quiver's own venv) against the allinone worker, shm off and
        # on, beside the in-process ceiling of the same run.
        py="$ROOT/.venv/bin/python"
        if [[ ! -x "$py" ]]; then
            echo "bench: no venv at $ROOT/.venv (run ./quiver setup)" >&2
            exit 1
        fi
        # The ceiling, quiver_numbers(n), lives only in the bench flavour of the extension.
        QUIVER_BENCH_FUNCTIONS=1 extension/build.sh
        exec "$py" bench/peers/vgi_bench.py run --out bench/results "$@"
        ;;
    spark)
        shift
        # PySpark in .venv-spark (tools/setup_spark.sh) and the Rust example worker whose add_one it calls.
        tools/setup_spark.sh
        cargo build --release --locked --workspace --example hello_worker
        exec .venv-spark/bin/python bench/peers/spark_bench.py --out bench/results "$@"
        ;;
    server)
        shift
        # The peers (Hyper, Quack, PostgreSQL clients) live in venvs of their own, made only here.
        tools/setup_bench_peers.sh
        py="$ROOT/.venv/bin/python"
        if [[ ! -x "$py" ]]; then
            echo "bench: no venv at $ROOT/.venv (run ./quiver setup)" >&2
            exit 1
        fi
        # quiver's own rows: the Rust client's bench (crates/quiver-client/examples/server_bench),
        # which starts its own server through ServerProcess, over the spine and Flight SQL.
        # --workspace: the features the setup's build resolved, so nothing is compiled a second time.
        cargo build --release --locked --quiet --workspace --example server_bench
        # The query ceiling, quiver_arrow_drain(sql, batch_rows), lives only in the bench flavour.
        QUIVER_BENCH_FUNCTIONS=1 extension/build.sh
        export QUIVER_BENCH_SERVER_CMD="${QUIVER_BENCH_SERVER_CMD:-$ROOT/target/release/examples/server_bench}"
        exec "$py" bench/peers/server_bench.py run --out bench/results "$@"
        ;;
    gateway)
        shift
        # wrk, nginx (Debian) and the ROAPI and Datasette venvs are made only here.
        tools/setup_bench_peers.sh
        py="$ROOT/.venv/bin/python"
        if [[ ! -x "$py" ]]; then
            echo "bench: no venv at $ROOT/.venv (run ./quiver setup)" >&2
            exit 1
        fi
        cargo build --release --locked --quiet --workspace
        exec "$py" bench/peers/gateway_bench.py run --out bench/results "$@"
        ;;
    soak)
        shift
        py="$ROOT/.venv/bin/python"
        if [[ ! -x "$py" ]]; then
            echo "bench: no venv at $ROOT/.venv (run ./quiver setup)" >&2
            exit 1
        fi
        exec "$py" bench/peers/server_soak.py run --out bench/results "$@"
        ;;
    remote)
        shift
        tools/setup_nginx.sh
        py="$ROOT/.venv/bin/python"
        if [[ ! -x "$py" ]]; then
            echo "bench: no venv at $ROOT/.venv (run ./quiver setup)" >&2
            exit 1
        fi
        exec "$py" bench/peers/remote_bench.py run --out bench/results "$@"
        ;;
    *) echo "usage: ./quiver bench rpc|python|vgi|server|gateway|soak|remote|spark" >&2; exit 2 ;;
esac
