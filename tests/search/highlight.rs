//! Matched words are marked in the result table, with every piece escaped.

use crate::helpers::spawn_app;

#[actix_web::test]
async fn matched_words_are_marked_and_titles_stay_escaped() {
    let app = spawn_app().await;
    app.conn()
        .execute(
            "INSERT INTO pages (slug, title, created_at, updated_at) VALUES ('xss', 'Kubernetes <script>alert(1)</script> & Café', 1, 1)",
            [],
        )
        .unwrap();
    let body = app
        .search("kubrenetes cafe", "192.0.2.5")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        body.contains("<mark>Kubernetes</mark> container orchestration"),
        "{body}"
    );
    assert!(
        body.contains("<mark>Kubernetes</mark> &lt;script&gt;alert(1)&lt;&#x2F;script&gt; &amp; <mark>Café</mark>"),
        "{body}"
    );
    assert!(!body.contains("<script>alert"));
}

#[actix_web::test]
async fn json_results_carry_the_marks_as_character_offsets() {
    let app = spawn_app().await;
    app.conn()
        .execute(
            "INSERT INTO pages (slug, title, created_at, updated_at) VALUES ('cafe', 'Café Kubernetes', 1, 1)",
            [],
        )
        .unwrap();
    let (status, _, body) = app.search_json("kubrenetes cafe", "192.0.2.6").await;
    assert_eq!(status, 200);
    let row = body["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["slug"] == "cafe")
        .unwrap_or_else(|| panic!("{body}"));
    // Offsets count characters: "Café" is 4 of them (5 bytes).
    assert_eq!(row["marks"], serde_json::json!([[0, 4], [5, 15]]), "{body}");
}
