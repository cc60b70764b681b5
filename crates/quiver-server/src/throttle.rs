//! Failed authentication, slowed per peer: after [`FREE_FAILURES`] wrong credentials from one
//! address, that address is locked out for a window that doubles with each further failure, up
//! to [`LOCKOUT_MAX`]. While locked out its attempts are refused without being checked (and count
//! as failures), so a guesser gets a few tries a minute instead of hundreds a second. A success
//! outside a lockout forgets the address. Peers are IPv4 addresses and IPv6 /64 networks (one
//! host owns a whole /64); the table holds at most [`PEERS_MAX`] of them, forgetting the one
//! whose last failure is oldest, so its memory is bounded whatever a caller sends.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Wrong credentials a peer may present before the first lockout.
pub const FREE_FAILURES: u32 = 10;
/// The first lockout; each further failure doubles it.
pub const LOCKOUT_FIRST: Duration = Duration::from_secs(1);
/// The longest lockout.
pub const LOCKOUT_MAX: Duration = Duration::from_secs(60);
/// Most peers remembered.
pub const PEERS_MAX: usize = 4096;

/// A peer as the throttle keys it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Peer {
    /// An IPv4 address (IPv4-mapped IPv6 addresses included).
    V4([u8; 4]),
    /// The /64 network of an IPv6 address.
    V6([u8; 8]),
}

impl Peer {
    /// The key of `address`.
    pub fn of(address: IpAddr) -> Peer {
        match address {
            IpAddr::V4(v4) => Peer::V4(v4.octets()),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => Peer::V4(v4.octets()),
                None => {
                    let mut network = [0u8; 8];
                    network.copy_from_slice(&v6.octets()[..8]);
                    Peer::V6(network)
                }
            },
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Failures {
    count: u32,
    last: Instant,
    locked_until: Option<Instant>,
}

/// What a failure did to its peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Failure {
    /// Failures of this peer in a row.
    pub count: u32,
    /// The lockout this failure started or extended, if any.
    pub locked_for: Option<Duration>,
}

/// The failures of every peer lately.
#[derive(Default)]
pub struct Throttle {
    peers: Mutex<HashMap<Peer, Failures>>,
}

impl Throttle {
    /// Whether `peer` may present credentials now (`false`: locked out).
    pub fn admits(&self, peer: Peer, now: Instant) -> bool {
        let peers = self.lock();
        let locked_until = peers.get(&peer).and_then(|f| f.locked_until);
        locked_until.is_none_or(|until| now >= until)
    }

    /// Records wrong (or locked-out) credentials from `peer`.
    pub fn failed(&self, peer: Peer, now: Instant) -> Failure {
        let mut peers = self.lock();
        if !peers.contains_key(&peer) && peers.len() >= PEERS_MAX {
            let oldest = peers.iter().min_by_key(|(_, f)| f.last).map(|(p, _)| *p);
            if let Some(oldest) = oldest {
                peers.remove(&oldest);
            }
        }
        let failures = peers.entry(peer).or_insert(Failures {
            count: 0,
            last: now,
            locked_until: None,
        });
        failures.count = failures.count.saturating_add(1);
        failures.last = now;
        let locked_for = lockout(failures.count);
        failures.locked_until = locked_for.map(|window| now + window);
        Failure {
            count: failures.count,
            locked_for,
        }
    }

    /// Forgets `peer`'s failures (it presented the right credentials).
    pub fn succeeded(&self, peer: Peer) {
        self.lock().remove(&peer);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Peer, Failures>> {
        self.peers.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The lockout after `count` failures in a row.
fn lockout(count: u32) -> Option<Duration> {
    let beyond = count.checked_sub(FREE_FAILURES)?;
    let doublings = beyond.min(16);
    Some((LOCKOUT_FIRST * 2u32.pow(doublings)).min(LOCKOUT_MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(last: u8) -> Peer {
        Peer::of(IpAddr::from([10, 0, 0, last]))
    }

    #[test]
    fn failures_lock_a_peer_out_and_not_the_others() {
        let throttle = Throttle::default();
        let now = Instant::now();
        for n in 1..FREE_FAILURES {
            assert_eq!(throttle.failed(v4(1), now).locked_for, None, "failure {n}");
            assert!(throttle.admits(v4(1), now));
        }
        assert_eq!(throttle.failed(v4(1), now).locked_for, Some(LOCKOUT_FIRST));
        assert!(!throttle.admits(v4(1), now));
        assert!(throttle.admits(v4(2), now));
        assert!(throttle.admits(v4(1), now + LOCKOUT_FIRST));
        for _ in 0..40 {
            throttle.failed(v4(1), now);
        }
        assert!(!throttle.admits(v4(1), now + LOCKOUT_MAX - Duration::from_millis(1)));
        assert!(throttle.admits(v4(1), now + LOCKOUT_MAX));
        throttle.succeeded(v4(1));
        assert!(throttle.admits(v4(1), now));
    }

    #[test]
    fn the_table_is_bounded_and_ipv6_is_keyed_by_network() {
        let throttle = Throttle::default();
        let now = Instant::now();
        for n in 0..PEERS_MAX as u32 + 10 {
            throttle.failed(Peer::of(IpAddr::from(n.to_be_bytes())), now);
        }
        assert_eq!(throttle.lock().len(), PEERS_MAX);
        let a: IpAddr = "2001:db8:1:2::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:ffff::9".parse().unwrap();
        let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        assert_eq!(Peer::of(a), Peer::of(b));
        assert_eq!(Peer::of(mapped), v4(1));
    }
}
