//! Background threads (scorers, Markdown renders) run at a lower priority than the
//! threads that answer the gates. On a core both want, Linux's scheduler gives a
//! gate thread about nine times the share of a thread at nice 10 (CFS weights 1024
//! and 110), so a hit, a 429 or a busy 503 rarely waits behind throughput work: a
//! weighting, not a guarantee (it can still wait a scheduler slice).

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
