//! A pool of connections to one server: at most `size` open at once, opened when first needed,
//! handed back on drop of the guard, and discarded when a call broke them.

use std::ops::{Deref, DerefMut};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use quiver_server_protocol::Address;

use crate::connection::Connection;
use crate::error::{Error, Result};
use crate::options::{ConnectOptions, IntoAddress};

/// Most connections one pool holds.
pub const POOL_SIZE_MAX: usize = 1024;

struct Slots {
    idle: Vec<Connection>,
    /// Connections open: idle plus lent out.
    open: usize,
}

/// Connections to one server, shared by threads.
pub struct Pool {
    address: Address,
    options: ConnectOptions,
    size: usize,
    wait_max: Duration,
    slots: Mutex<Slots>,
    returned: Condvar,
}

impl Pool {
    /// A pool of at most `size` connections to `address`; none is opened yet. A `get` waits up
    /// to `wait_max` for a connection when all are lent out.
    pub fn new(
        address: impl IntoAddress,
        options: ConnectOptions,
        size: usize,
        wait_max: Duration,
    ) -> Result<Pool> {
        if !(1..=POOL_SIZE_MAX).contains(&size) {
            return Err(Error::InvalidInput(format!(
                "pool size must be 1..={POOL_SIZE_MAX}, not {size}"
            )));
        }
        options.check()?;
        Ok(Pool {
            address: address.into_address()?,
            options,
            size,
            wait_max,
            slots: Mutex::new(Slots {
                idle: Vec::new(),
                open: 0,
            }),
            returned: Condvar::new(),
        })
    }

    /// A connection: an idle one, a new one while fewer than `size` are open, or the next one
    /// handed back.
    pub fn get(&self) -> Result<PooledConnection<'_>> {
        let deadline = Instant::now() + self.wait_max;
        let mut slots = self.lock();
        loop {
            if let Some(connection) = slots.idle.pop() {
                return Ok(self.lend(connection));
            }
            if slots.open < self.size {
                slots.open += 1;
                drop(slots);
                return match Connection::connect_with(&self.address, &self.options) {
                    Ok(connection) => Ok(self.lend(connection)),
                    Err(error) => {
                        self.forget_one();
                        Err(error)
                    }
                };
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Error::InvalidInput(format!(
                    "no pooled connection free within {} s ({} open)",
                    self.wait_max.as_secs_f64(),
                    slots.open
                )));
            }
            slots = self
                .returned
                .wait_timeout(slots, left)
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .0;
        }
    }

    /// Connections open now (idle and lent out).
    pub fn open(&self) -> usize {
        self.lock().open
    }

    /// Idle connections now.
    pub fn idle(&self) -> usize {
        self.lock().idle.len()
    }

    fn lend(&self, connection: Connection) -> PooledConnection<'_> {
        PooledConnection {
            pool: self,
            connection: Some(connection),
            broken: false,
        }
    }

    fn forget_one(&self) {
        let mut slots = self.lock();
        assert!(slots.open > 0, "a pool forgets only connections it opened");
        slots.open -= 1;
        drop(slots);
        self.returned.notify_one();
    }

    fn give_back(&self, connection: Connection) {
        let mut slots = self.lock();
        assert!(
            slots.idle.len() < slots.open,
            "a returned connection was lent"
        );
        slots.idle.push(connection);
        drop(slots);
        self.returned.notify_one();
    }

    fn lock(&self) -> MutexGuard<'_, Slots> {
        self.slots
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A connection lent by a [`Pool`]; it goes back on drop, unless marked broken.
pub struct PooledConnection<'p> {
    pool: &'p Pool,
    connection: Option<Connection>,
    broken: bool,
}

impl PooledConnection<'_> {
    /// Keeps this connection out of the pool (the pool opens a fresh one when needed). A
    /// connection a call broke ([`Connection::is_broken`]) is discarded without this.
    pub fn discard(&mut self) {
        self.broken = true;
    }
}

impl Deref for PooledConnection<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        self.connection.as_ref().expect("lent until dropped")
    }
}

impl DerefMut for PooledConnection<'_> {
    fn deref_mut(&mut self) -> &mut Connection {
        self.connection.as_mut().expect("lent until dropped")
    }
}

impl Drop for PooledConnection<'_> {
    fn drop(&mut self) {
        let connection = self.connection.take().expect("lent until dropped");
        if self.broken || connection.is_broken() || std::thread::panicking() {
            drop(connection);
            self.pool.forget_one();
        } else {
            self.pool.give_back(connection);
        }
    }
}
