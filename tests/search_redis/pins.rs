//! The per-page PIN failure budget with its counters in Redis: the same bound as
//! with SQLite (`tests/api/pins.rs`), counted under the hashed page id.

use serde_json::{json, Value};

use agent_pages::budget::redis::key_name;
use agent_pages::budget::Budget;

use crate::helpers::{spawn_app, TestApp};

const PIN: &str = "correct horse battery";

/// `PUT /api/pages/{slug}` with `pin` from `client`: (status, problem `type`,
/// `Retry-After`).
async fn put(app: &TestApp, slug: &str, pin: &str, client: &str) -> (u16, String, Option<String>) {
    let r = app
        .client
        .put(format!("{}/api/pages/{slug}", app.address))
        .header("X-Forwarded-For", client)
        .header("X-Page-Pin", pin)
        .json(&json!({"title": "edited"}))
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let retry_after = r
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned());
    let body: Value = r.json().await.unwrap_or(Value::Null);
    let kind = body["type"].as_str().unwrap_or("").to_owned();
    (status, kind, retry_after)
}

async fn publish(app: &TestApp, slug: &str) -> i64 {
    let r = app
        .client
        .post(format!("{}/api/pages", app.address))
        .json(&json!({"slug": slug, "title": slug, "pin": PIN}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    app.conn()
        .query_row("SELECT id FROM pages WHERE slug = ?1", [slug], |r| r.get(0))
        .unwrap()
}

#[actix_web::test]
async fn per_page_pin_failures_in_redis_lock_the_page_for_everyone_and_no_other() {
    let app = spawn_app().await;
    let vault = publish(&app, "vault").await;
    publish(&app, "other").await;
    let clients: Vec<String> = (1..=6).map(|i| format!("2001:db8:{i}::1")).collect();
    for i in 0..20 {
        let (status, kind, _) = put(&app, "vault", &format!("guess-{i:02}"), &clients[i % 6]).await;
        assert_eq!((status, kind.as_str()), (403, "/problems/wrong-pin"));
    }
    for (pin, client) in [("guess-21", clients[3].as_str()), (PIN, "198.51.100.7")] {
        let answer = put(&app, "vault", pin, client).await;
        assert_eq!(
            answer,
            (
                429,
                "/problems/too-many-pin-failures".to_owned(),
                Some("3600".to_owned())
            )
        );
    }
    let (status, _, _) = put(&app, "other", PIN, "198.51.100.7").await;
    assert_eq!(status, 200);

    let keys = Budget::pin_page_failures(20).keys_of(&vault.to_string());
    let stored = app
        .redis
        .as_ref()
        .unwrap()
        .get(&key_name(&keys.0[0], &keys.0[0]))
        .expect("the page's counter is in Redis");
    assert!(stored.ends_with(":20"), "{stored}");
}
