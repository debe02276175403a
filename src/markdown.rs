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
//! Rendering a large body costs milliseconds, so [`MarkdownCache`] keeps the HTML of
//! recently shown page versions: a page is rendered once per version.

use std::borrow::Cow;
use std::sync::{Arc, Mutex, OnceLock};

use ammonia::Builder;
use hashlink::LruCache;
use pulldown_cmark::{html, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

/// How many rendered page versions [`MarkdownCache::default`] keeps at most.
pub const DEFAULT_CACHE_ENTRIES: usize = 256;

/// How much rendered HTML [`MarkdownCache::default`] keeps at most: bodies go up to
/// 256 KiB, so the entry count alone would not bound the memory.
pub const DEFAULT_CACHE_BYTES: usize = 32 * 1024 * 1024;

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

/// `body` (CommonMark with tables, strikethrough and task lists) as sanitized HTML.
/// Headings move one level down (`#` is `<h2>`): the page title is the `<h1>`.
pub fn render(body: &str) -> String {
    // The page title is the page's one `h1`: body headings start one level below.
    let parser = Parser::new_ext(body, options()).map(|event| match event {
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
    html::push_html(&mut unsafe_html, parser);
    sanitizer()
        .clean(&alignment_as_class(unsafe_html))
        .to_string()
}

/// The rendered HTML of recently shown page versions, keyed by (page id, version):
/// a new version is a new key, so an entry is never stale.
pub struct MarkdownCache {
    inner: Mutex<Inner>,
    max_bytes: usize,
}

struct Inner {
    entries: LruCache<(i64, i64), Arc<str>>,
    bytes: usize,
}

impl MarkdownCache {
    /// A cache of at most `capacity` rendered versions (at least one) holding at most
    /// `max_bytes` of HTML (the most recent version is kept whatever its size).
    pub fn new(capacity: usize, max_bytes: usize) -> Self {
        Self {
            inner: Mutex::new(Inner {
                entries: LruCache::new(capacity.max(1)),
                bytes: 0,
            }),
            max_bytes,
        }
    }

    /// The HTML of `body`, the body of version `version` of page `page_id`; rendered
    /// on first use, then served from memory.
    pub fn get_or_render(&self, page_id: i64, version: i64, body: &str) -> Arc<str> {
        let key = (page_id, version);
        if let Some(html) = self.lock().entries.get(&key) {
            return html.clone();
        }
        // Rendered outside the lock: two first views of one version may both render,
        // which is harmless, and no view waits behind another page's render.
        let html: Arc<str> = render(body).into();
        let mut inner = self.lock();
        let capacity = inner.entries.capacity();
        if let Some(old) = inner.entries.remove(&key) {
            inner.bytes -= old.len();
        }
        while inner.entries.len() >= capacity
            || (!inner.entries.is_empty() && inner.bytes + html.len() > self.max_bytes)
        {
            match inner.entries.remove_lru() {
                Some((_, old)) => inner.bytes -= old.len(),
                None => break,
            }
        }
        inner.bytes += html.len();
        inner.entries.insert(key, html.clone());
        html
    }

    /// Rendered versions held.
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// Bytes of rendered HTML held.
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }

    /// Whether nothing is held yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // Nothing that can panic runs under the lock (rendering happens outside),
        // so a poisoned lock still guards consistent data.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Default for MarkdownCache {
    fn default() -> Self {
        Self::new(DEFAULT_CACHE_ENTRIES, DEFAULT_CACHE_BYTES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_emphasis_and_strikethrough_render() {
        let html = render("# Title\n\nSome *em* and ~~gone~~ text.");
        assert!(html.contains("<h2>Title</h2>"), "{html}");
        assert!(html.contains("<em>em</em>"), "{html}");
        assert!(html.contains("<del>gone</del>"), "{html}");
    }

    #[test]
    fn script_is_removed_with_its_content() {
        let html = render("before\n\n<script>alert(1)</script>\n\nafter <script>x()</script>");
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("alert(1)"), "{html}");
        assert!(html.contains("before") && html.contains("after"), "{html}");
    }

    #[test]
    fn event_handlers_and_styles_are_dropped() {
        let html =
            render("<img src=x onerror=\"alert(1)\"> <b onclick=\"x()\" style=\"color:red\">b</b>");
        assert!(
            !html.contains("onerror") && !html.contains("onclick"),
            "{html}"
        );
        assert!(!html.contains("style="), "{html}");
        assert!(html.contains("<b>b</b>"), "{html}");
    }

    #[test]
    fn javascript_links_lose_their_href_and_links_get_rel() {
        let html = render(
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
        let html = render("| a | b | c |\n|:--|:-:|--:|\n| 1 | 2 | 3 |\n");
        assert!(html.contains("<table>"), "{html}");
        assert!(html.contains("<th class=\"align-left\">a</th>"), "{html}");
        assert!(html.contains("<th class=\"align-center\">b</th>"), "{html}");
        assert!(html.contains("<td class=\"align-right\">3</td>"), "{html}");
        assert!(!html.contains("style"), "{html}");
    }

    #[test]
    fn a_class_written_by_hand_is_dropped_unless_it_is_an_alignment() {
        let html = render(
            "<table><tr><td class=\"evil\">x</td><td class=\"align-right\">y</td></tr></table>",
        );
        assert!(html.contains("<td>x</td>"), "{html}");
        assert!(html.contains("<td class=\"align-right\">y</td>"), "{html}");
    }

    #[test]
    fn task_lists_become_disabled_checkboxes() {
        let html = render("- [x] done\n- [ ] to do\n");
        assert!(html.contains("checked"), "{html}");
        assert_eq!(html.matches("type=\"checkbox\"").count(), 2, "{html}");
        assert_eq!(html.matches("disabled").count(), 2, "{html}");
        assert!(html.contains("aria-label=\"done\""), "{html}");
        assert!(html.contains("aria-label=\"not done\""), "{html}");
    }

    #[test]
    fn a_hand_written_input_is_only_ever_a_disabled_checkbox() {
        let html = render("<input type=\"text\" name=\"pw\" value=\"x\">");
        assert!(html.contains("type=\"checkbox\""), "{html}");
        assert!(html.contains("disabled"), "{html}");
        assert!(
            !html.contains("name=") && !html.contains("value="),
            "{html}"
        );
    }

    #[test]
    fn code_blocks_keep_their_language_class_only() {
        let html = render("```rust\nfn main() { let a = 1 < 2; }\n```\n");
        assert!(html.contains("<code class=\"language-rust\">"), "{html}");
        assert!(html.contains("1 &lt; 2"), "{html}");
        let html = render("<code class=\"evil\">x</code>");
        assert!(html.contains("<code>x</code>"), "{html}");
    }

    #[test]
    fn the_cache_is_bounded_by_bytes_too() {
        let cache = MarkdownCache::new(100, 64);
        cache.get_or_render(1, 1, "a paragraph of some forty bytes");
        cache.get_or_render(2, 1, "another paragraph of forty bytes");
        assert_eq!(cache.len(), 1, "two would be over 64 bytes");
        assert!(cache.bytes() <= 64);
        // One entry over the budget is still kept: it is the one being shown.
        cache.get_or_render(3, 1, &"long ".repeat(100));
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn the_cache_renders_each_version_once() {
        let cache = MarkdownCache::new(2, usize::MAX);
        let a = cache.get_or_render(1, 1, "# one");
        let again = cache.get_or_render(1, 1, "# changed body, same version");
        assert!(Arc::ptr_eq(&a, &again));
        let v2 = cache.get_or_render(1, 2, "# two");
        assert!(v2.contains("two"));
        cache.get_or_render(2, 1, "x");
        assert_eq!(cache.len(), 2);
    }
}
