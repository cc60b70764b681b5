//! Who may ask, and how much, on both ports: API keys (`auth.rs`: bearer tokens hashed and
//! compared in constant time, the keys file reloaded failing closed), the admin token
//! (`admin_token.rs`, the same comparison), per-key rate limits (`rate_limit.rs`), and admission
//! to the server's connections (`admission.rs`: a bounded wait, then shedding).

pub mod admin_token;
pub mod admission;
pub mod auth;
pub mod rate_limit;
