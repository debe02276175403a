//! Guessing is bounded per client, and neither PIN nor PIN hash ever leaves the
//! server.

use serde_json::json;

use crate::helpers::{capture_logs, logs, spawn_app, AGENT, PIN};

const GUESSER: &str = "203.0.113.66";
const NEIGHBOUR: &str = "203.0.113.67";

#[actix_web::test]
async fn the_11th_wrong_pin_from_one_client_is_429_and_other_clients_are_unaffected() {
    let app = spawn_app().await;
    app.publish("vault", "Vault").await;
    for i in 1..=10 {
        app.put_page(
            "vault",
            Some(&format!("guess-{i:02}")),
            GUESSER,
            json!({"title": "x"}),
        )
        .await
        .problem(403, "wrong-pin");
    }
    let r = app
        .put_page("vault", Some("guess-11"), GUESSER, json!({"title": "x"}))
        .await;
    let p = r.problem(429, "too-many-pin-failures");
    // The test clock sits on an hour boundary: the whole window is left.
    assert_eq!(r.header("retry-after"), Some("3600"));
    assert_eq!(p["retry_after"], 3600);

    // Locked out on every PIN route, even with the right PIN or no PIN at all.
    app.put_page("vault", Some(PIN), GUESSER, json!({"title": "x"}))
        .await
        .problem(429, "too-many-pin-failures");
    app.act("vault", "archive", Some(PIN), GUESSER)
        .await
        .problem(429, "too-many-pin-failures");
    app.act("vault", "claim", None, GUESSER)
        .await
        .problem(429, "too-many-pin-failures");
    // Reading is not PIN-protected.
    assert_eq!(app.fetch("/api/pages/vault").await.status, 200);

    // Another client: its own count, and the right PIN works.
    app.put_page("vault", Some("guess-12"), NEIGHBOUR, json!({"title": "x"}))
        .await
        .problem(403, "wrong-pin");
    let r = app
        .put_page(
            "vault",
            Some(PIN),
            NEIGHBOUR,
            json!({"title": "Still mine"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    // ...which does not reset the guesser's count.
    app.put_page("vault", Some(PIN), GUESSER, json!({"title": "x"}))
        .await
        .problem(429, "too-many-pin-failures");
    assert_eq!(app.stored("vault").1, "Still mine");

    // Counted in SQLite under the hashed key, never the address.
    let pin_key = |client: &str| {
        app.state
            .budgets
            .pin_failures
            .keys(&agent_pages::client_ip::ClientIp::from_addr(
                client.parse().unwrap(),
            ))
            .0
            .remove(0)
    };
    let rows: Vec<(String, i64)> = app
        .budget_sql_rows(&format!(
            "SELECT bucket, count FROM rate_limit_counters WHERE bucket IN ('{}', '{}')
             ORDER BY count DESC",
            pin_key(GUESSER),
            pin_key(NEIGHBOUR)
        ))
        .into_iter()
        .map(|r| {
            (
                r[0].clone().unwrap(),
                r[1].as_deref().unwrap().parse().unwrap(),
            )
        })
        .collect();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[0].1, 10);
    assert!(rows
        .iter()
        .all(|(k, _)| k.len() == 64 && !k.contains("203.0.113")));

    // The next hour window starts from zero.
    app.clock.advance(3600);
    let r = app
        .put_page("vault", Some(PIN), GUESSER, json!({"title": "Back"}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
}

#[actix_web::test]
async fn concurrent_guesses_from_one_client_are_still_bounded() {
    let app = spawn_app().await;
    app.publish("vault", "Vault").await;
    let guesses: Vec<_> = (0..16)
        .map(|i| {
            let request = app
                .client
                .put(app.url("/api/pages/vault"))
                .header("X-Forwarded-For", GUESSER)
                .header("X-Page-Pin", format!("guess-{i:02}"))
                .json(&json!({"title": "x"}));
            actix_web::rt::spawn(async move { request.send().await.unwrap().status().as_u16() })
        })
        .collect();
    let mut statuses = Vec::new();
    for g in guesses {
        statuses.push(g.await.unwrap());
    }
    statuses.sort();
    assert_eq!(statuses, [[403; 10].as_slice(), &[429; 6]].concat());
}

#[actix_web::test]
async fn the_pin_and_its_hash_appear_in_no_response_and_no_log() {
    capture_logs();
    let app = spawn_app().await;
    let pin = "unique-pin-7f3a9c";
    let mut responses = Vec::new();
    let r = app
        .create(json!({"slug": "secret", "title": "Secret", "body": "b", "pin": pin}))
        .await;
    responses.push(r.text);
    for path in [
        "/api/pages/secret",
        "/api/pages",
        "/p/secret",
        "/p/secret/raw",
        "/",
    ] {
        responses.push(app.fetch(path).await.text);
    }
    responses.push(
        app.put_page("secret", Some(pin), AGENT, json!({"title": "Secret 2"}))
            .await
            .text,
    );
    responses.push(
        app.put_page("secret", Some("not-the-pin"), AGENT, json!({"title": "x"}))
            .await
            .text,
    );
    responses.push(app.act("secret", "claim", Some(pin), AGENT).await.text);
    responses.push(app.act("secret", "archive", Some(pin), AGENT).await.text);
    responses.push(
        app.create(json!({"title": "t", "pin": 123456789}))
            .await
            .text,
    );

    let stored: String = app.sql_rows("SELECT pin_hash FROM pages WHERE slug = 'secret'")[0][0]
        .clone()
        .unwrap();
    assert!(
        stored.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"),
        "{stored}"
    );
    let hash_part = stored.rsplit('$').next().unwrap();
    for text in &responses {
        for secret in ["$argon2", hash_part, pin, "not-the-pin", "123456789"] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
    }
    let logs = logs();
    assert!(
        logs.contains("wrong page PIN"),
        "the failure was logged:\n{logs}"
    );
    for secret in [
        "argon2id",
        hash_part,
        pin,
        "not-the-pin",
        "123456789",
        AGENT,
    ] {
        assert!(!logs.contains(secret), "{secret} in the logs:\n{logs}");
    }
}

/// Six addresses, as a botnet rotating IPv6 /64s would use, each far under its
/// own bound of 10.
const BOTNET: [&str; 6] = [
    "2001:db8:1::1",
    "2001:db8:2::1",
    "2001:db8:3::1",
    "2001:db8:4::1",
    "2001:db8:5::1",
    "2001:db8:6::1",
];

#[actix_web::test]
async fn per_page_pin_failures_the_21st_wrong_pin_against_one_page_locks_it_for_everyone() {
    let app = spawn_app().await;
    app.publish("vault", "Vault").await;
    app.publish("other", "Other").await;
    for i in 0..20 {
        let client = BOTNET[i % BOTNET.len()];
        app.put_page(
            "vault",
            Some(&format!("guess-{i:02}")),
            client,
            json!({"title": "x"}),
        )
        .await
        .problem(403, "wrong-pin");
    }

    // The 21st guess, from any address, is refused without a check.
    let r = app
        .put_page("vault", Some("guess-21"), BOTNET[2], json!({"title": "x"}))
        .await;
    let p = r.problem(429, "too-many-pin-failures");
    assert_eq!(r.header("retry-after"), Some("3600"));
    assert_eq!(p["retry_after"], 3600);
    assert!(p["detail"].as_str().unwrap().contains("this page"), "{p}");
    // ...and so is the right PIN, from the owner or anyone, on every PIN route.
    for client in [AGENT, NEIGHBOUR] {
        let r = app
            .put_page("vault", Some(PIN), client, json!({"title": "Mine"}))
            .await;
        r.problem(429, "too-many-pin-failures");
        assert_eq!(r.header("retry-after"), Some("3600"));
    }
    app.act("vault", "archive", Some(PIN), AGENT)
        .await
        .problem(429, "too-many-pin-failures");
    assert_eq!(app.stored("vault").1, "Vault", "nothing changed");

    // Another page is not affected.
    app.put_page("other", Some("guess-99"), BOTNET[0], json!({"title": "x"}))
        .await
        .problem(403, "wrong-pin");
    let r = app
        .put_page("other", Some(PIN), AGENT, json!({"title": "Other, edited"}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);

    // The per-client bound still holds beside it: GUESSER's 11th wrong PIN is
    // refused as the client's, on a page far under its own bound.
    for i in 0..10 {
        app.put_page(
            "other",
            Some(&format!("g-{i:02}-x")),
            GUESSER,
            json!({"title": "x"}),
        )
        .await
        .problem(403, "wrong-pin");
    }
    let p = app
        .put_page("other", Some(PIN), GUESSER, json!({"title": "x"}))
        .await
        .problem(429, "too-many-pin-failures");
    assert!(p["detail"].as_str().unwrap().contains("this client"), "{p}");

    // Counted under the hashed page id: 20, the refused guesses not at all.
    let id = app.sql_i64("SELECT id FROM pages WHERE slug = 'vault'");
    let key = &agent_pages::budget::Budget::pin_page_failures(20)
        .keys_of(&id.to_string())
        .0[0];
    assert_eq!(app.counter_row(key).map(|(_, count)| count), Some(20));

    // The next hour window starts from zero.
    app.clock.advance(3600);
    let r = app
        .put_page("vault", Some(PIN), AGENT, json!({"title": "Back"}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);

    // The API document names the page's bound on every PIN route, and overall.
    let doc = app.fetch("/api/openapi.json").await.json();
    for (path, method) in [
        ("/api/pages/{slug}", "put"),
        ("/api/pages/{slug}/archive", "post"),
        ("/api/pages/{slug}/claim", "post"),
    ] {
        let answer = doc["paths"][path][method]["responses"]["429"]["description"]
            .as_str()
            .unwrap();
        assert!(answer.contains("against this page"), "{path}: {answer}");
    }
    let about = doc["info"]["description"].as_str().unwrap();
    assert!(about.contains("PIN_FAILURES_PER_PAGE_PER_HOUR"), "{about}");
}

#[actix_web::test]
async fn per_page_pin_failures_concurrent_guesses_from_many_addresses_are_bounded_per_page() {
    let app = spawn_app().await;
    app.publish("vault", "Vault").await;
    let guesses: Vec<_> = (0..30)
        .map(|i| {
            let request = app
                .client
                .put(app.url("/api/pages/vault"))
                .header("X-Forwarded-For", format!("2001:db8:{i:x}::1"))
                .header("X-Page-Pin", format!("guess-{i:02}"))
                .json(&json!({"title": "x"}));
            actix_web::rt::spawn(async move { request.send().await.unwrap().status().as_u16() })
        })
        .collect();
    let mut statuses = Vec::new();
    for g in guesses {
        statuses.push(g.await.unwrap());
    }
    statuses.sort();
    assert_eq!(statuses, [[403; 20].as_slice(), &[429; 10]].concat());
}

#[actix_web::test]
async fn per_page_pin_failures_a_locked_gone_page_is_still_404_to_all() {
    let app = spawn_app().await;
    app.publish("ghost", "Ghost").await;
    assert_eq!(
        app.act("ghost", "archive", Some(PIN), AGENT).await.status,
        200
    );
    for i in 0..20 {
        let client = BOTNET[i % BOTNET.len()];
        app.put_page(
            "ghost",
            Some(&format!("guess-{i:02}")),
            client,
            json!({"title": "x"}),
        )
        .await
        .problem(404, "not-found");
    }
    // Locked, but a 429 would tell a guesser that a gone page is there.
    for client in [BOTNET[0], AGENT] {
        app.put_page("ghost", Some(PIN), client, json!({"title": "x"}))
            .await
            .problem(404, "not-found");
    }
    app.clock.advance(3600);
    let r = app
        .put_page("ghost", Some(PIN), AGENT, json!({"title": "Back"}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
}
