//! Gate 2 through a real reverse proxy: nginx (Debian's package) on loopback in front
//! of the app, which trusts only the proxy's address (`TRUSTED_PROXY_CIDRS=127.0.0.1/32`).
//!
//! Clients connect from 127.0.0.2, 127.0.0.3, … and nginx connects to the app from
//! 127.0.0.1 (`proxy_bind`), so the SQLite counters can tell a client from its proxy.
//! Every client sends a forged `X-Forwarded-For`; its searches must land in the bucket
//! of the address nginx saw, never in the forged one. And `/mcp` behind it answers the
//! public URL's name and no other (SPEC §11).

#[path = "common/mod.rs"]
mod helpers;
use helpers::support;

use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};
use std::process::Command;

use agent_pages::budget::Budget;
use agent_pages::client_ip::ClientIp;
use helpers::{spawn_app_with, TestApp};
use support::{free_port, require_program, ChildGuard};

/// How nginx passes the client on, the two settings the deploy docs recommend.
#[derive(Clone, Copy, Debug)]
enum ForwardedFor {
    /// `$proxy_add_x_forwarded_for`: the client's header with nginx's peer appended.
    Append,
    /// `$remote_addr`: only nginx's peer; the client's header is dropped.
    Replace,
}

impl ForwardedFor {
    fn nginx_value(self) -> &'static str {
        match self {
            ForwardedFor::Append => "$proxy_add_x_forwarded_for",
            ForwardedFor::Replace => "$remote_addr",
        }
    }
}

/// An nginx master process (single-process mode, so killing it leaves no workers)
/// with its config, pid, logs and temp folders in a temp dir.
struct Nginx {
    port: u16,
    _process: ChildGuard,
    _dir: tempfile::TempDir,
}

impl Nginx {
    fn start(upstream: SocketAddr, forwarded_for: ForwardedFor) -> Nginx {
        let binary = require_program("nginx", "NGINX", "nginx");
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().display().to_string();
        let port = free_port();
        let header = forwarded_for.nginx_value();
        // Every path nginx would otherwise take from its compiled-in prefix
        // (/var/lib/nginx, /var/log/nginx, /run) is in the temp dir, so the test runs
        // as any user and never touches the system nginx.
        let config = format!(
            r#"daemon off;
master_process off;
pid {root}/nginx.pid;
error_log {root}/error.log info;
events {{ worker_connections 64; }}
http {{
    access_log {root}/access.log;
    client_body_temp_path {root}/client_body;
    proxy_temp_path {root}/proxy;
    fastcgi_temp_path {root}/fastcgi;
    uwsgi_temp_path {root}/uwsgi;
    scgi_temp_path {root}/scgi;
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://{upstream};
            proxy_bind 127.0.0.1;
            proxy_set_header Host $host;
            proxy_set_header X-Forwarded-For {header};
            proxy_set_header X-Forwarded-Proto $scheme;
        }}
    }}
}}
"#
        );
        let config_path = dir.path().join("nginx.conf");
        std::fs::write(&config_path, config).unwrap();
        let mut command = Command::new(binary);
        command
            .arg("-p")
            .arg(dir.path())
            .arg("-c")
            .arg(&config_path)
            .arg("-e")
            .arg(dir.path().join("error.log"));
        let mut process =
            ChildGuard::spawn("nginx", command, dir.path()).with_log(dir.path().join("error.log"));
        process.wait_for_port(port);
        Nginx {
            port,
            _process: process,
            _dir: dir,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

/// An HTTP client whose connections come from `local` (a loopback address).
fn client_from(local: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(local.parse::<IpAddr>().unwrap())
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// (client address, forged X-Forwarded-For headers it sends). The forgeries cover a
/// foreign address, the proxy's own address (trusted!), a chain that ends in the
/// proxy, garbage, an IPv6 entry with a port, and two headers at once.
const FORGERIES: &[(&str, &[&str])] = &[
    ("127.0.0.2", &["203.0.113.66"]),
    ("127.0.0.3", &["127.0.0.1"]),
    ("127.0.0.4", &["198.51.100.7, 127.0.0.1"]),
    ("127.0.0.5", &["garbage"]),
    ("127.0.0.6", &["[2001:db8::1]:443"]),
    ("127.0.0.7", &["203.0.113.67", "203.0.113.68, 127.0.0.1"]),
    ("127.0.0.8", &[]),
];

/// Addresses that appear in the forgeries, plus the proxy: none may be charged.
const NEVER_CHARGED: &[&str] = &[
    "127.0.0.1",
    "203.0.113.66",
    "198.51.100.7",
    "2001:db8::1",
    "203.0.113.67",
    "203.0.113.68",
];

const SEARCHES_PER_CLIENT: i64 = 2;

async fn app_behind_trusted_loopback_proxy() -> TestApp {
    spawn_app_with(|s| s.trusted_proxies = "127.0.0.1/32".parse().unwrap()).await
}

/// Every bucket key that has a row in `rate_limit_counters`.
fn charged_buckets(app: &TestApp) -> BTreeSet<String> {
    let conn = app.budget_conn();
    let mut statement = conn
        .prepare("SELECT bucket FROM rate_limit_counters")
        .unwrap();
    let rows = statement.query_map([], |r| r.get(0)).unwrap();
    rows.map(Result::unwrap).collect()
}

fn bucket_keys_of(ip: &str) -> [String; 2] {
    let keys = Budget::search(20, 200).keys(&ClientIp::from_addr(ip.parse().unwrap()));
    [keys.0[0].clone(), keys.0[1].clone()]
}

/// Sends every forgery through nginx and checks that each search was charged to the
/// address nginx saw, and that no other bucket exists.
async fn forged_headers_are_charged_to_the_address_nginx_saw(forwarded_for: ForwardedFor) {
    let app = app_behind_trusted_loopback_proxy().await;
    let upstream: SocketAddr = app.address.trim_start_matches("http://").parse().unwrap();
    let nginx = Nginx::start(upstream, forwarded_for);

    for (local, forged) in FORGERIES {
        let client = client_from(local);
        for _ in 0..SEARCHES_PER_CLIENT {
            let mut request = client.get(nginx.url("/search?q=kubernetes"));
            for value in *forged {
                request = request.header("X-Forwarded-For", *value);
            }
            let response = request.send().await.unwrap();
            assert_eq!(
                response.status(),
                200,
                "{local} forging {forged:?} via nginx ({forwarded_for:?})"
            );
        }
    }

    for (local, forged) in FORGERIES {
        assert_eq!(
            app.counters(local),
            (SEARCHES_PER_CLIENT, SEARCHES_PER_CLIENT),
            "{local} forging {forged:?} must spend {local}'s own budget ({forwarded_for:?})"
        );
    }
    for forged in NEVER_CHARGED {
        assert_eq!(
            app.counters(forged),
            (0, 0),
            "{forged} was forged or is the proxy; it must never be charged ({forwarded_for:?})"
        );
    }
    let expected: BTreeSet<String> = FORGERIES
        .iter()
        .flat_map(|(local, _)| bucket_keys_of(local))
        .collect();
    assert_eq!(
        charged_buckets(&app),
        expected,
        "only the clients nginx saw may have counters ({forwarded_for:?})"
    );
}

#[actix_web::test]
async fn through_nginx_appending_forwarded_for_each_search_spends_the_connecting_clients_budget() {
    forged_headers_are_charged_to_the_address_nginx_saw(ForwardedFor::Append).await;
}

#[actix_web::test]
async fn through_nginx_replacing_forwarded_for_each_search_spends_the_connecting_clients_budget() {
    forged_headers_are_charged_to_the_address_nginx_saw(ForwardedFor::Replace).await;
}

/// The control for the tests above: the app does believe `X-Forwarded-For` from the
/// proxy's address, so those tests pass because nginx rewrote the header, not because
/// the header was ignored. And a client that bypasses nginx from another address
/// cannot choose its bucket.
#[actix_web::test]
async fn the_app_believes_forwarded_for_only_from_the_trusted_proxy_address() {
    let app = app_behind_trusted_loopback_proxy().await;
    let search = format!("{}/search?q=kubernetes", app.address);

    let as_proxy = client_from("127.0.0.1");
    let r = as_proxy
        .get(&search)
        .header("X-Forwarded-For", "203.0.113.99")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(app.counters("203.0.113.99"), (1, 1));
    assert_eq!(app.counters("127.0.0.1"), (0, 0));

    let bypassing = client_from("127.0.0.9");
    let r = bypassing
        .get(&search)
        .header("X-Forwarded-For", "203.0.113.100")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(app.counters("127.0.0.9"), (1, 1));
    assert_eq!(app.counters("203.0.113.100"), (0, 0));
}

/// `/mcp` through nginx (`proxy_set_header Host $host`, the deploy docs' setting):
/// the name visitors use is the public URL's, and the one a rebinding page names is
/// refused, whatever Origin it adds. Without `AGENT_PAGES_PUBLIC_URL` only the
/// loopback names would pass.
#[actix_web::test]
async fn through_nginx_mcp_answers_the_public_name_and_refuses_a_rebound_one() {
    let app = spawn_app_with(|s| {
        s.trusted_proxies = "127.0.0.1/32".parse().unwrap();
        s.public_url = Some("http://pages.example".parse().unwrap());
    })
    .await;
    let upstream: SocketAddr = app.address.trim_start_matches("http://").parse().unwrap();
    let nginx = Nginx::start(upstream, ForwardedFor::Replace);
    let client = client_from("127.0.0.2");
    let publish = |host: &'static str, origin: Option<&'static str>, title: &'static str| {
        let mut r = client
            .post(nginx.url("/mcp"))
            .header("Host", host)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", "2025-11-25")
            .body(
                serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                    "params": {"name": "publish_page", "arguments": {"title": title}}})
                .to_string(),
            );
        if let Some(origin) = origin {
            r = r.header("Origin", origin);
        }
        r.send()
    };
    let r = publish(
        "pages.example",
        Some("http://pages.example"),
        "Proxied words",
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 200);
    let answer: serde_json::Value = r.json().await.unwrap();
    assert_eq!(
        answer["result"]["structuredContent"]["url"], "http://pages.example/p/proxied-words",
        "{answer}"
    );
    for (host, origin) in [
        ("evil.example", Some("http://evil.example")),
        ("evil.example", None),
        ("pages.example", Some("http://evil.example")),
    ] {
        let r = publish(host, origin, "Rebound words").await.unwrap();
        assert_eq!(r.status(), 403, "{host} {origin:?}");
    }
    assert_eq!(
        app.sql_i64("SELECT count(*) FROM pages WHERE slug = 'rebound-words'"),
        0
    );
}
