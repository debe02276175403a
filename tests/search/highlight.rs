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
