//! Page bodies as HTML: CommonMark plus tables, strikethrough and task lists
//! (pulldown-cmark), then sanitized (ammonia) so no script, event handler,
//! `javascript:` URL or inline style survives.
//!
//! What a body may still carry after sanitizing: ammonia's default set of harmless
//! tags and attributes, table cell alignment (as `align-left|center|right` classes,
//! since the Content-Security-Policy allows no inline `style`), disabled task-list
//! checkboxes (named "done" or "not done" for screen readers) and `language-*`
//! classes on code. Every link gets
//! `rel="nofollow noopener noreferrer"`.
//!
//! Work on a body is bounded: nothing renders more than [`MAX_NESTING`] elements
//! deep (deeper Markdown is shown as its source, in a code block; deeper raw HTML
//! tags as text: [`nesting`]), which keeps the worst 300 KiB body under a second
//! (`cargo bench --bench markdown`). [`MarkdownCache`] renders on threads of its own,
//! never on an HTTP worker, and once per page version.

mod cache;
pub mod nesting;

use std::borrow::Cow;
use std::sync::OnceLock;

use ammonia::Builder;
use pulldown_cmark::{html, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

#[cfg(feature = "fault-injection")]
pub use cache::RenderHook;
pub use cache::{MarkdownCache, RENDER_QUEUE, RENDER_THREADS};
pub use nesting::MAX_NESTING;

/// How many rendered page versions [`MarkdownCache`] keeps at most by default.
pub const DEFAULT_CACHE_ENTRIES: usize = 256;

/// How much rendered HTML [`MarkdownCache`] keeps at most by default: bodies go up
/// to 256 KiB, so the entry count alone would not bound the memory.
pub const DEFAULT_CACHE_BYTES: usize = 32 * 1024 * 1024;

/// Longest [`Rendered::summary`], in chars.
pub const SUMMARY_CHARS: usize = 160;

/// The sanitizer, built once: its configuration never changes.
fn sanitizer() -> &'static Builder<'static> {
    static BUILDER: OnceLock<Builder<'static>> = OnceLock::new();
    BUILDER.get_or_init(|| {
        let mut b = Builder::default();
        b.link_rel(Some("nofollow noopener noreferrer"))
            .add_tags(["input"])
            .add_tag_attributes("input", ["type", "checked", "disabled", "aria-label"])
            .set_tag_attribute_value("input", "disabled", "")
            .add_tag_attributes("th", ["class"])
            .add_tag_attributes("td", ["class"])
            .add_tag_attributes("code", ["class"])
            .attribute_filter(keep_attribute);
        b
    })
}

/// The attribute rules beyond ammonia's allow-lists: an `input` is only ever a
/// checkbox, cells keep only alignment classes, code keeps only a language class.
fn keep_attribute<'u>(element: &str, attribute: &str, value: &'u str) -> Option<Cow<'u, str>> {
    match (element, attribute) {
        ("input", "type") => Some(Cow::Borrowed("checkbox")),
        ("input", "aria-label") => matches!(value, "done" | "not done").then_some(value.into()),
        ("th" | "td", "class") => {
            matches!(value, "align-left" | "align-center" | "align-right").then_some(value.into())
        }
        ("code", "class") => {
            let lang = value.strip_prefix("language-")?;
            let ok = !lang.is_empty()
                && lang.len() <= 40
                && lang
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-_.#".contains(c));
            ok.then_some(value.into())
        }
        _ => Some(value.into()),
    }
}

/// pulldown-cmark writes alignment as an inline style, which the CSP would block;
/// the writer's exact output (user text can never produce it: `"` is escaped) is
/// turned into a class the stylesheet knows.
fn alignment_as_class(html: String) -> String {
    if !html.contains(" style=\"text-align: ") {
        return html;
    }
    let mut html = html;
    for cell in ["th", "td"] {
        for align in ["left", "center", "right"] {
            html = html.replace(
                &format!("<{cell} style=\"text-align: {align}\">"),
                &format!("<{cell} class=\"align-{align}\">"),
            );
        }
    }
    html
}

/// The CommonMark extensions pages use: tables, strikethrough, task lists.
pub fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS
}

fn one_below(level: HeadingLevel) -> HeadingLevel {
    match level {
        HeadingLevel::H1 => HeadingLevel::H2,
        HeadingLevel::H2 => HeadingLevel::H3,
        HeadingLevel::H3 => HeadingLevel::H4,
        HeadingLevel::H4 => HeadingLevel::H5,
        _ => HeadingLevel::H6,
    }
}

/// A body rendered: sanitized HTML and a plain-text summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// The body as sanitized HTML, safe to insert unescaped.
    pub html: String,
    /// The first [`SUMMARY_CHARS`] chars of the body's text, whitespace collapsed
    /// and cut at a word (with `…` when cut); empty when the body has no text. For
    /// `<meta name="description">`.
    pub summary: String,
}

impl Rendered {
    /// `body` shown as it is, in an escaped `<pre>`: what a view shows when no
    /// render can be had (the render queue is full).
    pub fn plain(body: &str) -> Self {
        let mut html = String::with_capacity(body.len() + 16);
        html.push_str("<pre>");
        nesting::escape_into(&mut html, body);
        html.push_str("</pre>");
        Self {
            html,
            summary: cut_summary(body),
        }
    }

    /// Bytes this holds (what [`MarkdownCache`] counts).
    pub fn bytes(&self) -> usize {
        self.html.len() + self.summary.len()
    }
}

/// `body` (CommonMark with tables, strikethrough and task lists) as sanitized HTML,
/// nested at most [`MAX_NESTING`] elements deep, and its summary. Headings move one
/// level down (`#` is `<h2>`): the page title is the `<h1>`. CPU-bound (up to about
/// a second for the worst 300 KiB body): call it off the async executor, as
/// [`MarkdownCache`] does.
pub fn render(body: &str) -> Rendered {
    let events: Vec<_> = Parser::new_ext(body, options())
        .into_offset_iter()
        .collect();
    let summary = summary(events.iter().map(|(event, _)| event));
    // The page title is the page's one `h1`: body headings start one level below.
    let events = nesting::cap(body, events)
        .into_iter()
        .map(|event| match event {
            Event::Start(Tag::Heading {
                level,
                id,
                classes,
                attrs,
            }) => Event::Start(Tag::Heading {
                level: one_below(level),
                id,
                classes,
                attrs,
            }),
            Event::End(TagEnd::Heading(level)) => Event::End(TagEnd::Heading(one_below(level))),
            // A checkbox needs an accessible name: its state in words.
            Event::TaskListMarker(done) => Event::InlineHtml(
                if done {
                    "<input type=\"checkbox\" disabled=\"\" checked=\"\" aria-label=\"done\"> "
                } else {
                    "<input type=\"checkbox\" disabled=\"\" aria-label=\"not done\"> "
                }
                .into(),
            ),
            other => other,
        });
    let mut unsafe_html = String::with_capacity(body.len() * 3 / 2);
    html::push_html(&mut unsafe_html, events);
    Rendered {
        html: sanitizer()
            .clean(&alignment_as_class(unsafe_html))
            .to_string(),
        summary,
    }
}

/// The summary ([`Rendered::summary`]) of a body's events: its text, block ends
/// and line breaks as spaces.
fn summary<'a>(events: impl Iterator<Item = &'a Event<'a>>) -> String {
    let mut raw = String::new();
    for event in events {
        match event {
            Event::Text(t) | Event::Code(t) => raw.push_str(t),
            Event::SoftBreak
            | Event::HardBreak
            | Event::End(
                TagEnd::Paragraph
                | TagEnd::Heading(_)
                | TagEnd::Item
                | TagEnd::CodeBlock
                | TagEnd::TableCell,
            ) => raw.push(' '),
            _ => {}
        }
        if raw.len() > SUMMARY_CHARS * 8 {
            break;
        }
    }
    cut_summary(&raw)
}

/// `text` with whitespace collapsed, cut to [`SUMMARY_CHARS`] at the last word that
/// fits (mid-word only for one huge word), `…` marking a cut.
fn cut_summary(text: &str) -> String {
    let text: String = text
        .split_whitespace()
        .take(SUMMARY_CHARS)
        .collect::<Vec<_>>()
        .join(" ");
    if text.chars().count() <= SUMMARY_CHARS {
        return text;
    }
    let cut: String = text.chars().take(SUMMARY_CHARS).collect();
    let cut = match cut.rfind(' ') {
        Some(space) if space > 0 => &cut[..space],
        _ => cut.as_str(),
    };
    let cut: String = cut.trim_end().chars().take(SUMMARY_CHARS - 1).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Asserts that `html` contains each of `parts`.
    fn assert_has(html: &str, parts: &[&str]) {
        for part in parts {
            assert!(html.contains(part), "{part:?} in {html}");
        }
    }

    /// Asserts that `html` contains none of `parts`.
    fn assert_lacks(html: &str, parts: &[&str]) {
        for part in parts {
            assert!(!html.contains(part), "no {part:?} in {html}");
        }
    }

    /// Asserts that the HTML `markdown` renders to contains each of `has` and
    /// none of `lacks`.
    fn assert_renders(markdown: &str, has: &[&str], lacks: &[&str]) {
        let html = render_html(markdown);
        assert_has(&html, has);
        assert_lacks(&html, lacks);
    }

    fn render_html(body: &str) -> String {
        render(body).html
    }

    #[test]
    fn headings_emphasis_and_strikethrough_render() {
        assert_renders(
            "# Title\n\nSome *em* and ~~gone~~ text.",
            &["<h2>Title</h2>", "<em>em</em>", "<del>gone</del>"],
            &[],
        );
    }

    #[test]
    fn script_is_removed_with_its_content() {
        assert_renders(
            "before\n\n<script>alert(1)</script>\n\nafter <script>x()</script>",
            &["before", "after"],
            &["<script", "alert(1)"],
        );
    }

    #[test]
    fn event_handlers_and_styles_are_dropped() {
        assert_renders(
            "<img src=x onerror=\"alert(1)\"> <b onclick=\"x()\" style=\"color:red\">b</b>",
            &["<b>b</b>"],
            &["onerror", "onclick", "style="],
        );
    }

    #[test]
    fn javascript_links_lose_their_href_and_links_get_rel() {
        let html = render_html(
            "[bad](javascript:alert(1)) <a href=\"JaVaScRiPt:alert(2)\">raw</a> [good](https://example.org/a)",
        );
        assert!(!html.to_ascii_lowercase().contains("javascript:"), "{html}");
        assert!(
            html.contains(
                "<a href=\"https://example.org/a\" rel=\"nofollow noopener noreferrer\">good</a>"
            ),
            "{html}"
        );
    }

    #[test]
    fn tables_render_with_alignment_as_classes() {
        let html = render_html("| a | b | c |\n|:--|:-:|--:|\n| 1 | 2 | 3 |\n");
        assert_has(
            &html,
            &[
                "<table>",
                "<th class=\"align-left\">a</th>",
                "<th class=\"align-center\">b</th>",
                "<td class=\"align-right\">3</td>",
            ],
        );
        assert_lacks(&html, &["style"]);
    }

    #[test]
    fn a_class_written_by_hand_is_dropped_unless_it_is_an_alignment() {
        let html = render_html(
            "<table><tr><td class=\"evil\">x</td><td class=\"align-right\">y</td></tr></table>",
        );
        assert_has(&html, &["<td>x</td>", "<td class=\"align-right\">y</td>"]);
    }

    #[test]
    fn task_lists_become_disabled_checkboxes() {
        let html = render_html("- [x] done\n- [ ] to do\n");
        assert_has(&html, &["checked"]);
        assert_eq!(html.matches("type=\"checkbox\"").count(), 2, "{html}");
        assert_eq!(html.matches("disabled").count(), 2, "{html}");
        assert_has(&html, &["aria-label=\"done\"", "aria-label=\"not done\""]);
    }

    #[test]
    fn a_hand_written_input_is_only_ever_a_disabled_checkbox() {
        assert_renders(
            "<input type=\"text\" name=\"pw\" value=\"x\">",
            &["type=\"checkbox\"", "disabled"],
            &["name=", "value="],
        );
    }

    #[test]
    fn code_blocks_keep_their_language_class_only() {
        let html = render_html("```rust\nfn main() { let a = 1 < 2; }\n```\n");
        assert_has(&html, &["<code class=\"language-rust\">", "1 &lt; 2"]);
        let html = render_html("<code class=\"evil\">x</code>");
        assert_has(&html, &["<code>x</code>"]);
    }

    #[test]
    fn summaries_are_the_body_text_cut_at_160_characters() {
        let summary = |body: &str| render(body).summary;
        assert_eq!(
            summary(
                "# Intro\n\nSome **bold** text\nover lines.\n\n| a | b |\n|---|---|\n| 1 | 2 |"
            ),
            "Intro Some bold text over lines. a b 1 2"
        );
        assert_eq!(summary("  "), "");
        let long = summary(&"words ".repeat(100));
        assert!(long.chars().count() <= 160, "{long}");
        assert!(long.ends_with(" words…"), "{long}");
        assert_eq!(summary(&"x".repeat(500)).chars().count(), 160);
        assert_eq!(Rendered::plain(&"words ".repeat(100)).summary, long);
        assert_eq!(
            Rendered::plain("a <b> & c").html,
            "<pre>a &lt;b&gt; &amp; c</pre>"
        );
    }
}
