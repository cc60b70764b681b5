//! The sticky-session counter methods. Sticky sessions are an HTTP feature
//! (the session token rides in HTTP headers); quiver serves this service over
//! pipes and sockets only, so every call gets the errors the reference gives
//! off HTTP: opening reports the transport has no sessions, and using a
//! session reports that none is bound.

use arrow_schema::{DataType, Field, Schema};
use std::sync::Arc;

use quiver_rpc::{Method, Service, StreamSetup};
use quiver_wire::ErrorReport;

use crate::stream_kit::{add_exchange, add_producer, exchange, int, producer};

fn no_sessions() -> ErrorReport {
    ErrorReport::new(
        "RuntimeError",
        "sticky sessions not available on this transport",
    )
}

fn no_counter() -> ErrorReport {
    ErrorReport::new("RuntimeError", "no sticky counter bound to this request")
}

/// Registers the session-counter methods.
pub fn register(service: &mut Service) {
    let result = || Some(Field::new("result", DataType::Int64, false));
    service.add(Method::unary(
        "open_counter",
        vec![int("initial")],
        result(),
        |_, _| Err(no_sessions()),
    ));
    service.add(Method::unary(
        "increment_counter",
        vec![int("by")],
        result(),
        |_, _| Err(no_counter()),
    ));
    service.add(Method::unary("close_counter", vec![], result(), |_, _| {
        Err(no_counter())
    }));
    let output = || {
        Arc::new(Schema::new(vec![Field::new(
            "value",
            DataType::Int64,
            true,
        )]))
    };
    add_producer(
        service,
        Method::stream(
            "stream_session_counter",
            vec![int("count")],
            None,
            move |params, _| {
                let count = params.i64("count")?;
                Ok(StreamSetup::producer(
                    output(),
                    producer(move |tick, _, out, _| {
                        if tick >= count {
                            out.finish();
                            return Ok(());
                        }
                        Err(no_counter())
                    }),
                ))
            },
        ),
    );
    add_exchange(
        service,
        Method::stream("exchange_session_counter", vec![], None, move |_, _| {
            let input = Arc::new(Schema::new(vec![Field::new("by", DataType::Int64, true)]));
            Ok(StreamSetup::exchange(
                input,
                output(),
                exchange(|_, _, _, _| Err(no_counter())),
            ))
        }),
    );
}
