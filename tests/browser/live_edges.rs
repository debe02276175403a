//! The edges of live search a visitor trips over (issue 23), each in a real
//! Chromium: the focus ring on result links (checked in pixels), what "Try again"
//! sends, answers that land after the box changed, failures, Back, Enter, the close
//! matches line, the budget line's place and words, the waits' words, "Searching…",
//! and the Markdown page's task boxes, keys and inline code.
//!
//! Slow and lost answers come from [`Proxy`] (held or dropped at the test's word)
//! or the scorer's fault hook, never from a clock; a wait for something to appear
//! is bounded but never measured.

use anyhow::{ensure, Context as _};
use fantoccini::key::Key;
use fantoccini::Locator;

use super::helpers::{spawn_app_with, T0};
use super::pixels::{close_to, contrast, parse_rgb, Rect};
use super::proxy::Proxy;
use super::{in_browser, in_browser_at, Visit};

const BOX: &str = "form.search-form input[name=q]";

impl Visit<'_> {
    /// Puts `text` in the search box at once, as a paste does: one `input` event, so
    /// exactly one search is scheduled.
    async fn paste(&self, text: &str) -> anyhow::Result<()> {
        self.browser
            .execute(
                "const q = document.querySelector(arguments[1]); q.focus(); q.value = arguments[0];
                 q.dispatchEvent(new Event('input', { bubbles: true }));",
                vec![serde_json::json!(text), serde_json::json!(BOX)],
            )
            .await?;
        Ok(())
    }

    /// The address shown: its path and its `q`, if any.
    async fn address(&self) -> anyhow::Result<(String, Option<String>)> {
        let at = self.browser.current_url().await?;
        let q = at
            .query_pairs()
            .find(|(k, _)| k == "q")
            .map(|(_, v)| v.into_owned());
        Ok((at.path().to_owned(), q))
    }

    async fn box_value(&self) -> anyhow::Result<String> {
        let v = self
            .script(&format!("return document.querySelector('{BOX}').value;"))
            .await?;
        Ok(v.as_str().unwrap_or_default().to_owned())
    }

    /// Fractions (top, right, bottom, left) of the line 3 px outside the first result
    /// link (the middle of a 3 px outline drawn 2 px off its box) that are painted in
    /// the link's outline colour, (without focus, with keyboard focus). Corners are
    /// left out: the outline follows the border radius there.
    async fn focus_ring_cover(&self) -> anyhow::Result<([f64; 4], [f64; 4])> {
        let link = "main table.results tbody tr:first-child td.title a";
        self.script(&format!("document.querySelector('{BOX}').focus();"))
            .await?;
        let rect = self.rect(link).await?;
        let unfocused = self.browser.screenshot().await?;
        // Keyboard focus: Tab from the search button reaches the first result.
        self.script("document.querySelector('form.search-form button[type=submit]').focus();")
            .await?;
        self.browser
            .active_element()
            .await?
            .send_keys(&Key::Tab.to_string())
            .await?;
        let focused_link = self
            .script(&format!(
                "return document.activeElement === document.querySelector('{link}')
                    && document.activeElement.matches(':focus-visible');"
            ))
            .await?;
        ensure!(focused_link == true, "Tab did not focus the first result");
        let colour = parse_rgb(
            self.script("return getComputedStyle(document.activeElement).outlineColor;")
                .await?
                .as_str()
                .unwrap_or_default(),
        )?;
        let focused = self.browser.screenshot().await?;
        ensure!(self.rect(link).await? == rect, "focusing the link moved it");
        let pad = 6.0;
        let area = Rect {
            x: rect.x - pad,
            y: rect.y - pad,
            width: rect.width + 2.0 * pad,
            height: rect.height + 2.0 * pad,
        };
        let mut covers = [[0.0; 4]; 2];
        for (i, png) in [unfocused, focused].iter().enumerate() {
            let region = self.region(png, area).await?;
            let (w, h) = (region.width, region.height);
            // Rows and columns 3 px outside the link's edges, in region pixels.
            let (top, bottom) = (pad as usize - 4, h - pad as usize + 3);
            let (left, right) = (pad as usize - 4, w - pad as usize + 3);
            let inset = 8;
            let share = |pixels: Vec<[u8; 3]>| {
                let n = pixels.len().max(1) as f64;
                pixels
                    .into_iter()
                    .filter(|p| close_to(*p, colour, 48))
                    .count() as f64
                    / n
            };
            let row = |y: usize| {
                share(
                    (left + inset..right - inset)
                        .map(|x| region.at(x, y))
                        .collect(),
                )
            };
            let col = |x: usize| {
                share(
                    (top + inset..bottom - inset)
                        .map(|y| region.at(x, y))
                        .collect(),
                )
            };
            covers[i] = [row(top), col(right), row(bottom), col(left)];
        }
        Ok((covers[0], covers[1]))
    }
}

/// Defect 1: a result link holds two block spans; the focus ring must be drawn.
#[actix_web::test]
async fn a_focused_result_link_draws_its_focus_ring_live_and_server_rendered_in_both_themes() {
    let app = spawn_app_with(|_| {}).await;
    in_browser(&app, "focus-ring", true, async |v| {
        for theme in ["light", "dark"] {
            v.goto("/").await?;
            v.choose_theme(theme).await?;
            v.paste("kubernetes").await?;
            v.wait_text("main h1", "Results for “kubernetes”").await?;
            let live = v.focus_ring_cover().await?;
            v.goto("/search?q=kubernetes").await?;
            let server = v.focus_ring_cover().await?;
            for (page, (without, with)) in [("live", live), ("server", server)] {
                eprintln!("focus ring {theme} {page}: unfocused {without:?}, focused {with:?}");
                ensure!(
                    without.iter().all(|c| *c < 0.1),
                    "{theme} {page}: the outline colour is there without focus: {without:?}"
                );
                ensure!(
                    with.iter().all(|c| *c > 0.9),
                    "{theme} {page}: no focus ring drawn around the result (top, right, bottom, left covered: {with:?})"
                );
            }
            v.screenshot(&format!("focus-ring-{theme}")).await?;
        }
        Ok(())
    })
    .await;
}

/// Defect 2: "Try again" after a live 429 searches what the box holds.
#[actix_web::test]
async fn try_again_after_a_live_429_searches_what_the_box_holds() {
    let app = spawn_app_with(|s| s.search_budget.set_limit("minute", 1)).await;
    in_browser(&app, "try-again-box", true, async |v| {
        v.goto("/").await?;
        v.paste("golang").await?;
        v.wait_text("main h1", "Results for “golang”").await?;
        // Two seconds left in this minute: the refusal's wait is short.
        app.clock.set(T0 + 58);
        v.paste("vim").await?;
        v.wait_text("main h1", "Too many searches").await?;
        v.paste("haskell").await?;
        v.wait_text("main .notice .retry", "You can search again now.")
            .await?;
        app.clock.set(T0 + 61);
        v.browser
            .find(Locator::XPath(
                "//main//button[normalize-space()='Try again']",
            ))
            .await?
            .click()
            .await?;
        v.wait_text("main h1", "Results for “haskell”").await?;
        ensure!(
            v.address().await? == ("/search".to_owned(), Some("haskell".to_owned())),
            "the address is {:?}",
            v.address().await?
        );
        ensure!(
            app.outcome_count("429-minute").await == 1,
            "typing during the wait sent a search"
        );
        Ok(())
    })
    .await;
}

/// Defect 3: an answer that lands after the box changed (inside the pause before the
/// next request) is not painted. The box is changed without an `input` event, which
/// holds the pause open for as long as the test needs.
#[actix_web::test]
async fn a_slow_answer_that_lands_after_the_box_changed_is_not_painted() {
    let app = spawn_app_with(|_| {}).await;
    let proxy = Proxy::start(&app.address).await;
    proxy.hold("golang");
    in_browser_at(&app, &proxy.address, "stale-answer", true, &[], async |v| {
        v.goto("/").await?;
        v.paste("golang").await?;
        app.wait_until(|| proxy.holding("golang") == 1).await;
        v.script(&format!(
            "document.querySelector('{BOX}').value = 'golang compiler';"
        ))
        .await?;
        proxy.release("golang");
        // The answer has landed once the budget line shows what it spent.
        v.wait_text("#search-budget", "19 searches left this minute")
            .await?;
        ensure!(
            v.text("main h1").await? == "Ledger",
            "the answer for golang was painted under a box reading “golang compiler”"
        );
        ensure!(v.address().await?.0 == "/", "the address followed a stale answer");
        v.script(&format!(
            "document.querySelector('{BOX}').dispatchEvent(new Event('input', {{ bubbles: true }}));"
        ))
        .await?;
        v.wait_text("main h1", "Results for “golang compiler”")
            .await?;
        Ok(())
    })
    .await;
}

/// Defect 4: a failure (a lost connection, a 500) moves the address, title and live
/// region with the notice, and says a lost search may have been spent.
#[actix_web::test]
async fn a_failed_live_search_moves_address_title_and_status_with_the_notice() {
    let app = spawn_app_with(|_| {}).await;
    let proxy = Proxy::start(&app.address).await;
    proxy.drop_answers("golang");
    in_browser_at(&app, &proxy.address, "failure", true, &[], async |v| {
        v.goto("/").await?;
        v.paste("vim").await?;
        v.wait_text("main h1", "Results for “vim”").await?;
        ensure!(v.text("#search-status").await?.contains("vim"), "no status");

        v.paste("golang").await?;
        v.wait_text("main h1", "Search failed").await?;
        let sends = proxy.seen("golang");
        eprintln!("a dropped live search reached the app {sends} time(s)");
        ensure!(
            v.address().await? == ("/search".to_owned(), Some("golang".to_owned())),
            "after the failure the address is {:?}",
            v.address().await?
        );
        ensure!(
            v.browser.title().await? == "Search failed · agent-pages",
            "after the failure the title is {:?}",
            v.browser.title().await?
        );
        let status = v
            .script("return document.getElementById('search-status').textContent;")
            .await?;
        ensure!(
            !status.as_str().unwrap_or_default().contains("vim"),
            "the live region still speaks of vim: {status}"
        );
        let notice = v.text("main .notice").await?;
        ensure!(
            notice.contains("may still have been counted"),
            "the failure does not say the search may have been spent: {notice:?}"
        );
        let line = v.text("#search-budget").await?;
        ensure!(
            line == "At most 19 searches left this minute",
            "after a lost search the budget line says {line:?}"
        );
        ensure!(
            app.counters("127.0.0.1").0 == 1 + sends as i64,
            "each send of the lost search spent one: {:?} for {sends}",
            app.counters("127.0.0.1")
        );

        // A server failure follows the same rule.
        v.paste("panic now").await?;
        v.wait("the 500 notice for “panic now”", || async {
            let at = v.address().await?;
            Ok(if at.1.as_deref() == Some("panic now") {
                Ok(())
            } else {
                Err(format!("{at:?}"))
            })
        })
        .await?;
        ensure!(
            v.text("main h1").await? == "Search failed",
            "the 500's heading"
        );
        ensure!(
            v.browser.title().await? == "Search failed · agent-pages",
            "the 500's title"
        );
        Ok(())
    })
    .await;
}

/// Defect 5: the first live answer of a visit is a new history entry.
#[actix_web::test]
async fn back_after_live_results_returns_to_the_ledger_and_forward_to_the_results() {
    let app = spawn_app_with(|_| {}).await;
    in_browser(&app, "back", true, async |v| {
        v.goto("/").await?;
        v.paste("golang").await?;
        v.wait_text("main h1", "Results for “golang”").await?;
        v.paste("golang compiler").await?;
        v.wait_text("main h1", "Results for “golang compiler”")
            .await?;
        // A skip to #main is an entry of its own, at the same address: going
        // there and back changes nothing shown.
        v.script("document.querySelector('a.skip-link').click();")
            .await?;
        v.wait("the #main entry", || async {
            let at = v.browser.current_url().await?;
            Ok(if at.fragment() == Some("main") {
                Ok(())
            } else {
                Err(at.to_string())
            })
        })
        .await?;
        v.browser.back().await?;
        ensure!(
            v.text("main h1").await? == "Results for “golang compiler”",
            "Back from #main left the results"
        );
        v.browser.back().await?;
        v.wait_for_path("/").await?;
        v.wait_text("main h1", "Ledger").await?;
        ensure!(v.box_value().await?.is_empty(), "the box kept the query");
        v.browser.forward().await?;
        v.wait_for_path("/search").await?;
        v.wait_text("main h1", "Results for “golang compiler”")
            .await?;
        ensure!(
            v.box_value().await? == "golang compiler",
            "the box does not hold the query of the results"
        );
        Ok(())
    })
    .await;
}

/// Defect 6: Enter on results already shown for the box's query sends nothing.
#[actix_web::test]
async fn enter_on_live_results_of_the_box_spends_no_second_search() {
    let app = spawn_app_with(|_| {}).await;
    in_browser(&app, "enter", true, async |v| {
        for (start, spent) in [("/", 1), ("/search?q=golang", 2)] {
            v.goto(start).await?;
            v.script("window.sameDocument = true;").await?;
            if start == "/" {
                v.paste("golang").await?;
                v.wait_text("main h1", "Results for “golang”").await?;
            }
            ensure!(app.counters("127.0.0.1").0 == spent, "{start}: spent");
            let input = v.browser.find(Locator::Css(BOX)).await?;
            input.send_keys(&Key::Enter.to_string()).await?;
            v.wait("Enter to focus the first result", || async {
                let href = v
                    .script("return document.activeElement.getAttribute('href');")
                    .await?;
                Ok(if href == "/p/golang" {
                    Ok(())
                } else {
                    Err(href.to_string())
                })
            })
            .await?;
            ensure!(
                v.script("return window.sameDocument === true;").await? == true,
                "{start}: Enter loaded a page"
            );
            ensure!(
                app.counters("127.0.0.1").0 == spent,
                "{start}: Enter spent a search"
            );
        }
        Ok(())
    })
    .await;
}

/// Defect 7: the live page says what the server page says, close matches included.
#[actix_web::test]
async fn live_results_say_what_the_server_page_says_close_matches_included() {
    let app = spawn_app_with(|_| {}).await;
    let (_, _, answer) = app.search_json("kubrenetes", "198.51.100.7").await;
    assert_eq!(answer["close_matches"], true, "{answer}");
    in_browser(&app, "close-matches", true, async |v| {
        v.goto("/").await?;
        v.paste("kubrenetes").await?;
        v.wait_text("main h1", "Results for “kubrenetes”").await?;
        let live = v.text("main .page-head").await?;
        v.goto("/search?q=kubrenetes").await?;
        let server = v.text("main .page-head").await?;
        ensure!(
            live == server,
            "live says {live:?}, the server page {server:?}"
        );
        ensure!(
            live.contains("Includes close matches for words you typed."),
            "no close matches line: {live:?}"
        );
        Ok(())
    })
    .await;
}

/// Defect 8: the budget line's place is kept before it has words.
#[actix_web::test]
async fn the_budget_line_appearing_moves_nothing_below_it() {
    let app = spawn_app_with(|_| {}).await;
    in_browser(&app, "budget-line", true, async |v| {
        for start in ["/", "/search?q=vim"] {
            v.goto(start).await?;
            let before = v.rect("#main").await?;
            v.paste("golang").await?;
            v.wait_text(
                "#search-budget",
                &format!(
                    "{} searches left this minute",
                    if start == "/" { 19 } else { 17 }
                ),
            )
            .await?;
            let after = v.rect("#main").await?;
            ensure!(
                after.y == before.y,
                "{start}: the budget line moved the page by {} px",
                after.y - before.y
            );
        }
        Ok(())
    })
    .await;
}

/// Defect 9, first half: after a 429's wait the budget line counts the new window.
#[actix_web::test]
async fn after_a_live_429_countdown_the_budget_line_counts_the_new_window() {
    let app = spawn_app_with(|s| s.search_budget.set_limit("minute", 2)).await;
    in_browser(&app, "budget-after-429", true, async |v| {
        v.goto("/").await?;
        v.paste("golang").await?;
        v.wait_text("#search-budget", "1 search left this minute")
            .await?;
        v.paste("vim").await?;
        v.wait_text("#search-budget", "0 searches left this minute")
            .await?;
        app.clock.set(T0 + 58);
        v.paste("kubernetes").await?;
        v.wait_text("main h1", "Too many searches").await?;
        v.wait_text("main .notice .retry", "You can search again now.")
            .await?;
        // The minute is over: its 2 searches are back (the hour has 198 left).
        v.wait_text("#search-budget", "2 searches left this minute")
            .await?;
        app.clock.set(T0 + 60);
        v.browser
            .find(Locator::XPath(
                "//main//button[normalize-space()='Try again']",
            ))
            .await?
            .click()
            .await?;
        v.wait_text("main h1", "Results for “kubernetes”").await?;
        // The server agrees.
        v.wait_text("#search-budget", "1 search left this minute")
            .await?;
        Ok(())
    })
    .await;
}

/// Defect 9, second half: a wait past a minute reads in minutes and seconds, on the
/// server page, in the JSON detail and in the live countdown.
#[actix_web::test]
async fn long_waits_read_as_minutes_and_seconds_live_and_server_rendered() {
    let app = spawn_app_with(|s| {
        s.search_budget.set_limit("minute", 100);
        s.search_budget.set_limit("hour", 1);
    })
    .await;
    // 271 seconds left in this hour.
    app.clock.set(T0 + 3600 - 271);
    assert_eq!(app.get("/search?q=golang").await.status(), 200);
    let page = app.get("/search?q=vim").await.text().await.unwrap();
    assert!(
        page.contains(
            "You can search again in <span class=\"countdown\">4 minutes 31 seconds</span>."
        ),
        "the server page's wait: {}",
        page.lines()
            .filter(|l| l.contains("search again"))
            .collect::<String>()
    );
    let (_, _, problem) = app.search_json("vim", "127.0.0.1").await;
    assert_eq!(
        problem["detail"],
        "Too many searches this hour: try again in 4 minutes 31 seconds."
    );
    in_browser(&app, "long-wait", true, async |v| {
        v.goto("/").await?;
        let words = v
            .browser
            .execute_async(
                r#"const done = arguments[arguments.length - 1];
                import("/static/search.js").then((m) => done(
                  [1, 2, 59, 60, 61, 62, 120, 121, 271, 3600].map(m.formatWait)),
                  (e) => done(String(e)));"#,
                vec![],
            )
            .await?;
        ensure!(
            words
                == serde_json::json!([
                    "1 second",
                    "2 seconds",
                    "59 seconds",
                    "60 seconds",
                    "1 minute 1 second",
                    "1 minute 2 seconds",
                    "2 minutes",
                    "2 minutes 1 second",
                    "4 minutes 31 seconds",
                    "60 minutes"
                ]),
            "formatWait says {words}"
        );
        v.paste("kubernetes").await?;
        v.wait_text("main h1", "Too many searches").await?;
        let counter = v.text("main .notice .countdown").await?;
        let (minutes, seconds) = counter
            .split_once(" minutes ")
            .with_context(|| format!("the live wait reads {counter:?}"))?;
        ensure!(
            minutes == "4"
                && seconds
                    .strip_suffix(" seconds")
                    .or_else(|| seconds.strip_suffix(" second"))
                    .is_some_and(|s| s.parse::<u32>().is_ok()),
            "the live wait reads {counter:?}"
        );
        Ok(())
    })
    .await;
}

/// Defect 10: "Searching…" and `aria-busy` while an answer is slow, and through the
/// wait before a 503's one retry.
#[actix_web::test]
async fn a_slow_answer_and_a_503_retry_show_searching_and_aria_busy() {
    let app = spawn_app_with(|s| s.search.concurrency = 1).await;
    let proxy = Proxy::start(&app.address).await;
    proxy.hold("golang");
    in_browser_at(&app, &proxy.address, "pending", true, &[], async |v| {
        v.goto("/").await?;
        v.paste("golang").await?;
        app.wait_until(|| proxy.holding("golang") == 1).await;
        v.wait_text("#search-pending", "Searching…").await?;
        ensure!(
            v.script("return document.getElementById('main').getAttribute('aria-busy');")
                .await?
                == "true",
            "main is not aria-busy while the answer is slow"
        );
        proxy.release("golang");
        v.wait_text("main h1", "Results for “golang”").await?;
        ensure!(
            v.text("#search-pending").await?.is_empty(),
            "Searching… stays after the answer"
        );
        ensure!(
            v.script("return document.getElementById('main').hasAttribute('aria-busy');")
                .await?
                == false,
            "main stays aria-busy after the answer"
        );

        // A 503, retried once after 1–2 s: "Searching…" from the first request until
        // the second answer is shown, recorded by the page itself.
        let blocked = app.spawn_search("block me", "203.0.113.7");
        app.faults.wait_blocked(1).await;
        v.script(
            "window.pendingLog = [];
             const pending = document.getElementById('search-pending');
             new MutationObserver(() => window.pendingLog.push([
               pending.textContent,
               document.getElementById('main').getAttribute('aria-busy'),
               document.querySelector('main h1').textContent,
             ])).observe(pending, { childList: true, characterData: true, subtree: true });",
        )
        .await?;
        v.paste("programming").await?;
        v.wait_text("main h1", "Search is busy").await?;
        let log = v.script("return window.pendingLog;").await?;
        ensure!(
            log == serde_json::json!([
                ["Searching…", "true", "Results for “golang”"],
                ["", null, "Search is busy"]
            ]),
            "pending through the 503 and its retry: {log}"
        );
        ensure!(app.outcome_count("503-busy").await == 2, "one retry");
        app.faults.open();
        ensure!(blocked.await? == 200, "the blocked search");
        Ok(())
    })
    .await;
}

/// Words before the inline code of the Markdown test, so that at 390 px the line
/// ends at different places in it.
const CODE_LEADS: [&str; 8] = [
    "Run",
    "To list them, run",
    "To see every pod, run",
    "List all pods with",
    "You can run",
    "To see all of them run",
    "First, run",
    "Now run the command",
];

/// Defect 11: a checked task box is told from an unchecked one (3:1, as WCAG asks of
/// non-text contrast), `<kbd>` looks like a key, and inline code keeps `--` with
/// its word at 390 px.
#[actix_web::test]
async fn markdown_task_boxes_kbd_and_inline_code_read_well_at_390_pixels() {
    let app = spawn_app_with(|_| {}).await;
    app.conn()
        .execute(
            "UPDATE pages SET body = ?1 WHERE slug = 'kubernetes'",
            ["- [x] install kubeadm\n- [ ] join the workers\n\n\
              Press <kbd>Ctrl</kbd>+<kbd>C</kbd> to stop it.\n\n"
                .to_owned()
                + &CODE_LEADS
                    .iter()
                    .map(|lead| format!("{lead} `kubectl get pods --kubeconfig` to list them.\n\n"))
                    .collect::<String>()],
        )
        .unwrap();
    in_browser(&app, "markdown-cosmetics", true, async |v| {
        v.viewport(390, 844).await?;
        for theme in ["light", "dark"] {
            v.goto("/p/kubernetes").await?;
            v.choose_theme(theme).await?;
            v.script("document.querySelector('.markdown ul').scrollIntoView({ block: 'center' });")
                .await?;
            let png = v.browser.screenshot().await?;
            let mut means = Vec::new();
            for which in ["checked", "not(:checked)"] {
                let mut r = v
                    .rect(&format!(".markdown input[type=checkbox]:{which}"))
                    .await?;
                // The inside of the box, off its border.
                r = Rect {
                    x: r.x + 3.0,
                    y: r.y + 3.0,
                    width: r.width - 6.0,
                    height: r.height - 6.0,
                };
                means.push(v.region(&png, r).await?.mean());
            }
            let ratio = contrast(means[0], means[1]);
            eprintln!(
                "task boxes {theme}: checked {:?}, unchecked {:?}, {ratio:.2}:1",
                means[0], means[1]
            );
            ensure!(
                ratio >= 3.0,
                "{theme}: the checked box is {ratio:.2}:1 from the unchecked one"
            );
            let kbd = v
                .script(
                    "const k = getComputedStyle(document.querySelector('.markdown kbd'));
                     const p = getComputedStyle(document.querySelector('.markdown'));
                     return k.borderBottomStyle !== 'none' && parseFloat(k.borderBottomWidth) > 0
                       && k.backgroundColor !== p.backgroundColor
                       && k.backgroundColor !== 'rgba(0, 0, 0, 0)';",
                )
                .await?;
            ensure!(kbd == true, "{theme}: <kbd> has no key styling");
            // Each lead puts the line's end elsewhere in the code (with this page's
            // fonts, some right after its `--`).
            let broken = v
                .script(
                    "const firstLine = (code) => {
                       const text = code.firstChild, range = document.createRange();
                       let line = '', top = null;
                       for (let i = 0; i < text.length; i++) {
                         range.setStart(text, i); range.setEnd(text, i + 1);
                         const at = Math.round(range.getBoundingClientRect().top);
                         if (top !== null && at !== top) break;
                         top = at; line += text.data[i];
                       }
                       return line;
                     };
                     return Array.from(document.querySelectorAll('.markdown p code'))
                       .filter((c) => c.getClientRects().length > 1)
                       .map((c) => `${c.previousSibling.textContent.trim()} …: ${firstLine(c)}⏎`);",
                )
                .await?;
            ensure!(
                broken == serde_json::json!([]),
                "{theme}: inline code that fits a line is broken over two in {broken}"
            );
            v.screenshot(&format!("markdown-cosmetics-{theme}-390"))
                .await?;
        }
        Ok(())
    })
    .await;
}

/// The screenshots in `docs/screenshots/` (docs/visitors.md shows them): the live
/// search pending, failed, busy (503 after its retry) and refused (429, a wait past
/// a minute), in both themes at 720 × 480. Not run by default (it writes into the
/// repository); regenerate with
/// `cargo test --locked --test browser -- --ignored docs_screenshots`.
#[actix_web::test]
#[ignore = "writes docs/screenshots/; run by hand to regenerate them"]
async fn docs_screenshots_of_the_live_search_states() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    for theme in ["light", "dark"] {
        // One scorer slot (blocked for the 503), eight searches an hour, and
        // 271 seconds left in the hour, so the 429's wait reads in minutes.
        let app = spawn_app_with(|s| {
            s.search.concurrency = 1;
            s.search_budget.set_limit("minute", 100);
            s.search_budget.set_limit("hour", 8);
        })
        .await;
        app.clock.set(T0 + 3600 - 271);
        let proxy = Proxy::start(&app.address).await;
        let dir = dir.clone();
        in_browser_at(
            &app,
            &proxy.address,
            "docs-screenshots",
            true,
            &[],
            async |v| {
                let save = async |name: &str| -> anyhow::Result<()> {
                    let path = dir.join(format!("live-{name}-{theme}.png"));
                    std::fs::write(&path, v.browser.screenshot().await?)?;
                    eprintln!("wrote {}", path.display());
                    Ok(())
                };
                v.viewport(720, 480).await?;
                v.goto("/").await?;
                v.choose_theme(theme).await?;

                proxy.hold("kubernetes");
                v.paste("kubernetes").await?;
                v.wait_text("#search-pending", "Searching…").await?;
                save("pending").await?;
                proxy.release("kubernetes");
                v.wait_text("main h1", "Results for “kubernetes”").await?;

                proxy.drop_answers("golang");
                v.paste("golang").await?;
                v.wait_text("main h1", "Search failed").await?;
                save("failure").await?;

                let blocked = app.spawn_search("block me", "203.0.113.7");
                app.faults.wait_blocked(1).await;
                v.paste("vim").await?;
                v.wait_text("main h1", "Search is busy").await?;
                save("503").await?;

                // The rest of the hour's searches, spent by the same client.
                while app.search("zz spend", "127.0.0.1").await.status() != 429 {}
                v.paste("redis").await?;
                v.wait_text("main h1", "Too many searches").await?;
                save("429").await?;
                app.faults.open();
                ensure!(blocked.await? == 200, "the blocked search");
                Ok(())
            },
        )
        .await;
    }
}
