//! Idempotent publishes on two replicas of one PostgreSQL database (issue 32 §3):
//! the key's row is in the shared page database, so a retry that reaches the
//! other replica is answered the first answer, and a key is never claimed twice.

use crate::helpers::{spawn_app, spawn_replica, Reply, TestApp, AGENT};

async fn post(app: &TestApp, key: &str, body: &'static str) -> Reply {
    Reply::of(
        app.client
            .post(app.url("/api/pages"))
            .header("X-Forwarded-For", AGENT)
            .header("Content-Type", "application/json")
            .header("Idempotency-Key", key)
            .body(body)
            .send()
            .await
            .unwrap(),
    )
    .await
}

#[actix_web::test]
async fn a_retry_on_the_other_replica_is_answered_the_first_answer() {
    let a = spawn_app().await;
    let b = spawn_replica(&a, |_| {}).await;
    let body = r#"{"title": "Replicated once"}"#;
    let first = post(&a, "across", body).await;
    assert_eq!(first.status, 201, "{}", first.text);
    let again = post(&b, "across", body).await;
    assert_eq!(again.status, 201, "{}", again.text);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.text, first.text);
    post(&b, "across", r#"{"title": "Other"}"#)
        .await
        .problem(422, "idempotency-key-reused");
    // Both replicas at once with a fresh key: one page.
    let (x, y) = futures_util::join!(post(&a, "both", body), post(&b, "both", body));
    let statuses = [x.status, y.status];
    assert!(statuses.contains(&201), "{} {}", x.text, y.text);
    let published = [&x, &y]
        .iter()
        .filter(|r| r.status == 201 && r.header("idempotent-replayed").is_none())
        .count();
    assert_eq!(published, 1, "{} {}", x.text, y.text);
    for r in [&x, &y] {
        assert!(
            r.status == 201 || r.status == 409,
            "a replay or in flight: {}",
            r.text
        );
    }
    assert_eq!(
        a.sql_i64("SELECT count(*) FROM pages WHERE title = 'Replicated once'"),
        2
    );
}
