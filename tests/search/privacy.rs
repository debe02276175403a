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

#[actix_web::test]
async fn a_unique_query_never_appears_in_captured_logs() {
    let logs = capture();
    let app = spawn_app_with(|s| {
        s.search_budget.set_limit("minute", 3);
        s.search.concurrency = 1;
    })
    .await;
    let secret = "zqxsecretquery";
    let client = "192.0.2.123";
    app.search(secret, client).await; // miss
    app.search(secret, client).await; // hit
    app.search(&format!("{secret} {}", "x".repeat(60)), client)
        .await; // 400
    app.search("panic zqxsecretpanic", client).await; // 500
    app.search(secret, client).await; // 429
    app.search_raw("q=zqxsecretshort&q=again", client).await; // 400

    let text = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    assert!(
        text.contains("\"outcome\":\"miss\"") && text.contains("\"outcome\":\"429-minute\""),
        "search events were logged"
    );
    assert!(text.contains("/search"), "the path is logged");
    assert!(
        !text.contains("zqxsecret"),
        "query text leaked into the logs"
    );
}
