//! Where the two ends of a measurement run: on two CPUs, or both on one.
//!
//! On this kind of VM the placement decides what a wake-up costs. A round trip
//! between two processes on one vCPU is a local context switch (~5 µs here); across
//! two vCPUs it wakes a halted vCPU through the hypervisor (~25–60 µs). Left to
//! itself, the scheduler picks either, and a figure flips between the two from one
//! rep to the next. So every measurement pins its ends explicitly and says where.

use std::process::Command;
use std::sync::OnceLock;

/// A placement of client and server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    /// Name in records: `cross-cpu` or `same-cpu`.
    pub name: &'static str,
    /// CPU of the client (and of the harness's own thread).
    pub client_cpu: usize,
    /// CPU of the server (thread or process) or echo peer.
    pub server_cpu: usize,
}

/// Client on CPU 0, server on CPU 1: each end has a core, as an engine and its
/// worker would on a multi-core machine. The default for every figure.
pub const CROSS_CPU: Placement = Placement {
    name: "cross-cpu",
    client_cpu: 0,
    server_cpu: 1,
};
/// Both ends on CPU 0: every wake-up is a local context switch.
pub const SAME_CPU: Placement = Placement {
    name: "same-cpu",
    client_cpu: 0,
    server_cpu: 0,
};
/// Name for measurements that involve one thread only (memcpy, in-memory steps).
pub const ONE_THREAD: &str = "one-thread";

impl Placement {
    /// This placement, or same-CPU when the machine has a single CPU.
    pub fn available(self) -> Placement {
        let cpus = cpu_count();
        if self.server_cpu >= cpus || self.client_cpu >= cpus {
            SAME_CPU
        } else {
            self
        }
    }

    /// Pins the calling thread (the client side).
    pub fn pin_client(self) -> std::io::Result<()> {
        pin_current_thread(self.client_cpu)
    }

    /// Makes `command`'s process start pinned to the server CPU.
    pub fn pin_server_command(self, command: &mut Command) {
        let cpu = self.server_cpu;
        use std::os::unix::process::CommandExt;
        // SAFETY: the closure runs in the forked child before exec and only makes
        // one system call, which is async-signal-safe.
        unsafe {
            command.pre_exec(move || pin_current_thread(cpu));
        }
    }
}

/// CPUs this process could use when it started, before any pinning narrowed
/// them (call once early, from `main`, so later calls see the same answer).
pub fn cpu_count() -> usize {
    static CPUS: OnceLock<usize> = OnceLock::new();
    *CPUS.get_or_init(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    })
}

/// Lets the calling thread run on every CPU again (so that helper programs it
/// starts, like `nproc`, see the whole machine).
pub fn unpin_current_thread() -> std::io::Result<()> {
    // SAFETY: as in `pin_current_thread`.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        for cpu in 0..cpu_count() {
            libc::CPU_SET(cpu, &mut set);
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Restricts the calling thread to `cpu`.
pub fn pin_current_thread(cpu: usize) -> std::io::Result<()> {
    // SAFETY: cpu_set_t is plain data; CPU_ZERO/CPU_SET only write inside it, and
    // sched_setaffinity(0, ...) affects the calling thread only.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}
