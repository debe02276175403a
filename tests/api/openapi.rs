//! `GET /api/openapi.json` is an OpenAPI 3.1 document that lists every API route.

use serde_json::Value;

use crate::helpers::spawn_app;

/// Every route `startup::routes_config` registers under `/api`, with its methods.
const ROUTES: [(&str, &[&str]); 5] = [
    ("/api/pages", &["get", "post"]),
    ("/api/pages/{slug}", &["get", "put"]),
    ("/api/pages/{slug}/archive", &["post"]),
    ("/api/pages/{slug}/claim", &["post"]),
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

    // Every documented operation answers (not the API's "no route" 404).
    for (path, method) in &documented {
        let url = app.url(&path.replace("{slug}", "kubernetes"));
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
    for piece in text.split("\"$ref\":\"#/components/schemas/").skip(1) {
        let name = piece.split('"').next().unwrap();
        assert!(schemas.contains_key(name), "dangling $ref {name}");
    }
    for (path, method) in [
        ("/api/pages/{slug}", "put"),
        ("/api/pages/{slug}/archive", "post"),
        ("/api/pages/{slug}/claim", "post"),
    ] {
        let op = &paths[path][method];
        assert!(op["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "X-Page-Pin" && p["in"] == "header"));
        assert!(op["responses"]["429"].is_object(), "{path}");
    }
    assert_eq!(
        schemas["CreatePage"]["required"],
        serde_json::json!(["title"])
    );
}
