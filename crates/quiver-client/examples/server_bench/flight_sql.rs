//! The three queries through the server's Flight SQL front door with arrow-flight's own Rust client
//! (`FlightSqlServiceClient`: `execute` for the FlightInfo, then `do_get` on each endpoint's ticket),
//! over plain gRPC on loopback TCP, one connection. Beside the spine's TCP rows of the same server,
//! this is the Flight SQL path's own cost, apart from any other client's.

use arrow_flight::sql::client::FlightSqlServiceClient;
use futures::TryStreamExt;
use quiver_client::Result;
use tonic::transport::{Channel, Endpoint};

use crate::cases::{fail, timed, Bench, Measured, QUERIES};
use crate::queries::Expect;

/// The API the records name.
const API: &str = "arrow-flight FlightSqlServiceClient::execute + do_get";
/// The largest HTTP/2 frame the client accepts (`SETTINGS_MAX_FRAME_SIZE`). The sender may not
/// exceed it, so it sets how the server cuts a result: at HTTP/2's default of 16 KiB a scan is a
/// syscall and a wake-up per 16 KiB on both ends, and the client's own cost, not the server's,
/// bounds the row (half the rows per second on loopback).
const FRAME_BYTES_MAX: u32 = 1 << 20;

fn flight(error: impl std::fmt::Display) -> quiver_client::Error {
    fail(format!("flight sql: {error}"))
}

/// A client on one gRPC channel to `uri`, carrying the server's token as its bearer token.
fn connect(bench: &Bench, uri: &str, token: &str) -> Result<FlightSqlServiceClient<Channel>> {
    let endpoint = Endpoint::from_shared(uri.replace("grpc://", "http://")).map_err(flight)?;
    let endpoint = endpoint.max_frame_size(FRAME_BYTES_MAX);
    let channel = bench.runtime.block_on(endpoint.connect()).map_err(flight)?;
    let mut client = FlightSqlServiceClient::new(channel);
    client.set_token(token.to_string());
    Ok(client)
}

/// One query: the FlightInfo, then every endpoint's stream read to its end; rows counted, and on
/// the checking run kept and checked.
async fn query(
    client: &mut FlightSqlServiceClient<Channel>,
    sql: &str,
    expect: &Expect,
    checking: bool,
) -> Result<()> {
    let info = client
        .execute(sql.to_string(), None)
        .await
        .map_err(flight)?;
    let (mut rows, mut kept) = (0u64, Vec::new());
    for endpoint in info.endpoint {
        let ticket = endpoint
            .ticket
            .ok_or_else(|| flight("an endpoint without a ticket"))?;
        let mut stream = client.do_get(ticket).await.map_err(flight)?;
        while let Some(batch) = stream.try_next().await.map_err(flight)? {
            rows += batch.num_rows() as u64;
            if checking {
                kept.push(batch);
            }
        }
    }
    if checking {
        expect.check(&kept)?;
    }
    expect.rows_were(sql, rows)
}

/// The three queries on one Flight SQL connection.
pub fn queries(
    bench: &Bench,
    uri: &str,
    token: &str,
    bytes_per_row: &dyn Fn(&str) -> u64,
) -> Result<Vec<Measured>> {
    let mut client = connect(bench, uri, token)?;
    let mut out = Vec::new();
    for (workload, template) in QUERIES {
        let sql = template.replace("{t}", "bench_m");
        let expect = Expect::of(workload, bench.data);
        let times = timed(
            bench,
            &mut client,
            |_| Ok(()),
            |client, rep| {
                bench
                    .runtime
                    .block_on(query(client, &sql, &expect, rep == 0))
            },
        )?;
        out.push(Measured {
            workload,
            variant: "1 connection".into(),
            flavor: "async",
            api: API,
            connections: 1,
            rows: expect.result_rows(),
            bytes_per_row: bytes_per_row(workload),
            times_s: times,
            checksum: expect.checksum(),
        });
    }
    Ok(out)
}
