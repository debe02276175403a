//! The worst case of rendering one page body (issue 20 item 2): `markdown::render`
//! (the nesting cap, HTML writing and sanitizing, and the summary) on 300 KiB bodies
//! of the inputs known to make Markdown renderers or HTML parsers superlinear —
//! deep block quotes, lists and mixtures, deep raw HTML, long emphasis and bracket
//! runs (pulldown-cmark #82, #246–#255, md4c #57), many links, big tables — plus
//! ordinary prose. Next to it, in the same invocation, the reference: the pipeline
//! before the cap (pulldown-cmark → HTML → ammonia, nothing capped) on the sizes the
//! issue measured (`>`×40,000, `* `×15,000), which already take seconds.
//!
//! ```text
//! cargo bench --bench markdown                 # every input
//! cargo bench --bench markdown -- deep         # inputs whose name contains "deep"
//! AGENT_PAGES_BENCH_RUNS=9 cargo bench --bench markdown
//! ```
//!
//! Each input is rendered `AGENT_PAGES_BENCH_RUNS` times (default 5); the table
//! gives the median and the slowest run, in wall-clock and in the rendering
//! thread's CPU time (which other processes on the cores do not inflate), then the
//! output size and how deep it nests. The reference runs once per input. Pages
//! hold at most 256 KiB (`domain::BODY_MAX_BYTES`); 300 KiB is the request limit.

use std::hint::black_box;
use std::time::Instant;

use agent_pages::markdown::render;

const SIZE: usize = 300 * 1024;

/// `unit` repeated to about [`SIZE`] bytes, then `tail`.
fn repeat(unit: &str, tail: &str) -> String {
    let mut body = unit.repeat((SIZE - tail.len()) / unit.len());
    body.push_str(tail);
    body
}

fn inputs() -> Vec<(&'static str, String)> {
    let nested_indent: String = (0..)
        .map(|i| format!("{}- item {i}\n", "  ".repeat(i)))
        .scan(0, |len, line| {
            *len += line.len();
            (*len <= SIZE).then_some(line)
        })
        .collect();
    let wide_table = {
        let cols = 100;
        let mut t = format!("{}|\n{}|\n", "| h ".repeat(cols), "|---".repeat(cols));
        while t.len() < SIZE {
            t.push_str("| c\n");
        }
        t
    };
    let long_table = {
        let mut t = String::from("| a | b | c |\n|:--|:-:|--:|\n");
        while t.len() < SIZE {
            t.push_str("| `x` | *y* | [z](https://example.org) |\n");
        }
        t
    };
    vec![
        ("deep block quotes `>`", repeat(">", " x")),
        ("deep lists `* `", repeat("* ", "a")),
        ("deep ordered lists `1. `", repeat("1. ", "a")),
        ("deep mixed `> - `", repeat("> - ", "end")),
        ("deep mixed `- > 1. `", repeat("- > 1. ", "end")),
        ("deep lists by indent", nested_indent),
        ("deep raw `<div>`", repeat("<div>", "x")),
        ("deep raw `> <table>`", repeat("> <table>\n\n", "x")),
        (
            "deep raw `<div title=\"</div>\">`",
            repeat("<div title=\"</div>\">", "x"),
        ),
        ("deep emphasis `*a **b `", repeat("*a **b ", "c")),
        ("emphasis `a***` (#248)", repeat("a***", "")),
        ("emphasis `*_`", repeat("*_", "")),
        ("emphasis `**a`", repeat("**a", "")),
        ("strikethrough `~~a`", repeat("~~a", "")),
        ("brackets `[ (](` (#251)", repeat("[ (](", "")),
        ("brackets `[*_a` (#255)", repeat("[*_a", "")),
        ("brackets `[](` (#246)", repeat("[](", "")),
        ("links `[a](<b` (#82)", repeat("[a](<b", "")),
        ("links `]([` lines", repeat("]([\n", "")),
        ("brackets `[a `", repeat("[a ", "x")),
        (
            "many links",
            repeat("[link](https://example.org/a?b=c) ", ""),
        ),
        ("many autolinks", repeat("<https://example.org/a> ", "")),
        ("angle pairs `<>` (md4c #57)", repeat("<>", "")),
        ("backticks `\\``", repeat("\\``", "")),
        ("task lists", repeat("- [ ] task\n", "")),
        ("table 100 columns", wide_table),
        ("table 3 columns, many rows", long_table),
        ("raw inline `<b>`", repeat("<b>", "x")),
        ("raw comments `<!--`", repeat("<!-- a --><!--", "")),
        (
            "prose",
            repeat(
                "Some *ordinary* text with `code`, a [link](https://example.org) and **bold**.\n\n",
                "",
            ),
        ),
    ]
}

/// The render pipeline before the nesting cap, for the reference figures.
fn uncapped(body: &str) -> String {
    use pulldown_cmark::{html, Options, Parser};
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut out = String::new();
    html::push_html(&mut out, Parser::new_ext(body, options));
    ammonia::Builder::default().clean(&out).to_string()
}

fn thread_cpu_ms() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 * 1e3 + ts.tv_nsec as f64 / 1e6
}

/// Wall-clock and thread CPU time of one call of `f`, in ms, and its result.
fn time_ms<T>(f: impl FnOnce() -> T) -> (f64, f64, T) {
    let (wall, cpu) = (Instant::now(), thread_cpu_ms());
    let out = black_box(f());
    (
        wall.elapsed().as_secs_f64() * 1e3,
        thread_cpu_ms() - cpu,
        out,
    )
}

/// The deepest element nesting of sanitized HTML (every element closed).
fn depth(html: &str) -> usize {
    const VOID: [&str; 6] = ["br", "hr", "img", "input", "col", "wbr"];
    let (mut depth, mut deepest) = (0usize, 0usize);
    let mut rest = html;
    while let Some(lt) = rest.find('<') {
        rest = &rest[lt + 1..];
        if let Some(after) = rest.strip_prefix('/') {
            depth = depth.saturating_sub(1);
            rest = after;
        } else if rest.starts_with(|c: char| c.is_ascii_alphabetic()) {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect();
            if !VOID.contains(&name.as_str()) {
                depth += 1;
                deepest = deepest.max(depth);
            }
        }
    }
    deepest
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let filter: Option<String> = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .map(|a| a.to_lowercase());
    let runs: usize = std::env::var("AGENT_PAGES_BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5)
        .max(1);
    let wanted = |name: &str| {
        filter
            .as_ref()
            .is_none_or(|f| name.to_lowercase().contains(f))
    };

    println!("markdown::render, 300 KiB bodies, {runs} runs each (ms)");
    println!(
        "{:<36} {:>9} {:>9} {:>9} {:>9} {:>10} {:>6}",
        "input", "wall med", "wall max", "cpu med", "cpu max", "html KiB", "depth"
    );
    let mut worst = (0.0f64, "");
    for (name, body) in inputs() {
        if !wanted(name) {
            continue;
        }
        let (mut walls, mut cpus) = (Vec::new(), Vec::new());
        let mut html = String::new();
        for _ in 0..runs {
            let (wall, cpu, rendered) = time_ms(|| render(&body));
            walls.push(wall);
            cpus.push(cpu);
            html = rendered.html;
        }
        let (wall_max, cpu_max) = (
            walls.iter().copied().fold(0.0, f64::max),
            cpus.iter().copied().fold(0.0, f64::max),
        );
        if wall_max > worst.0 {
            worst = (wall_max, name);
        }
        println!(
            "{:<36} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>10.0} {:>6}",
            name,
            median(walls),
            wall_max,
            median(cpus),
            cpu_max,
            html.len() as f64 / 1024.0,
            depth(&html)
        );
    }
    if worst.0 > 0.0 {
        println!("worst: {} ({:.1} ms wall, slowest run)", worst.1, worst.0);
    }

    println!();
    println!("reference: the pipeline before the cap, one run each (ms)");
    println!(
        "{:<36} {:>9} {:>9} {:>10} {:>6} {:>12}",
        "input", "wall", "cpu", "html KiB", "depth", "capped wall"
    );
    for (name, body) in [
        ("`>`×40,000", format!("{} x", ">".repeat(40_000))),
        ("`* `×15,000", format!("{}a", "* ".repeat(15_000))),
    ] {
        if !wanted("reference") && !wanted(name) {
            continue;
        }
        let (wall, cpu, html) = time_ms(|| uncapped(&body));
        let (capped, _, _) = time_ms(|| render(&body));
        println!(
            "{:<36} {:>9.1} {:>9.1} {:>10.0} {:>6} {:>12.1}",
            name,
            wall,
            cpu,
            html.len() as f64 / 1024.0,
            depth(&html),
            capped
        );
    }
}
