//! The conformance service describes itself as vgi-rpc's reference does.

use quiver_conformance::{conformance_service, secondary_service};
use quiver_rpc::protocol_hash;

/// vgi-rpc 0.52.2's `compute_protocol_hash("ConformanceService", ...)` over its
/// own protocol declaration: equal only if every method's name, kind, and
/// parameter, result and header schema (names, order, types, nullability)
/// match the reference's.
const REFERENCE_HASH: &str = "05479410c96f34410a2b10a4f6a49d59dcfd9d6d1d45ce9a9807d060a3bd6014";

#[test]
fn protocol_hash_matches_the_reference() {
    assert_eq!(
        protocol_hash(&conformance_service()).unwrap(),
        REFERENCE_HASH
    );
}

#[test]
fn serves_every_method_of_the_protocol() {
    assert_eq!(conformance_service().methods().count(), 90);
}

/// vgi-rpc 0.52.2's pinned `SECONDARY_PROTOCOL_HASH` for `conformance.Secondary.v1`.
#[test]
fn secondary_hash_matches_the_pinned_one() {
    assert_eq!(
        protocol_hash(&secondary_service()).unwrap(),
        "58557cf1611546ad22d1c379bc3ce1b04166082f78375e9fc959f0086347eab6"
    );
}
