//! The handshake, discovery and the tool list: every revision the SDKs negotiate.

use serde_json::{json, Value};

use crate::helpers::{spawn_app, AGENT};

#[actix_web::test]
async fn initialize_agrees_on_each_handshake_revision_statelessly() {
    let app = spawn_app().await;
    for version in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        let r = app.initialize(version).await;
        assert_eq!(
            r.headers.get("content-type").unwrap(),
            "application/json",
            "one JSON answer per POST"
        );
        assert!(
            r.headers.get("mcp-session-id").is_none(),
            "stateless: no session"
        );
        let result = r.result();
        assert_eq!(result["protocolVersion"], version, "{result}");
        assert_eq!(result["serverInfo"]["name"], "agent-pages");
        assert!(result["capabilities"]["tools"].is_object(), "{result}");
        assert!(result["instructions"]
            .as_str()
            .unwrap()
            .contains("publish_page"));
    }
    // A revision the server does not know: it answers with its newest handshake one.
    let result = app.initialize("2024-01-01").await.result();
    assert_eq!(result["protocolVersion"], "2025-11-25", "{result}");
}

#[actix_web::test]
async fn discover_serves_the_2026_revision_and_its_requests_stand_alone() {
    let app = spawn_app().await;
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let discover = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
                          "params": {"_meta": meta}});
    let result = app
        .mcp_post(
            &discover,
            AGENT,
            Some("2026-07-28"),
            &[("Mcp-Method", "server/discover")],
        )
        .await
        .result();
    let versions: Vec<&str> = result["supportedVersions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(
        versions,
        [
            "2024-11-05",
            "2025-03-26",
            "2025-06-18",
            "2025-11-25",
            "2026-07-28"
        ]
    );
    // Without any handshake, one tool call carrying its own metadata.
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "read_page", "arguments": {"slug": "vim"}, "_meta": meta}});
    let result = app
        .mcp_post(
            &call,
            AGENT,
            Some("2026-07-28"),
            &[("Mcp-Method", "tools/call"), ("Mcp-Name", "read_page")],
        )
        .await
        .result();
    assert_eq!(
        result["structuredContent"]["title"],
        "Vi IMproved - enhanced vi editor"
    );
    assert_eq!(result["resultType"], "complete", "{result}");
}

#[actix_web::test]
async fn tools_list_has_the_eleven_tools_with_the_api_schemas() {
    let app = spawn_app().await;
    let result = app.mcp("tools/list", json!({}), AGENT).await.result();
    let tools = result["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "search_pages",
            "read_page",
            "list_pages",
            "publish_page",
            "update_page",
            "archive_page",
            "claim_page",
            "list_versions",
            "read_version",
            "restore_page",
            "rotate_pin"
        ]
    );
    let tool = |name: &str| tools.iter().find(|t| t["name"] == name).unwrap().clone();
    // The OpenAPI document and the tool schemas state the same rules.
    let doc: Value = app.get("/api/openapi.json").await.json().await.unwrap();
    let create = &doc["components"]["schemas"]["CreatePage"]["properties"];
    let publish = tool("publish_page")["inputSchema"].clone();
    for field in ["title", "body", "slug", "pin"] {
        assert_eq!(publish["properties"][field], create[field], "{field}");
    }
    assert_eq!(publish["required"], json!(["title"]));
    assert_eq!(publish["additionalProperties"], false);
    let update = tool("update_page")["inputSchema"].clone();
    assert_eq!(
        update["properties"]["pin"]["pattern"],
        create["pin"]["pattern"]
    );
    // The PIN may come in the X-Page-Pin header instead (issue 30 §5).
    assert_eq!(update["required"], json!(["slug"]));
    let slug_param =
        doc["paths"]["/api/pages/{slug}"]["get"]["parameters"][0]["schema"]["pattern"].clone();
    assert_eq!(
        tool("read_page")["inputSchema"]["properties"]["slug"]["pattern"],
        slug_param
    );
    assert_eq!(
        tool("search_pages")["inputSchema"]["properties"]["query"]["maxLength"],
        agent_pages::search::query::QUERY_MAX
    );
    assert_eq!(tool("read_page")["annotations"]["readOnlyHint"], true);
    assert_eq!(tool("publish_page")["annotations"]["readOnlyHint"], false);
}

#[actix_web::test]
async fn an_unknown_tool_is_a_protocol_error() {
    let app = spawn_app().await;
    let r = app
        .mcp(
            "tools/call",
            json!({"name": "drop_pages", "arguments": {}}),
            AGENT,
        )
        .await;
    let message = r.json();
    assert_eq!(message["error"]["code"], -32602, "{message}");
}
