//! The command line: `serve`, `import FILE`, `migrate`, `copy`, `mcp --url URL`
//! (clap, `--help` on each).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Parser, Subcommand};

use crate::budget::open::{self as budget_store, BudgetsAt};
use crate::clock::{Clock, SystemClock};
use crate::configuration::{BudgetDatabaseArgs, DatabaseArgs, ServeArgs, Settings};
use crate::page_store::open::{self as page_store, PagesAt};
use crate::page_store::postgres::PostgresPages;
use crate::pg::PgSettings;
use crate::startup::Application;
use crate::telemetry::{self, LogFormat};
use crate::{import, sqlite};

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
    /// Apply the migrations of the database and of the budget database, and exit.
    Migrate {
        #[command(flatten)]
        db: DatabaseArgs,
        #[command(flatten)]
        budget_db: BudgetDatabaseArgs,
    },
    /// Copy every page of the SQLite file (AGENT_PAGES_DATABASE) into the empty
    /// PostgreSQL database of AGENT_PAGES_DATABASE_URL, keeping ids, slugs,
    /// versions, states, times and PIN hashes (moved as they are, never re-hashed).
    Copy {
        #[command(flatten)]
        db: DatabaseArgs,
    },
    /// Serve MCP on stdin/stdout, relaying every tool call to a running service's
    /// `/mcp` (for agents that launch their tools as local processes). With
    /// AGENT_PAGES_PIN set, every request carries that PIN in X-Page-Pin (tools
    /// called without a pin use it).
    Mcp {
        /// The service's MCP endpoint, e.g. `https://pages.example/mcp` (a URL
        /// without a path gets `/mcp`).
        #[arg(long, env = "AGENT_PAGES_MCP_URL")]
        url: String,
        /// Seconds one relayed call may take before it is answered with an error
        /// naming the URL (the handshake has 5).
        #[arg(long, env = "AGENT_PAGES_MCP_TIMEOUT_SECS",
              default_value_t = crate::mcp::bridge::CALL_DEADLINE.as_secs(),
              value_parser = clap::value_parser!(u64).range(1..=3600))]
        timeout_secs: u64,
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
    // Held to the end of `main`: dropping it writes the lines still queued.
    let _log_writer = match telemetry::init_off_thread(format, telemetry::env_filter()) {
        Ok(guard) => Some(guard),
        Err(e) => {
            eprintln!("agent-pages: logging: {e}");
            None
        }
    };
    let result = match cli.command {
        Command::Serve(args) => match Settings::from_args(&args) {
            Ok(settings) => serve(settings, release_free_memory),
            Err(e) => return config_error(&e.to_string()),
        },
        Command::Import { file, db } => {
            match db.pages().and_then(|p| Ok((p, db.history_versions()?))) {
                Ok((pages, keep)) => run_import(&file, &pages, keep),
                Err(e) => return config_error(&e.to_string()),
            }
        }
        Command::Migrate { db, budget_db } => match db.pages() {
            Ok(pages) => migrate(&pages, &budget_db),
            Err(e) => return config_error(&e.to_string()),
        },
        Command::Copy { db } => match db.postgres() {
            Ok(Some(pg)) => copy(&db, &pg),
            Ok(None) => return config_error(
                "AGENT_PAGES_DATABASE_URL: copy needs the PostgreSQL database to fill, got nothing",
            ),
            Err(e) => return config_error(&e.to_string()),
        },
        Command::Mcp { url, timeout_secs } => {
            crate::mcp::bridge::run(&url, std::time::Duration::from_secs(timeout_secs))
        }
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

/// A runtime for the commands that talk to a store (the CLI is otherwise
/// synchronous).
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")
}

/// Read connections of a SQLite page store a command opens: it reads little.
const COMMAND_READERS: usize = 1;

fn run_import(file: &std::path::Path, pages: &PagesAt, keep: i64) -> anyhow::Result<()> {
    let report = runtime()?.block_on(async {
        let store = page_store::open(pages, COMMAND_READERS)
            .await?
            .with_history_versions(keep);
        let now = SystemClock.now();
        let report = if file.as_os_str() == "-" {
            import::import_into(&store, std::io::stdin().lock(), None, now).await
        } else {
            let f =
                std::fs::File::open(file).with_context(|| format!("opening {}", file.display()))?;
            let size = f.metadata().ok().map(|m| m.len());
            import::import_into(&store, f, size, now).await
        };
        store.close();
        anyhow::Ok(report?)
    })?;
    let format = match report.format.to_string() {
        f if f.is_empty() => f,
        f => format!(" ({f})"),
    };
    println!(
        "imported {}{format}: {} new, {} updated, {} unchanged, {} skipped",
        file.display(),
        report.inserted,
        report.updated,
        report.unchanged,
        report.skipped.len()
    );
    Ok(())
}

/// Opens (so migrates) the page store, and with SQLite pages the budget file too;
/// PostgreSQL's budget tables come with the pages' migrations.
fn migrate(pages: &PagesAt, budget: &BudgetDatabaseArgs) -> anyhow::Result<()> {
    runtime()?.block_on(async {
        page_store::open(pages, COMMAND_READERS).await?.close();
        anyhow::Ok(())
    })?;
    match pages {
        PagesAt::Sqlite(file) => {
            let budget = budget.path_for(file);
            budget_store::migrate(&BudgetsAt::Sqlite(budget.clone()))?;
            println!(
                "migrations applied to {} and {}",
                file.display(),
                budget.display()
            );
        }
        PagesAt::Postgres(pg) => println!("migrations applied to {}", pg.describe()),
    }
    Ok(())
}

fn copy(args: &DatabaseArgs, pg: &PgSettings) -> anyhow::Result<()> {
    let source = &args.database;
    if !source.is_file() {
        anyhow::bail!("{} is not a file: nothing to copy", source.display());
    }
    let conn = sqlite::open_migrated(source)
        .with_context(|| format!("opening and migrating {}", source.display()))?;
    let copied = runtime()?.block_on(async {
        let target = page_store::open(&PagesAt::Postgres(pg.clone()), COMMAND_READERS).await?;
        let pages = target
            .backend::<PostgresPages>()
            .expect("PagesAt::Postgres opens PostgresPages");
        let copied = crate::page_store::moving::copy_sqlite_to_postgres(&conn, pages.pg()).await;
        target.close();
        copied.context("copying")
    })?;
    println!(
        "copied {} pages from {} to {} ({} with a PIN, {} archived or claimed): ids, slugs, \
         versions, times and PIN hashes kept, and {} versions of page history",
        copied.pages,
        source.display(),
        pg.describe(),
        copied.with_pin,
        copied.gone,
        copied.versions
    );
    Ok(())
}
