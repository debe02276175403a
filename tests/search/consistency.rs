//! Rules that must read the same on every route and for every kind of text
//! (issue 20 item 12): one page-number rule, and no word made of invisible chars.

use crate::helpers::{header, spawn_app};

const CLIENT: &str = "203.0.113.78";

#[actix_web::test]
async fn one_page_number_rule_on_every_paged_route() {
    let app = spawn_app().await;
    // `%2B1` is "+1" after decoding; a bare `+1` is " 1" (a form-encoded space).
    for (value, status) in [
        ("%2B1", 400),
        ("+1", 400),
        ("%201", 400),
        ("-1", 400),
        ("0", 400),
        ("1.0", 400),
        ("", 200),
        ("1", 200),
        ("001", 200),
        ("99999999999999999999999", 200),
    ] {
        let ledger = app.get(&format!("/?page={value}")).await.status();
        let search = app
            .search_raw(&format!("q=kubernetes&page={value}"), CLIENT)
            .await
            .status();
        assert_eq!(ledger, status, "/?page={value}");
        assert_eq!(search, status, "/search?page={value}");
        // `page` follows the same rule on the API (a page past the end is empty,
        // however large its number); `per_page` is a size, at most 100.
        let r = app.get(&format!("/api/pages?page={value}")).await;
        assert_eq!(r.status(), status, "/api/pages?page={value}");
        let per_page = if value.len() > 3 { 400 } else { status };
        let r = app.get(&format!("/api/pages?per_page={value}")).await;
        assert_eq!(r.status(), per_page, "/api/pages?per_page={value}");
    }
}

#[actix_web::test]
async fn a_word_of_invisible_chars_or_variation_selectors_matches_nothing() {
    let app = spawn_app().await;
    {
        let mut conn = app.conn();
        let lines = "{\"slug\":\"stars\",\"title\":\"⭐️ star chart\"}\n\
                     {\"slug\":\"love\",\"title\":\"❤️ love notes\"}\n";
        agent_pages::import::import(&mut conn, lines.as_bytes(), None, crate::helpers::T0).unwrap();
    }
    for q in [
        "❤️❤️",
        "⭐️⭐️",
        "\u{FE0F}\u{FE0F}",
        "\u{200D}\u{FE0E}\u{200B}",
    ] {
        let (status, headers, body) = app.search_json(q, CLIENT).await;
        assert_eq!(status, 200, "{q:?}: {body}");
        assert_eq!(body["total"], 0, "{q:?}: {body}");
        assert!(body["message"].is_string(), "{q:?}: too short, {body}");
        assert!(
            headers.get("x-search-cache").is_none(),
            "{q:?}: nothing searched"
        );
    }
    // The visible words still find their titles, with or without the emoji.
    for (q, slug) in [
        ("⭐️ star", "stars"),
        ("love ❤️", "love"),
        ("star chart", "stars"),
    ] {
        let (status, _, body) = app.search_json(q, CLIENT).await;
        assert_eq!(status, 200, "{q}");
        assert_eq!(body["results"][0]["slug"], slug, "{q}: {body}");
    }
    // The emoji is no part of the cache key either: "❤️ love" is "love ❤️"'s entry.
    let r = app.search("❤️ love", CLIENT).await;
    assert_eq!(header(&r, "x-search-cache"), Some("hit"));
}
