//! Gate 2 through HTTP: whose budget a request spends. (The full X-Forwarded-For
//! table is the unit test in `client_ip`.)

use crate::helpers::{spawn_app, spawn_app_with};

#[actix_web::test]
async fn behind_a_trusted_proxy_the_rightmost_untrusted_forwarded_address_is_the_client() {
    let app =
        spawn_app_with(|s| s.trusted_proxies = "127.0.0.1, 10.0.0.0/8".parse().unwrap()).await;
    let cases: &[(&[&str], &str)] = &[
        (&["203.0.113.5"], "203.0.113.5"),
        (&["1.1.1.1, 203.0.113.6, 10.1.2.3"], "203.0.113.6"),
        (&["1.1.1.1", "203.0.113.7:4711"], "203.0.113.7"),
        (&["[2001:db8:1:2::9]:443"], "2001:db8:1:2::1"),
        (&["::ffff:203.0.113.8"], "203.0.113.8"),
        (&["garbage, 10.9.9.9"], "10.9.9.9"),
        (&["10.0.0.1, 10.0.0.2"], "10.0.0.1"),
    ];
    for (headers, client) in cases {
        let mut request = app.client.get(format!("{}/search?q=nginx", app.address));
        for h in *headers {
            request = request.header("X-Forwarded-For", *h);
        }
        assert_eq!(request.send().await.unwrap().status(), 200, "{headers:?}");
        assert_eq!(
            app.counters(client),
            (1, 1),
            "{headers:?} should spend {client}'s budget"
        );
    }
    // With no header, the proxy itself is the client.
    app.client
        .get(format!("{}/search?q=nginx", app.address))
        .send()
        .await
        .unwrap();
    assert_eq!(app.counters("127.0.0.1"), (1, 1));
}

#[actix_web::test]
async fn an_untrusted_peer_cannot_choose_its_bucket() {
    let app = spawn_app_with(|s| s.trusted_proxies = Default::default()).await;
    app.search("nginx", "203.0.113.99").await;
    assert_eq!(app.counters("203.0.113.99"), (0, 0));
    assert_eq!(app.counters("127.0.0.1"), (1, 1));
}

#[actix_web::test]
async fn ipv6_clients_share_the_budget_of_their_64() {
    let app = spawn_app().await;
    app.search("nginx", "2001:db8:aa:bb::1").await;
    app.search("nginx", "2001:db8:aa:bb:ffff::2").await;
    assert_eq!(app.counters("2001:db8:aa:bb::42"), (2, 2));
}
