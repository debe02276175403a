//! The visitor's journeys in a real headless Chromium (Debian's `chromium` and
//! `chromium-driver`), driven over WebDriver:
//!
//! - without JavaScript: search with the form, read the result table, open a result,
//!   switch to the dark theme and come back to the same page, then meet the 503 and
//!   429 pages and find the form and the way back to the ledger on both;
//! - with JavaScript: live search while typing (fewer requests than keys, the budget
//!   line agreeing with the server's counters), arrow keys and Enter to open the
//!   result, its Markdown rendered, screenshots of it in both themes;
//! - axe-core on every page kind, both themes, 1280 and 390 px wide: no violation;
//! - the live search's edges (`browser/live_edges.rs`): the focus ring in pixels,
//!   "Try again", answers that land after the box changed, failures, Back, Enter,
//!   the budget line, waits in words, "Searching…", Markdown task boxes and code;
//!   slow and lost answers come from a proxy of the test's own (`browser/proxy.rs`).
//!
//! Screenshots of each step go to `target/screenshots/` for a person to look at;
//! `docs/screenshots/` is made by the ignored `docs_screenshots_of_the_live_search_states`.

#[path = "common/mod.rs"]
mod helpers;
use helpers::support;

#[path = "browser/live_edges.rs"]
mod live_edges;
#[path = "browser/pixels.rs"]
mod pixels;
#[path = "browser/proxy.rs"]
mod proxy;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context as _};
use fantoccini::key::Key;
use fantoccini::{Client, ClientBuilder, Locator};
use helpers::{spawn_app_with, TestApp};
use support::{free_port, require_program, ChildGuard, READY_DEADLINE};

/// axe-core 4.14.1 (MPL-2.0, see `tests/vendor/axe-core/`), injected into pages.
const AXE: &str = include_str!("vendor/axe-core/axe.min.js");

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
    "--hide-scrollbars",
    "--window-size=1280,900",
];

/// A Markdown body with a heading, a table, a task list and a code block.
const MARKDOWN_BODY: &str = "# Getting started\n\n\
Kubernetes runs **containers** across a cluster of machines. See the \
[documentation](https://kubernetes.io/docs/) and ~~the old wiki~~.\n\n\
| component | role | port |\n|:----------|:----:|-----:|\n\
| kube-apiserver | API front end | 6443 |\n| etcd | key-value store | 2379 |\n\
| kubelet | node agent | 10250 |\n\n\
- [x] install kubeadm\n- [ ] join the workers\n\n\
```yaml\napiVersion: v1\nkind: Pod\nmetadata:\n  name: hello\nspec:\n  containers:\n    - name: web\n      image: nginx:1.27\n```\n\n\
> Run `kubectl get pods` to see it.\n";

/// One browser test at a time: each drives a whole Chromium, and the machine has
/// two cores.
static ONE_BROWSER: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// chromedriver on a free loopback port.
struct Driver {
    port: u16,
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
            _process: process,
            _logs: logs,
        }
    }

    /// A Chromium session with its own profile, with page scripts on or off and
    /// `extra` command-line flags.
    async fn session(&self, javascript: bool, extra: &[&str]) -> (Client, tempfile::TempDir) {
        let chromium = require_program("chromium", "CHROMIUM", "chromium");
        let profile = tempfile::tempdir().unwrap();
        let mut args: Vec<String> = CHROMIUM_ARGS
            .iter()
            .chain(extra)
            .map(|a| a.to_string())
            .collect();
        args.push(format!("--user-data-dir={}", profile.path().display()));
        // 2 = block: the content setting a visitor gets by turning JavaScript off.
        let prefs = serde_json::json!({
            "profile.managed_default_content_settings.javascript": if javascript { 1 } else { 2 },
        });
        let capabilities = serde_json::json!({
            "browserName": "chrome",
            "goog:chromeOptions": { "binary": chromium, "args": args, "prefs": prefs },
        });
        let serde_json::Value::Object(capabilities) = capabilities else {
            unreachable!("a JSON object literal")
        };
        let client = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(capabilities)
            .connect(&format!("http://127.0.0.1:{}", self.port))
            .await
            .expect("a Chromium session from chromedriver");
        (client, profile)
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

/// One browser on one app, with the steps every journey uses.
struct Visit<'a> {
    browser: &'a Client,
    base: String,
    shots: PathBuf,
}

impl<'a> Visit<'a> {
    /// A visit to the site at `base` (`http://host:port`: the app, or a proxy in
    /// front of it).
    fn new(browser: &'a Client, base: &str) -> Self {
        Visit {
            browser,
            base: base.to_owned(),
            shots: screenshot_dir(),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    async fn goto(&self, path: &str) -> anyhow::Result<()> {
        self.browser.goto(&self.url(path)).await?;
        Ok(())
    }

    async fn screenshot(&self, name: &str) -> anyhow::Result<()> {
        let png = self.browser.screenshot().await?;
        let path = self.shots.join(format!("{name}.png"));
        std::fs::write(&path, png).with_context(|| format!("writing {}", path.display()))?;
        eprintln!("screenshot: {}", path.display());
        Ok(())
    }

    /// Polls until `check` returns `Some`, or fails after [`READY_DEADLINE`] with
    /// `what` and the last value seen.
    async fn wait<T, F, Fut>(&self, what: &str, mut check: F) -> anyhow::Result<T>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = anyhow::Result<Result<T, String>>>,
    {
        let deadline = Instant::now() + READY_DEADLINE;
        loop {
            let last = match check().await? {
                Ok(value) => return Ok(value),
                Err(last) => last,
            };
            if Instant::now() > deadline {
                bail!("waited in vain for {what}; last seen: {last}");
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// Polls the browser's location until its path is `path`: a click that navigates
    /// returns before the next document is guaranteed to be the current one.
    async fn wait_for_path(&self, path: &str) -> anyhow::Result<url::Url> {
        self.wait(&format!("the path {path}"), || async {
            let current = self.browser.current_url().await?;
            Ok(if current.path() == path {
                Ok(current)
            } else {
                Err(current.to_string())
            })
        })
        .await
    }

    /// The text of the first element matching `css`, once there is one.
    async fn text(&self, css: &str) -> anyhow::Result<String> {
        self.wait(&format!("an element matching {css}"), || async {
            let element = match self.browser.find(Locator::Css(css)).await {
                Ok(element) => element,
                Err(e) => return Ok(Err(e.to_string())),
            };
            Ok(element.text().await.map_err(|e| e.to_string()))
        })
        .await
    }

    /// Waits until the first element matching `css` reads `expected`.
    async fn wait_text(&self, css: &str, expected: &str) -> anyhow::Result<()> {
        self.wait(&format!("{css} to read {expected:?}"), || async {
            // A live update can replace the element between finding and reading.
            let now = match self.browser.find(Locator::Css(css)).await {
                Ok(element) => match element.text().await {
                    Ok(text) => text,
                    Err(e) => return Ok(Err(e.to_string())),
                },
                Err(e) => return Ok(Err(e.to_string())),
            };
            Ok(if now == expected { Ok(()) } else { Err(now) })
        })
        .await
    }

    async fn theme(&self) -> anyhow::Result<String> {
        let html = self.browser.find(Locator::Css("html")).await?;
        Ok(html.attr("data-theme").await?.unwrap_or_default())
    }

    async fn script(&self, js: &str) -> anyhow::Result<serde_json::Value> {
        Ok(self.browser.execute(js, vec![]).await?)
    }

    /// Sets the viewport (not the window) to `width` × `height` CSS pixels.
    async fn viewport(&self, width: i64, height: i64) -> anyhow::Result<()> {
        // Read after two animation frames, and again until two reads agree: the
        // page may learn of a new window size after the command returns, and a
        // stale read would send the next correction astray.
        let inner = async || -> anyhow::Result<(i64, i64)> {
            let mut last = None;
            for _ in 0..100 {
                let v = self
                    .browser
                    .execute_async(
                        "const done = arguments[arguments.length - 1];
                         requestAnimationFrame(() => requestAnimationFrame(
                           () => done([window.innerWidth, window.innerHeight])));",
                        vec![],
                    )
                    .await?;
                let now = (v[0].as_i64().unwrap_or(0), v[1].as_i64().unwrap_or(0));
                if last == Some(now) {
                    return Ok(now);
                }
                last = Some(now);
            }
            bail!("the viewport kept changing: {last:?}")
        };
        let (mut w, mut h) = (width, height);
        let mut last = (0, 0);
        for _ in 0..3 {
            self.browser.set_window_size(w as u32, h as u32).await?;
            last = inner().await?;
            if last == (width, height) {
                return Ok(());
            }
            w += width - last.0;
            h += height - last.1;
        }
        bail!("could not make the viewport {width}×{height}; last {last:?}")
    }

    /// Chooses `theme` through the page's own switch, from the page now shown.
    async fn choose_theme(&self, theme: &str) -> anyhow::Result<()> {
        let here = self.browser.current_url().await?;
        self.browser
            .find(Locator::Css(&format!(
                "nav.theme-switch a[href^='/theme/{theme}']"
            )))
            .await?
            .click()
            .await?;
        self.wait(&format!("the {theme} theme"), || async {
            let now = self.theme().await.unwrap_or_default();
            Ok(if now == theme { Ok(()) } else { Err(now) })
        })
        .await?;
        let back = self.browser.current_url().await?;
        ensure!(
            back.path() == here.path() && back.query() == here.query(),
            "choosing a theme on {here} led to {back}"
        );
        Ok(())
    }

    /// Runs axe-core on the page shown; returns one line per violation (rule, impact,
    /// help, the elements) and the number of rules that passed.
    async fn axe(&self) -> anyhow::Result<(Vec<String>, u64)> {
        self.script(&format!("{AXE}\nreturn typeof window.axe;"))
            .await
            .context("injecting axe-core")?;
        let result = self
            .browser
            .execute_async(
                r#"const done = arguments[arguments.length - 1];
                window.axe.run(document, { resultTypes: ["violations"] })
                  .then((r) => done({
                    passes: r.passes.length,
                    violations: r.violations.map((v) =>
                      `${v.id} (${v.impact}): ${v.help} at ` +
                      v.nodes.map((n) => n.target.join(" ") + " [" +
                        (n.failureSummary || "").replace(/\s+/g, " ") + "]").join("; ")),
                  }))
                  .catch((e) => done({ error: String(e) }));"#,
                vec![],
            )
            .await?;
        if let Some(error) = result.get("error") {
            bail!("axe-core failed: {error}");
        }
        let violations = result["violations"]
            .as_array()
            .context("no violations list")?
            .iter()
            .map(|v| v.as_str().unwrap_or_default().to_owned())
            .collect();
        Ok((violations, result["passes"].as_u64().unwrap_or(0)))
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
        // The form may be submitted from another /search page: wait for this query.
        self.wait(&format!("the form to send q={q}"), || async {
            let at = self.browser.current_url().await?;
            let sent: Vec<_> = at.query_pairs().filter(|(k, _)| k == "q").collect();
            Ok(
                if at.path() == "/search" && sent.len() == 1 && sent[0].1 == q {
                    Ok(())
                } else {
                    Err(at.to_string())
                },
            )
        })
        .await?;
        Ok(())
    }

    /// What a failed search page must still offer: the form, holding the query, a
    /// "Try again" button that submits it (so it searches what the box holds) and
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
        self.browser
            .find(Locator::XPath(
                "//main//button[@type='submit'][@form='search-form'][normalize-space()='Try again']",
            ))
            .await
            .context("the Try again button is missing")?;
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
}

/// Runs `journey` in a fresh browser (scripts on or off) against `app`, with a
/// screenshot named `failure-NAME` when it fails, and always closes the browser.
async fn in_browser<F>(app: &TestApp, name: &str, javascript: bool, journey: F)
where
    F: for<'v> AsyncFnOnce(&'v Visit<'v>) -> anyhow::Result<()>,
{
    in_browser_with(app, name, javascript, &[], journey).await
}

/// [`in_browser`] with extra Chromium flags.
async fn in_browser_with<F>(app: &TestApp, name: &str, javascript: bool, extra: &[&str], journey: F)
where
    F: for<'v> AsyncFnOnce(&'v Visit<'v>) -> anyhow::Result<()>,
{
    in_browser_at(app, &app.address, name, javascript, extra, journey).await
}

/// [`in_browser_with`], visiting `base` (a proxy in front of `app`, say).
async fn in_browser_at<F>(
    app: &TestApp,
    base: &str,
    name: &str,
    javascript: bool,
    extra: &[&str],
    journey: F,
) where
    F: for<'v> AsyncFnOnce(&'v Visit<'v>) -> anyhow::Result<()>,
{
    let _one = ONE_BROWSER.lock().await;
    let driver = Driver::start();
    let (browser, _profile) = driver.session(javascript, extra).await;
    let visit = Visit::new(&browser, base);
    let outcome = journey(&visit).await;
    if outcome.is_err() {
        // A failure screenshot says more than the message alone.
        let _ = visit.screenshot(&format!("failure-{name}")).await;
    }
    // Let every blocked scoring go, whatever step failed, so the app can stop.
    app.faults.open();
    // End the session (and Chromium) before the driver is killed.
    let closed = browser.close().await;
    outcome.unwrap();
    closed.unwrap();
}

#[actix_web::test]
async fn without_javascript_a_visitor_searches_opens_a_result_keeps_the_dark_theme_and_meets_503_and_429(
) {
    // One scorer slot, so a blocked scoring makes the next miss a 503; two searches a
    // minute, so the third is a 429. The clock is manual: no window ends mid-test.
    let app = spawn_app_with(|s| {
        s.search.concurrency = 1;
        s.search_budget.set_limit("minute", 2);
    })
    .await;
    in_browser(&app, "no-js", false, async |v| {
        // The ledger, with the search form on top; no theme chosen yet.
        v.goto("/").await?;
        ensure!(v.text("h1").await? == "Ledger", "/ is not the ledger");
        ensure!(v.theme().await? == "auto", "no theme is chosen at first");
        v.screenshot("01-ledger").await?;

        // Search with the form: the table and its match count agree.
        v.search_with_form("kubernetes").await?;
        let count = v.text(".page-head p.muted").await?;
        let total: usize = count
            .split_whitespace()
            .next()
            .and_then(|n| n.parse().ok())
            .with_context(|| format!("no match count in {count:?}"))?;
        ensure!(
            count == format!("{total} matches") || (total == 1 && count == "1 match"),
            "unexpected count line {count:?}"
        );
        let rows = v
            .browser
            .find_all(Locator::Css("table.listing tbody tr"))
            .await?;
        ensure!(
            rows.len() == total,
            "{total} matches announced, {} rows shown",
            rows.len()
        );
        let first_title = v
            .text("table.listing tbody tr td.title .result-title")
            .await?;
        ensure!(
            first_title.starts_with("Kubernetes"),
            "the best match for kubernetes is {first_title:?}"
        );
        // The slug is in the row, inside the link (so in its accessible name).
        let slug = v.text("table.listing tbody tr td.title a .slug").await?;
        ensure!(slug == "kubernetes", "the first row's slug is {slug:?}");
        v.screenshot("02-results").await?;

        // Open the best result.
        let first = v
            .browser
            .find(Locator::Css("table.listing tbody tr td.title a"))
            .await?;
        let href = first
            .attr("href")
            .await?
            .context("a result without a link")?;
        first.click().await?;
        v.wait_for_path(&href).await?;
        ensure!(
            v.text("h1.page-title").await? == first_title,
            "the page's title differs from the result's"
        );
        v.screenshot("03-page").await?;

        // Switch to the dark theme on this page: it comes back here, dark, and
        // stays dark on the next page opened.
        v.choose_theme("dark").await?;
        v.goto("/").await?;
        v.browser
            .find(Locator::Css("table.listing a[href='/p/golang']"))
            .await?
            .click()
            .await?;
        v.wait_for_path("/p/golang").await?;
        ensure!(
            v.theme().await? == "dark",
            "the dark theme did not persist to the next page"
        );
        v.screenshot("04-dark-page").await?;

        // 503: the only scorer slot is held by another client's blocked scoring, so
        // this search (a cache miss) finds none free.
        let blocked = app.spawn_search("block me", "203.0.113.7");
        app.faults.wait_blocked(1).await;
        v.search_with_form("golang").await?;
        v.wait_text("main h1", "Search is busy").await?;
        ensure!(
            v.browser.title().await? == "Search is busy · agent-pages",
            "the 503 page's title"
        );
        let notice = v.text("main .notice").await?;
        ensure!(
            notice.contains("Search is busy")
                && notice.contains("You can search again in 1 second."),
            "expected the busy page, got {notice:?}"
        );
        v.expect_form_and_ledger_link("golang").await?;
        v.screenshot("05-busy-503").await?;
        app.faults.open();
        ensure!(blocked.await? == 200, "the blocked search did not finish");

        // 429: the browser's client (127.0.0.1) has spent its two searches this
        // minute (the 503 spent one too), so the third is refused.
        v.search_with_form("vim").await?;
        v.wait_text("main h1", "Too many searches").await?;
        ensure!(
            v.browser.title().await? == "Too many searches · agent-pages",
            "the 429 page's title"
        );
        let notice = v.text("main .notice").await?;
        ensure!(
            notice.contains("Too many searches this minute")
                && notice.contains("You can search again in 60 seconds."),
            "expected the rate-limited page, got {notice:?}"
        );
        v.expect_form_and_ledger_link("vim").await?;
        ensure!(
            app.counters("127.0.0.1") == (2, 2),
            "the refused search changed a counter: {:?}",
            app.counters("127.0.0.1")
        );
        v.screenshot("06-rate-limited-429").await?;

        // And the link leads back to the ledger.
        v.browser
            .find(Locator::XPath(
                "//main//a[normalize-space()='Back to the ledger']",
            ))
            .await?
            .click()
            .await?;
        v.wait_for_path("/").await?;
        ensure!(
            v.text("h1").await? == "Ledger",
            "the link did not lead to the ledger"
        );
        Ok(())
    })
    .await;
}

#[actix_web::test]
async fn live_search_follows_typing_with_few_requests_and_opens_a_result_by_keyboard() {
    let app = spawn_app_with(|s| s.search_budget.set_limit("minute", 20)).await;
    app.conn()
        .execute(
            "UPDATE pages SET body = ?1 WHERE slug = 'kubernetes'",
            [MARKDOWN_BODY],
        )
        .unwrap();
    in_browser(&app, "live", true, async |v| {
        v.goto("/").await?;
        ensure!(v.text("h1").await? == "Ledger", "/ is not the ledger");
        // A mark on this document: a page load would wipe it.
        v.script("window.sameDocument = true;").await?;

        // Type one key at a time, as a person does.
        let typed = "kubrenetes";
        let input = v
            .browser
            .find(Locator::Css("form.search-form input[name=q]"))
            .await?;
        for key in typed.chars() {
            input.send_keys(&key.to_string()).await?;
        }

        // The result appears in this same document, its words marked. (An answer
        // to a shorter prefix may come first: wait for the whole word's.)
        v.wait_text("main h1", &format!("Results for “{typed}”"))
            .await?;
        let first = v
            .wait("the Kubernetes result", || async {
                let title = match v
                    .browser
                    .find(Locator::Css("main table.results td.title .result-title"))
                    .await
                {
                    Ok(e) => e.text().await?,
                    Err(e) => return Ok(Err(e.to_string())),
                };
                Ok(if title.starts_with("Kubernetes") {
                    Ok(title)
                } else {
                    Err(title)
                })
            })
            .await?;
        ensure!(
            v.script("return window.sameDocument === true;").await? == true,
            "the results came with a page load"
        );
        let mark = v
            .text("main table.results tbody tr:first-child mark")
            .await?;
        ensure!(mark == "Kubernetes", "the marked word is {mark:?}");
        // The address follows, so reload and back work.
        let at = v.browser.current_url().await?;
        ensure!(
            at.path() == "/search" && at.query_pairs().any(|(k, q)| k == "q" && q == typed),
            "the address is {at}"
        );

        // The script's own normalization, asked in the page: equal match copies
        // are one request.
        let copies = v
            .browser
            .execute_async(
                r#"const done = arguments[arguments.length - 1];
                import("/static/search.js").then((m) => done([
                  m.matchCopy("Kubernetes "), m.matchCopy("kubernetes"),
                  m.matchCopy("\uFF2B\uFF55\uFF42\uFF45\u2014ctl"), m.matchCopy("-a-"),
                  m.parseRateLimit('"minute";r=18;t=42, "hour";r=198;t=3000'),
                ]), (e) => done(String(e)));"#,
                vec![],
            )
            .await?;
        ensure!(
            copies
                == serde_json::json!([
                    "kubernetes",
                    "kubernetes",
                    "kube ctl",
                    "a",
                    [{"name": "minute", "r": 18, "t": 42}, {"name": "hour", "r": 198, "t": 3000}]
                ]),
            "the script normalizes as {copies}"
        );

        // The budget line says what the server counted: fewer requests than keys.
        let per_minute = 20;
        let (sent, line) = v
            .wait("the budget line to match the server's counters", || async {
                let line = v.text("#search-budget").await?;
                let sent = app.counters("127.0.0.1").0;
                let left = per_minute - sent;
                let expected = if left == 1 {
                    "1 search left this minute".to_owned()
                } else {
                    format!("{left} searches left this minute")
                };
                Ok(if line == expected {
                    Ok((sent, line))
                } else {
                    Err(format!("{line:?} with {sent} sent"))
                })
            })
            .await?;
        eprintln!(
            "live search: typing {typed:?} ({} keys) sent {sent} request(s); budget line {line:?}",
            typed.chars().count()
        );
        ensure!(
            sent >= 1 && sent < typed.chars().count() as i64,
            "typing {} keys sent {sent} searches",
            typed.chars().count()
        );
        let (violations, _) = v.axe().await?;
        ensure!(
            violations.is_empty(),
            "axe on live results: {violations:#?}"
        );
        v.screenshot("07-live-results").await?;

        // Down arrow to the first result, Enter to open it.
        input.send_keys(&Key::Down.to_string()).await?;
        let focused = v.browser.active_element().await?;
        ensure!(
            focused.attr("href").await?.as_deref() == Some("/p/kubernetes"),
            "the down arrow did not reach the first result"
        );
        focused.send_keys(&Key::Enter.to_string()).await?;
        v.wait_for_path("/p/kubernetes").await?;
        ensure!(v.text("h1.page-title").await? == first, "the opened page");
        ensure!(
            v.text("article .markdown h2").await? == "Getting started",
            "the Markdown heading is not rendered"
        );
        ensure!(
            v.text("article .markdown table th.align-right").await? == "port",
            "the Markdown table is not rendered"
        );

        // Screenshots: the table and code block, light and dark, wide and narrow.
        v.choose_theme("light").await?;
        v.screenshot("08-page-markdown-light-1280").await?;
        v.viewport(390, 844).await?;
        v.screenshot("09-page-markdown-light-390").await?;
        v.choose_theme("dark").await?;
        v.screenshot("10-page-markdown-dark-390").await?;
        v.viewport(1280, 900).await?;
        v.screenshot("11-page-markdown-dark-1280").await?;

        // Back returns to the results.
        v.browser.back().await?;
        v.browser.back().await?;
        v.browser.back().await?;
        v.wait_for_path("/search").await?;
        ensure!(
            v.text("main table.results td.title .result-title")
                .await?
                .starts_with("Kubernetes"),
            "back did not return to the results"
        );
        Ok(())
    })
    .await;
}

#[actix_web::test]
async fn live_search_retries_a_503_once_and_counts_a_429_down_without_retrying() {
    // One scorer slot (held by a blocked scoring at first), three searches a minute.
    let app = spawn_app_with(|s| {
        s.search.concurrency = 1;
        s.search_budget.set_limit("minute", 3);
    })
    .await;
    let blocked = app.spawn_search("block me", "203.0.113.7");
    app.faults.wait_blocked(1).await;
    in_browser(&app, "live-503-429", true, async |v| {
        v.goto("/").await?;
        // The whole word at once: exactly one search is scheduled.
        v.script(
            "const q = document.querySelector('form.search-form input[name=q]');
             q.value = 'programming'; q.dispatchEvent(new Event('input'));",
        )
        .await?;
        // The first 503 is retried once, after Retry-After plus jitter; the second
        // is shown, with the wait counted down and "Try again" held until then.
        v.wait_text("main h1", "Search is busy").await?;
        ensure!(
            app.outcome_count("503-busy").await == 2,
            "a 503 was retried other than once"
        );
        app.faults.open();
        app.wait_slots_free().await;
        let button = v
            .browser
            .find(Locator::XPath(
                "//main//button[normalize-space()='Try again']",
            ))
            .await?;
        v.wait_text("main .notice .retry", "You can search again now.")
            .await?;
        ensure!(button.is_enabled().await?, "Try again stays disabled");
        button.click().await?;
        v.wait_text(
            "main table.results td.title .result-title",
            "Go programming language compiler",
        )
        .await?;
        v.wait_text("#search-budget", "0 searches left this minute")
            .await?;

        // The budget is spent: the next query is refused, and the wait shown.
        let input = v
            .browser
            .find(Locator::Css("form.search-form input[name=q]"))
            .await?;
        input.send_keys(" language").await?;
        v.wait_text("main h1", "Too many searches").await?;
        let notice = v.text("main .notice").await?;
        ensure!(
            notice.contains("Too many searches this minute")
                && notice.contains("You can search again in")
                && notice.contains("second"),
            "the live 429 notice: {notice:?}"
        );
        ensure!(
            !v.browser
                .find(Locator::XPath(
                    "//main//button[normalize-space()='Try again']"
                ))
                .await?
                .is_enabled()
                .await?,
            "Try again is offered before the wait is over"
        );
        ensure!(app.outcome_count("429-minute").await == 1, "one refusal");
        ensure!(
            app.counters("127.0.0.1") == (3, 3),
            "the refusal spent budget"
        );
        let (violations, _) = v.axe().await?;
        ensure!(
            violations.is_empty(),
            "axe on the live 429: {violations:#?}"
        );
        v.screenshot("12-live-429").await?;
        Ok(())
    })
    .await;
    assert_eq!(blocked.await.unwrap(), 200);
}

#[actix_web::test]
async fn with_no_theme_chosen_pages_follow_the_system_colour_scheme() {
    let app = spawn_app_with(|_| {}).await;
    in_browser_with(
        &app,
        "system-dark",
        true,
        &["--force-dark-mode"],
        async |v| {
            v.goto("/").await?;
            ensure!(v.theme().await? == "auto", "a theme was chosen");
            let background = v
                .script("return getComputedStyle(document.body).backgroundColor;")
                .await?;
            ensure!(
                background == "rgb(15, 18, 22)",
                "a dark system got the background {background}"
            );
            let (violations, _) = v.axe().await?;
            ensure!(
                violations.is_empty(),
                "axe on the system-dark ledger: {violations:#?}"
            );
            // Choosing light overrides the system.
            v.choose_theme("light").await?;
            let background = v
                .script("return getComputedStyle(document.body).backgroundColor;")
                .await?;
            ensure!(
                background == "rgb(247, 248, 250)",
                "the light choice got the background {background}"
            );
            Ok(())
        },
    )
    .await;
}

#[actix_web::test]
async fn every_page_kind_passes_axe_in_both_themes_at_1280_and_390_pixels() {
    // App A answers everything but the 429: a budget that never runs out, one
    // scorer slot (held by a blocked scoring for the 503s).
    let app = spawn_app_with(|s| {
        s.search.concurrency = 1;
        s.search_budget.set_limit("minute", 1_000);
        s.search_budget.set_limit("hour", 10_000);
    })
    .await;
    app.conn()
        .execute(
            "UPDATE pages SET body = ?1 WHERE slug = 'kubernetes'",
            [MARKDOWN_BODY],
        )
        .unwrap();
    // App B refuses: its one search a minute is spent before the browser comes.
    let refusing = spawn_app_with(|s| s.search_budget.set_limit("minute", 1)).await;
    assert_eq!(refusing.get("/search?q=vim").await.status(), 200);

    // Cached before the slot is blocked, so these stay answerable.
    for q in ["kubernetes", "zzqxv"] {
        assert_eq!(app.get(&format!("/search?q={q}")).await.status(), 200);
    }
    let blocked = app.spawn_search("block me", "203.0.113.7");
    app.faults.wait_blocked(1).await;

    let kinds: [(&str, String, &str); 8] = [
        ("ledger", format!("{}/", app.address), "Ledger"),
        (
            "results",
            format!("{}/search?q=kubernetes", app.address),
            "Results for “kubernetes”",
        ),
        (
            "no-results",
            format!("{}/search?q=zzqxv", app.address),
            "Results for “zzqxv”",
        ),
        (
            "short-query",
            format!("{}/search?q=k", app.address),
            "Search",
        ),
        (
            "429",
            format!("{}/search?q=golang", refusing.address),
            "Too many searches",
        ),
        (
            "503",
            format!("{}/search?q=golang", app.address),
            "Search is busy",
        ),
        (
            "page",
            format!("{}/p/kubernetes", app.address),
            "Kubernetes container orchestration",
        ),
        ("404", format!("{}/p/nope", app.address), "Not Found"),
    ];
    in_browser(&app, "axe", true, async |v| {
        let mut failures = Vec::new();
        for theme in ["light", "dark"] {
            // The cookie is per host, not per port: one choice covers both apps.
            v.goto("/").await?;
            v.choose_theme(theme).await?;
            for width in [1280, 390] {
                v.viewport(width, if width > 500 { 900 } else { 844 }).await?;
                for (kind, url, heading) in &kinds {
                    v.browser.goto(url).await?;
                    let h1 = v.text("main h1").await?;
                    ensure!(h1 == *heading, "{kind}: the heading is {h1:?}");
                    ensure!(v.theme().await? == theme, "{kind}: not {theme}");
                    let overflow = v
                        .script(
                            "return document.documentElement.scrollWidth > window.innerWidth;",
                        )
                        .await?;
                    let (violations, passes) = v.axe().await?;
                    eprintln!(
                        "axe {kind:>11} {theme:>5} {width:>4}px: {} violation(s), {passes} rules passed",
                        violations.len()
                    );
                    if overflow == true {
                        failures.push(format!("{kind} {theme} {width}px: the page scrolls sideways"));
                    }
                    failures.extend(
                        violations
                            .into_iter()
                            .map(|f| format!("{kind} {theme} {width}px: {f}")),
                    );
                    if width == 390 && matches!(*kind, "results" | "ledger" | "429") {
                        v.screenshot(&format!("axe-{kind}-{theme}-{width}")).await?;
                    }
                }
            }
        }
        ensure!(failures.is_empty(), "axe found:\n{}", failures.join("\n"));
        Ok(())
    })
    .await;
    assert_eq!(blocked.await.unwrap(), 200);
}
