//! State shared by the connections of one execution, keyed by execution id.
//!
//! Two things outlive a single stream: the work counter of a parallel table
//! scan (every connection claims from it) and a table-in-out substream's state
//! between its INPUT stream and its FINALIZE. Where the counter lives depends on
//! how the worker was launched: with `--unix` every connection of an engine
//! reaches this one process, so an atomic in memory suffices; on stdio each
//! connection is its own process, so the counter is a locked file
//! (`work_file.rs`). Both are bounded and removed when the scan ends. Behind a
//! load balancer (`--http` with a shared token key) no process outlives a turn,
//! so the counter travels in the stream's own token instead (`carry.rs`).

use std::collections::{HashMap, VecDeque};
use std::ops::Range;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use quiver_vgi_contract::errors;
use quiver_wire::ErrorReport;

use crate::in_out_state::InOutState;
use crate::limits::{EXECUTIONS_LIVE_MAX, FINALIZE_STATES_MAX};
use crate::logging::{self, Level};
use crate::work_file::WorkFile;

/// An execution id: 16 random bytes minted by the primary init.
pub type ExecutionId = [u8; 16];

/// Where shared work counters live.
#[derive(Clone, Debug)]
pub enum Sharing {
    /// In this process's memory: every connection reaches this process.
    InProcess,
    /// In files under `dir`: connections are separate processes (stdio).
    CrossProcess {
        /// The directory holding the work files.
        dir: PathBuf,
    },
    /// In each stream's own state: replicas behind a load balancer share nothing, so an
    /// execution's work is its primary connection's alone, and its counter travels with the
    /// stream from turn to turn (secondaries find no work).
    Carried,
}

/// The executions this process takes part in.
pub struct Executions {
    sharing: Sharing,
    counters: Mutex<HashMap<ExecutionId, Arc<MemoryCounter>>>,
    finalize_states: Mutex<VecDeque<Stashed>>,
}

struct MemoryCounter {
    next: AtomicU64,
    total: u64,
}

struct Stashed {
    execution: ExecutionId,
    substream: Vec<u8>,
    state: Box<dyn InOutState>,
}

impl Executions {
    /// A registry sharing work as `sharing` says.
    pub fn new(sharing: Sharing) -> Arc<Executions> {
        Arc::new(Executions {
            sharing,
            counters: Mutex::new(HashMap::new()),
            finalize_states: Mutex::new(VecDeque::new()),
        })
    }

    /// Whether an execution's connections may be separate processes (or replicas).
    pub fn is_cross_process(&self) -> bool {
        matches!(
            self.sharing,
            Sharing::CrossProcess { .. } | Sharing::Carried
        )
    }

    /// Whether streams carry their execution's work counter (replicas behind a load balancer).
    pub fn is_carried(&self) -> bool {
        matches!(self.sharing, Sharing::Carried)
    }

    /// Starts the shared work of a new execution: `total_units` to claim. The
    /// counter exists before this returns, so the primary's header (sent after)
    /// can never let a secondary arrive first.
    pub fn start(
        self: &Arc<Self>,
        id: ExecutionId,
        total_units: u64,
    ) -> Result<SharedWork, ErrorReport> {
        let inner = match &self.sharing {
            Sharing::InProcess => {
                let mut counters = self.counters.lock().expect("counters lock");
                if counters.len() >= EXECUTIONS_LIVE_MAX {
                    return Err(errors::resource_exhausted(format!(
                        "{EXECUTIONS_LIVE_MAX} parallel scans are already running in this worker"
                    )));
                }
                let counter = Arc::new(MemoryCounter {
                    next: AtomicU64::new(0),
                    total: total_units,
                });
                let previous = counters.insert(id, counter.clone());
                assert!(previous.is_none(), "execution ids are unique");
                Work::Memory(counter)
            }
            Sharing::CrossProcess { dir } => {
                let file = WorkFile::create(dir, &hex(&id), total_units).map_err(|e| {
                    errors::internal(format!(
                        "creating the shared work file in {}: {e}",
                        dir.display()
                    ))
                })?;
                Work::File(file)
            }
            Sharing::Carried => Work::Carried {
                next: 0,
                total: total_units,
            },
        };
        Ok(SharedWork {
            executions: self.clone(),
            id,
            inner,
            primary: true,
        })
    }

    /// The work of a carried execution, resumed where its token left it.
    pub fn resume(self: &Arc<Self>, id: ExecutionId, next: u64, total: u64) -> SharedWork {
        SharedWork {
            executions: self.clone(),
            id,
            inner: Work::Carried { next, total },
            primary: true,
        }
    }

    /// Joins the shared work of a running execution (a secondary init). An
    /// execution that is already gone has no work left.
    pub fn join(self: &Arc<Self>, id: ExecutionId) -> Result<SharedWork, ErrorReport> {
        let inner = match &self.sharing {
            Sharing::InProcess => {
                let counters = self.counters.lock().expect("counters lock");
                counters
                    .get(&id)
                    .map_or(Work::Done, |counter| Work::Memory(counter.clone()))
            }
            Sharing::CrossProcess { dir } => match WorkFile::open(dir, &hex(&id)) {
                Ok(Some(file)) => Work::File(file),
                Ok(None) => Work::Done,
                Err(e) => {
                    return Err(errors::internal(format!(
                        "opening the shared work file: {e}"
                    )))
                }
            },
            // The primary's counter is in its own stream: nothing is left to share.
            Sharing::Carried => Work::Done,
        };
        Ok(SharedWork {
            executions: self.clone(),
            id,
            inner,
            primary: false,
        })
    }

    /// Number of in-memory counters alive.
    #[cfg(test)]
    pub fn live_counters(&self) -> usize {
        self.counters.lock().expect("counters lock").len()
    }

    fn retire(&self, id: &ExecutionId, counter: &Arc<MemoryCounter>) {
        let mut counters = self.counters.lock().expect("counters lock");
        if counters
            .get(id)
            .is_some_and(|live| Arc::ptr_eq(live, counter))
        {
            counters.remove(id);
        }
    }

    /// Keeps a table-in-out substream's state for its FINALIZE.
    pub fn stash(&self, execution: ExecutionId, substream: Vec<u8>, state: Box<dyn InOutState>) {
        let mut states = self.finalize_states.lock().expect("finalize lock");
        if states.len() >= FINALIZE_STATES_MAX {
            let dropped = states.pop_front().expect("a full queue has a front");
            logging::log(
                Level::Warn,
                format!(
                    "dropping the finalize state of execution {} (more than {FINALIZE_STATES_MAX} waiting)",
                    hex(&dropped.execution)
                ),
            );
        }
        states.push_back(Stashed {
            execution,
            substream,
            state,
        });
    }

    /// Takes every stashed state of `execution`, the one of `substream` first
    /// (a FINALIZE on the primary connection finalizes all of its substreams that
    /// ran in this process).
    pub fn take_stashed(
        &self,
        execution: &ExecutionId,
        substream: &[u8],
    ) -> Vec<Box<dyn InOutState>> {
        let mut states = self.finalize_states.lock().expect("finalize lock");
        let mut taken: Vec<Stashed> = Vec::new();
        let mut kept = VecDeque::with_capacity(states.len());
        for entry in states.drain(..) {
            if &entry.execution == execution {
                taken.push(entry);
            } else {
                kept.push_back(entry);
            }
        }
        *states = kept;
        taken.sort_by_key(|entry| entry.substream != substream);
        taken.into_iter().map(|entry| entry.state).collect()
    }
}

enum Work {
    Memory(Arc<MemoryCounter>),
    File(WorkFile),
    /// Units `next..total` are still to claim; the counter is this stream's alone.
    Carried {
        next: u64,
        total: u64,
    },
    Done,
}

/// One connection's handle on its execution's work counter. The primary's
/// handle retires the counter when dropped; whoever first finds the work
/// exhausted retires it too, so a finished scan leaves nothing behind.
pub struct SharedWork {
    executions: Arc<Executions>,
    id: ExecutionId,
    inner: Work,
    primary: bool,
}

impl SharedWork {
    /// Claims up to `units_max` units of work; `None` when all are claimed.
    pub fn claim(&mut self, units_max: u64) -> Result<Option<Range<u64>>, ErrorReport> {
        assert!(units_max > 0, "a claim takes at least one unit");
        let claimed = match &mut self.inner {
            Work::Done => None,
            Work::Memory(counter) => {
                let start = counter
                    .next
                    .fetch_update(Ordering::AcqRel, Ordering::Acquire, |next| {
                        (next < counter.total)
                            .then(|| next.saturating_add(units_max).min(counter.total))
                    })
                    .ok();
                start.map(|start| start..start.saturating_add(units_max).min(counter.total))
            }
            Work::File(file) => file
                .claim(units_max)
                .map_err(|e| errors::internal(format!("claiming shared work: {e}")))?,
            Work::Carried { next, total } => (*next < *total).then(|| {
                let start = *next;
                *next = start.saturating_add(units_max).min(*total);
                start..*next
            }),
        };
        if claimed.is_none() {
            self.finish();
        }
        Ok(claimed)
    }

    /// Where a carried counter stands (`next`, `total`); `None` for a counter other
    /// connections share, which cannot travel.
    pub fn carried(&self) -> Option<(u64, u64)> {
        match &self.inner {
            Work::Carried { next, total } => Some((*next, *total)),
            Work::Done => Some((0, 0)),
            Work::Memory(_) | Work::File(_) => None,
        }
    }

    fn finish(&mut self) {
        match std::mem::replace(&mut self.inner, Work::Done) {
            Work::Memory(counter) => self.executions.retire(&self.id, &counter),
            Work::File(file) => file.remove(),
            Work::Carried { .. } | Work::Done => {}
        }
    }
}

impl Drop for SharedWork {
    fn drop(&mut self) {
        if self.primary {
            self.finish();
        }
    }
}

/// A fresh execution id from the kernel's random source.
pub fn mint_id() -> ExecutionId {
    quiver_secret::random::bytes()
}

/// An execution id as the engine sent it: ours are exactly 16 bytes.
pub fn parse_id(bytes: &[u8]) -> Result<ExecutionId, ErrorReport> {
    bytes.try_into().map_err(|_| {
        errors::invalid_argument(format!(
            "execution_id must be the 16 bytes this worker minted, got {} byte(s)",
            bytes.len()
        ))
    })
}

/// Lowercase hex, for file names and logs.
pub fn hex(bytes: &[u8]) -> String {
    quiver_secret::hex::encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_process_work_is_claimed_once_and_retired() {
        let executions = Executions::new(Sharing::InProcess);
        let id = mint_id();
        let mut primary = executions.start(id, 10).unwrap();
        let mut secondary = executions.join(id).unwrap();
        assert_eq!(executions.live_counters(), 1);
        assert_eq!(primary.claim(6).unwrap(), Some(0..6));
        assert_eq!(secondary.claim(6).unwrap(), Some(6..10));
        assert_eq!(secondary.claim(6).unwrap(), None);
        assert_eq!(
            executions.live_counters(),
            0,
            "exhaustion retires the counter"
        );
        assert_eq!(primary.claim(6).unwrap(), None);
        // A late joiner finds nothing to do.
        let mut late = executions.join(id).unwrap();
        assert_eq!(late.claim(1).unwrap(), None);
    }

    #[test]
    fn an_abandoned_scan_is_retired_by_its_primary() {
        let executions = Executions::new(Sharing::InProcess);
        let id = mint_id();
        let primary = executions.start(id, 1 << 40).unwrap();
        drop(primary);
        assert_eq!(executions.live_counters(), 0);
    }

    #[test]
    fn cross_process_work_uses_files() {
        let dir = std::env::temp_dir().join(format!("quiver-vgi-exec-test-{}", std::process::id()));
        let executions = Executions::new(Sharing::CrossProcess { dir: dir.clone() });
        let other_process = Executions::new(Sharing::CrossProcess { dir: dir.clone() });
        let id = mint_id();
        let mut primary = executions.start(id, 5).unwrap();
        let mut secondary = other_process.join(id).unwrap();
        assert_eq!(primary.claim(3).unwrap(), Some(0..3));
        assert_eq!(secondary.claim(3).unwrap(), Some(3..5));
        drop(primary);
        assert!(
            !dir.join(format!("{}.work", hex(&id))).exists(),
            "the primary removes its file"
        );
        assert_eq!(secondary.claim(3).unwrap(), None);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn carried_work_is_the_primarys_alone_and_resumes_where_it_stood() {
        let executions = Executions::new(Sharing::Carried);
        let id = mint_id();
        let mut primary = executions.start(id, 10).unwrap();
        assert_eq!(primary.claim(4).unwrap(), Some(0..4));
        let mut secondary = executions.join(id).unwrap();
        assert_eq!(
            secondary.claim(4).unwrap(),
            None,
            "secondaries share nothing"
        );
        let (next, total) = primary.carried().unwrap();
        assert_eq!((next, total), (4, 10));
        let other_replica = Executions::new(Sharing::Carried);
        let mut resumed = other_replica.resume(id, next, total);
        assert_eq!(resumed.claim(4).unwrap(), Some(4..8));
        assert_eq!(resumed.claim(4).unwrap(), Some(8..10));
        assert_eq!(resumed.claim(4).unwrap(), None);
        assert_eq!(resumed.carried(), Some((0, 0)));
        assert_eq!(other_replica.live_counters(), 0);
    }

    #[test]
    fn ids_are_random() {
        assert_ne!(mint_id(), mint_id());
        assert!(parse_id(&[1, 2, 3]).is_err());
    }
}
