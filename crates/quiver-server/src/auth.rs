//! The access token, a `quiver_secret::Secret` (SHA-256 digests compared in constant time; generated
//! tokens are 128 random bits from `quiver_secret::random`). [`verify`] is every door's one check of
//! presented credentials: the per-peer throttle, the comparison, the count and the log line (which
//! names the peer, never what it presented); [`cancel_by_id`] is the same check for a `cancel`
//! whose credential is the session's id.

use std::net::IpAddr;
use std::time::Instant;

use quiver_secret::Secret;
use quiver_server_protocol::limits::TOKEN_BYTES_MAX;

use crate::admission::Door;
use crate::events::Field;
use crate::metrics::metrics;
use crate::server::Shared;
use crate::throttle::Peer;

/// The token a listener requires: a [`Secret`], kept as its digest and compared in constant time.
pub type Token = Secret;

/// Whether the credentials `presented` by `peer` (at `ip`, for a TCP peer) at `door` are the
/// server's token; always `true` on a server without one. A peer locked out by the throttle is
/// refused without a comparison; every refusal is counted, and each one compared is logged.
pub fn verify(
    shared: &Shared,
    door: Door,
    peer: &str,
    ip: Option<IpAddr>,
    presented: Option<&str>,
) -> bool {
    let Some(token) = &shared.token else {
        return true;
    };
    let key = ip.map(Peer::of);
    let now = Instant::now();
    let admitted = key.is_none_or(|key| shared.throttle.admits(key, now));
    let accepted = admitted
        && presented.is_some_and(|text| text.len() <= TOKEN_BYTES_MAX && token.matches(text));
    if accepted {
        if let Some(key) = key {
            shared.throttle.succeeded(key);
        }
        return true;
    }
    failed(shared, door, peer, key, admitted, now);
    false
}

/// Counts a refused credential against its peer, and logs it unless the peer was locked out
/// already (one line per lockout, not per try).
fn failed(
    shared: &Shared,
    door: Door,
    peer: &str,
    key: Option<Peer>,
    admitted: bool,
    now: Instant,
) {
    metrics().auth_failure(door.as_str());
    let failure = key.map(|key| shared.throttle.failed(key, now));
    if !admitted {
        return;
    }
    let mut fields = vec![
        ("door", Field::Text(door.as_str())),
        ("peer", Field::Text(peer)),
    ];
    if let Some(failure) = failure {
        fields.push(("failures", Field::Count(failure.count.into())));
        if let Some(window) = failure.locked_for {
            fields.push(("locked_out", Field::Millis(window)));
        }
    }
    shared.events.emit("auth_failed", &fields);
}

/// A `cancel` presented by a connection that never authenticated: the session id is its
/// credential. `None` (refused, counted and logged as a failed authentication, under the same
/// per-peer lockout as a wrong token) when the peer is locked out or no open session has that id;
/// else whether a statement was running.
pub fn cancel_by_id(
    shared: &Shared,
    door: Door,
    peer: &str,
    ip: Option<IpAddr>,
    presented: Option<&str>,
) -> Option<bool> {
    let key = ip.map(Peer::of);
    let now = Instant::now();
    let admitted = key.is_none_or(|key| shared.throttle.admits(key, now));
    let found = presented
        .filter(|id| admitted && quiver_server_protocol::session::is_session_id(id))
        .and_then(|id| shared.registry.cancel(id));
    if found.is_some() {
        if let Some(key) = key {
            shared.throttle.succeeded(key);
        }
        return found;
    }
    failed(shared, door, peer, key, admitted, now);
    None
}
