//! `GET /api/openapi.json` is an OpenAPI 3.1 document that lists every API route.

use serde_json::Value;

use crate::helpers::{spawn_app, Reply, AGENT};

/// Every route `startup::routes_config` registers under `/api`, with its methods.
const ROUTES: [(&str, &[&str]); 9] = [
    ("/api/pages", &["get", "post"]),
    ("/api/pages/{slug}", &["get", "put"]),
    ("/api/pages/{slug}/archive", &["post"]),
    ("/api/pages/{slug}/claim", &["post"]),
    ("/api/pages/{slug}/versions", &["get"]),
    ("/api/pages/{slug}/versions/{version}", &["get"]),
    ("/api/pages/{slug}/restore", &["post"]),
    ("/api/pages/{slug}/pin", &["post"]),
    ("/api/openapi.json", &["get"]),
];

#[actix_web::test]
async fn the_document_is_openapi_3_1_and_lists_every_route() {
    let app = spawn_app().await;
    let r = app.fetch("/api/openapi.json").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let doc: Value = r.json();
    assert!(
        doc["openapi"].as_str().unwrap().starts_with("3.1"),
        "{}",
        doc["openapi"]
    );
    assert!(doc["info"]["title"].is_string() && doc["info"]["version"].is_string());

    let paths = doc["paths"].as_object().unwrap();
    let mut documented: Vec<(String, String)> = paths
        .iter()
        .flat_map(|(path, item)| {
            item.as_object()
                .unwrap()
                .keys()
                .filter(|k| ["get", "put", "post", "delete", "patch"].contains(&k.as_str()))
                .map(move |m| (path.clone(), m.clone()))
        })
        .collect();
    documented.sort();
    let mut expected: Vec<(String, String)> = ROUTES
        .iter()
        .flat_map(|(p, ms)| ms.iter().map(move |m| (p.to_string(), m.to_string())))
        .collect();
    expected.sort();
    assert_eq!(documented, expected);
    assert_eq!(
        documented.len(),
        11,
        "the loop below checks every operation"
    );

    // Every documented operation answers (not the API's "no route" 404).
    for (path, method) in &documented {
        let url = app.url(
            &path
                .replace("{slug}", "kubernetes")
                .replace("{version}", "1"),
        );
        let r = app
            .client
            .request(method.to_uppercase().parse().unwrap(), url)
            .send()
            .await
            .unwrap();
        let text = r.text().await.unwrap();
        assert!(!text.contains("no API route"), "{method} {path}: {text}");
    }

    // Every `$ref` resolves, and the PIN routes document their header and 429.
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    let text = doc.to_string();
    let refs: Vec<&str> = text
        .split("\"$ref\":\"#/components/schemas/")
        .skip(1)
        .map(|piece| piece.split('"').next().unwrap())
        .collect();
    // The split matched the serialization: the bodies and the problem are referenced.
    for name in ["CreatePage", "UpdatePage", "Created", "PageList", "Problem"] {
        assert!(refs.contains(&name), "no $ref to {name} found in {refs:?}");
    }
    for name in &refs {
        assert!(schemas.contains_key(*name), "dangling $ref {name}");
    }
    for (path, method) in [
        ("/api/pages/{slug}", "put"),
        ("/api/pages/{slug}/archive", "post"),
        ("/api/pages/{slug}/claim", "post"),
        ("/api/pages/{slug}/restore", "post"),
    ] {
        let op = &paths[path][method];
        let header = |name: &str| {
            op["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == name && p["in"] == "header")
        };
        assert!(header("X-Page-Pin") && header("If-Match"), "{path}");
        assert!(op["responses"]["429"].is_object(), "{path}");
        assert!(op["responses"]["412"].is_object(), "{path}");
    }
    assert_eq!(
        schemas["CreatePage"]["required"],
        serde_json::json!(["title"])
    );
}

#[actix_web::test]
async fn the_documents_limits_are_the_ones_the_server_applies() {
    let app = spawn_app().await;
    let doc: Value = app.fetch("/api/openapi.json").await.json();

    // `page` has no documented maximum, and none is applied: a page past the end,
    // however large its number (past 2^64 too), is an empty page on every paged
    // route alike (issue 31 §4), as on `/` and `/search`.
    let params = doc["paths"]["/api/pages"]["get"]["parameters"]
        .as_array()
        .unwrap();
    let page = params.iter().find(|p| p["name"] == "page").unwrap();
    assert!(page["schema"]["maximum"].is_null(), "{page}");
    for n in [
        "92233720368547758",
        "92233720368547759",
        "99999999999999999999",
    ] {
        let r = app
            .fetch(&format!("/api/pages?page={n}&per_page=100"))
            .await;
        assert_eq!(r.status, 200, "{n}: {}", r.text);
        let body = r.json();
        assert_eq!(body["pages"], serde_json::json!([]), "{n}");
        assert!(body["next_page"].is_null(), "{n}");
        let r = app.fetch(&format!("/?page={n}")).await;
        assert_eq!(r.status, 200, "{n}");
        let r = app
            .fetch(&format!("/api/pages/any-page/versions?page={n}"))
            .await;
        assert_ne!(r.status, 400, "{n}: {}", r.text);
    }

    // An update needs a title or a body that is not null: the document says so with
    // an `anyOf` of the two, each required as a string.
    let update = &doc["components"]["schemas"]["UpdatePage"];
    let any_of = update["allOf"][1]["anyOf"].as_array().expect("anyOf");
    let required: Vec<&Value> = any_of.iter().map(|s| &s["required"][0]).collect();
    assert_eq!(required, ["title", "body"]);
    for s in any_of {
        let field = s["required"][0].as_str().unwrap();
        assert_eq!(s["properties"][field]["type"], "string");
    }

    // The PIN rules reach the header as far as a header can carry them: every
    // X-Page-Pin (seven routes) has the PIN's lengths and edges over printable ASCII,
    // and a published page links to the PIN routes with the PIN it was sent with.
    let pin_pattern = &serde_json::json!(r"^[\u0021-\u007E][\u0020-\u007E]{4,62}[\u0021-\u007E]$");
    assert_ne!(
        &doc["components"]["schemas"]["CreatePage"]["properties"]["pin"]["pattern"], pin_pattern,
        "the body's PIN may go past ASCII; the header's may not"
    );
    let mut pin_headers = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            for p in op["parameters"].as_array().into_iter().flatten() {
                if p["name"] == "X-Page-Pin" {
                    assert_eq!(p["in"], "header", "{method} {path}");
                    assert_eq!(&p["schema"]["pattern"], pin_pattern, "{method} {path}");
                    pin_headers += 1;
                }
            }
        }
    }
    assert_eq!(pin_headers, 7);
    let links = &doc["paths"]["/api/pages"]["post"]["responses"]["201"]["links"];
    for (link, path, method, operation) in [
        ("Update", "/api/pages/{slug}", "put", "update"),
        ("Archive", "/api/pages/{slug}/archive", "post", "archive"),
        ("Claim", "/api/pages/{slug}/claim", "post", "claim"),
    ] {
        let header = doc["paths"][path][method]["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "X-Page-Pin")
            .unwrap();
        assert_eq!(&header["schema"]["pattern"], pin_pattern, "{path}");
        assert_eq!(doc["paths"][path][method]["operationId"], operation);
        assert_eq!(links[link]["operationId"], operation, "{links}");
        assert_eq!(
            links[link]["parameters"]["header.X-Page-Pin"],
            "$request.body#/pin"
        );
        assert_eq!(links[link]["parameters"]["slug"], "$response.body#/slug");
    }
}

#[actix_web::test]
async fn every_write_lists_the_403_of_a_foreign_browser_origin() {
    let app = spawn_app().await;
    let doc: Value = app.fetch("/api/openapi.json").await.json();
    let mut writes = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            if !matches!(method.as_str(), "post" | "put" | "patch" | "delete") {
                continue;
            }
            writes += 1;
            let refusal = &op["responses"]["403"];
            let description = refusal["description"].as_str().unwrap_or_default();
            assert!(
                description.contains("/problems/origin-not-allowed"),
                "{method} {path}: {refusal}"
            );
            assert!(
                refusal["content"]["application/problem+json"].is_object(),
                "{method} {path}: {refusal}"
            );
        }
    }
    assert!(writes >= 5, "{writes} writes");
    // What the document says is what a write from another origin gets.
    let r = app
        .client
        .post(format!("{}/api/pages", app.address))
        .header("Origin", "http://evil.example")
        .json(&serde_json::json!({"title": "Rebound"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    let problem: Value = r.json().await.unwrap();
    assert_eq!(problem["type"], "/problems/origin-not-allowed", "{problem}");
}

#[actix_web::test]
async fn every_page_number_is_documented_empty_as_absent_and_answered_so() {
    let app = spawn_app().await;
    let doc: Value = app.fetch("/api/openapi.json").await.json();
    let mut paged = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            for p in op["parameters"].as_array().into_iter().flatten() {
                if p["in"] == "query" && matches!(p["name"].as_str(), Some("page" | "per_page")) {
                    assert_eq!(p["allowEmptyValue"], true, "{method} {path}: {p}");
                    paged.push(format!("{method} {path} {}", p["name"]));
                }
            }
        }
    }
    assert_eq!(paged.len(), 4, "{paged:?}");
    // What the document says is what the server does: `page=` is page 1.
    app.publish("paged", "Paged").await;
    for path in ["/api/pages", "/api/pages/paged/versions"] {
        let r = app.fetch(&format!("{path}?page=&per_page=")).await;
        assert_eq!(r.status, 200, "{path}: {}", r.text);
        assert_eq!(r.json()["page"], 1, "{path}");
    }
}

/// The idempotent publish as documented (issue 32 §3): the optional header with
/// the key's pattern, the replay's header on 201, the 409/422/429 problems; and a
/// key at the pattern's edges is taken or refused as the pattern says.
#[actix_web::test]
async fn the_idempotency_key_is_documented_as_the_server_reads_it() {
    let app = spawn_app().await;
    let doc: Value = app.fetch("/api/openapi.json").await.json();
    let post = &doc["paths"]["/api/pages"]["post"];
    let header = post["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "Idempotency-Key")
        .expect("the Idempotency-Key parameter");
    assert_eq!(header["in"], "header");
    assert_ne!(header["required"], true);
    assert_eq!(header["schema"]["pattern"], r"^[\x21-\x7E]{1,255}$");
    assert!(post["responses"]["201"]["headers"]["Idempotent-Replayed"].is_object());
    for (status, kind) in [
        ("409", "idempotency-key-in-flight"),
        ("422", "idempotency-key-reused"),
        ("429", "too-many-idempotency-keys"),
    ] {
        let description = post["responses"][status]["description"].as_str().unwrap();
        assert!(description.contains(kind), "{status}: {description}");
    }
    for (key, status) in [("~".repeat(255), 201), ("~".repeat(256), 400)] {
        let r = Reply::of(
            app.client
                .post(app.url("/api/pages"))
                .header("X-Forwarded-For", AGENT)
                .header("Idempotency-Key", key)
                .json(&serde_json::json!({"title": "Keyed"}))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(r.status, status, "{}", r.text);
    }
}
