//! Split scans: `table_function_plan` for a table function that declares
//! [`TableFunction::splits`](crate::TableFunction::splits), and the redemption of one split
//! token at `init`. The plan is paged (`max_splits_per_response`, else [`PAGE_SPLITS`]); a
//! cursor is the offset of the next split. Tokens are VGI's envelope around the payload, bound
//! to the bind by a fingerprint; this SDK holds no signing key, so it never seals them.

use std::sync::Arc;

use arrow_array::{ArrayRef, BinaryArray};
use arrow_schema::DataType;
use quiver_rpc::{field, Method, Service};
use quiver_secret::Secret;
use quiver_vgi_contract::splits::{
    split_token, PlanRequest, PlanResponse, ScanSplit, PLAN_SPLITS_MAX,
};
use quiver_vgi_contract::{errors, methods, BindRequest};
use quiver_wire::ErrorReport;

use crate::bind::{bind_call, Bound};
use crate::catalog::Catalog;
use crate::function::Body;

/// Splits one plan page carries when the engine asks for no fewer.
pub const PAGE_SPLITS: usize = 1024;

/// The 16 bytes that bind a token to the call it was planned for.
pub(crate) fn fingerprint(bind: &BindRequest) -> [u8; split_token::FINGERPRINT_LEN] {
    let arguments: String = bind
        .arguments
        .encode()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let identity = format!(
        "quiver.split_token.v1\0{}\0{:?}\0{arguments}",
        bind.function_name, bind.schema_path
    );
    let digest = Secret::digest_of(&identity);
    let mut print = [0u8; split_token::FINGERPRINT_LEN];
    print.copy_from_slice(&digest[..split_token::FINGERPRINT_LEN]);
    print
}

/// The payload of the one split an `init` redeems.
pub(crate) fn redeem(
    bound: &Bound,
    bind: &BindRequest,
    tokens: &[Vec<u8>],
) -> Result<Vec<u8>, ErrorReport> {
    let name = &bound.function.name;
    let [token] = tokens else {
        return Err(errors::invalid_argument(format!(
            "{name}(): an init redeems one split, got {} tokens",
            tokens.len()
        )));
    };
    split_token::open(token, &fingerprint(bind))
        .map(<[u8]>::to_vec)
        .map_err(errors::invalid_argument)
}

fn page(
    bound: &Bound,
    bind: &BindRequest,
    request: &PlanRequest,
) -> Result<PlanResponse, ErrorReport> {
    let name = &bound.function.name;
    let Body::Table {
        splits: Some(splits),
        ..
    } = &bound.function.body
    else {
        // Not split-capable: one split standing for the whole scan, as vgi-python answers.
        return Ok(PlanResponse {
            splits: vec![ScanSplit::default()],
            ..PlanResponse::default()
        });
    };
    let payloads = splits(&bound.args)?;
    if payloads.len() > PLAN_SPLITS_MAX {
        return Err(errors::invalid_argument(format!(
            "{name}(): a plan of more than {PLAN_SPLITS_MAX} splits"
        )));
    }
    let start = match &request.cursor {
        None => 0,
        Some(cursor) => <[u8; 8]>::try_from(cursor.as_slice())
            .ok()
            .and_then(|b| usize::try_from(u64::from_le_bytes(b)).ok())
            .filter(|&s| s <= payloads.len())
            .ok_or_else(|| {
                errors::invalid_argument(format!("{name}(): a plan cursor outside the plan"))
            })?,
    };
    let per_page = request
        .max_splits_per_response
        .and_then(|n| usize::try_from(n).ok())
        .filter(|&n| n > 0)
        .map_or(PAGE_SPLITS, |n| n.min(PAGE_SPLITS));
    let end = payloads.len().min(start + per_page);
    let print = fingerprint(bind);
    Ok(PlanResponse {
        splits: payloads[start..end]
            .iter()
            .map(|payload| ScanSplit {
                token: split_token::build(payload, &print),
                payload: payload.clone(),
                ..ScanSplit::default()
            })
            .collect(),
        next_cursors: if end < payloads.len() {
            vec![(end as u64).to_le_bytes().to_vec()]
        } else {
            vec![]
        },
        max_workers: bound.function.caps.max_workers.map(i64::from),
        estimated_total_splits: i64::try_from(payloads.len()).ok(),
        ..PlanResponse::default()
    })
}

/// Registers `table_function_plan`.
pub fn register(service: &mut Service, catalog: Arc<Catalog>) {
    let params = vec![field("request", DataType::Binary, false)];
    let result = Some(field("result", DataType::Binary, false));
    service.add(Method::unary(
        methods::TABLE_FUNCTION_PLAN,
        params,
        result,
        move |params, _| {
            let request = PlanRequest::decode(params.bytes("request")?)?;
            let bind = BindRequest::decode(&request.bind_call)?;
            let bound = bind_call(&catalog, &bind)?;
            let bytes = page(&bound, &bind, &request)?.encode();
            Ok(Some(
                Arc::new(BinaryArray::from(vec![bytes.as_slice()])) as ArrayRef
            ))
        },
    ));
}
