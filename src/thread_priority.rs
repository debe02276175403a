//! Background threads (scorers, Markdown renders) run at a lower priority than the
//! threads that answer the gates, so a hit, a 429 or a busy 503 never waits behind
//! throughput work for a CPU.

/// Sets the calling thread's nice value to `nice` (Linux: nice is per thread);
/// elsewhere, or when the kernel refuses, the thread keeps its priority and a
/// warning naming `role` (e.g. "scorer") is logged.
pub fn lower_this_thread(nice: i32, role: &'static str) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: plain system calls on the calling thread's own id; no memory is
        // shared with the kernel.
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
