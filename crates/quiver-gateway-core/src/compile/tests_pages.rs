//! Pages: a keyset cursor bound to its request and snapshot, and a result cut to its page.

use super::tests::{error, key, project, run};
use super::*;

#[test]
fn a_cursor_is_bound_to_its_request_and_snapshot() {
    use arrow_array::{ArrayRef, Int64Array, StringArray};
    use std::sync::Arc;
    let project = project();
    let dates = [("from", "2026-01-01"), ("to", "2026-01-31")];
    let compiled = run(&project, "usage_summary", &dates).unwrap();
    let batch = RecordBatch::try_from_iter(vec![
        (
            "account_id",
            Arc::new(StringArray::from(vec![Some("a"), None])) as ArrayRef,
        ),
        (
            "api_calls_total",
            Arc::new(Int64Array::from(vec![10, 5])) as ArrayRef,
        ),
        (
            "storage_gb_avg",
            Arc::new(arrow_array::Float64Array::from(vec![0.5, 1.5])) as ArrayRef,
        ),
    ])
    .unwrap();
    let text = compiled.next_cursor(&batch, 1).unwrap().unwrap();
    let next = run(
        &project,
        "usage_summary",
        &[dates[0], dates[1], ("cursor", &text)],
    )
    .unwrap();
    assert!(
        next.sql.contains(
            "WHERE (((\"api_calls_total\" < $4 OR \"api_calls_total\" IS NULL)) OR \
             (\"api_calls_total\" = $4 AND \"account_id\" IS NULL AND (\"storage_gb_avg\" > $5 OR \"storage_gb_avg\" IS NULL))) ORDER BY"
        ),
        "{}",
        next.sql
    );
    assert_eq!(next.values[3], Value::I64(5));
    assert_eq!(next.values[4], Value::F64(1.5));
    assert_ne!(next.canonical, compiled.canonical);
    // Another request's params, another endpoint, another snapshot.
    let other = error(
        &project,
        "usage_summary",
        &[dates[0], ("to", "2026-02-28"), ("cursor", &text)],
    );
    assert_eq!(other, "param `cursor`: cursor is invalid");
    let endpoint = project.endpoint("usage_summary").unwrap();
    let query: Vec<(String, String)> = [dates[0], dates[1], ("cursor", text.as_str())]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let expired = compile(
        endpoint,
        project.dataset("usage").unwrap(),
        "t",
        "s2",
        &query,
        Some("tenant_acme"),
        &key(),
    );
    assert!(expired.unwrap_err().message.contains("cursor expired"));
    let forged = compile(
        endpoint,
        project.dataset("usage").unwrap(),
        "t",
        "s1",
        &query,
        Some("tenant_acme"),
        &CursorKey::from_bytes([2; 32]),
    );
    assert_eq!(
        forged.unwrap_err().message,
        "param `cursor`: cursor is invalid"
    );
}

#[test]
fn finish_cuts_the_page_and_hides_order_keys() {
    use arrow_array::{ArrayRef, Int64Array, StringArray};
    use std::sync::Arc;
    let project = project();
    let compiled = run(
        &project,
        "usage_summary",
        &[
            ("from", "2026-01-01"),
            ("to", "2026-01-31"),
            ("limit", "2"),
            ("columns", "account_id"),
        ],
    )
    .unwrap();
    assert_eq!(
        compiled.selected,
        ["account_id", "api_calls_total", "storage_gb_avg"]
    );
    let batch = |ids: Vec<&str>, totals: Vec<i64>| {
        let gb = vec![1.0; ids.len()];
        RecordBatch::try_from_iter(vec![
            ("account_id", Arc::new(StringArray::from(ids)) as ArrayRef),
            (
                "api_calls_total",
                Arc::new(Int64Array::from(totals)) as ArrayRef,
            ),
            (
                "storage_gb_avg",
                Arc::new(arrow_array::Float64Array::from(gb)) as ArrayRef,
            ),
        ])
        .unwrap()
    };
    let page = compiled
        .finish(vec![
            batch(vec!["a"], vec![9]),
            batch(vec!["b", "c"], vec![8, 7]),
        ])
        .unwrap();
    assert_eq!(page.row_count, 2);
    assert_eq!(
        page.batches
            .iter()
            .map(RecordBatch::num_rows)
            .sum::<usize>(),
        2
    );
    assert!(page.batches.iter().all(|b| b.num_columns() == 1));
    assert!(page.next_cursor.is_some());
    let last = compiled
        .finish(vec![batch(vec!["a", "b"], vec![9, 8])])
        .unwrap();
    assert_eq!(last.row_count, 2);
    assert!(
        last.next_cursor.is_none(),
        "no row beyond the page: no next page"
    );
}
