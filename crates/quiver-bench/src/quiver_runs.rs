//! quiver's side of the suite: a `BenchService` server reached over each transport,
//! and the workloads run through `quiver_rpc::Client`.

use std::hint::black_box;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::thread::JoinHandle;
use std::time::Duration;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use quiver_process::{read_announcement, Announcement, Child, StderrMode};
use quiver_rpc::{Client, Server, ServerConfig};
use quiver_shm::{Segment, ShmConfig};
use quiver_transport::{pipe_pair, socket, spawn_command};

use crate::placement::{Placement, CROSS_CPU, SAME_CPU};
use crate::plan::{implementation, Measurement, Plan};
use crate::service::{
    add_params, count_params, large_batch, no_params, service, small_batch, sum_x, PROTOCOL_NAME,
    PROTOCOL_VERSION,
};
use crate::stats::{try_time_rep, Rep};

/// Ticks the producer workload keeps unanswered: a reader of a whole stream lets the
/// server produce while it decodes (lockstep is measured beside it).
pub const PRODUCER_TICKS_AHEAD: usize = 32;

/// Errors of a run, boxed: any failure aborts that part of the suite with a message.
/// How long a socket worker gets to announce where it listens.
const SOCKET_WORKER_START_LIMIT: Duration = Duration::from_secs(60);

pub type BenchError = Box<dyn std::error::Error + Send + Sync>;
/// Result of a run.
pub type BenchResult<T> = Result<T, BenchError>;

/// How the client reaches the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// Server on a thread of this process, over two OS pipes.
    Pipe,
    /// Server in a child process (this binary, `serve`), over its stdin/stdout.
    Subprocess,
    /// Server in a child process, over a Unix socket.
    Unix,
    /// Server in a child process, over loopback TCP.
    Tcp,
}

impl Transport {
    /// Name in records.
    pub fn name(self) -> &'static str {
        match self {
            Transport::Pipe => "pipe",
            Transport::Subprocess => "subprocess",
            Transport::Unix => "unix",
            Transport::Tcp => "tcp",
        }
    }
}

/// A client connected to a running server, and what keeps that server alive.
pub struct Session {
    client: Option<Client>,
    server_thread: Option<JoinHandle<()>>,
    /// A socket worker's stdin: closing it stops the worker.
    /// A socket worker's stdin and stdout, held open until the session ends.
    control: Option<(std::process::ChildStdin, std::process::ChildStdout)>,
    child: Option<Child>,
}

impl Session {
    /// Starts a server reachable over `transport`, placed as `placement` says, and
    /// connects; with `shm_segment_bytes`, the client creates a segment of that
    /// size and routes large batches through it.
    pub fn open(
        transport: Transport,
        placement: Placement,
        shm_segment_bytes: Option<u64>,
    ) -> BenchResult<Session> {
        placement.pin_client()?;
        let mut session = Session {
            client: None,
            server_thread: None,
            control: None,
            child: None,
        };
        let connection = match transport {
            Transport::Pipe => {
                let (client_end, server_end) = pipe_pair()?;
                let server = Server::new(service(), ServerConfig::default());
                let server_cpu = placement.server_cpu;
                session.server_thread = Some(std::thread::spawn(move || {
                    crate::placement::pin_current_thread(server_cpu).expect("pin server thread");
                    server.serve(server_end);
                }));
                client_end
            }
            Transport::Subprocess => {
                let mut command = Command::new(std::env::current_exe()?);
                command.arg("serve");
                placement.pin_server_command(&mut command);
                let (child, connection) = spawn_command(command, StderrMode::Inherit)?;
                session.child = Some(child);
                connection
            }
            Transport::Unix => {
                let path = socket_path();
                let unix_args = ["--unix", path.to_str().ok_or("non-UTF-8 temp dir")?];
                match session.start_socket_worker(placement, &unix_args)? {
                    Announcement::Unix(bound) => socket::connect_unix(&bound)?,
                    other => return Err(format!("worker announced {other}").into()),
                }
            }
            Transport::Tcp => {
                match session.start_socket_worker(placement, &["--tcp", "127.0.0.1:0"])? {
                    Announcement::Port(port) => socket::connect_tcp(format!("127.0.0.1:{port}"))?,
                    other => return Err(format!("worker announced {other}").into()),
                }
            }
        };
        let mut client = Client::new(connection).with_protocol(PROTOCOL_NAME, PROTOCOL_VERSION);
        if let Some(size_bytes) = shm_segment_bytes {
            let segment = Segment::create(size_bytes)?;
            client = client.with_shm(segment, &ShmConfig::default());
        }
        session.client = Some(client);
        Ok(session)
    }

    /// Spawns `serve <args>` and returns where it announces it listens.
    fn start_socket_worker(
        &mut self,
        placement: Placement,
        args: &[&str],
    ) -> BenchResult<Announcement> {
        let mut command = Command::new(std::env::current_exe()?);
        command
            .arg("serve")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        placement.pin_server_command(&mut command);
        let mut child = Child::spawn(command, StderrMode::Inherit)?;
        let stdin = child.take_stdin().expect("stdin was piped");
        let stdout = child.take_stdout().expect("stdout was piped");
        self.child = Some(child);
        let announced = read_announcement(&stdout, SOCKET_WORKER_START_LIMIT, &|| false)?;
        self.control = Some((stdin, stdout));
        Ok(announced)
    }

    /// The connected client.
    pub fn client(&mut self) -> &mut Client {
        self.client.as_mut().expect("session is open")
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // Closing the client ends a pipe or stdio server; closing the control pipe
        // ends a socket worker; the child handle then reaps (or kills) it.
        self.client.take();
        if let Some(thread) = self.server_thread.take() {
            let _ = thread.join();
        }
        self.control.take();
        self.child.take();
    }
}

fn socket_path() -> PathBuf {
    std::env::temp_dir().join(format!("quiver-bench-{}-rpc.sock", std::process::id()))
}

/// A measurement of quiver, without reps yet.
fn measurement(
    workload: &str,
    variant: &str,
    transport: Transport,
    placement: Placement,
    rows_per_op: u64,
    bytes_per_op: u64,
) -> Measurement {
    Measurement {
        workload: workload.to_string(),
        variant: variant.to_string(),
        transport: transport.name().to_string(),
        implementation: implementation::QUIVER.to_string(),
        placement: placement.name.to_string(),
        rows_per_op,
        bytes_per_op,
        reps: Vec::new(),
    }
}

/// Which workloads a session runs.
#[derive(Clone, Copy)]
struct Workloads {
    unary: bool,
    small_streams: bool,
    large: bool,
    large_with_sum: bool,
}

/// Runs every quiver workload, one session per (transport, shm) pair. A session
/// that fails is reported in `failures` and the others still run.
/// With `only`, runs just the sessions whose `transport/variant` name contains it.
pub fn run_all(
    plan: &Plan,
    only: Option<&str>,
    log: &mut dyn FnMut(&str),
    failures: &mut Vec<String>,
) -> Vec<Measurement> {
    let mut out = Vec::new();
    for (transport, shm, placement, workloads) in sessions() {
        let variant = if shm { "shm" } else { "inline" };
        let name = format!("{}/{variant}/{}", transport.name(), placement.name);
        if only.is_some_and(|pattern| !name.contains(pattern)) {
            continue;
        }
        log(&format!("quiver: {name}"));
        if let Err(error) = run_session(plan, transport, shm, placement, workloads, &mut out) {
            failures.push(format!("quiver {name}: {error}"));
        }
    }
    out
}

/// The sessions of a run: (transport, shm, placement, workloads), cross-CPU first, then the
/// same-CPU ones where the machine has two CPUs to tell apart.
fn sessions() -> Vec<(Transport, bool, Placement, Workloads)> {
    use Transport::*;
    let everything = Workloads {
        unary: true,
        small_streams: true,
        large: true,
        large_with_sum: false,
    };
    let unary_only = Workloads {
        unary: true,
        small_streams: false,
        large: false,
        large_with_sum: false,
    };
    let cross = CROSS_CPU.available();
    let mut sessions: Vec<(Transport, bool, Placement, Workloads)> = vec![
        (Pipe, false, cross, everything),
        (
            Pipe,
            true,
            cross,
            Workloads {
                unary: false,
                small_streams: false,
                ..everything
            },
        ),
        (
            Subprocess,
            false,
            cross,
            Workloads {
                large_with_sum: true,
                ..everything
            },
        ),
        (
            Subprocess,
            true,
            cross,
            Workloads {
                small_streams: false,
                large_with_sum: true,
                ..everything
            },
        ),
        (Unix, false, cross, unary_only),
        (Tcp, false, cross, unary_only),
    ];
    if cross != SAME_CPU {
        let small = Workloads {
            small_streams: true,
            ..unary_only
        };
        sessions.push((Pipe, false, SAME_CPU, small));
        sessions.push((Subprocess, false, SAME_CPU, small));
    }
    sessions
}

fn run_session(
    plan: &Plan,
    transport: Transport,
    shm: bool,
    placement: Placement,
    workloads: Workloads,
    out: &mut Vec<Measurement>,
) -> BenchResult<()> {
    let variant = if shm { "shm" } else { "inline" };
    let mut session = Session::open(transport, placement, shm.then_some(plan.shm_segment_bytes))?;
    let client = session.client();
    let mut record = |workload, rows, bytes, reps| {
        let mut m = measurement(workload, variant, transport, placement, rows, bytes);
        m.reps = reps;
        out.push(m);
    };
    if workloads.unary {
        record("unary.add", 1, 16, unary(client, plan)?);
    }
    if workloads.small_streams {
        let (rows, bytes) = (
            plan.small_rows,
            small_batch().get_array_memory_size() as u64,
        );
        let ahead = producer_small(client, plan, PRODUCER_TICKS_AHEAD)?;
        record("producer.1k", rows, bytes, ahead);
        record(
            "producer.1k-lockstep",
            rows,
            bytes,
            producer_small(client, plan, 1)?,
        );
        record(
            "exchange.echo-1k",
            2 * rows,
            2 * bytes,
            exchange_small(client, plan)?,
        );
    }
    if workloads.large {
        let (rows, bytes) = (plan.large_rows, plan.large_bytes());
        record(
            "large.server-to-client",
            rows,
            bytes,
            large_producer(client, plan, false)?,
        );
        if workloads.large_with_sum {
            let reps = large_producer(client, plan, true)?;
            record("large.server-to-client+sum", rows, bytes, reps);
        }
        record(
            "large.client-to-server",
            rows,
            bytes,
            large_sink(client, plan)?,
        );
        record("large.echo", 2 * rows, 2 * bytes, large_echo(client, plan)?);
    }
    if shm && workloads.large {
        check_shm_used(&mut session, transport, out)?;
    }
    Ok(())
}

/// A "shm" figure is only honest if batches really went through the segment: drops the
/// session's shm figures and fails when none did.
fn check_shm_used(
    session: &mut Session,
    transport: Transport,
    out: &mut Vec<Measurement>,
) -> BenchResult<()> {
    let stats = &session
        .client()
        .shm_route()
        .ok_or("shm session without a segment")?
        .stats;
    if stats.outbound_shm == 0 || stats.inbound_shm == 0 {
        out.retain(|m| {
            !(m.implementation == implementation::QUIVER
                && m.transport == transport.name()
                && m.variant == "shm")
        });
        return Err(format!("shm session moved no batch through the segment: {stats:?}").into());
    }
    Ok(())
}

/// `add(1, 2)` calls.
fn unary(client: &mut Client, plan: &Plan) -> BenchResult<Vec<Rep>> {
    let params = add_params(1.0, 2.0);
    let mut call = || -> BenchResult<f64> {
        let reply = client
            .call("add", &params)?
            .ok_or("add returned no result")?;
        Ok(reply.column(0).as_primitive::<Float64Type>().value(0))
    };
    let result = call()?;
    if result != 3.0 {
        return Err(format!("add(1, 2) returned {result}").into());
    }
    for _ in 0..plan.unary_warmup {
        call()?;
    }
    let mut reps = Vec::new();
    for _ in 0..plan.reps {
        reps.push(try_time_rep(plan.unary_ops, || {
            call().map(|r| {
                black_box(r);
            })
        })?);
    }
    Ok(reps)
}

/// Producer ticks of 1K-row batches, `ticks_ahead` of them unanswered at most; one
/// stream per rep.
fn producer_small(client: &mut Client, plan: &Plan, ticks_ahead: usize) -> BenchResult<Vec<Rep>> {
    let expected_rows = small_batch().num_rows();
    let mut reps = Vec::new();
    for _ in 0..plan.reps {
        let mut stream = client.stream(
            "produce",
            &count_params(plan.stream_warmup + plan.stream_ops),
            false,
        )?;
        stream.set_ticks_ahead(ticks_ahead);
        let mut tick = || -> BenchResult<()> {
            let batch = stream.tick()?.ok_or("producer ended early")?;
            if batch.num_rows() != expected_rows {
                return Err(format!("producer batch has {} rows", batch.num_rows()).into());
            }
            Ok(())
        };
        for _ in 0..plan.stream_warmup {
            tick()?;
        }
        reps.push(try_time_rep(plan.stream_ops, &mut tick)?);
        if stream.tick()?.is_some() {
            return Err("producer did not finish after its count".into());
        }
        stream.close()?;
    }
    Ok(reps)
}

/// Exchanges echoing a 1K-row batch; one stream per rep.
fn exchange_small(client: &mut Client, plan: &Plan) -> BenchResult<Vec<Rep>> {
    let input = small_batch();
    let mut reps = Vec::new();
    for _ in 0..plan.reps {
        let mut stream = client.stream("echo", &no_params(), false)?;
        let first = stream.exchange(&input)?.ok_or("echo ended early")?;
        if first != input {
            return Err("echo returned a different batch".into());
        }
        let mut exchange = || -> BenchResult<()> {
            let output = stream.exchange(&input)?.ok_or("echo ended early")?;
            black_box(output.num_rows());
            Ok(())
        };
        for _ in 1..plan.stream_warmup {
            exchange()?;
        }
        reps.push(try_time_rep(plan.stream_ops, &mut exchange)?);
        stream.close()?;
    }
    Ok(reps)
}

/// Producer ticks of 16 MiB batches (server → client); with `sum`, the client
/// reads every value of each batch before dropping it.
fn large_producer(client: &mut Client, plan: &Plan, sum: bool) -> BenchResult<Vec<Rep>> {
    let expected_rows = plan.large_rows as usize;
    let expected_sum = sum_x(&large_batch());
    let mut reps = Vec::new();
    for _ in 0..plan.reps {
        let mut stream = client.stream(
            "produce_large",
            &count_params(plan.large_warmup + plan.large_ops),
            false,
        )?;
        let mut tick = || -> BenchResult<()> {
            let batch = stream.tick()?.ok_or("producer ended early")?;
            if batch.num_rows() != expected_rows {
                return Err(format!("large batch has {} rows", batch.num_rows()).into());
            }
            if sum && sum_x(&batch) != expected_sum {
                return Err("large batch arrived with different values".into());
            }
            Ok(())
        };
        for _ in 0..plan.large_warmup {
            tick()?;
        }
        reps.push(try_time_rep(plan.large_ops, &mut tick)?);
        if stream.tick()?.is_some() {
            return Err("large producer did not finish after its count".into());
        }
        stream.close()?;
    }
    Ok(reps)
}

/// Exchanges sending a 16 MiB batch (client → server), answered by one row.
fn large_sink(client: &mut Client, plan: &Plan) -> BenchResult<Vec<Rep>> {
    let input = large_batch();
    let expected_rows = input.num_rows() as i64;
    let mut reps = Vec::new();
    for _ in 0..plan.reps {
        let mut stream = client.stream("sink", &no_params(), false)?;
        let mut exchange = || -> BenchResult<()> {
            let output = stream.exchange(&input)?.ok_or("sink ended early")?;
            let rows = output.column(0).as_primitive::<Int64Type>().value(0);
            if rows != expected_rows {
                return Err(format!("sink counted {rows} rows").into());
            }
            Ok(())
        };
        for _ in 0..plan.large_warmup {
            exchange()?;
        }
        reps.push(try_time_rep(plan.large_ops, &mut exchange)?);
        stream.close()?;
    }
    Ok(reps)
}

/// Exchanges echoing a 16 MiB batch (both directions).
fn large_echo(client: &mut Client, plan: &Plan) -> BenchResult<Vec<Rep>> {
    let input = large_batch();
    let mut reps = Vec::new();
    for _ in 0..plan.reps {
        let mut stream = client.stream("echo_large", &no_params(), false)?;
        let first = stream.exchange(&input)?.ok_or("echo ended early")?;
        if first != input {
            return Err("large echo returned a different batch".into());
        }
        drop(first);
        let mut exchange = || -> BenchResult<()> {
            let output = stream.exchange(&input)?.ok_or("echo ended early")?;
            black_box(output.num_rows());
            Ok(())
        };
        for _ in 1..plan.large_warmup {
            exchange()?;
        }
        reps.push(try_time_rep(plan.large_ops, &mut exchange)?);
        stream.close()?;
    }
    Ok(reps)
}
