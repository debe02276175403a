//! Following writes from every host: two apps (replicas in this process) on one
//! PostgreSQL database, writers on both at once and searches on both meanwhile (so
//! each replica applies the change log in many small steps while it grows), then
//! each replica's candidate snapshot must be exactly what a fresh build from the
//! database gives: no change missed, none applied twice or out of order (a stale row
//! applied after a newer one would show as an old version or title).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use agent_pages::search::corpus::Snapshot;
use serde_json::{json, Value};

use crate::helpers::spawn_replica;
use crate::helpers::{spawn_app_with, TestApp, PIN};

/// `method path` with a JSON body and the PIN, from an address of its own.
async fn send(client: &reqwest::Client, url: String, method: reqwest::Method, body: Value) -> u16 {
    client
        .request(method, url)
        .header("X-Forwarded-For", "198.51.100.60")
        .header("X-Page-Pin", PIN)
        .json(&body)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

fn roomy(s: &mut agent_pages::configuration::Settings) {
    for budget in [&mut s.search_budget, &mut s.publish_budget] {
        budget.set_limit("minute", 1_000_000);
        budget.set_limit("hour", 1_000_000);
    }
}

/// Asserts `app`'s snapshot, brought up to the database's generation, is a fresh
/// build's: same generation, fingerprint, candidates (every field) and rankings.
async fn assert_snapshot_is_fresh(app: &TestApp, name: &str) {
    let followed = app.state.search.corpus.current(None).await.unwrap();
    let (generation, candidates) = app.state.pages.store.candidates().await.unwrap();
    let fresh = Snapshot::build(generation, candidates.clone());
    assert_eq!(followed.generation, fresh.generation, "{name}: generation");
    assert_eq!(followed.len(), fresh.len(), "{name}: candidates");
    for c in &candidates {
        assert_eq!(
            followed.page(c.id),
            Some(c.borrowed()),
            "{name}: page {}",
            c.id
        );
    }
    assert_eq!(
        followed.fingerprint, fresh.fingerprint,
        "{name}: fingerprint"
    );
    for q in [
        "shared page",
        "written by",
        "renamed",
        "kubernetes",
        "w1 r0",
    ] {
        let rank = |s: &Snapshot| {
            agent_pages::search::rank::rank(&s.index, q, 50)
                .rows
                .iter()
                .map(|r| (r.page_id, r.score.to_bits()))
                .collect::<Vec<_>>()
        };
        assert_eq!(rank(&followed), rank(&fresh), "{name}: ranking of {q:?}");
    }
}

#[actix_web::test]
async fn concurrent_writers_on_two_replicas_leave_each_snapshot_equal_to_a_fresh_build() {
    let a = spawn_app_with(roomy).await;
    let b = spawn_replica(&a, roomy).await;
    let replicas = [&a, &b];
    // Pages both replicas' writers will fight over.
    for i in 0..4 {
        let r = a
            .create(json!({"slug": format!("shared-{i}"), "title": format!("Shared page {i}"), "pin": PIN}))
            .await;
        assert_eq!(r.status, 201, "{}", r.text);
    }

    let stop = Arc::new(AtomicBool::new(false));
    let mut searchers = Vec::new();
    for (r, app) in replicas.iter().enumerate() {
        for k in 0..2 {
            let (client, url, stop) = (app.client.clone(), app.address.clone(), stop.clone());
            searchers.push(actix_web::rt::spawn(async move {
                let mut n = 0;
                while !stop.load(Ordering::SeqCst) {
                    let q = ["shared page", "written by", "renamed"][n % 3];
                    let status = client
                        .get(format!("{url}/search"))
                        .query(&[("q", q)])
                        .header("X-Forwarded-For", format!("192.0.2.{}", 100 + 2 * r + k))
                        .send()
                        .await
                        .unwrap()
                        .status()
                        .as_u16();
                    assert!(matches!(status, 200 | 503), "search answered {status}");
                    n += 1;
                }
                n
            }));
        }
    }

    let mut writers = Vec::new();
    for (r, app) in replicas.iter().enumerate() {
        for w in 0..3 {
            let (client, url) = (app.client.clone(), app.address.clone());
            writers.push(actix_web::rt::spawn(async move {
                let mut done = 0;
                for i in 0..12 {
                    let slug = format!("w{w}-r{r}-{i}");
                    let api = format!("{url}/api/pages");
                    let title = format!("Written by w{w} r{r} number {i}");
                    let created = send(
                        &client,
                        api.clone(),
                        reqwest::Method::POST,
                        json!({"slug": slug, "title": title, "pin": PIN}),
                    )
                    .await;
                    assert_eq!(created, 201);
                    let renamed = json!({"title": format!("Renamed w{w} r{r} number {i}")});
                    let shared = format!("{api}/shared-{}", (i + w) % 4);
                    let page = format!("{api}/{slug}");
                    let steps = [
                        (page.clone(), reqwest::Method::PUT, renamed),
                        (
                            shared,
                            reqwest::Method::PUT,
                            json!({"body": format!("edit {w} {r} {i}")}),
                        ),
                    ];
                    for (target, method, body) in steps {
                        assert_eq!(send(&client, target, method, body).await, 200);
                    }
                    if i % 4 == 1 {
                        let archive = format!("{page}/archive");
                        assert_eq!(
                            send(&client, archive, reqwest::Method::POST, json!({})).await,
                            200
                        );
                    }
                    if i % 5 == 2 {
                        let claim = format!("{page}/claim");
                        assert_eq!(
                            send(&client, claim, reqwest::Method::POST, json!({})).await,
                            200
                        );
                    }
                    done += 1;
                }
                done
            }));
        }
    }
    for w in writers {
        assert_eq!(w.await.unwrap(), 12);
    }
    stop.store(true, Ordering::SeqCst);
    let mut searched = 0;
    for s in searchers {
        searched += s.await.unwrap();
    }
    assert!(searched > 0);

    assert_snapshot_is_fresh(&a, "replica a").await;
    assert_snapshot_is_fresh(&b, "replica b").await;
    // 4 shared + 72 written, of which 18 archived and 15 claimed (some both).
    let (_, candidates) = a.state.pages.store.candidates().await.unwrap();
    let gone = (0..12).filter(|i| i % 4 == 1 || i % 5 == 2).count() * 6;
    assert_eq!(
        candidates.len(),
        8 + 4 + 72 - gone,
        "the seed pages, shared and written"
    );
}
