//! The `agent-pages` binary: everything lives in the library (`agent_pages::cli`).

/// mimalloc instead of glibc's malloc: a request allocates and frees on several
/// threads (worker, RateLimiter, Cache), where glibc's arenas spent a sixth of a
/// cache hit's CPU time (`scripts/bench.sh`, docs/performance.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Returns the memory mimalloc holds freed to the system now. Called once the
/// search snapshot is built: the build's scratch (about as large as the
/// snapshot) is freed, but mimalloc gives freed pages back only after a delay,
/// on its next allocations, which an idle server does not make; `serve` would
/// report its start-up peak as its size for as long as it stayed idle.
fn release_free_memory() {
    // SAFETY: `mi_collect` only walks mimalloc's own structures; any thread
    // may call it at any time.
    unsafe { libmimalloc_sys::mi_collect(true) }
}

/// No transparent huge pages for this process. mimalloc asks for them
/// (`madvise`), and the kernel then zeroes 2 MiB at each first touch: at a
/// million pages that was a quarter of the start-up's CPU time (perf:
/// `clear_page_erms` under `do_huge_pmd_anonymous_page`), and the ready
/// process held 450 MB at its peak rather than 365 MB, for no measurable gain
/// in scoring time (docs/performance.md, "Start-up and the first search at
/// 1.1M").
fn no_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_THP_DISABLE takes plain integers and only sets a flag of
    // this process; a kernel without it answers EINVAL, which changes nothing.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

fn main() -> std::process::ExitCode {
    no_huge_pages();
    agent_pages::sqlite::tune_sqlite_library();
    agent_pages::sqlite::storage::report_sigbus();
    agent_pages::cli::main(release_free_memory)
}
