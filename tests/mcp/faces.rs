//! What agents expect of a pages server (issue 30 §5): `read_page` in parts, the
//! read-only face (`/mcp/readonly`, `X-MCP-Readonly: true`), the PIN in the
//! `X-Page-Pin` header of the request.

use serde_json::{json, Value};

use crate::helpers::{spawn_app, Answer, TestApp, ToolResult, AGENT, PIN, VERSION};

impl TestApp {
    /// A JSON-RPC request to `path` (after the handshake of [`VERSION`]) with
    /// `extra` headers.
    async fn mcp_at(
        &self,
        path: &str,
        method: &str,
        params: Value,
        extra: &[(&str, &str)],
    ) -> Answer {
        let message = json!({"jsonrpc": "2.0", "id": 9, "method": method, "params": params});
        let mut r = self
            .client
            .post(format!("{}{path}", self.address))
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("X-Forwarded-For", AGENT)
            .header("MCP-Protocol-Version", VERSION)
            .body(message.to_string());
        for (name, value) in extra {
            r = r.header(*name, *value);
        }
        let r = r.send().await.unwrap();
        Answer {
            status: r.status().as_u16(),
            headers: r.headers().clone(),
            text: r.text().await.unwrap(),
        }
    }

    async fn tool_names(&self, path: &str, extra: &[(&str, &str)]) -> Vec<String> {
        let listed = self
            .mcp_at(path, "tools/list", json!({}), extra)
            .await
            .result();
        listed["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    }
}

#[actix_web::test]
async fn read_page_answers_parts_and_says_what_is_left() {
    let app = spawn_app().await;
    let body = format!("{}é{}", "a".repeat(9), "b".repeat(20));
    app.call(
        "publish_page",
        json!({"slug": "long", "title": "Long", "body": body, "pin": PIN}),
    )
    .await
    .ok();
    let mut read = String::new();
    let mut offset = json!(0);
    let mut parts = 0;
    while !offset.is_null() {
        let part = app
            .call(
                "read_page",
                json!({"slug": "long", "max_chars": 12, "offset": offset}),
            )
            .await;
        let page = part.ok();
        assert_eq!(page["total_chars"], 30, "{page}");
        let piece = page["body"].as_str().unwrap();
        assert!(piece.chars().count() <= 12, "{page}");
        read.push_str(piece);
        let left = 30 - read.chars().count() as u64;
        assert_eq!(page["remaining_chars"], left, "{page}");
        assert!(
            part.text().contains(&format!("{left} characters are left")) || left == 0,
            "{}",
            part.text()
        );
        offset = page["next_offset"].clone();
        parts += 1;
    }
    assert_eq!((read.as_str(), parts), (body.as_str(), 3));
    // Without either argument: the whole page, the document the API answers.
    let whole = app.call("read_page", json!({"slug": "long"})).await.ok();
    assert_eq!(whole["body"], body);
    assert!(whole.get("total_chars").is_none(), "{whole}");
    app.call("read_page", json!({"slug": "long", "max_chars": 0}))
        .await
        .problem(400, "validation");
}

#[actix_web::test]
async fn the_read_only_face_lists_and_serves_only_the_read_tools() {
    let app = spawn_app().await;
    let read_tools = ["search_pages", "read_page", "list_pages"];
    let faces: [(&str, &[(&str, &str)]); 2] = [
        ("/mcp/readonly", &[]),
        ("/mcp", &[("X-MCP-Readonly", "true")]),
    ];
    for (path, extra) in faces {
        assert_eq!(app.tool_names(path, extra).await, read_tools, "{path}");
        let listed = app
            .mcp_at(
                path,
                "tools/call",
                json!({"name": "list_pages", "arguments": {}}),
                extra,
            )
            .await
            .result();
        assert_eq!(ToolResult(listed).ok()["total"], 8, "{path}");
        let refused = app
            .mcp_at(
                path,
                "tools/call",
                json!({"name": "publish_page", "arguments": {"title": "Sneaky", "pin": PIN}}),
                extra,
            )
            .await;
        let unknown = app
            .mcp_at(
                path,
                "tools/call",
                json!({"name": "no_such_tool", "arguments": {}}),
                extra,
            )
            .await;
        assert_eq!(refused.status, unknown.status, "{path}: {}", refused.text);
        let (refused, unknown) = (refused.json(), unknown.json());
        assert_eq!(
            refused["error"]["code"], unknown["error"]["code"],
            "{path}: as a tool that does not exist: {refused}"
        );
        assert!(refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("publish_page"));
    }
    assert_eq!(
        app.sql_i64("SELECT count(*) FROM pages"),
        8,
        "nothing was published"
    );
    // The full face still has every tool.
    assert_eq!(app.tool_names("/mcp", &[]).await.len(), 11);
    assert_eq!(
        app.tool_names("/mcp", &[("X-MCP-Readonly", "false")])
            .await
            .len(),
        11
    );
}

#[actix_web::test]
async fn a_pin_may_come_in_the_x_page_pin_header() {
    let app = spawn_app().await;
    let header = [("X-Page-Pin", PIN)];
    let call = |name: &'static str, arguments: Value| {
        let app = &app;
        async move {
            let answer = app
                .mcp_at(
                    "/mcp",
                    "tools/call",
                    json!({"name": name, "arguments": arguments}),
                    &header,
                )
                .await;
            assert!(!answer.text.contains(PIN), "never echoed: {}", answer.text);
            ToolResult(answer.result())
        }
    };
    call("publish_page", json!({"slug": "headed", "title": "Headed"}))
        .await
        .ok();
    let updated = call(
        "update_page",
        json!({"slug": "headed", "body": "New words."}),
    )
    .await
    .ok();
    assert_eq!(updated["version"], 2);
    // The argument, when given, is the PIN used.
    call(
        "update_page",
        json!({"slug": "headed", "pin": "not the pin at all", "body": "x"}),
    )
    .await
    .problem(403, "wrong-pin");
    let archived = call("archive_page", json!({"slug": "headed"})).await.ok();
    assert_eq!(archived["lifecycle"], "archived");
    // The PIN argument alone still works.
    app.mcp_publish("argued", "Argued").await;
    let claimed = app
        .call("claim_page", json!({"slug": "argued", "pin": PIN}))
        .await
        .ok();
    assert!(claimed["claimed_at"].is_i64(), "{claimed}");
    // update_page, archive_page and claim_page no longer require the argument.
    let listed = app.mcp("tools/list", json!({}), AGENT).await.result();
    for tool in listed["tools"].as_array().unwrap() {
        assert!(
            !tool["inputSchema"]["required"]
                .as_array()
                .is_some_and(|r| r.contains(&json!("pin"))),
            "{tool}"
        );
    }
}
