//! Producer and exchange methods, with and without headers, and the process-wide
//! counters the cancel tests read.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use quiver_rpc::{Method, Service, StreamSetup};
use quiver_wire::{ErrorReport, LogLevel, LogRecord};

use crate::headers::{conformance_header, rich_header};
use crate::stream_kit::{
    add_exchange, add_producer, counting, echo_input, exchange, index_value, index_value_schema,
    int, producer, scaling, value_schema,
};
use crate::types::{
    conformance_header_schema, list_of, python_float_repr, rich_header_schema, single,
};

static PRODUCE_CALLS: AtomicI64 = AtomicI64::new(0);
static EXCHANGE_CALLS: AtomicI64 = AtomicI64::new(0);
pub(crate) static ON_CANCEL_CALLS: AtomicI64 = AtomicI64::new(0);

/// Registers every stream method and the counter methods.
pub fn register(service: &mut Service) {
    register_producers(service);
    register_exchanges(service);
    register_headers(service);
    register_counters(service);
}

fn register_producers(service: &mut Service) {
    add_producer(
        service,
        Method::stream("produce_n", vec![int("count")], None, |p, _| {
            Ok(counting(p.i64("count")?))
        }),
    );
    add_producer(
        service,
        Method::stream("produce_empty", vec![], None, |_, _| Ok(counting(0))),
    );
    add_producer(
        service,
        Method::stream("produce_single", vec![], None, |_, _| Ok(counting(1))),
    );
    add_producer(
        service,
        Method::stream("produce_with_logs", vec![int("count")], None, |p, _| {
            let count = p.i64("count")?;
            Ok(StreamSetup::producer(
                index_value_schema(),
                producer(move |tick, _, out, _| {
                    if tick >= count {
                        out.finish();
                    } else {
                        out.log(LogRecord::new(
                            LogLevel::Info,
                            format!("producing batch {tick}"),
                        ));
                        out.emit(index_value(tick));
                    }
                    Ok(())
                }),
            ))
        }),
    );
    add_producer(
        service,
        Method::stream(
            "produce_error_mid_stream",
            vec![int("emit_before_error")],
            None,
            |p, _| {
                let limit = p.i64("emit_before_error")?;
                Ok(StreamSetup::producer(
                    index_value_schema(),
                    producer(move |tick, _, out, _| {
                        if tick >= limit {
                            return Err(ErrorReport::new(
                                "RuntimeError",
                                format!("intentional error after {limit} batches"),
                            ));
                        }
                        out.emit(index_value(tick));
                        Ok(())
                    }),
                ))
            },
        ),
    );
    add_producer(
        service,
        Method::stream("produce_error_on_init", vec![], None, |_, _| {
            Err(ErrorReport::new("RuntimeError", "intentional init error"))
        }),
    );
    add_producer(
        service,
        Method::stream("produce_tick_metadata", vec![int("count")], None, |p, _| {
            let count = p.i64("count")?;
            let schema = Arc::new(Schema::new(vec![
                Field::new("index", DataType::Int64, true),
                Field::new("seen", DataType::Utf8, true),
            ]));
            let output = schema.clone();
            Ok(StreamSetup::producer(
                schema,
                producer(move |tick, metadata, out, _| {
                    let seen = metadata
                        .get("vgi.conformance.tick")
                        .unwrap_or("")
                        .to_string();
                    let batch = RecordBatch::try_new(
                        output.clone(),
                        vec![
                            Arc::new(Int64Array::from(vec![tick])),
                            Arc::new(StringArray::from(vec![seen])),
                        ],
                    )
                    .expect("columns match schema");
                    out.emit(batch);
                    if tick + 1 >= count {
                        out.finish();
                    }
                    Ok(())
                }),
            ))
        }),
    );
    add_producer(
        service,
        Method::stream("cancellable_producer", vec![], None, |_, _| {
            let mut state = producer(|tick, _, out, _| {
                PRODUCE_CALLS.fetch_add(1, Ordering::SeqCst);
                out.emit(index_value(tick));
                Ok(())
            });
            state.counts_cancel = true;
            Ok(StreamSetup::producer(index_value_schema(), state))
        }),
    );
    add_producer(
        service,
        Method::stream(
            "produce_large_batches",
            vec![int("rows_per_batch"), int("batch_count")],
            None,
            |p, _| {
                let rows = p.i64("rows_per_batch")?.clamp(0, 1 << 24);
                let batches = p.i64("batch_count")?;
                Ok(StreamSetup::producer(
                    index_value_schema(),
                    producer(move |tick, _, out, _| {
                        if tick >= batches {
                            out.finish();
                            return Ok(());
                        }
                        let start = tick * rows;
                        let index: Int64Array = (start..start + rows).collect();
                        let value: Int64Array = (start..start + rows).map(|i| i * 10).collect();
                        out.emit(
                            RecordBatch::try_new(
                                index_value_schema(),
                                vec![Arc::new(index), Arc::new(value)],
                            )
                            .unwrap(),
                        );
                        Ok(())
                    }),
                ))
            },
        ),
    );
}

fn register_exchanges(service: &mut Service) {
    let float = |name: &str| Field::new(name, DataType::Float64, false);
    add_exchange(
        service,
        Method::stream("exchange_scale", vec![float("factor")], None, |p, _| {
            Ok(StreamSetup::exchange(
                value_schema(),
                value_schema(),
                scaling(p.f64("factor")?),
            ))
        }),
    );
    add_exchange(
        service,
        Method::stream("exchange_accumulate", vec![], None, |_, _| {
            let schema = Arc::new(Schema::new(vec![
                Field::new("running_sum", DataType::Float64, true),
                Field::new("exchange_count", DataType::Int64, true),
            ]));
            let output = schema.clone();
            let (mut sum, mut count) = (0.0, 0i64);
            Ok(StreamSetup::exchange(
                value_schema(),
                schema,
                exchange(move |input, _, out, _| {
                    sum += input
                        .column(0)
                        .as_primitive::<Float64Type>()
                        .iter()
                        .flatten()
                        .sum::<f64>();
                    count += 1;
                    let columns: Vec<ArrayRef> = vec![
                        Arc::new(Float64Array::from(vec![sum])),
                        Arc::new(Int64Array::from(vec![count])),
                    ];
                    out.emit(
                        RecordBatch::try_new(output.clone(), columns)
                            .expect("columns match schema"),
                    );
                    Ok(())
                }),
            ))
        }),
    );
    add_exchange(
        service,
        Method::stream("exchange_with_logs", vec![], None, |_, _| {
            Ok(StreamSetup::exchange(
                value_schema(),
                value_schema(),
                exchange(|input, _, out, _| {
                    out.log(LogRecord::new(LogLevel::Info, "exchange processing"));
                    out.log(LogRecord::new(LogLevel::Debug, "exchange debug"));
                    out.emit(input.clone());
                    Ok(())
                }),
            ))
        }),
    );
    add_exchange(
        service,
        Method::stream(
            "exchange_error_on_nth",
            vec![int("fail_on")],
            None,
            |p, _| {
                let fail_on = p.i64("fail_on")?;
                let mut count = 0;
                Ok(StreamSetup::exchange(
                    value_schema(),
                    value_schema(),
                    exchange(move |input, _, out, _| {
                        count += 1;
                        if count >= fail_on {
                            return Err(ErrorReport::new(
                                "RuntimeError",
                                format!("intentional error on exchange {count}"),
                            ));
                        }
                        out.emit(input.clone());
                        Ok(())
                    }),
                ))
            },
        ),
    );
    add_exchange(
        service,
        Method::stream("exchange_error_on_init", vec![], None, |_, _| {
            Err(ErrorReport::new(
                "RuntimeError",
                "intentional exchange init error",
            ))
        }),
    );
    add_exchange(
        service,
        Method::stream("exchange_input_metadata", vec![], None, |_, _| {
            let schema = Arc::new(Schema::new(vec![
                Field::new("seen", DataType::Utf8, true),
                Field::new("keys", DataType::Utf8, true),
            ]));
            let output = schema.clone();
            Ok(StreamSetup::exchange(
                value_schema(),
                schema,
                exchange(move |_, metadata, out, _| {
                    let seen = metadata
                        .get("vgi.conformance.input")
                        .unwrap_or("")
                        .to_string();
                    let mut keys: Vec<&str> = metadata.iter().map(|(k, _)| k).collect();
                    keys.sort_unstable();
                    let columns: Vec<ArrayRef> = vec![
                        Arc::new(StringArray::from(vec![seen])),
                        Arc::new(StringArray::from(vec![keys.join(",")])),
                    ];
                    out.emit(
                        RecordBatch::try_new(output.clone(), columns)
                            .expect("columns match schema"),
                    );
                    Ok(())
                }),
            ))
        }),
    );
    add_exchange(
        service,
        Method::stream("exchange_cast_compatible", vec![], None, |_, _| {
            Ok(StreamSetup::exchange(
                value_schema(),
                value_schema(),
                echo_input(),
            ))
        }),
    );
    add_exchange(
        service,
        Method::stream("cancellable_exchange", vec![], None, |_, _| {
            let mut state = exchange(|input, _, out, _| {
                EXCHANGE_CALLS.fetch_add(1, Ordering::SeqCst);
                out.emit(input.clone());
                Ok(())
            });
            state.counts_cancel = true;
            Ok(StreamSetup::exchange(value_schema(), value_schema(), state))
        }),
    );
    add_exchange(
        service,
        Method::stream("exchange_zero_columns", vec![], None, |_, _| {
            let empty = Arc::new(Schema::empty());
            Ok(StreamSetup::exchange(empty.clone(), empty, echo_input()))
        }),
    );
}

fn register_headers(service: &mut Service) {
    let float = |name: &str| Field::new(name, DataType::Float64, false);
    let header = Some(conformance_header_schema());
    let rich = Some(rich_header_schema());
    add_producer(
        service,
        Method::stream(
            "produce_with_header",
            vec![int("count")],
            header.clone(),
            |p, _| {
                let count = p.i64("count")?;
                Ok(counting(count).with_header(conformance_header(
                    count,
                    format!("producing {count} batches"),
                )))
            },
        ),
    );
    add_producer(
        service,
        Method::stream(
            "produce_with_header_and_logs",
            vec![int("count")],
            header.clone(),
            |p, ctx| {
                let count = p.i64("count")?;
                ctx.log(LogRecord::new(LogLevel::Info, "stream init log"));
                Ok(counting(count).with_header(conformance_header(
                    count,
                    format!("producing {count} with logs"),
                )))
            },
        ),
    );
    add_producer(
        service,
        Method::stream(
            "produce_with_rich_header",
            vec![int("seed"), int("count")],
            rich.clone(),
            |p, _| Ok(counting(p.i64("count")?).with_header(rich_header(p.i64("seed")?)?)),
        ),
    );
    add_producer(
        service,
        Method::stream(
            "produce_dynamic_schema",
            vec![
                int("seed"),
                int("count"),
                Field::new("include_strings", DataType::Boolean, false),
                Field::new("include_floats", DataType::Boolean, false),
            ],
            rich.clone(),
            |p, _| {
                let (count, strings, floats) = (
                    p.i64("count")?,
                    p.bool("include_strings")?,
                    p.bool("include_floats")?,
                );
                let mut fields = vec![Field::new("index", DataType::Int64, true)];
                if strings {
                    fields.push(Field::new("label", DataType::Utf8, true));
                }
                if floats {
                    fields.push(Field::new("score", DataType::Float64, true));
                }
                let schema = Arc::new(Schema::new(fields));
                let output = schema.clone();
                let state = producer(move |tick, _, out, _| {
                    if tick >= count {
                        out.finish();
                        return Ok(());
                    }
                    let mut columns: Vec<ArrayRef> = vec![Arc::new(Int64Array::from(vec![tick]))];
                    if strings {
                        columns.push(Arc::new(StringArray::from(vec![format!("row-{tick}")])));
                    }
                    if floats {
                        columns.push(Arc::new(Float64Array::from(vec![tick as f64 * 1.5])));
                    }
                    out.emit(
                        RecordBatch::try_new(output.clone(), columns)
                            .expect("columns match schema"),
                    );
                    Ok(())
                });
                Ok(StreamSetup::producer(schema, state).with_header(rich_header(p.i64("seed")?)?))
            },
        ),
    );
    add_exchange(
        service,
        Method::stream(
            "exchange_with_header",
            vec![float("factor")],
            header,
            |p, _| {
                let factor = p.f64("factor")?;
                let header =
                    conformance_header(0, format!("scale by {}", python_float_repr(factor)));
                Ok(
                    StreamSetup::exchange(value_schema(), value_schema(), scaling(factor))
                        .with_header(header),
                )
            },
        ),
    );
    add_exchange(
        service,
        Method::stream(
            "exchange_with_rich_header",
            vec![int("seed"), float("factor")],
            rich,
            |p, _| {
                let setup = StreamSetup::exchange(
                    value_schema(),
                    value_schema(),
                    scaling(p.f64("factor")?),
                );
                Ok(setup.with_header(rich_header(p.i64("seed")?)?))
            },
        ),
    );
}

fn register_counters(service: &mut Service) {
    service.add(Method::unary("reset_cancel_probe", vec![], None, |_, _| {
        for counter in [&PRODUCE_CALLS, &EXCHANGE_CALLS, &ON_CANCEL_CALLS] {
            counter.store(0, Ordering::SeqCst);
        }
        Ok(None)
    }));
    service.add(Method::unary(
        "cancel_probe_counters",
        vec![],
        Some(Field::new("result", list_of(DataType::Int64), false)),
        |_, _| {
            let values = [&PRODUCE_CALLS, &EXCHANGE_CALLS, &ON_CANCEL_CALLS]
                .map(|c| Some(c.load(Ordering::SeqCst)));
            let list =
                arrow_array::ListArray::from_iter_primitive::<arrow_array::types::Int64Type, _, _>(
                    [Some(values)],
                );
            Ok(single(list))
        },
    ));
}
