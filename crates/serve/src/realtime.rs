//! `--realtime-priority`: the match thread and the network thread at a real-time
//! priority (SCHED_FIFO), so that a busy host's other work never delays a tick's wake.
//!
//! Linux's fair scheduler may run other work for up to a scheduler tick (4 ms on this
//! machine) before it runs a woken server thread: at 500 matches beside a load
//! generator at `nice 19`, 93% of the wakes came within 2 ms of their tick, and 100%
//! at SCHED_FIFO. `chrt -f` does the same from outside, but an image of the binary
//! alone has no `chrt`.
//!
//! The threads that exist when it is set (the match thread) and those they start
//! before [`keep_new_threads_fair`] (the host's network thread) take the priority;
//! threads started after (the HTTP endpoints, the Agones client) are fair ones. Both
//! server threads sleep every tick, and the kernel's real-time throttling keeps 5% of
//! each second for the rest.

/// Most real-time priority (Linux's SCHED_FIFO range is 1 to 99).
pub const MAX_PRIORITY: u8 = 99;

/// Puts the calling thread at SCHED_FIFO `priority` (1 to [`MAX_PRIORITY`]); threads
/// it starts inherit it. Fails without the right (CAP_SYS_NICE, or root), or off Linux.
pub fn set_fifo(priority: u8) -> Result<(), String> {
    set(priority, false)
}

/// Keeps the calling thread where [`set_fifo`] put it, but threads it starts from now
/// on are fair (SCHED_RESET_ON_FORK).
pub fn keep_new_threads_fair(priority: u8) -> Result<(), String> {
    set(priority, true)
}

#[cfg(target_os = "linux")]
fn set(priority: u8, reset_on_fork: bool) -> Result<(), String> {
    if !(1..=MAX_PRIORITY).contains(&priority) {
        return Err(format!("a real-time priority is 1 to {MAX_PRIORITY}, not {priority}"));
    }
    let param = libc::sched_param { sched_priority: i32::from(priority) };
    let policy = libc::SCHED_FIFO | if reset_on_fork { libc::SCHED_RESET_ON_FORK } else { 0 };
    // SAFETY: `param` is a valid sched_param that outlives the call, which only reads
    // it; pid 0 names the calling thread.
    let rc = unsafe { libc::sched_setscheduler(0, policy, &param) };
    if rc != 0 {
        let e = std::io::Error::last_os_error();
        let hint = if e.raw_os_error() == Some(libc::EPERM) { " (it needs CAP_SYS_NICE, or root)" } else { "" };
        return Err(format!("SCHED_FIFO {priority}: {e}{hint}"));
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn set(priority: u8, _reset_on_fork: bool) -> Result<(), String> {
    Err(format!("SCHED_FIFO {priority}: real-time priorities are set on Linux only"))
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// (policy, rt priority) of thread `tid` of this process, from /proc.
    fn sched_of(tid: i32) -> (u32, u32) {
        let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).unwrap();
        // Fields after the command's closing parenthesis start at field 3.
        let rest: Vec<&str> = stat.rsplit_once(')').unwrap().1.split_whitespace().collect();
        (rest[41 - 3].parse().unwrap(), rest[40 - 3].parse().unwrap())
    }

    fn gettid() -> i32 {
        // SAFETY: gettid takes nothing and cannot fail.
        unsafe { libc::gettid() }
    }

    /// A thread set to SCHED_FIFO keeps it; a thread it starts inherits it until
    /// `keep_new_threads_fair`, after which new threads are fair. (Run as root in CI;
    /// without the right, the refusal names it.)
    #[test]
    fn the_server_threads_take_the_priority_and_later_threads_are_fair() {
        let r = std::thread::spawn(|| {
            if let Err(e) = set_fifo(7) {
                assert!(e.contains("CAP_SYS_NICE"), "{e}");
                return None;
            }
            let me = gettid();
            let inherited = std::thread::spawn(|| sched_of(gettid())).join().unwrap();
            keep_new_threads_fair(7).unwrap();
            let fair = std::thread::spawn(|| sched_of(gettid())).join().unwrap();
            Some((sched_of(me), inherited, fair))
        })
        .join()
        .unwrap();
        if let Some((me, inherited, fair)) = r {
            let fifo = libc::SCHED_FIFO as u32;
            assert_eq!(me, (fifo, 7));
            assert_eq!(inherited, (fifo, 7));
            assert_eq!(fair, (libc::SCHED_OTHER as u32, 0));
        }
        assert!(set_fifo(0).unwrap_err().contains("1 to 99"));
        assert!(set_fifo(100).unwrap_err().contains("1 to 99"));
    }
}
