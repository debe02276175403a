fn main() -> std::process::ExitCode {
    agent_pages::cli::main()
}
