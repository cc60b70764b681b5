//! The C view of what a worker says about its catalog, schemas and functions (`quiver_docs`):
//! comments, tags, example queries, categories. The strings live as long as the worker handle.

use std::ffi::{c_char, CString};

use crate::attached::Attached;
use crate::catalog_docs::Docs;
use crate::ffi::{guard, handle, write_out, Failure};

/// One object's documentation, as `quiver_docs` in C. Pointers into a [`DocsStrings`].
#[repr(C)]
pub struct DocsC {
    /// Its comment, or null.
    pub comment: *const c_char,
    /// How many tags.
    pub tag_count: usize,
    /// The tags' keys.
    pub tag_keys: *const *const c_char,
    /// The tags' values, in the keys' order.
    pub tag_values: *const *const c_char,
    /// How many example queries.
    pub example_count: usize,
    /// Each example's SQL.
    pub examples: *const *const c_char,
    /// How many categories.
    pub category_count: usize,
    /// The categories.
    pub categories: *const *const c_char,
}

/// The C strings of one object's [`Docs`] and the pointer arrays over them.
pub struct DocsStrings {
    comment: Option<CString>,
    owned: Vec<CString>,
    tag_keys: Vec<*const c_char>,
    tag_values: Vec<*const c_char>,
    examples: Vec<*const c_char>,
    categories: Vec<*const c_char>,
}

// SAFETY: the raw pointers point into `owned`, which the struct owns and never changes after
// construction (a CString's heap buffer does not move when the vector holding it does).
unsafe impl Send for DocsStrings {}
// SAFETY: as above; nothing is mutated after construction.
unsafe impl Sync for DocsStrings {}

fn cstring(text: &str) -> CString {
    CString::new(text.replace('\0', " ")).expect("NULs replaced")
}

impl DocsStrings {
    /// The C strings of `docs`.
    pub fn new(docs: &Docs) -> DocsStrings {
        let mut owned = Vec::new();
        let mut pointers = |texts: &mut dyn Iterator<Item = &String>| -> Vec<*const c_char> {
            texts
                .map(|text| {
                    let text = cstring(text);
                    let pointer = text.as_ptr();
                    owned.push(text);
                    pointer
                })
                .collect()
        };
        let tag_keys = pointers(&mut docs.tags.iter().map(|(k, _)| k));
        let tag_values = pointers(&mut docs.tags.iter().map(|(_, v)| v));
        let examples = pointers(&mut docs.examples.iter());
        let categories = pointers(&mut docs.categories.iter());
        DocsStrings {
            comment: docs.comment.as_deref().map(cstring),
            owned,
            tag_keys,
            tag_values,
            examples,
            categories,
        }
    }

    /// The C view.
    pub fn view(&self) -> DocsC {
        debug_assert!(self.owned.len() >= self.tag_keys.len());
        DocsC {
            comment: self
                .comment
                .as_ref()
                .map_or(std::ptr::null(), |c| c.as_ptr()),
            tag_count: self.tag_keys.len(),
            tag_keys: self.tag_keys.as_ptr(),
            tag_values: self.tag_values.as_ptr(),
            example_count: self.examples.len(),
            examples: self.examples.as_ptr(),
            category_count: self.categories.len(),
            categories: self.categories.as_ptr(),
        }
    }
}

/// The catalog's own comment and tags.
///
/// # Safety
/// `worker` a live handle, `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn quiver_worker_catalog_docs(
    worker: *const Attached,
    out: *mut DocsC,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard(err, err_cap, || {
        // SAFETY: by this function's contract.
        let attached = unsafe { handle(worker, "worker")? };
        // SAFETY: by this function's contract.
        unsafe { write_out(out, attached.docs.catalog.view(), "out") }
    })
}

/// How many schemas the worker declares (the default schema and every schema a function names
/// among them).
///
/// # Safety
/// `worker` a live handle.
#[no_mangle]
pub unsafe extern "C" fn quiver_worker_schema_count(worker: *const Attached) -> usize {
    // SAFETY: by this function's contract.
    unsafe { worker.as_ref() }.map_or(0, |a| a.docs.schemas.len())
}

/// Schema `index`: its name (path components joined with '.') and its comment and tags.
///
/// # Safety
/// `worker` a live handle, `name` and `out` valid for one write each.
#[no_mangle]
pub unsafe extern "C" fn quiver_worker_schema(
    worker: *const Attached,
    index: usize,
    name: *mut *const c_char,
    out: *mut DocsC,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard(err, err_cap, || {
        // SAFETY: by this function's contract.
        let attached = unsafe { handle(worker, "worker")? };
        let (schema, docs) = attached
            .docs
            .schemas
            .get(index)
            .ok_or_else(|| Failure::invalid(format!("schema {index} out of range")))?;
        // SAFETY: by this function's contract.
        unsafe {
            write_out(name, schema.as_ptr(), "name")?;
            write_out(out, docs.view(), "out")
        }
    })
}

/// Function `index`'s comment, tags, example queries and categories.
///
/// # Safety
/// `worker` a live handle, `out` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn quiver_worker_function_docs(
    worker: *const Attached,
    index: usize,
    out: *mut DocsC,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard(err, err_cap, || {
        // SAFETY: by this function's contract.
        let attached = unsafe { handle(worker, "worker")? };
        attached.function(index)?;
        // SAFETY: by this function's contract.
        unsafe { write_out(out, attached.docs.functions[index].view(), "out") }
    })
}

/// The C strings of everything an attached worker documents.
pub struct AttachedDocs {
    catalog: DocsStrings,
    schemas: Vec<(CString, DocsStrings)>,
    functions: Vec<DocsStrings>,
}

impl AttachedDocs {
    /// The documentation discovery found.
    pub fn new(found: &crate::catalog::Discovered) -> AttachedDocs {
        AttachedDocs {
            catalog: DocsStrings::new(&found.docs),
            schemas: found
                .schemas
                .iter()
                .map(|s| (cstring(&s.path.join(".")), DocsStrings::new(&s.docs)))
                .collect(),
            functions: found
                .functions
                .iter()
                .map(|f| DocsStrings::new(&f.docs))
                .collect(),
        }
    }
}
