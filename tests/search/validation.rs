//! Gate 1 through HTTP, including encodings a browser would never send.

use crate::helpers::{header, spawn_app};

const CLIENT: &str = "203.0.113.77";

#[actix_web::test]
async fn the_gate_1_table_holds_over_http() {
    let app = spawn_app().await;
    let nfkc = "%EF%B7%BA".repeat(4); // U+FDFA x4: 4 chars raw, 75 after NFKC
    let cases: &[(&str, u16)] = &[
        ("q=", 303),
        ("q=%20%20", 303),
        ("x=1", 303),
        ("q=%C3%28", 400),  // not UTF-8
        ("q=%E0%A4", 400),  // truncated UTF-8
        ("q=%G1", 400),     // not a percent escape
        ("q=ab&q=ab", 400), // given twice
        ("q=k", 200),
        ("q=!!", 200),
        ("q=-a-", 200),
        (&format!("q={nfkc}"), 400),
    ];
    for (raw, status) in cases {
        let r = app.search_raw(raw, CLIENT).await;
        assert_eq!(r.status().as_u16(), *status, "{raw}");
        assert_eq!(header(&r, "x-search-cache"), None, "{raw}");
    }
    assert_eq!(app.counters(CLIENT), (0, 0), "gate 1 spends nothing");
    assert_eq!(app.work().await, (0, (0, 0)));
}

#[actix_web::test]
async fn sixty_four_chars_pass_and_sixty_five_do_not() {
    let app = spawn_app().await;
    assert_eq!(app.search(&"é".repeat(64), CLIENT).await.status(), 200);
    assert_eq!(app.search(&"é".repeat(65), CLIENT).await.status(), 400);
    assert_eq!(app.counters(CLIENT), (1, 1));
}

#[actix_web::test]
async fn the_query_is_escaped_wherever_it_is_shown() {
    let app = spawn_app().await;
    let body = app
        .search("<script>alert(1)</script>", CLIENT)
        .await
        .text()
        .await
        .unwrap();
    assert!(!body.contains("<script>alert(1)"));
    // Shown in the title, the heading and the form; each time escaped whole
    // (`/` too, as the templates' HTML escaping does).
    let shown = body.matches("alert(1)").count();
    let escaped = body
        .matches("&lt;script&gt;alert(1)&lt;&#x2F;script&gt;")
        .count();
    assert!(shown >= 3, "shown {shown} times: {body}");
    assert_eq!(escaped, shown, "{body}");
}

#[actix_web::test]
async fn notice_pages_that_share_a_status_keep_their_own_words_and_query() {
    // Notice pages are stencils filled with the query; a too-long query and a bad
    // page number are both 400 and must not share one.
    let app = spawn_app().await;
    let long = "a".repeat(65);
    let cases = [
        (
            "q=widget&page=0".to_owned(),
            "The page number must be a whole number from 1.",
            "widget",
        ),
        (
            format!("q={long}"),
            "Search text can be at most 64 characters.",
            long.as_str(),
        ),
        (
            "q=gadget&page=x".to_owned(),
            "The page number must be a whole number from 1.",
            "gadget",
        ),
    ];
    for (raw, words, shown) in cases {
        let r = app.search_raw(&raw, "203.0.113.77").await;
        assert_eq!(r.status(), 400, "{raw}");
        let body = r.text().await.unwrap();
        assert!(body.contains(words), "{raw}: {body}");
        assert!(
            body.contains(&format!("value=\"{shown}\"")),
            "{raw}: {body}"
        );
    }
}
