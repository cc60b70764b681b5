//! `quiver_worker`: an attached worker as the glue sees it — opened on ATTACH (process started,
//! catalog discovered), asked for its functions, detached on DETACH, freed with the catalog.
//!
//! The handle is an `Arc`: binds and streams keep the worker alive after the glue lets go.

use std::ffi::{c_char, CString};
use std::sync::Arc;

use arrow_array::ffi::FFI_ArrowSchema;
use quiver_vgi_contract::arg_metadata;

use crate::attached_docs::AttachedDocs;
use crate::catalog::{self, Discovered, FunctionDesc};
use crate::ffi::{
    guard, guard_interruptible, handle, str_arg, write_out, Failure, Interrupt, Outcome,
};
use crate::worker::{Remote, Worker};

/// An attached worker and what it offers.
pub struct Attached {
    /// The worker's processes and connections.
    pub worker: Arc<Worker>,
    /// What discovery found.
    pub found: Discovered,
    strings: Vec<[CString; 3]>,
    parameters: Vec<Vec<Parameter>>,
    default_schema: CString,
    /// Per skipped function: name, schema, kind and the refusal a call of it gets.
    skipped: Vec<[CString; 4]>,
    /// Comments, tags, examples of the catalog, its schemas and functions (`attached_docs.rs`).
    pub(crate) docs: AttachedDocs,
}

/// One parameter of a function, with the strings the C view points into.
struct Parameter {
    name: CString,
    default_json: Option<CString>,
    flags: [bool; 5],
}

impl Parameter {
    fn new(field: &arrow_schema::Field) -> Parameter {
        let meta = |key: &str| field.metadata().get(key).map(String::as_str);
        Parameter {
            name: cstring(field.name()),
            default_json: meta(arg_metadata::DEFAULT).map(cstring),
            flags: [
                meta(arg_metadata::ARG) == Some(arg_metadata::ARG_NAMED),
                meta(arg_metadata::TYPE) == Some(arg_metadata::TYPE_TABLE),
                meta(arg_metadata::TYPE) == Some(arg_metadata::TYPE_ANY),
                meta(arg_metadata::CONST) == Some(arg_metadata::TRUE),
                meta(arg_metadata::VARARGS) == Some(arg_metadata::TRUE),
            ],
        }
    }
}

/// One parameter, as `quiver_parameter` in C. Strings belong to the worker handle.
#[repr(C)]
pub struct ParameterC {
    /// Its name.
    pub name: *const c_char,
    /// The worker's rendering of its default as JSON (`vgi_default`), or null.
    pub default_json: *const c_char,
    /// Passed by name (`name := value`).
    pub named: i32,
    /// The TABLE input of a table-in-out function.
    pub table: i32,
    /// Accepts any type.
    pub any: i32,
    /// Scalar: a constant, sent once at bind.
    pub constant: i32,
    /// Collects the remaining positional arguments.
    pub varargs: i32,
}

/// One function, as `quiver_function_info` in C. Strings belong to the worker handle.
#[repr(C)]
pub struct FunctionInfoC {
    /// SQL name.
    pub name: *const c_char,
    /// The schema it lives in (path components joined with '.').
    pub schema: *const c_char,
    /// Documentation.
    pub description: *const c_char,
    /// `QUIVER_KIND_SCALAR`, `_TABLE`, `_TABLE_IN_OUT`, `_AGGREGATE` or `_TABLE_BUFFERING`.
    pub kind: i32,
    /// Honours projections.
    pub projection_pushdown: i32,
    /// Accepts filters.
    pub filter_pushdown: i32,
    /// Applies pushed filters exactly.
    pub filters_exactly_applied: i32,
    /// Table-in-out with a FINALIZE phase.
    pub has_finalize: i32,
    /// Most connections per call the catalog allows; 0 when not given.
    pub max_workers: i64,
    /// A [`Stability`]: 0 consistent, 1 volatile, 2 consistent within a query.
    pub stability: i32,
    /// Non-zero: the function handles NULL inputs itself.
    pub special_null_handling: i32,
    /// Aggregates: non-zero when the result depends on the rows' order.
    pub order_dependent: i32,
    /// Aggregates: non-zero when the result changes under `DISTINCT`.
    pub distinct_dependent: i32,
}

/// How far DuckDB may reuse a function's results; the numbers are `quiver_function_info.stability`
/// in `extension/include/quiver_core.h`.
#[repr(i32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stability {
    /// Same inputs, same result (the default when the worker says nothing).
    Consistent = 0,
    /// May change on every call.
    Volatile = 1,
    /// Fixed within one query.
    ConsistentWithinQuery = 2,
}

impl Stability {
    /// The stability a worker declares (`VOLATILE`, `CONSISTENT_WITHIN_QUERY`, else consistent).
    pub fn of(declared: Option<&str>) -> Stability {
        match declared {
            Some("VOLATILE") => Stability::Volatile,
            Some("CONSISTENT_WITHIN_QUERY") => Stability::ConsistentWithinQuery,
            _ => Stability::Consistent,
        }
    }

    /// The number the C glue switches on.
    pub const fn to_c(self) -> i32 {
        self as i32
    }
}

fn cstring(text: &str) -> CString {
    CString::new(text.replace('\0', " ")).expect("NULs replaced")
}

impl Attached {
    fn new(worker: Arc<Worker>, found: Discovered) -> Attached {
        let strings = found
            .functions
            .iter()
            .map(|f| {
                [
                    cstring(&f.name),
                    cstring(&f.schema_path.join(".")),
                    cstring(&f.description),
                ]
            })
            .collect();
        let parameters = found
            .functions
            .iter()
            .map(|f| {
                f.arguments
                    .fields()
                    .iter()
                    .map(|a| Parameter::new(a))
                    .collect()
            })
            .collect();
        let default_schema = cstring(&found.default_schema);
        let skipped = found
            .skipped
            .iter()
            .map(|f| {
                [
                    cstring(&f.name),
                    cstring(&f.schema_path.join(".")),
                    cstring(&f.kind),
                    cstring(&f.refusal(&worker.alias)),
                ]
            })
            .collect();
        Attached {
            docs: AttachedDocs::new(&found),
            worker,
            found,
            strings,
            parameters,
            default_schema,
            skipped,
        }
    }

    /// The function at `index`.
    pub fn function(&self, index: usize) -> Outcome<&FunctionDesc> {
        self.found.functions.get(index).ok_or_else(|| {
            Failure::invalid(format!(
                "function index {index} out of range ({} functions)",
                self.found.functions.len()
            ))
        })
    }
}

/// Opens the worker at `location` (named `alias` in errors) and discovers its catalog
/// `catalog_name` (`None`: see [`catalog::discover`]).
pub fn open(location: &str, alias: &str, catalog_name: Option<&str>) -> Outcome<Arc<Attached>> {
    open_remote(location, alias, catalog_name, Remote::default())
}

/// [`open`] with a remote (HTTP) worker's bearer token and certificate authorities.
pub fn open_remote(
    location: &str,
    alias: &str,
    catalog_name: Option<&str>,
    remote: Remote,
) -> Outcome<Arc<Attached>> {
    let worker = Worker::open_with(alias, location, remote)?;
    let found = catalog::discover(&worker, catalog_name)?;
    if let Some(notice) = unsupported_notice(&worker.alias, &found.skipped) {
        quiver_process::log_line!("{notice}");
    }
    Ok(Arc::new(Attached::new(worker, found)))
}

/// What ATTACH says on the engine's stderr when the worker declares functions of kinds the engine
/// cannot call: each by name and kind (they are also listed in `duckdb_functions()`, tagged
/// `quiver.unsupported_kind`, and a call of one names it).
pub fn unsupported_notice(alias: &str, skipped: &[catalog::Skipped]) -> Option<String> {
    if skipped.is_empty() {
        return None;
    }
    let listed: Vec<String> = skipped
        .iter()
        .map(|f| format!("{alias}.{} ({})", f.name, f.kind))
        .collect();
    Some(format!(
        "[{alias}] quiver: {} function(s) of kinds this engine cannot call yet: {}",
        skipped.len(),
        listed.join(", ")
    ))
}

/// Starts (or connects to) the worker at `location` and discovers its catalog `catalog_name`;
/// `alias` is how errors name it.
///
/// # Safety
/// Strings NUL-terminated; `out` valid for one write; `err` as in every call.
#[no_mangle]
pub unsafe extern "C" fn quiver_worker_open(
    location: *const c_char,
    alias: *const c_char,
    catalog_name: *const c_char,
    interrupt: Interrupt,
    out: *mut *const Attached,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    // SAFETY: by this function's contract (null token and CA file).
    unsafe {
        quiver_worker_open_remote(
            location,
            alias,
            catalog_name,
            std::ptr::null(),
            std::ptr::null(),
            interrupt,
            out,
            err,
            err_cap,
        )
    }
}

/// [`quiver_worker_open`] with a remote worker's bearer `token` and `ca_file` (each nullable).
///
/// # Safety
/// Strings NUL-terminated or null where nullable; `out` valid for one write; `err` as in every
/// call.
#[allow(clippy::too_many_arguments)]
#[no_mangle]
pub unsafe extern "C" fn quiver_worker_open_remote(
    location: *const c_char,
    alias: *const c_char,
    catalog_name: *const c_char,
    token: *const c_char,
    ca_file: *const c_char,
    interrupt: Interrupt,
    out: *mut *const Attached,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard_interruptible(interrupt, err, err_cap, || {
        let optional = |text: *const c_char, what: &str| -> Outcome<Option<String>> {
            if text.is_null() {
                return Ok(None);
            }
            // SAFETY: by this function's contract.
            Ok(Some(unsafe { str_arg(text, what) }?.to_string()))
        };
        // SAFETY: by this function's contract.
        let (location, alias) =
            unsafe { (str_arg(location, "location")?, str_arg(alias, "alias")?) };
        let name = optional(catalog_name, "catalog_name")?;
        let remote = Remote {
            token: optional(token, "token")?,
            ca_file: optional(ca_file, "ca_file")?.map(std::path::PathBuf::from),
        };
        let attached = open_remote(location, alias, name.as_deref(), remote)?;
        // SAFETY: by this function's contract.
        unsafe { write_out(out, Arc::into_raw(attached), "out") }
    })
}

/// Releases the glue's reference; the worker shuts down when no bind or stream uses it either.
///
/// # Safety
/// `worker` is null or a handle from [`quiver_worker_open`] not freed before.
#[no_mangle]
pub unsafe extern "C" fn quiver_worker_free(worker: *const Attached) {
    if !worker.is_null() {
        // SAFETY: by this function's contract, this is the glue's one reference.
        drop(unsafe { Arc::from_raw(worker) });
    }
}

/// DETACH: tells the worker (`catalog_detach`, best effort) and shuts it down now — idle
/// connections closed, processes we started ended and reaped. Calls still running fail.
///
/// # Safety
/// `worker` a live handle.
#[no_mangle]
pub unsafe extern "C" fn quiver_worker_detach(
    worker: *const Attached,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard(err, err_cap, || {
        // SAFETY: by this function's contract.
        let attached = unsafe { handle(worker, "worker")? };
        let told = quiver_transport::fd_io::with_deadline(crate::stream::CANCEL_DEADLINE, || {
            catalog::detach(&attached.worker, &attached.found.attach_opaque_data)
        });
        attached.worker.shutdown();
        told
    })
}

/// The schema unqualified names resolve in (static until the handle is freed).
///
/// # Safety
/// `worker` a live handle.
#[no_mangle]
pub unsafe extern "C" fn quiver_worker_default_schema(worker: *const Attached) -> *const c_char {
    // SAFETY: by this function's contract.
    match unsafe { worker.as_ref() } {
        Some(attached) => attached.default_schema.as_ptr(),
        None => std::ptr::null(),
    }
}

/// How many functions the worker offers.
///
/// # Safety
/// `worker` a live handle.
#[no_mangle]
pub unsafe extern "C" fn quiver_worker_function_count(worker: *const Attached) -> usize {
    // SAFETY: by this function's contract.
    unsafe { worker.as_ref() }.map_or(0, |a| a.found.functions.len())
}

/// Describes function `index`.
///
/// # Safety
/// `worker` a live handle, `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn quiver_worker_function(
    worker: *const Attached,
    index: usize,
    out: *mut FunctionInfoC,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard(err, err_cap, || {
        // SAFETY: by this function's contract.
        let attached = unsafe { handle(worker, "worker")? };
        let f = attached.function(index)?;
        let [name, schema, description] = &attached.strings[index];
        let info = FunctionInfoC {
            name: name.as_ptr(),
            schema: schema.as_ptr(),
            description: description.as_ptr(),
            kind: f.kind as i32,
            projection_pushdown: f.projection_pushdown.into(),
            filter_pushdown: f.filter_pushdown.into(),
            filters_exactly_applied: f.filters_exactly_applied.into(),
            has_finalize: f.has_finalize.into(),
            max_workers: f.max_workers.unwrap_or(0).max(0),
            stability: Stability::of(f.stability.as_deref()).to_c(),
            special_null_handling: (f.null_handling.as_deref() == Some("SPECIAL")).into(),
            order_dependent: f.order_dependent.into(),
            distinct_dependent: f.distinct_dependent.into(),
        };
        // SAFETY: by this function's contract.
        unsafe { write_out(out, info, "out") }
    })
}

/// The parameters of function `index` as a schema: one field per parameter, positional first,
/// with the worker's field metadata (`vgi_arg`, `vgi_type`, `vgi_const`...).
///
/// # Safety
/// `worker` a live handle, `out` valid for one write; the caller releases it.
#[no_mangle]
pub unsafe extern "C" fn quiver_worker_function_arguments(
    worker: *const Attached,
    index: usize,
    out: *mut FFI_ArrowSchema,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard(err, err_cap, || {
        // SAFETY: by this function's contract.
        let attached = unsafe { handle(worker, "worker")? };
        let schema = FFI_ArrowSchema::try_from(attached.function(index)?.arguments.as_ref())?;
        // SAFETY: by this function's contract.
        unsafe { write_out(out, schema, "out") }
    })
}

/// A scalar function's result as a one-field schema (`result: T`).
///
/// # Safety
/// As [`quiver_worker_function_arguments`].
#[no_mangle]
pub unsafe extern "C" fn quiver_worker_function_result(
    worker: *const Attached,
    index: usize,
    out: *mut FFI_ArrowSchema,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard(err, err_cap, || {
        // SAFETY: by this function's contract.
        let attached = unsafe { handle(worker, "worker")? };
        let function = attached.function(index)?;
        let result = function.result.as_ref().ok_or_else(|| {
            Failure::invalid(format!("{} is not a scalar function", function.name))
        })?;
        let schema = FFI_ArrowSchema::try_from(result.as_ref())?;
        // SAFETY: by this function's contract.
        unsafe { write_out(out, schema, "out") }
    })
}

/// Describes parameter `parameter` of function `index` (the fields of its arguments schema).
///
/// # Safety
/// `worker` a live handle, `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn quiver_worker_parameter(
    worker: *const Attached,
    index: usize,
    parameter: usize,
    out: *mut ParameterC,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard(err, err_cap, || {
        // SAFETY: by this function's contract.
        let attached = unsafe { handle(worker, "worker")? };
        attached.function(index)?;
        let p = attached.parameters[index].get(parameter).ok_or_else(|| {
            Failure::invalid(format!(
                "parameter {parameter} of function {index} out of range"
            ))
        })?;
        let [named, table, any, constant, varargs] = p.flags.map(i32::from);
        let view = ParameterC {
            name: p.name.as_ptr(),
            default_json: p
                .default_json
                .as_ref()
                .map_or(std::ptr::null(), |d| d.as_ptr()),
            named,
            table,
            any,
            constant,
            varargs,
        };
        // SAFETY: by this function's contract.
        unsafe { write_out(out, view, "out") }
    })
}

/// A function of a kind the engine cannot call yet: the catalog registers a placeholder under its
/// name whose every call fails with `refusal`.
#[repr(C)]
pub struct SkippedC {
    /// Its name.
    pub name: *const c_char,
    /// Its schema.
    pub schema: *const c_char,
    /// Its kind as declared (`aggregate`, `table_buffering`).
    pub kind: *const c_char,
    /// What a call of it answers.
    pub refusal: *const c_char,
}

/// How many of the worker's functions are of kinds the engine cannot call yet.
///
/// # Safety
/// `worker` a live handle.
#[no_mangle]
pub unsafe extern "C" fn quiver_worker_skipped_count(worker: *const Attached) -> usize {
    // SAFETY: by this function's contract.
    unsafe { worker.as_ref() }.map_or(0, |a| a.skipped.len())
}

/// Describes skipped function `index` (strings valid until the handle is freed).
///
/// # Safety
/// `worker` a live handle, `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn quiver_worker_skipped(
    worker: *const Attached,
    index: usize,
    out: *mut SkippedC,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard(err, err_cap, || {
        // SAFETY: by this function's contract.
        let attached = unsafe { handle(worker, "worker")? };
        let [name, schema, kind, refusal] = attached
            .skipped
            .get(index)
            .ok_or_else(|| Failure::invalid(format!("skipped function {index} out of range")))?;
        let view = SkippedC {
            name: name.as_ptr(),
            schema: schema.as_ptr(),
            kind: kind.as_ptr(),
            refusal: refusal.as_ptr(),
        };
        // SAFETY: by this function's contract.
        unsafe { write_out(out, view, "out") }
    })
}
