//! The report is a pure function of the measurements: the committed results re-render to themselves.

use std::path::Path;

use serde_json::Value;

use crate::peer::{PeerInfo, PeerRun};
use crate::plan::{Measurement, Plan};

use super::{write, Machine, Run};

/// Rebuilds the run a saved `rpc.json` describes: its records carry every rep as measured.
fn run_parts(saved: &Value) -> (Plan, Vec<Measurement>, PeerRun, Vec<String>, Machine, f64) {
    let plan: Plan = serde_json::from_value(saved["plan"].clone()).unwrap();
    let measurements = saved["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|record| Measurement {
            workload: record["workload"].as_str().unwrap().to_string(),
            variant: record["variant"].as_str().unwrap().to_string(),
            transport: record["transport"].as_str().unwrap().to_string(),
            implementation: record["implementation"].as_str().unwrap().to_string(),
            placement: record["placement"].as_str().unwrap().to_string(),
            rows_per_op: record["rows"].as_u64().unwrap(),
            bytes_per_op: record["bytes"].as_u64().unwrap(),
            reps: serde_json::from_value(record["rep_results"].clone()).unwrap(),
        })
        .collect();
    let peer = PeerRun {
        info: serde_json::from_value::<PeerInfo>(saved["peer"]["info"].clone()).unwrap(),
        measurements: Vec::new(),
        failure: serde_json::from_value(saved["peer"]["failure"].clone()).unwrap(),
    };
    let failures = serde_json::from_value(saved["failures"].clone()).unwrap();
    let machine = serde_json::from_value(saved["machine"].clone()).unwrap();
    (
        plan,
        measurements,
        peer,
        failures,
        machine,
        saved["wall_s"].as_f64().unwrap(),
    )
}

/// The committed `bench/results/rpc.{json,md}` re-rendered from the json's own records are
/// the committed files, byte for byte: the report is a pure function of the measurements.
#[test]
fn saved_results_render_to_the_saved_files() {
    let results = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/results");
    let saved_json = std::fs::read_to_string(results.join("rpc.json")).unwrap();
    let saved_md = std::fs::read_to_string(results.join("rpc.md")).unwrap();
    let saved: Value = serde_json::from_str(&saved_json).unwrap();
    let (plan, measurements, peer, failures, machine, wall_s) = run_parts(&saved);
    assert!(!measurements.is_empty());
    let run = Run {
        plan: &plan,
        measurements: &measurements,
        peer: &peer,
        failures: &failures,
        machine: &machine,
        wall_s,
    };
    let dir = std::env::temp_dir().join(format!("quiver-bench-report-{}", std::process::id()));
    let markdown = write(&run, &dir).unwrap();
    let json = std::fs::read_to_string(dir.join("rpc.json")).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(markdown, saved_md);
    let rendered: Value = serde_json::from_str(&json).unwrap();
    assert_same(&rendered, &saved, "rpc.json");
}

/// JSON equality up to the last bits of a float: reading a float back from text is not
/// always exact (serde_json's default parser), so a re-rendered value may differ in its
/// 17th significant digit.
fn assert_same(rendered: &Value, saved: &Value, at: &str) {
    match (rendered, saved) {
        (Value::Number(r), Value::Number(s)) => {
            let (r, s) = (r.as_f64().unwrap(), s.as_f64().unwrap());
            assert!(
                (r - s).abs() <= 1e-12 * s.abs().max(f64::MIN_POSITIVE),
                "{at}: {r} != {s}"
            );
        }
        (Value::Array(r), Value::Array(s)) => {
            assert_eq!(r.len(), s.len(), "{at}: lengths differ");
            for (index, (r, s)) in r.iter().zip(s).enumerate() {
                assert_same(r, s, &format!("{at}[{index}]"));
            }
        }
        (Value::Object(r), Value::Object(s)) => {
            assert_eq!(
                r.keys().collect::<Vec<_>>(),
                s.keys().collect::<Vec<_>>(),
                "{at}: keys differ"
            );
            for (key, r) in r {
                assert_same(r, &s[key], &format!("{at}.{key}"));
            }
        }
        _ => assert_eq!(rendered, saved, "{at}"),
    }
}
