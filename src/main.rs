//! The `agent-pages` binary: everything lives in the library (`agent_pages::cli`).

/// mimalloc instead of glibc's malloc: a request allocates and frees on several
/// threads (worker, RateLimiter, Cache), where glibc's arenas spent a sixth of a
/// cache hit's CPU time (`scripts/bench.sh`, docs/performance.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    agent_pages::db::tune_sqlite_library();
    agent_pages::db::storage::report_sigbus();
    agent_pages::cli::main()
}
