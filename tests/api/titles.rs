//! What a title must hold (SPEC §9): a visible character; bidi controls are not
//! kept; slugs derived from titles are transliterated.

use serde_json::json;

use crate::helpers::spawn_app;

#[actix_web::test]
async fn a_title_of_invisible_characters_only_is_refused() {
    let app = spawn_app().await;
    for title in [
        "\u{200B}\u{200B}\u{200B}",
        "\u{00AD}\u{00AD}",
        "\u{0000}",
        "\u{FEFF}\u{2060}\u{200D}",
        "\u{3164}",
        "\u{202E}\u{2066}",
    ] {
        let r = app.create(json!({ "title": title })).await;
        let p = r.problem(400, "validation");
        assert_eq!(p["field"], "title", "{title:?}: {p}");
    }
    assert_eq!(app.stored_count(), 8, "nothing was written");
}

#[actix_web::test]
async fn bidi_controls_are_stripped_from_titles() {
    let app = spawn_app().await;
    let r = app
        .create(json!({"title": "\u{202E}Invoice\u{202C} \u{2066}gpj.exe\u{2069}"}))
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let slug = r.json()["slug"].as_str().unwrap().to_owned();
    let (_, title, _) = app.stored(&slug);
    assert_eq!(title, "Invoice gpj.exe");
    let r = app
        .put_page(
            "kubernetes",
            None,
            crate::helpers::AGENT,
            json!({"title": "\u{202D}x"}),
        )
        .await;
    // Locked page, but the title was parsed first and is fine: 403, not 400.
    assert_eq!(r.status, 403, "{}", r.text);
}

#[actix_web::test]
async fn derived_slugs_are_transliterated() {
    let app = spawn_app().await;
    for (title, slug) in [
        ("Straße planning", "strasse-planning"),
        ("Ǆemal İstanbul", "dzemal-istanbul"),
        ("日本語のページ", "ri-ben-yu-nopezi"),
    ] {
        let r = app.create(json!({ "title": title })).await;
        assert_eq!(r.status, 201, "{}", r.text);
        assert_eq!(r.json()["slug"], slug);
    }
}
