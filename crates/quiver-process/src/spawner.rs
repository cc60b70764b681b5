//! The one thread every child is spawned from.
//!
//! Linux sends the parent-death signal (`PR_SET_PDEATHSIG`) when the *thread* that forked the
//! child exits, not the process. DuckDB calls us from pool threads that come and go, so a child
//! forked on one of them would be killed when that thread retires. Spawning from one thread that
//! lives as long as the process ties every child to the process instead.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::sync::mpsc;
use std::sync::Mutex;

type Job = Box<dyn FnOnce() + Send>;

/// The spawner's queue and the pid that started it: after `fork` the thread is gone in the child,
/// which must start its own.
static SPAWNER: Mutex<Option<(i32, mpsc::Sender<Job>)>> = Mutex::new(None);

/// Spawns `command` on the spawner thread with a parent-death signal of `SIGTERM`.
pub(crate) fn spawn(mut command: Command) -> io::Result<Child> {
    die_with_parent(&mut command);
    let (reply_to, reply) = mpsc::sync_channel(1);
    let job: Job = Box::new(move || {
        let _ = reply_to.send(command.spawn());
    });
    queue()?
        .send(job)
        .map_err(|_| io::Error::other("the process spawner thread is gone"))?;
    reply
        .recv()
        .map_err(|_| io::Error::other("the process spawner thread did not answer"))?
}

fn queue() -> io::Result<mpsc::Sender<Job>> {
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() };
    let mut spawner = SPAWNER.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((owner, sender)) = spawner.as_ref() {
        if *owner == pid {
            return Ok(sender.clone());
        }
    }
    let (sender, jobs) = mpsc::channel::<Job>();
    std::thread::Builder::new()
        .name("quiver-spawner".into())
        .spawn(move || {
            for job in jobs {
                job();
            }
        })?;
    *spawner = Some((pid, sender.clone()));
    Ok(sender)
}

/// Makes the child receive `SIGTERM` when its parent dies; if the parent died before the child
/// could ask (the race between `fork` and `prctl`), the child exits at once.
fn die_with_parent(command: &mut Command) {
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the closure runs between fork and exec and calls only async-signal-safe functions
    // (prctl, getppid, _exit); it allocates nothing.
    unsafe {
        command.pre_exec(move || {
            let signal = libc::SIGTERM as libc::c_ulong;
            if libc::prctl(libc::PR_SET_PDEATHSIG, signal, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
}
