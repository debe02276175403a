fn main() -> std::process::ExitCode {
    agent_pages::db::tune_sqlite_library();
    agent_pages::cli::main()
}
