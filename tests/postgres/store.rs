//! The pages and counters really are in PostgreSQL, and its schema is what the
//! migrations say.

use crate::helpers::{spawn_app, PagesDb, AGENT, PIN};

#[actix_web::test]
async fn pages_and_counters_are_in_postgresql_and_no_sqlite_file_is_made() {
    let app = spawn_app().await;
    assert_eq!(app.state.pages.store.kind(), "postgres");
    assert_eq!(app.state.budgets.store.kind(), "postgres");
    assert!(matches!(app.pages_db, PagesDb::Postgres { .. }));
    app.publish("in-pg", "Stored in PostgreSQL").await;
    assert_eq!(app.search("stored postgresql", AGENT).await.status(), 200);
    assert_eq!(
        app.sql_i64("SELECT count(*) FROM pages WHERE slug = 'in-pg'"),
        1
    );
    assert_eq!(app.counters(AGENT), (1, 1));
    assert!(!app.db_path.exists(), "no SQLite file");
    let versions = app.sql_rows("SELECT version, name FROM schema_migrations ORDER BY version");
    assert_eq!(
        versions,
        [
            [Some("1".to_owned()), Some("0001_pages".to_owned())],
            [
                Some("2".to_owned()),
                Some("0002_rate_limit_counters".to_owned())
            ],
            [Some("3".to_owned()), Some("0003_corpus_history".to_owned())],
            [Some("4".to_owned()), Some("0004_page_history".to_owned())],
            [
                Some("5".to_owned()),
                Some("0005_idempotency_keys".to_owned())
            ]
        ]
    );
    let r = app
        .put_page(
            "in-pg",
            Some(PIN),
            AGENT,
            serde_json::json!({"body": "new"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
}
