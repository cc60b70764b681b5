//! quiver's side of `./quiver bench server`: seed 002's suite against a server this program starts
//! (`ServerProcess`), over TCP, a Unix socket, and a Unix socket with shared memory, and its
//! queries through the same server's Flight SQL front door with arrow-flight's Rust client
//! (transport "grpc", flight_sql.rs). It prints one JSON line per record on stdout (the `quiver.bench.server.v1` lines of
//! `bench/peers/server_bench.py`: an `info` line, then `record` lines with peer "quiver") and its
//! progress on stderr.
//!
//! ```text
//! server_bench [--rows N] [--workers N] [--warmup W] [--measured M]
//!              [--transports tcp,unix,unix+shm,grpc] [--database PATH] [--batch-rows N]
//!              [--only inserts|queries]
//! ```

mod cases;
mod flight_sql;
mod inserts;
mod queries;
mod rows;

use std::time::Instant;

use quiver_client::{Address, ConnectOptions, Connection, ServerOptions, ServerProcess, Shm};
use serde_json::json;

use cases::{Bench, Measured};

const PROTOCOL: &str = "quiver.bench.server.v1";
const TRANSPORTS: [&str; 4] = ["tcp", "unix", "unix+shm", "grpc"];
/// The Flight SQL front door's transport: queries only, arrow-flight's client (flight_sql.rs).
const GRPC: &str = "grpc";
/// The segment of a shared-memory connection: two 100 000-row batches and a full result batch
/// fit many times over.
const SHM_BYTES: u64 = 256 << 20;

struct Args {
    rows: u64,
    workers: usize,
    warmup: usize,
    measured: usize,
    transports: Vec<String>,
    database: Option<std::path::PathBuf>,
    /// Rows per result batch the queries ask for (`None`: the server's default).
    batch_rows: Option<i64>,
    /// Run the inserts, the queries, or both (`None`).
    only: Option<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        rows: 10_000_000,
        workers: 2,
        warmup: 1,
        measured: 5,
        transports: TRANSPORTS.iter().map(|t| t.to_string()).collect(),
        database: None,
        batch_rows: None,
        only: None,
    };
    let mut words = std::env::args().skip(1);
    while let Some(flag) = words.next() {
        let mut value = || words.next().ok_or(format!("{flag} needs a value"));
        let number = |text: String| {
            text.replace('_', "")
                .parse::<u64>()
                .map_err(|e| format!("{text}: {e}"))
        };
        match flag.as_str() {
            "--rows" => args.rows = number(value()?)?,
            "--workers" => args.workers = number(value()?)? as usize,
            "--warmup" => args.warmup = number(value()?)? as usize,
            "--measured" => args.measured = number(value()?)? as usize,
            "--transports" => args.transports = value()?.split(',').map(str::to_string).collect(),
            "--database" => args.database = Some(value()?.into()),
            "--batch-rows" => args.batch_rows = Some(number(value()?)? as i64),
            "--only" => args.only = Some(value()?),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if args.rows == 0 || args.rows > rows::ROWS_MAX {
        return Err(format!("--rows must be 1..={}", rows::ROWS_MAX));
    }
    if let Some(only) = args
        .only
        .as_deref()
        .filter(|o| !["inserts", "queries"].contains(o))
    {
        return Err(format!("--only takes inserts or queries, not {only}"));
    }
    if !(1..=64).contains(&args.workers) || args.measured == 0 {
        return Err("--workers must be 1..=64 and --measured at least 1".into());
    }
    // The first run of every case checks its rows and is never measured.
    args.warmup = args.warmup.max(1);
    if let Some(unknown) = args
        .transports
        .iter()
        .find(|t| !TRANSPORTS.contains(&t.as_str()))
    {
        return Err(format!(
            "unknown transport {unknown} (known: {})",
            TRANSPORTS.join(", ")
        ));
    }
    Ok(args)
}

fn progress(message: &str) {
    eprintln!("[quiver] {message}");
}

fn emit(value: serde_json::Value) {
    println!("{value}");
}

fn record(measured: &Measured, transport: &str, table_rows: u64) -> serde_json::Value {
    let mut times = measured.times_s.clone();
    times.sort_by(f64::total_cmp);
    let median = if times.len() % 2 == 1 {
        times[times.len() / 2]
    } else {
        (times[times.len() / 2 - 1] + times[times.len() / 2]) / 2.0
    };
    let bytes = measured.rows * measured.bytes_per_row;
    json!({
        "kind": "record",
        "peer": "quiver",
        "workload": measured.workload,
        "variant": measured.variant,
        "flavor": measured.flavor,
        "transport": transport,
        "api": measured.api,
        "connections": measured.connections,
        "database": "memory",
        "rows": measured.rows,
        "table_rows": table_rows,
        "bytes": bytes,
        "median_s": median,
        "min_s": times[0],
        "max_s": times[times.len() - 1],
        "times_s": measured.times_s,
        "rows_per_s": measured.rows as f64 / median,
        "mb_per_s": bytes as f64 / median / 1e6,
        "checked": true,
        "checksum": measured.checksum.json(),
        "note": "",
    })
}

fn bytes_per_row(workload: &str) -> u64 {
    match workload {
        "query.filtered" => 12,
        _ => rows::BYTES_PER_ROW,
    }
}

fn main() {
    let args = parse_args().unwrap_or_else(|error| {
        eprintln!("server_bench: {error}");
        std::process::exit(2);
    });
    if let Err(error) = run(&args) {
        progress(&format!("FAILED: {error}"));
        emit(json!({"kind": "error", "peer": "quiver", "message": error.to_string()}));
        std::process::exit(1);
    }
}

fn run(args: &Args) -> quiver_client::Result<()> {
    let server = start_server(args)?;

    let started = Instant::now();
    let data = rows::batches(0, args.rows);
    let per_worker = args.rows / args.workers as u64;
    let worker_data: Vec<_> = (0..args.workers as u64)
        .map(|w| rows::batches(w * per_worker, per_worker))
        .collect();
    progress(&format!(
        "{} rows generated in {:.2} s",
        args.rows,
        started.elapsed().as_secs_f64()
    ));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");

    let mut loader = server.connect()?;
    cases::load(&mut loader, "bench_m", &data)?;
    for (w, batches) in worker_data.iter().enumerate() {
        cases::load(&mut loader, &format!("bench_m_w{w}"), batches)?;
    }
    for transport in &args.transports {
        let (address, shm) = match transport.as_str() {
            "tcp" | GRPC => (server.tcp_address(), Shm::Off),
            "unix" => (server.unix_address(), Shm::Off),
            _ => (server.unix_address(), Shm::Bytes(SHM_BYTES)),
        };
        let address = address.expect("the server listens on both").clone();
        let options = ConnectOptions {
            token: server.token().map(str::to_string),
            batch_rows: args.batch_rows,
            ..ConnectOptions::default()
        }
        .shm(shm);
        let connect = move || Connection::connect_with(&address, &options);
        let bench = Bench {
            connect: &connect,
            runtime: &runtime,
            rows: args.rows,
            workers: args.workers,
            warmup: args.warmup,
            measured: args.measured,
            data: &data,
            worker_data: &worker_data,
        };
        let all = transport_cases(&bench, &server, transport, args)?;
        for measured in &all {
            let line = record(measured, transport, args.rows);
            progress(&format!(
                "{transport} {} · {} · {}: {:.1} ms  {:.2} Mrows/s",
                measured.workload,
                measured.variant,
                measured.flavor,
                line["median_s"].as_f64().unwrap() * 1e3,
                line["rows_per_s"].as_f64().unwrap() / 1e6
            ));
            emit(line);
        }
    }
    Ok(())
}

/// The server every transport reaches (with a Flight SQL listener when grpc is asked for); its
/// versions go out as the info line.
fn start_server(args: &Args) -> quiver_client::Result<ServerProcess> {
    let socket = std::env::temp_dir().join(format!("quiver-bench-{}.sock", std::process::id()));
    let grpc = args.transports.iter().any(|t| t == GRPC);
    let server = ServerProcess::spawn(ServerOptions {
        listen: vec!["tcp://127.0.0.1:0".parse().unwrap(), Address::Unix(socket)],
        database: args.database.clone(),
        extra_args: if grpc {
            vec!["--listen".into(), "grpc://127.0.0.1:0".into()]
        } else {
            Vec::new()
        },
        ..ServerOptions::default()
    })?;
    let probe = server.connect()?;
    emit(json!({
        "kind": "info",
        "protocol": PROTOCOL,
        "peer": "quiver",
        "versions": {
            "quiver": probe.session().server_version,
            "duckdb": probe.session().duckdb_version,
        },
        "notes": [format!("server pid {}, one server for every transport", server.pid())],
    }));
    drop(probe);
    Ok(server)
}

/// The cases of one transport: Flight SQL queries over grpc; the spine's inserts and queries
/// otherwise (`--only` picks one half).
fn transport_cases(
    bench: &Bench,
    server: &ServerProcess,
    transport: &str,
    args: &Args,
) -> quiver_client::Result<Vec<Measured>> {
    let mut all = Vec::new();
    if transport == GRPC {
        if args.only.as_deref() != Some("inserts") {
            progress("grpc: Flight SQL queries");
            let uri = server
                .flight_sql_uri()
                .ok_or_else(|| cases::fail("the server announced no Flight SQL URI".into()))?;
            let token = server.token().unwrap_or_default();
            all.extend(flight_sql::queries(bench, uri, token, &bytes_per_row)?);
        }
    } else if args.only.as_deref() != Some("queries") {
        progress(&format!("{transport}: inserts"));
        all.extend(inserts::inserts(bench)?);
    }
    if transport != GRPC && args.only.as_deref() != Some("inserts") {
        progress(&format!("{transport}: queries"));
        all.extend(queries::queries(bench, &bytes_per_row)?);
    }
    Ok(all)
}
