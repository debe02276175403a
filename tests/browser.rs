//! The visitor's journey in a real headless Chromium (Debian's `chromium` and
//! `chromium-driver`), driven over WebDriver: search with the form, read the result
//! table, open a result, switch to the dark theme and keep it, then meet the 503 and
//! 429 pages and find the form and the way back to the ledger on both.
//!
//! Screenshots of each step go to `target/screenshots/` for a person to look at.

#[path = "common/mod.rs"]
mod helpers;
use helpers::support;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context as _};
use fantoccini::{Client, ClientBuilder, Locator};
use helpers::{spawn_app_with, TestApp};
use support::{free_port, require_program, ChildGuard, READY_DEADLINE};

/// Flags for Chromium as root on a machine with no network but loopback: without the
/// background-networking ones it keeps trying to reach Google's hosts.
const CHROMIUM_ARGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1280,900",
];

/// chromedriver on a free loopback port, with its Chromium profile in a temp dir.
struct Driver {
    port: u16,
    user_data_dir: tempfile::TempDir,
    _process: ChildGuard,
    _logs: tempfile::TempDir,
}

impl Driver {
    fn start() -> Driver {
        let chromedriver = require_program("chromedriver", "CHROMEDRIVER", "chromium-driver");
        // Checked here so a missing browser is reported as such, not as a session error.
        require_program("chromium", "CHROMIUM", "chromium");
        let logs = tempfile::tempdir().unwrap();
        let port = free_port();
        let mut command = Command::new(chromedriver);
        command.arg(format!("--port={port}"));
        let mut process = ChildGuard::spawn("chromedriver", command, logs.path());
        process.wait_for_port(port);
        Driver {
            port,
            user_data_dir: tempfile::tempdir().unwrap(),
            _process: process,
            _logs: logs,
        }
    }

    async fn session(&self) -> Client {
        let chromium = require_program("chromium", "CHROMIUM", "chromium");
        let mut args: Vec<String> = CHROMIUM_ARGS.iter().map(|a| a.to_string()).collect();
        args.push(format!(
            "--user-data-dir={}",
            self.user_data_dir.path().display()
        ));
        let capabilities = serde_json::json!({
            "browserName": "chrome",
            "goog:chromeOptions": { "binary": chromium, "args": args },
        });
        let serde_json::Value::Object(capabilities) = capabilities else {
            unreachable!("a JSON object literal")
        };
        ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(capabilities)
            .connect(&format!("http://127.0.0.1:{}", self.port))
            .await
            .expect("a Chromium session from chromedriver")
    }
}

/// `target/screenshots`, next to the `tmp` folder cargo gives integration tests.
fn screenshot_dir() -> PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR is inside the target dir")
        .join("screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

struct Journey<'a> {
    browser: &'a Client,
    app: &'a TestApp,
    shots: PathBuf,
}

impl Journey<'_> {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.app.address)
    }

    async fn screenshot(&self, name: &str) -> anyhow::Result<()> {
        let png = self.browser.screenshot().await?;
        let path = self.shots.join(format!("{name}.png"));
        std::fs::write(&path, png).with_context(|| format!("writing {}", path.display()))?;
        eprintln!("screenshot: {}", path.display());
        Ok(())
    }

    /// Polls the browser's location until its path is `path`: a click that navigates
    /// returns before the next document is guaranteed to be the current one.
    async fn wait_for_path(&self, path: &str) -> anyhow::Result<url::Url> {
        let deadline = Instant::now() + READY_DEADLINE;
        loop {
            let current = self.browser.current_url().await?;
            if current.path() == path {
                return Ok(current);
            }
            if Instant::now() > deadline {
                bail!("the browser stayed at {current}, expected path {path}");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn text(&self, css: &str) -> anyhow::Result<String> {
        let element = self
            .browser
            .find(Locator::Css(css))
            .await
            .with_context(|| format!("no element matches {css}"))?;
        Ok(element.text().await?)
    }

    async fn theme(&self) -> anyhow::Result<String> {
        let html = self.browser.find(Locator::Css("html")).await?;
        Ok(html.attr("data-theme").await?.unwrap_or_default())
    }

    /// Types `q` into the header's search form and submits it with its button.
    async fn search_with_form(&self, q: &str) -> anyhow::Result<()> {
        let input = self
            .browser
            .find(Locator::Css("form.search-form input[name=q]"))
            .await?;
        input.clear().await?;
        input.send_keys(q).await?;
        self.browser
            .find(Locator::Css("form.search-form button[type=submit]"))
            .await?
            .click()
            .await?;
        let at = self.wait_for_path("/search").await?;
        let sent: Vec<_> = at.query_pairs().filter(|(k, _)| k == "q").collect();
        ensure!(
            sent.len() == 1 && sent[0].1 == q,
            "the form sent {at}, expected q={q}"
        );
        Ok(())
    }

    /// What a failed search page must still offer: the form, holding the query, and
    /// the link back to the ledger.
    async fn expect_form_and_ledger_link(&self, q: &str) -> anyhow::Result<()> {
        let input = self
            .browser
            .find(Locator::Css(
                "form.search-form[action='/search'] input[name=q]",
            ))
            .await
            .context("the search form is missing")?;
        ensure!(
            input.prop("value").await?.as_deref() == Some(q),
            "the form lost the query {q:?}"
        );
        let back = self
            .browser
            .find(Locator::XPath(
                "//main//a[@href='/'][normalize-space()='Back to the ledger']",
            ))
            .await
            .context("the link back to the ledger is missing")?;
        ensure!(back.is_displayed().await?, "the ledger link is hidden");
        Ok(())
    }

    async fn run(&self) -> anyhow::Result<()> {
        // The ledger, with the search form on top.
        self.browser.goto(&self.url("/")).await?;
        ensure!(self.text("h1").await? == "Ledger", "/ is not the ledger");
        ensure!(self.theme().await? == "light", "the default theme is light");
        self.screenshot("01-ledger").await?;

        // Search with the form: the table and its match count agree.
        self.search_with_form("kubernetes").await?;
        let count = self.text(".page-head p.muted").await?;
        let total: usize = count
            .split_whitespace()
            .next()
            .and_then(|n| n.parse().ok())
            .with_context(|| format!("no match count in {count:?}"))?;
        ensure!(
            count == format!("{total} matches") || (total == 1 && count == "1 match"),
            "unexpected count line {count:?}"
        );
        let rows = self
            .browser
            .find_all(Locator::Css("table.listing tbody tr"))
            .await?;
        ensure!(
            rows.len() == total,
            "{total} matches announced, {} rows shown",
            rows.len()
        );
        let first = self
            .browser
            .find(Locator::Css("table.listing tbody tr td.title a"))
            .await?;
        let first_title = first.text().await?;
        ensure!(
            first_title.starts_with("Kubernetes"),
            "the best match for kubernetes is {first_title:?}"
        );
        self.screenshot("02-results").await?;

        // Open the best result.
        let href = first
            .attr("href")
            .await?
            .context("a result without a link")?;
        first.click().await?;
        self.wait_for_path(&href).await?;
        ensure!(
            self.text("h1.page-title").await? == first_title,
            "the page's title differs from the result's"
        );
        self.screenshot("03-page").await?;

        // Switch to the dark theme: it lands on the ledger, dark, and stays dark on
        // the next page opened.
        self.browser
            .find(Locator::Css("nav.theme-switch a[href='/theme/dark']"))
            .await?
            .click()
            .await?;
        self.wait_for_path("/").await?;
        ensure!(self.theme().await? == "dark", "the switch did not apply");
        self.browser
            .find(Locator::Css("table.listing a[href='/p/golang']"))
            .await?
            .click()
            .await?;
        self.wait_for_path("/p/golang").await?;
        ensure!(
            self.theme().await? == "dark",
            "the dark theme did not persist to the next page"
        );
        self.screenshot("04-dark-page").await?;

        // 503: the only scorer slot is held by another client's blocked scoring, so
        // this search (a cache miss) finds none free.
        let blocked = self.app.spawn_search("block me", "203.0.113.7");
        self.app.faults.wait_blocked(1).await;
        self.search_with_form("golang").await?;
        let notice = self.text("main .notice").await?;
        ensure!(
            notice.contains("Search is busy"),
            "expected the busy page, got {notice:?}"
        );
        self.expect_form_and_ledger_link("golang").await?;
        self.screenshot("05-busy-503").await?;
        self.app.faults.open();
        ensure!(blocked.await? == 200, "the blocked search did not finish");

        // 429: the browser's client (127.0.0.1) has spent its two searches this
        // minute (the 503 spent one too), so the third is refused.
        self.search_with_form("vim").await?;
        let notice = self.text("main .notice").await?;
        ensure!(
            notice.contains("Too many searches this minute"),
            "expected the rate-limited page, got {notice:?}"
        );
        self.expect_form_and_ledger_link("vim").await?;
        ensure!(
            self.app.counters("127.0.0.1") == (2, 2),
            "the refused search changed a counter: {:?}",
            self.app.counters("127.0.0.1")
        );
        self.screenshot("06-rate-limited-429").await?;

        // And the link leads back to the ledger.
        self.browser
            .find(Locator::XPath(
                "//main//a[normalize-space()='Back to the ledger']",
            ))
            .await?
            .click()
            .await?;
        self.wait_for_path("/").await?;
        ensure!(
            self.text("h1").await? == "Ledger",
            "the link did not lead to the ledger"
        );
        Ok(())
    }
}

#[actix_web::test]
async fn a_visitor_searches_opens_a_result_keeps_the_dark_theme_and_meets_503_and_429() {
    // One scorer slot, so a blocked scoring makes the next miss a 503; two searches a
    // minute, so the third is a 429. The clock is manual: no window ends mid-test.
    let app = spawn_app_with(|s| {
        s.search.concurrency = 1;
        s.search_budget.set_limit("minute", 2);
    })
    .await;
    let driver = Driver::start();
    let browser = driver.session().await;
    let journey = Journey {
        browser: &browser,
        app: &app,
        shots: screenshot_dir(),
    };
    let outcome = journey.run().await;
    if outcome.is_err() {
        // A failure screenshot says more than the message alone.
        let _ = journey.screenshot("failure").await;
    }
    // Let every blocked scoring go, whatever step failed, so the app can stop.
    app.faults.open();
    // End the session (and Chromium) before the driver is killed.
    let closed = browser.close().await;
    outcome.unwrap();
    closed.unwrap();
}
