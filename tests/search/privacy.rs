//! Privacy: the query text never reaches a log line or span field, at any level, on
//! any outcome. Logs of every test in this binary go to one capture buffer at TRACE.

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

use agent_pages::telemetry::{self, LogFormat};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::EnvFilter;

use crate::helpers::spawn_app_with;

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Capture {
    type Writer = Capture;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

fn capture() -> &'static Capture {
    static CAPTURE: OnceLock<Capture> = OnceLock::new();
    CAPTURE.get_or_init(|| {
        let capture = Capture::default();
        telemetry::init(LogFormat::Json, EnvFilter::new("trace"), capture.clone())
            .expect("first subscriber");
        capture
    })
}

/// The query string forms in which `text` could leak: as typed, and percent-encoded
/// as a browser or reqwest sends it (upper- and lower-case hex).
fn forms(text: &str) -> Vec<String> {
    let encoded: String = url::form_urlencoded::byte_serialize(text.as_bytes()).collect();
    vec![text.to_owned(), encoded.clone(), encoded.to_lowercase()]
}

#[actix_web::test]
async fn a_unique_query_never_appears_in_captured_logs_on_any_outcome() {
    let logs = capture();
    let secret = "zqxsecret";
    // Normalizes to one letter, so it is a short query: its marker is punctuation.
    let short = "§¶§¶ʬ§¶§¶";

    // App 1: one slot, so a second identical miss joins and a distinct one is busy.
    let app = spawn_app_with(|s| {
        s.search_budget.set_limit("minute", 3);
        s.search.concurrency = 1;
    })
    .await;
    let client = "192.0.2.123";
    let leader = app.spawn_search_full(&format!("block {secret}join"), "192.0.2.1");
    app.faults.wait_blocked(1).await;
    let joiner = app.spawn_search_full(&format!("block {secret}join"), "192.0.2.2");
    app.wait_waiters(2).await;
    let busy = app.search(&format!("{secret}busy"), "192.0.2.3").await; // 503-busy
    assert_eq!(busy.status(), 503);
    app.faults.open();
    assert_eq!(leader.await.unwrap().1, "miss");
    assert_eq!(joiner.await.unwrap().1, "join");
    app.search(&format!("block {secret}join"), "192.0.2.4")
        .await; // hit
    app.search_raw(&format!("{secret}other={secret}value"), client)
        .await; // 303
    app.search(short, client).await; // short
    app.search(&format!("{secret} {}", "x".repeat(60)), client)
        .await; // 400
    app.search_raw(&format!("q={secret}twice&q=again"), client)
        .await; // 400
    app.search(&format!("panic {secret}panic"), client).await; // 500
    app.search(&format!("{secret}a"), client).await; // miss
    app.search(&format!("{secret}a"), client).await; // hit
    app.search(&format!("{secret}a"), client).await; // 429-minute

    // App 2: one admission permit, held by a blocked scoring; an hour budget of 2.
    let app2 = spawn_app_with(|s| {
        s.search_budget.set_limit("hour", 2);
        s.search.concurrency = 1;
        s.search.max_in_flight = 1;
    })
    .await;
    let held = app2.spawn_search(&format!("block {secret}held"), client);
    app2.faults.wait_blocked(1).await;
    let shed = app2
        .search(&format!("{secret}admission"), "192.0.2.5")
        .await; // 503-admission
    assert_eq!(shed.status(), 503);
    app2.faults.open();
    assert_eq!(held.await.unwrap(), 200);
    app2.wait_idle().await;
    app2.search(&format!("{secret}b"), client).await; // miss
    app2.search(&format!("{secret}c"), client).await; // 429-hour
    let locker = app2.budget_conn();
    locker.execute_batch("BEGIN IMMEDIATE").unwrap();
    let unavailable = app2.search(&format!("{secret}locked"), "192.0.2.6").await; // 503-budget
    locker.execute_batch("ROLLBACK").unwrap();
    assert_eq!(unavailable.status(), 503);

    // Every outcome of the outcome table happened (the log event is written where
    // the outcome is counted)...
    // All but 503-storage: making the page store fail under a search takes root
    // (an immutable WAL index, tests/storage_faults.rs); its event is written by the
    // same one function as every other outcome's.
    let labels: Vec<_> =
        agent_pages::operations::search::outcome::labels(&app.state.budgets.search)
            .into_iter()
            .filter(|label| *label != "503-storage")
            .collect();
    assert!(labels.len() >= 12, "{labels:?}");
    for label in &labels {
        let n = app.outcome_count(label).await + app2.outcome_count(label).await;
        assert!(n >= 1, "outcome {label} was not exercised");
    }
    let text = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    for label in &labels {
        assert!(
            text.contains(&format!("\"outcome\":\"{label}\"")),
            "no search event with outcome {label}"
        );
    }
    assert!(text.contains("/search"), "the path is logged");
    // ... and no query text reached a log line, in any form.
    for leak in forms(secret).into_iter().chain(forms(short)) {
        assert!(
            !text.contains(&leak),
            "query text {leak:?} leaked into the logs"
        );
    }
    assert!(
        !text.contains("§¶"),
        "short query text leaked into the logs"
    );
}
