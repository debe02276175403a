//! One set of field rules on both faces (SPEC §11): every malformed JSON-RPC envelope
//! gets the error code JSON-RPC 2.0 names (-32700 parse error, -32600 invalid
//! request, -32602 invalid params) in a JSON body, with the HTTP status of the MCP
//! 2025-11-25 Streamable HTTP transport (400 for what is not one JSON-RPC message,
//! 200 for the error answer to a request); a repeated field is refused on `/mcp` as
//! on `/api`; a repeated `MCP-Protocol-Version` is refused.

use serde_json::{json, Value};

use crate::helpers::{spawn_app, Answer, VERSION};

/// The JSON-RPC error of `answer`: checks the media type and envelope, returns
/// `(code, id)`.
#[track_caller]
fn rpc_error(answer: &Answer, label: &str) -> (i64, Value) {
    assert_eq!(
        answer
            .headers
            .get("content-type")
            .map(|v| v.to_str().unwrap()),
        Some("application/json"),
        "{label}: {}",
        answer.text
    );
    let message: Value = serde_json::from_str(&answer.text)
        .unwrap_or_else(|e| panic!("{label}: not JSON ({e}): {}", answer.text));
    assert_eq!(message["jsonrpc"], "2.0", "{label}: {message}");
    assert!(message.get("result").is_none(), "{label}: {message}");
    let code = message["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("{label}: no error code: {message}"));
    assert!(
        message["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "{label}: {message}"
    );
    (code, message["id"].clone())
}

#[actix_web::test]
async fn every_malformed_envelope_gets_the_json_rpc_error_the_specification_names() {
    let app = spawn_app().await;
    let version = [("MCP-Protocol-Version", VERSION)];
    // (what, body, HTTP status, JSON-RPC code, id answered)
    let cases: &[(&str, &str, u16, i64, Value)] = &[
        (
            "truncated JSON",
            r#"{"jsonrpc": "2.0", "id": 1, "method": "tools/list""#,
            400,
            -32700,
            Value::Null,
        ),
        ("not JSON", "tools/list please", 400, -32700, Value::Null),
        (
            "a batch",
            r#"[{"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}]"#,
            400,
            -32600,
            Value::Null,
        ),
        (
            "JSON-RPC 1.0",
            r#"{"jsonrpc": "1.0", "id": 3, "method": "tools/list", "params": {}}"#,
            400,
            -32600,
            json!(3),
        ),
        (
            "no jsonrpc member",
            r#"{"id": 4, "method": "tools/list", "params": {}}"#,
            400,
            -32600,
            json!(4),
        ),
        (
            "neither a method nor a result",
            r#"{"jsonrpc": "2.0", "id": 5}"#,
            400,
            -32600,
            json!(5),
        ),
        (
            "a method that is not a string",
            r#"{"jsonrpc": "2.0", "id": "six", "method": 6}"#,
            400,
            -32600,
            json!("six"),
        ),
        (
            "a null id",
            r#"{"jsonrpc": "2.0", "id": null, "method": "tools/list", "params": {}}"#,
            400,
            -32600,
            Value::Null,
        ),
        (
            "an object id",
            r#"{"jsonrpc": "2.0", "id": {"n": 7}, "method": "tools/list", "params": {}}"#,
            400,
            -32600,
            Value::Null,
        ),
        ("a bare string", r#""tools/list""#, 400, -32600, Value::Null),
        (
            "arguments given as a string",
            r#"{"jsonrpc": "2.0", "id": 8, "method": "tools/call",
                "params": {"name": "read_page", "arguments": "{\"slug\": \"vim\"}"}}"#,
            200,
            -32602,
            json!(8),
        ),
        (
            "params given as a string",
            r#"{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": "read_page"}"#,
            200,
            -32602,
            json!(9),
        ),
        (
            "a call without a tool name",
            r#"{"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {"arguments": {}}}"#,
            200,
            -32602,
            json!(10),
        ),
        (
            "a tool name that is not a string",
            r#"{"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": {"name": 11}}"#,
            200,
            -32602,
            json!(11),
        ),
    ];
    for (what, body, status, code, id) in cases {
        let r = app.mcp_post_text(body, &version).await;
        assert_eq!(r.status, *status, "{what}: {}", r.text);
        assert_eq!(rpc_error(&r, what), (*code, id.clone()), "{what}");
    }
    // What is not JSON at all is still refused in JSON.
    let r = app
        .client
        .post(format!("{}/mcp", app.address))
        .header("Content-Type", "text/plain")
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", VERSION)
        .body("x")
        .send()
        .await
        .unwrap();
    let r = Answer {
        status: r.status().as_u16(),
        headers: r.headers().clone(),
        text: r.text().await.unwrap(),
    };
    assert_eq!(r.status, 415, "{}", r.text);
    assert_eq!(rpc_error(&r, "text/plain").0, -32600);
    // The well-formed message beside them is served.
    let r = app
        .mcp_post_text(
            r#"{"jsonrpc": "2.0", "id": 12, "method": "tools/list", "params": {}}"#,
            &version,
        )
        .await;
    assert_eq!(r.result()["tools"].as_array().unwrap().len(), 11);
}

#[actix_web::test]
async fn a_repeated_field_is_refused_on_both_faces_alike() {
    let app = spawn_app().await;
    let before = app.sql_i64("SELECT count(*) FROM pages");
    // The HTTP face: a repeated field is a 400 naming it.
    let r = app
        .client
        .post(format!("{}/api/pages", app.address))
        .header("Content-Type", "application/json")
        .body(r#"{"title": "First title", "title": "Second title"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let problem: Value = r.json().await.unwrap();
    assert_eq!(problem["type"], "/problems/validation", "{problem}");
    assert_eq!(problem["field"], "title", "{problem}");
    // The MCP face: the same arguments are invalid params, and nothing is written.
    let publish = r#"{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "publish_page",
        "arguments": {"title": "First title", "pin": "123456 first",
                      "title": "Second title", "pin": "654321 second"}}}"#;
    let r = app
        .mcp_post_text(publish, &[("MCP-Protocol-Version", VERSION)])
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    let (code, id) = rpc_error(&r, "publish_page with title twice");
    assert_eq!((code, id), (-32602, json!(1)), "{}", r.text);
    assert!(r.text.contains("title"), "names the field: {}", r.text);
    assert!(
        !r.text.contains("123456") && !r.text.contains("654321"),
        "never a PIN: {}",
        r.text
    );
    // A member of the envelope itself given twice: which one would count?
    let r = app
        .mcp_post_text(
            r#"{"jsonrpc": "2.0", "id": 2, "method": "tools/list",
                "method": "tools/call", "params": {"name": "read_page"}}"#,
            &[("MCP-Protocol-Version", VERSION)],
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(rpc_error(&r, "method twice"), (-32600, json!(2)));
    assert_eq!(app.sql_i64("SELECT count(*) FROM pages"), before);
}

#[actix_web::test]
async fn a_repeated_version_header_is_refused() {
    let app = spawn_app().await;
    let list = r#"{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}"#;
    // One line with two values, and two lines with one each: refused alike.
    let one_line = app
        .mcp_post_text(list, &[("MCP-Protocol-Version", "2025-11-25, 2025-06-18")])
        .await;
    let two_lines = app
        .mcp_post_text(
            list,
            &[
                ("MCP-Protocol-Version", "2025-11-25"),
                ("MCP-Protocol-Version", "2025-06-18"),
            ],
        )
        .await;
    let same_twice = app
        .mcp_post_text(
            list,
            &[
                ("MCP-Protocol-Version", "2025-11-25"),
                ("MCP-Protocol-Version", "2025-11-25"),
            ],
        )
        .await;
    for (label, r) in [
        ("one line", &one_line),
        ("two lines", &two_lines),
        ("the same twice", &same_twice),
    ] {
        assert_eq!(r.status, 400, "{label}: {}", r.text);
        assert_eq!(rpc_error(r, label).0, -32600, "{label}");
    }
    let once = app
        .mcp_post_text(list, &[("MCP-Protocol-Version", "2025-11-25")])
        .await;
    assert_eq!(once.result()["tools"].as_array().unwrap().len(), 11);
}
