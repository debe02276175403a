//! The HTML answers: `search.html` for every outcome, with the form kept and matched
//! words marked (each run escaped by the template). The result table is rendered
//! once per cache entry and page (`search_rows.html`) and reused by every hit
//! ([`crate::operations::search::rendered`] keeps it with the entry).
//!
//! A page of results says which rows it shows ("Showing 51–100 of 862 matches"),
//! links the pages before and after (`rel="prev"`/`rel="next"`, keeping `q`), says
//! when the results stop before the last match (a scoring keeps `MAX_PAGES`
//! pages) and when the page includes close (typo-corrected or prefix) matches. A
//! page past the last is an empty page that says where the results end.

use actix_web::{HttpRequest, HttpResponse};
use serde::Serialize;

use crate::operations::search::rendered::Rendered;
use crate::operations::search::{displayed_rows, has_close_matches, Outcome, PageInfo};
use crate::routes::{render, render_html, render_with};
use crate::search::cache::Entry;
use crate::state::AppState;
use crate::templates::format_time;
use crate::templates::{PageKey, Stencil};

#[derive(Serialize)]
struct SearchContext<'a> {
    q: &'a str,
    /// The notice style of the outcome table (`results`, `short`, `busy`, …).
    outcome: &'static str,
    /// The situation's name, for the page title and heading.
    heading: &'static str,
    message: String,
    retry_after: Option<i64>,
    /// `retry_after` in words (`4 minutes 31 seconds`), for the countdown's start.
    wait: Option<String>,
    /// On a 429, the name of the refusing window (`minute`, `hour`, …).
    window: Option<&'a str>,
    /// The rendered result table (escaped when it was rendered); empty without rows.
    rows_html: &'a str,
    total: usize,
    shown: usize,
    truncated: bool,
    cache: Option<&'static str>,
    /// The page shown (from 1) and how many there are.
    page: usize,
    pages: usize,
    /// Numbers of the first and last rows shown (0 without rows).
    first: usize,
    last: usize,
    /// Matches exist past the last page; `kept` matches can be paged through.
    capped: bool,
    kept: usize,
    /// A shown row matched a word only as a close (typo-corrected or prefix) match.
    close_matches: bool,
    /// Links to the previous, next and last pages (query kept), when there are.
    prev_href: Option<String>,
    next_href: Option<String>,
    last_href: Option<String>,
}

/// `/search?q=…` for page `page` of `display` (page 1 without `page`).
fn page_href(display: &str, page: usize) -> String {
    let q = percent_encoding::utf8_percent_encode(display, percent_encoding::NON_ALPHANUMERIC);
    if page <= 1 {
        format!("/search?q={q}")
    } else {
        format!("/search?q={q}&page={page}")
    }
}

#[derive(Serialize)]
struct TableRow {
    slug: String,
    /// The title cut into runs, `mark` on the words the query matched; the template
    /// escapes each run's text and wraps marked runs in `<mark>`.
    title: Vec<TitleRun>,
    score: String,
    updated_at: String,
}

#[derive(Serialize)]
struct TitleRun {
    text: String,
    mark: bool,
}

/// Cuts `title` at `ranges` (sorted, disjoint byte ranges on char boundaries, from
/// [`crate::search::rank::highlight`]); a range that does not fit the title is ignored.
/// Each run is shown without invisible chars ([`crate::invisible::strip`]), for
/// titles stored before the title rules removed them.
fn shown(text: &str) -> String {
    crate::invisible::strip(text).into_owned()
}

fn highlighted(title: &str, ranges: &[std::ops::Range<usize>]) -> Vec<TitleRun> {
    let mut runs = Vec::new();
    let mut at = 0;
    for range in ranges {
        if range.start < at || title.get(range.clone()).is_none() {
            continue;
        }
        if range.start > at {
            runs.push(TitleRun {
                text: shown(&title[at..range.start]),
                mark: false,
            });
        }
        runs.push(TitleRun {
            text: shown(&title[range.clone()]),
            mark: true,
        });
        at = range.end;
    }
    if at < title.len() {
        runs.push(TitleRun {
            text: shown(&title[at..]),
            mark: false,
        });
    }
    runs
}

pub(super) fn html_response(
    state: &AppState,
    req: &HttpRequest,
    outcome: &Outcome,
) -> HttpResponse {
    let kind = outcome.kind();
    // Answers and refusals repeat: the page is looked up first, by everything it
    // depends on, and the context is only built when it must be rendered.
    let cached = match outcome {
        Outcome::Answered {
            page,
            entry,
            snapshot,
            cache,
            display,
        } => Rendered::of(entry).page(
            PageKey::Html {
                theme: crate::routes::theme(req),
                here: crate::routes::here(req).to_owned(),
                page: *page,
                display: display.clone(),
                cache: cache.as_str(),
            },
            || {
                let mut ctx = context(state, outcome);
                answered(state, &mut ctx, entry, *page, snapshot, cache.as_str());
                render_html(state, req, "search.html", &ctx)
            },
        ),
        // Floods of refusals and 503s differ only by query and return path: their
        // page is a stencil per theme, outcome and seconds left.
        Outcome::Refused { display, .. }
        | Outcome::Overloaded { display }
        | Outcome::BudgetUnavailable { display }
        | Outcome::Busy { display }
        | Outcome::StorageUnavailable { display }
        | Outcome::TooShort { display }
        | Outcome::TooLong { display }
        | Outcome::BadPage { display }
        | Outcome::Failed { display }
            if !display.is_empty() =>
        {
            notice_page(state, req, outcome, display)
        }
        _ => {
            return render(
                state,
                req,
                kind.status,
                "search.html",
                context(state, outcome),
            )
        }
    };
    match cached {
        Ok(body) => HttpResponse::build(kind.status)
            .content_type("text/html; charset=utf-8")
            .body(body),
        Err(failed) => failed.response(),
    }
}

/// The page of a notice outcome for a non-empty `display`, filled into the stencil
/// of its theme, outcome and seconds left (cut on first use).
fn notice_page(
    state: &AppState,
    req: &HttpRequest,
    outcome: &Outcome,
    display: &str,
) -> Result<actix_web::web::Bytes, crate::routes::RenderFailed> {
    let theme = crate::routes::theme(req);
    // Everything the page shows besides the query and return path: two outcomes
    // may share a label (`400`) but not their words.
    let kind = outcome.kind();
    let key = PageKey::Notice {
        theme,
        notice: kind.notice,
        title: kind.title,
        message: outcome.message(&state.budgets.search),
        retry_after: outcome.retry_after(),
    };
    let stencil = state.search.notice_pages.get_or_cut(&key, || {
        let mut ctx = context(state, outcome);
        ctx.q = Stencil::QUERY;
        render_with(&state.templates, theme, Stencil::BACK, "search.html", &ctx)
    })?;
    let back = crate::routes::back_param(req);
    Ok(match stencil {
        Some(stencil) => stencil.fill(display, &back),
        None => render_with(
            &state.templates,
            theme,
            &back,
            "search.html",
            &context(state, outcome),
        )?,
    }
    .into())
}

/// The context every outcome's page starts from.
fn context<'a>(state: &'a AppState, outcome: &'a Outcome) -> SearchContext<'a> {
    context_under(&state.budgets.search, outcome)
}

/// [`context`] for an outcome of a search under `budget`.
fn context_under<'a>(budget: &'a crate::budget::Budget, outcome: &'a Outcome) -> SearchContext<'a> {
    let kind = outcome.kind();
    let window = match outcome {
        Outcome::Refused { window, .. } => budget.windows.get(*window).map(|w| w.name.as_ref()),
        _ => None,
    };
    SearchContext::notice(
        outcome.display(),
        kind.notice,
        kind.title,
        outcome.message(budget).into_owned(),
        outcome.retry_after(),
        window,
    )
}

impl<'a> SearchContext<'a> {
    /// A page without results: the query, the outcome's notice style, heading
    /// and words, its `Retry-After` seconds and refusing window, if any.
    fn notice(
        q: &'a str,
        outcome: &'static str,
        heading: &'static str,
        message: String,
        retry_after: Option<i64>,
        window: Option<&'a str>,
    ) -> Self {
        Self {
            q,
            outcome,
            heading,
            message,
            retry_after,
            wait: retry_after.map(crate::operations::search::outcome::wait_words),
            window,
            rows_html: "",
            total: 0,
            shown: 0,
            truncated: false,
            cache: None,
            page: 1,
            pages: 1,
            first: 0,
            last: 0,
            capped: false,
            kept: 0,
            close_matches: false,
            prev_href: None,
            next_href: None,
            last_href: None,
        }
    }
}

/// Fills `ctx` with page `page` of `entry` over `snapshot`.
fn answered<'a>(
    state: &AppState,
    ctx: &mut SearchContext<'a>,
    entry: &'a Entry,
    page: usize,
    snapshot: &crate::search::corpus::Snapshot,
    cache: &'static str,
) {
    let result = &entry.result;
    let info = PageInfo::of(result, page);
    ctx.total = result.result.total;
    ctx.shown = info.shown;
    ctx.truncated = ctx.total > info.shown;
    ctx.cache = Some(cache);
    ctx.page = page;
    ctx.pages = info.pages;
    ctx.first = info.first;
    ctx.last = info.last;
    ctx.capped = info.capped;
    ctx.kept = result.result.rows.len();
    let display = ctx.q;
    ctx.prev_href = (page > 1 && info.shown > 0).then(|| page_href(display, page - 1));
    ctx.next_href = (page < info.pages).then(|| page_href(display, page + 1));
    ctx.last_href = (info.shown == 0 && ctx.total > 0).then(|| page_href(display, info.pages));
    ctx.rows_html =
        Rendered::of(entry).html_rows(page, || rows_html(state, result, page, snapshot));
    ctx.close_matches = has_close_matches(result, page, snapshot);
}

#[derive(Serialize)]
struct RowsContext {
    results: Vec<TableRow>,
}

/// The result table of page `page_no` of `result` over `snapshot`, rendered once
/// per cache entry and page; a template error is logged and leaves the table out.
fn rows_html(
    state: &AppState,
    result: &crate::search::cache::CachedResult,
    page_no: usize,
    snapshot: &crate::search::corpus::Snapshot,
) -> String {
    let results = displayed_rows(result, page_no, snapshot)
        .map(|(row, page, marks)| TableRow {
            slug: page.slug.to_owned(),
            title: highlighted(page.title, &marks.ranges),
            score: format!("{:.1}", row.score),
            updated_at: format_time(page.updated_at),
        })
        .collect();
    let ctx = match tera::Context::from_serialize(RowsContext { results }) {
        Ok(ctx) => ctx,
        Err(e) => {
            tracing::error!(error = ?e, "result rows context failed");
            return String::new();
        }
    };
    state
        .templates
        .render("search_rows.html", &ctx)
        .unwrap_or_else(|e| {
            tracing::error!(error = ?e, "result rows failed to render");
            String::new()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::operations::search::outcome::{self, KINDS};
    use crate::routes::theme::THEMES;

    /// One outcome of every notice row of the outcome table that shows the query
    /// (every row but the answers and those without a query to keep), for the
    /// query `q`; a refusal for each window of `budget`.
    fn notice_outcomes(budget: &crate::budget::Budget, q: &str) -> Vec<Outcome> {
        let display = || q.to_owned();
        let mut outcomes = vec![
            Outcome::TooLong { display: display() },
            Outcome::BadPage { display: display() },
            Outcome::TooShort { display: display() },
            Outcome::Overloaded { display: display() },
            Outcome::BudgetUnavailable { display: display() },
            Outcome::StorageUnavailable { display: display() },
            Outcome::Busy { display: display() },
            Outcome::Failed { display: display() },
        ];
        for (window, retry_after) in (0..budget.windows.len()).zip([1, 2141]) {
            outcomes.push(Outcome::Refused {
                display: display(),
                window,
                retry_after,
            });
        }
        outcomes
    }

    #[test]
    fn a_filled_stencil_is_the_page_a_full_render_makes_for_every_notice_and_theme() {
        let tera = crate::templates::load().unwrap();
        let budget = crate::budget::Budget::search(20, 200);
        let kinds: Vec<_> = notice_outcomes(&budget, "x")
            .iter()
            .map(|o| *o.kind())
            .collect();
        for kind in &KINDS {
            let shows_the_query = kind.notice != "results"
                && *kind != outcome::MISSING
                && *kind != outcome::MALFORMED;
            assert_eq!(
                kinds.contains(kind),
                shows_the_query,
                "{kind:?}: a notice row the test does not cover, or one it should not"
            );
        }
        let queries = [
            "kubernetes",
            "<script>alert('x')</script> & \"quotes\" / more",
            "Straße ünïcödé 名前",
            "{{ q }} {% raw %}",
            "\u{E000}agent-pages:q\u{E000}",
        ];
        let mut compared = 0;
        for theme in THEMES {
            let render = |ctx: &SearchContext, back: &str| {
                render_with(&tera, theme, back, "search.html", ctx).unwrap()
            };
            for cut_from in notice_outcomes(&budget, Stencil::QUERY) {
                let mut ctx = context_under(&budget, &cut_from);
                ctx.q = Stencil::QUERY;
                let stencil = Stencil::cut(&render(&ctx, Stencil::BACK))
                    .unwrap_or_else(|| panic!("{theme} {}: no stencil", cut_from.kind().label));
                for q in queries {
                    let back = percent_encoding::utf8_percent_encode(
                        &format!("/search?q={q}"),
                        percent_encoding::NON_ALPHANUMERIC,
                    )
                    .to_string();
                    let filled_for = notice_outcomes(&budget, q)
                        .into_iter()
                        .find(|o| {
                            o.kind() == cut_from.kind()
                                && o.message(&budget) == cut_from.message(&budget)
                        })
                        .unwrap();
                    assert_eq!(
                        stencil.fill(q, &back),
                        render(&context_under(&budget, &filled_for), &back),
                        "{theme} {} {q:?}",
                        cut_from.kind().label
                    );
                    compared += 1;
                }
            }
        }
        assert_eq!(compared, THEMES.len() * 10 * queries.len());
    }

    #[test]
    fn a_page_whose_placeholder_was_changed_is_no_stencil() {
        assert!(Stencil::cut("<p>\u{E000}agent-pages:Q\u{E000}</p>").is_none());
        assert!(Stencil::cut("<p>no query here</p>").is_none());
        assert!(Stencil::cut(&format!("<p>{}</p>", Stencil::QUERY)).is_some());
    }
}
