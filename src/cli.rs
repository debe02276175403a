//! The command line: `serve`, `import FILE`, `migrate` (clap, `--help` on each).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Parser, Subcommand};

use crate::clock::{Clock, SystemClock};
use crate::configuration::{DatabaseArgs, ServeArgs, Settings};
use crate::startup::Application;
use crate::telemetry::{self, LogFormat};
use crate::{db, import};

/// agent-pages: agents publish short text pages; people read the ledger and find
/// pages with a fuzzy title search.
#[derive(Debug, Parser)]
#[command(name = "agent-pages", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once per process: the size of the `serve` flags does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
enum Command {
    /// Run the HTTP server (migrations are applied first).
    Serve(ServeArgs),
    /// Load pages from a JSON Lines file: {"slug"?, "title", "body"?, "pin"?} a line.
    /// Pages are upserted by slug; bad lines are reported by number and skipped.
    Import {
        /// The .jsonl file to read (`-` for standard input).
        file: PathBuf,
        #[command(flatten)]
        db: DatabaseArgs,
    },
    /// Apply database migrations and exit.
    Migrate {
        #[command(flatten)]
        db: DatabaseArgs,
    },
}

/// Parses the command line, runs the command, and maps failure to an exit code:
/// 2 for a bad configuration value, 1 for anything else. `serve` calls
/// `release_free_memory` once it is ready, before `listening on` (the binary
/// passes its allocator's way of returning freed memory to the system).
pub fn main(release_free_memory: fn()) -> ExitCode {
    let cli = Cli::parse();
    let format = match LogFormat::from_env() {
        Ok(f) => f,
        Err(line) => return config_error(&line),
    };
    if let Err(e) = telemetry::init(format, telemetry::env_filter(), std::io::stderr) {
        eprintln!("agent-pages: logging: {e}");
    }
    let result = match cli.command {
        Command::Serve(args) => match Settings::from_args(&args) {
            Ok(settings) => serve(settings, release_free_memory),
            Err(e) => return config_error(&e.to_string()),
        },
        Command::Import { file, db } => run_import(&file, &db),
        Command::Migrate { db } => migrate(&db),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("agent-pages: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn config_error(line: &str) -> ExitCode {
    eprintln!("agent-pages: invalid configuration: {line}");
    ExitCode::from(2)
}

fn serve(settings: Settings, release_free_memory: fn()) -> anyhow::Result<()> {
    actix_web::rt::System::new().block_on(async move {
        let app = Application::build(settings).await?;
        release_free_memory();
        if let Some(metrics) = app.metrics_address() {
            tracing::info!("metrics on http://{metrics}/metrics");
        }
        let url = format!("http://{}", app.address());
        tracing::info!(%url, "listening on {url}");
        println!("listening on {url}");
        app.run_until_stopped().await.context("server")
    })
}

fn run_import(file: &std::path::Path, args: &DatabaseArgs) -> anyhow::Result<()> {
    let mut conn = open_migrated(args)?;
    let now = SystemClock.now();
    let report = if file.as_os_str() == "-" {
        import::import(&mut conn, std::io::stdin().lock(), None, now)?
    } else {
        let f = std::fs::File::open(file).with_context(|| format!("opening {}", file.display()))?;
        let size = f.metadata().ok().map(|m| m.len());
        import::import(&mut conn, f, size, now)?
    };
    println!(
        "imported {}: {} new, {} updated, {} unchanged, {} skipped",
        file.display(),
        report.inserted,
        report.updated,
        report.unchanged,
        report.skipped.len()
    );
    Ok(())
}

fn migrate(args: &DatabaseArgs) -> anyhow::Result<()> {
    open_migrated(args)?;
    println!("migrations applied to {}", args.database.display());
    Ok(())
}

fn open_migrated(args: &DatabaseArgs) -> anyhow::Result<rusqlite::Connection> {
    db::open_migrated(&args.database)
        .with_context(|| format!("opening and migrating {}", args.database.display()))
}
