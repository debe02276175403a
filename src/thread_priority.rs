//! Background threads (scorers, Markdown renders) run at a lower priority than the
//! threads that answer the gates. On a core both want, Linux's scheduler gives a
//! gate thread about nine times the share of a thread at nice 10 (CFS weights 1024
//! and 110), so a hit, a 429 or a busy 503 rarely waits behind throughput work.
//!
//! A weight alone still let a gate thread wait a slice: since Linux 6.6 (EEVDF) a
//! thread that was picked runs to the end of its slice before a thread that wakes
//! gets the core (`RUN_TO_PARITY`), and a hit wakes three times (worker, budget,
//! worker). Since Linux 6.12 a thread may ask for its own slice, and a waking
//! thread whose slice is shorter than the running one's takes the core at once
//! (`PREEMPT_SHORT`). So background threads also ask for a long slice
//! ([`BACKGROUND_SLICE_NS`]): a scoring runs in longer stretches, and the gates'
//! threads, at the default slice, preempt it when they wake. Older kernels ignore
//! the slice (the weight stays).

/// The scheduler slice background threads ask for, in nanoseconds (20 ms; Linux
/// takes 0.1–100 ms, see `sched_setattr(2)`, `sched_runtime` for `SCHED_OTHER`).
///
/// At 1.1M titles, two clients searching (three hits to a miss) under 20 creates/s
/// (`examples/loadgen --mode mixed`): hits p99 3.1–3.4 ms at the default slice,
/// 2.5–2.9 ms at 20 ms, misses no slower (docs/performance.md).
pub const BACKGROUND_SLICE_NS: u64 = 20_000_000;

/// Sets the calling thread's nice value to `nice` and its scheduler slice to
/// [`BACKGROUND_SLICE_NS`] (Linux: both are per thread). Where the kernel refuses
/// the pair (no `sched_setattr`, a seccomp filter), only the nice value is set;
/// where it refuses that too, or elsewhere than Linux, the thread keeps its
/// priority and a warning naming `role` (e.g. "scorer") is logged.
pub fn lower_this_thread(nice: i32, role: &'static str) {
    #[cfg(target_os = "linux")]
    {
        if linux::set_fair_attributes(nice, BACKGROUND_SLICE_NS).is_ok() {
            return;
        }
        // SAFETY: a plain system call on the calling thread's own id; no memory
        // is shared with the kernel.
        let done = unsafe {
            let tid = libc::gettid();
            libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice)
        };
        if done != 0 {
            tracing::warn!(
                error = %std::io::Error::last_os_error(),
                role,
                "could not lower a background thread's priority"
            );
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (nice, role);
}

#[cfg(target_os = "linux")]
mod linux {
    /// `struct sched_attr` as `sched_setattr(2)` takes it, up to its first
    /// version's end (`SCHED_ATTR_SIZE_VER0`, 48 bytes: no utilisation clamps).
    #[repr(C)]
    #[derive(Debug, Default)]
    pub(super) struct SchedAttr {
        pub size: u32,
        pub policy: u32,
        pub flags: u64,
        pub nice: i32,
        pub priority: u32,
        /// For `SCHED_OTHER` (Linux 6.12+): the slice, in ns; 0 for the default.
        pub runtime: u64,
        pub deadline: u64,
        pub period: u64,
    }

    const SCHED_ATTR_SIZE_VER0: u32 = 48;

    /// Sets the calling thread to `SCHED_OTHER` at `nice` with a slice of
    /// `slice_ns` (a kernel before 6.12 takes the nice value and ignores the
    /// slice). Errors: what the kernel answered (`ENOSYS`, `EPERM`, `EINVAL`).
    pub(super) fn set_fair_attributes(nice: i32, slice_ns: u64) -> std::io::Result<()> {
        let attr = SchedAttr {
            size: SCHED_ATTR_SIZE_VER0,
            policy: libc::SCHED_OTHER as u32,
            nice,
            runtime: slice_ns,
            ..SchedAttr::default()
        };
        // SAFETY: `attr` is a live, initialised `sched_attr` of the size it
        // states; pid 0 is the calling thread; the kernel only reads it.
        let done =
            unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &attr as *const SchedAttr, 0u32) };
        if done == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }

    /// The calling thread's scheduling attributes (`sched_getattr(2)`).
    #[cfg(test)]
    pub(super) fn fair_attributes() -> std::io::Result<SchedAttr> {
        let mut attr = SchedAttr::default();
        // SAFETY: the kernel writes at most `size` (48) bytes into `attr`,
        // which has them; pid 0 is the calling thread.
        let done = unsafe {
            libc::syscall(
                libc::SYS_sched_getattr,
                0,
                &mut attr as *mut SchedAttr,
                SCHED_ATTR_SIZE_VER0,
                0u32,
            )
        };
        if done == 0 {
            Ok(attr)
        } else {
            Err(std::io::Error::last_os_error())
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_lowered_thread_runs_at_the_nice_value_with_the_background_slice() {
        let attr = std::thread::spawn(|| {
            lower_this_thread(10, "test");
            linux::fair_attributes().expect("sched_getattr")
        })
        .join()
        .unwrap();
        assert_eq!(attr.policy, libc::SCHED_OTHER as u32);
        assert_eq!(attr.nice, 10);
        // Linux 6.12+ reports a fair thread's slice (before, 0): when it does,
        // it is the one asked for.
        if attr.runtime != 0 {
            assert_eq!(attr.runtime, BACKGROUND_SLICE_NS);
        }
    }

    #[test]
    fn lowering_one_thread_leaves_the_others_at_their_priority() {
        let before = linux::fair_attributes().expect("sched_getattr");
        std::thread::spawn(|| lower_this_thread(10, "test"))
            .join()
            .unwrap();
        let after = linux::fair_attributes().expect("sched_getattr");
        assert_eq!((after.nice, after.runtime), (before.nice, before.runtime));
    }
}
