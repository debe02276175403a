//! HEAD on every GET route (SPEC §9): GET's status and headers, no body.

use crate::helpers::header;
use crate::helpers::spawn_app;

/// Headers that must be the same on HEAD as on GET, when GET has them.
const SAME: [&str; 6] = [
    "content-type",
    "content-length",
    "cache-control",
    "location",
    "allow",
    "x-content-type-options",
];

#[actix_web::test]
async fn head_is_answered_like_get_on_every_get_route() {
    let app = spawn_app().await;
    let paths = [
        ("/healthz", 200),
        ("/readyz", 200),
        ("/", 200),
        ("/?page=x", 400),
        ("/p/kubernetes", 200),
        ("/p/kubernetes/raw", 200),
        ("/p/nope", 404),
        ("/static/style.css", 200),
        ("/static/nope.css", 404),
        ("/theme/dark", 303),
        ("/theme/neon", 404),
        ("/search", 303),
        ("/search?q=x", 200),
        ("/api/pages", 200),
        ("/api/pages/kubernetes", 200),
        ("/api/pages/nope", 404),
        ("/api/openapi.json", 200),
        ("/nowhere", 404),
    ];
    for (path, status) in paths {
        let get = app.get(path).await;
        let head = app
            .client
            .head(format!("{}{path}", app.address))
            .send()
            .await
            .unwrap();
        assert_eq!(get.status(), status, "GET {path}");
        assert_eq!(head.status(), status, "HEAD {path}");
        for name in SAME {
            assert_eq!(header(&head, name), header(&get, name), "{name} of {path}");
        }
        assert_eq!(
            header(&head, "set-cookie").is_some(),
            header(&get, "set-cookie").is_some(),
            "{path}"
        );
    }
    let metrics = app
        .client
        .head(format!("{}/metrics", app.metrics_address))
        .send()
        .await
        .unwrap();
    assert_eq!(metrics.status(), 200);
    // On the wire, nothing follows the head of a HEAD answer.
    for path in [
        "/p/kubernetes",
        "/api/pages/kubernetes",
        "/static/style.css",
    ] {
        let raw = app
            .raw_exchange(
                format!("HEAD {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
            )
            .await;
        assert_eq!(raw.status, 200, "{path}");
        assert!(raw.after_head.is_empty(), "{path}: {:?}", raw.after_head);
    }
}

#[actix_web::test]
async fn head_on_search_is_one_search_and_spends_the_budget_once() {
    let app = spawn_app().await;
    let client = "203.0.113.77";
    let head = app
        .client
        .head(format!("{}/search?q=kubernetes", app.address))
        .header("X-Forwarded-For", client)
        .send()
        .await
        .unwrap();
    assert_eq!(head.status(), 200);
    assert_eq!(header(&head, "x-search-cache"), Some("miss"));
    assert_eq!(header(&head, "cache-control"), Some("no-store"));
    assert_eq!(app.counters(client), (1, 1));
    // The GET after it finds what the HEAD scored.
    let get = app.search("kubernetes", client).await;
    assert_eq!(header(&get, "x-search-cache"), Some("hit"));
    assert_eq!(app.counters(client), (2, 2));
}

#[actix_web::test]
async fn head_on_a_post_only_api_route_is_405_listing_post() {
    let app = spawn_app().await;
    let r = app
        .client
        .head(format!("{}/api/pages/kubernetes/archive", app.address))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 405);
    assert_eq!(header(&r, "allow"), Some("POST"));
}

/// One response cut from a byte stream of HTTP/1.1 responses.
#[derive(Debug)]
struct Framed {
    status: u16,
    content_length: Option<usize>,
    body: Vec<u8>,
}

/// Cuts `stream` into the answers to `methods` (in order) as an HTTP/1.1 client must:
/// a HEAD answer ends with its head whatever its `Content-Length` says (RFC 9112 §6.3),
/// any other ends after `Content-Length` bytes or its last chunk. Panics, naming the
/// answer, when the stream holds anything else: a head that is not where it must be,
/// or bytes left after the last answer.
fn cut_responses(stream: &[u8], methods: &[&str]) -> Vec<Framed> {
    let mut rest = stream;
    let mut out = Vec::new();
    for (i, method) in methods.iter().enumerate() {
        assert!(
            rest.starts_with(b"HTTP/1.1 "),
            "answer {} ({method}) does not start where answer {i} ended: {:?}",
            i + 1,
            String::from_utf8_lossy(&rest[..rest.len().min(200)])
        );
        let end = rest
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .unwrap_or_else(|| panic!("answer {} ({method}) has no complete head", i + 1));
        let head = String::from_utf8_lossy(&rest[..end]).into_owned();
        rest = &rest[end + 4..];
        let status = head.split(' ').nth(1).unwrap().parse().unwrap();
        let field = |name: &str| {
            head.lines().skip(1).find_map(|l| {
                let (n, v) = l.split_once(':')?;
                n.trim()
                    .eq_ignore_ascii_case(name)
                    .then(|| v.trim().to_owned())
            })
        };
        let content_length = field("content-length").map(|v| v.parse().unwrap());
        let chunked = field("transfer-encoding").is_some_and(|v| v.contains("chunked"));
        let body = if *method == "HEAD" {
            Vec::new()
        } else if chunked {
            let mut body = Vec::new();
            loop {
                let line_end = rest.windows(2).position(|w| w == b"\r\n").unwrap();
                let size = usize::from_str_radix(
                    String::from_utf8_lossy(&rest[..line_end])
                        .split(';')
                        .next()
                        .unwrap()
                        .trim(),
                    16,
                )
                .unwrap();
                rest = &rest[line_end + 2..];
                if size == 0 {
                    assert!(rest.starts_with(b"\r\n"), "trailers are not expected");
                    rest = &rest[2..];
                    break body;
                }
                body.extend_from_slice(&rest[..size]);
                rest = &rest[size + 2..];
            }
        } else {
            let n = content_length.unwrap_or(0);
            assert!(rest.len() >= n, "answer {} ({method}) is cut short", i + 1);
            let body = rest[..n].to_vec();
            rest = &rest[n..];
            body
        };
        out.push(Framed {
            status,
            content_length,
            body,
        });
    }
    assert!(
        rest.is_empty(),
        "{} bytes after the last answer: {:?}",
        rest.len(),
        String::from_utf8_lossy(&rest[..rest.len().min(200)])
    );
    out
}

/// Every GET route, and one pipelined sequence per route: HEAD then GET, GET then
/// HEAD, HEAD then HEAD, and a GET of another route after the last HEAD.
#[actix_web::test]
async fn head_framing_holds_under_pipelining_on_every_get_route() {
    let app = spawn_app().await;
    let paths = [
        "/",
        "/?page=x",
        "/p/kubernetes",
        "/p/kubernetes/raw",
        "/p/nope",
        "/api/pages",
        "/api/pages/kubernetes",
        "/api/pages/nope",
        "/api/openapi.json",
        "/nowhere",
        "/search",
        "/search?q=kubernetes",
        "/search?q=golang%20compiler",
        "/healthz",
        "/readyz",
        "/static/style.css",
        "/static/nope.css",
        "/favicon.ico",
        "/robots.txt",
        "/theme/dark",
    ];
    for path in paths {
        let methods = ["HEAD", "GET", "HEAD", "HEAD", "GET", "GET"];
        let targets = [path, path, path, path, "/healthz", path];
        let mut bytes = String::new();
        for (i, (method, target)) in methods.iter().zip(targets).enumerate() {
            let close = if i + 1 == methods.len() {
                "Connection: close\r\n"
            } else {
                ""
            };
            bytes.push_str(&format!(
                "{method} {target} HTTP/1.1\r\nHost: x\r\nAccept: text/html\r\n{close}\r\n"
            ));
        }
        // One write: every request is in the server's buffer before the first answer.
        let raw = app.raw_exchange(bytes.as_bytes()).await;
        let stream = [raw.head.as_bytes(), b"\r\n\r\n", &raw.after_head].concat();
        let answers = cut_responses(&stream, &methods);
        let get = &answers[1];
        assert_eq!(
            get.content_length.unwrap_or(get.body.len()),
            get.body.len(),
            "{path}"
        );
        for (i, answer) in answers.iter().enumerate() {
            let same_route = targets[i] == path;
            if same_route {
                assert_eq!(answer.status, get.status, "{path}: answer {}", i + 1);
            }
            if methods[i] == "HEAD" {
                // HEAD's headers are GET's: the same Content-Length (RFC 9110 §9.3.2
                // allows it only when it is GET's), and nothing after the head.
                assert_eq!(
                    answer.content_length,
                    get.content_length,
                    "{path}: {}",
                    i + 1
                );
                assert!(answer.body.is_empty());
            } else if same_route {
                assert_eq!(
                    answer.body.len(),
                    get.body.len(),
                    "{path}: answer {}",
                    i + 1
                );
            } else {
                assert_eq!(answer.body, b"ok\n", "{path}: the /healthz answer");
            }
        }
    }
    // The metrics listener answers HEAD the same way.
    let metrics = app.metrics_address.trim_start_matches("http://").to_owned();
    let mut stream = tokio::net::TcpStream::connect(&metrics).await.unwrap();
    use tokio::io::AsyncWriteExt as _;
    stream
        .write_all(
            b"HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\nGET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        )
        .await
        .unwrap();
    let raw = crate::helpers::read_until_closed(stream).await;
    let stream = [raw.head.as_bytes(), b"\r\n\r\n", &raw.after_head].concat();
    let answers = cut_responses(&stream, &["HEAD", "GET"]);
    assert_eq!(answers[0].status, 200);
    assert!(!answers[1].body.is_empty());
}
