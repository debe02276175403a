//! The JSON-RPC envelope of a `/mcp` POST, checked before the SDK sees it, so that
//! every malformed one is refused as JSON-RPC 2.0 and the MCP 2025-11-25 Streamable
//! HTTP transport name it (SPEC §11 "One set of field rules"):
//!
//! | what | code | HTTP |
//! |---|---|---|
//! | not JSON (syntax, truncated, not UTF-8) | -32700 parse error | 400 |
//! | not one JSON-RPC 2.0 message: a batch array, a scalar, `jsonrpc` other than `"2.0"`, no `method` and no `result`/`error`, a `method` that is not a string, an `id` that is not a string or integer, a member of the envelope given twice | -32600 invalid request | 400 |
//! | a request whose `params` do not fit its method: not an object, `tools/call` without a string `name` or with `arguments` that are not an object, any key given twice inside `params` | -32602 invalid params | 200 (the answer to a request) |
//! | `MCP-Protocol-Version` given twice, or one line with several values | -32600 | 400 |
//!
//! What is not a message cannot be answered in-band, so it is 400 with an error
//! whose `id` is the request's when one could be read; a request that is a message
//! gets its error as its answer. The SDK's own refusals (405, 406, 415, an unknown
//! version) come as plain text; [`as_json_rpc`] rewrites them the same way.
//!
//! Repeated keys: RFC 8259 leaves their meaning open, serde keeps the last, and the
//! HTTP API refuses them (`duplicate field`), so `/mcp` refuses them too, before the
//! tools parse their arguments (they receive an already deduplicated map). Error
//! messages never quote a value (a PIN may be one).

use std::fmt;

use actix_web::http::header::{self, HeaderMap};
use actix_web::http::StatusCode;
use actix_web::HttpResponse;
use rmcp::model::{
    CallToolRequestMethod, ClientJsonRpcMessage, ClientRequest, ConstString, DiscoverRequestMethod,
    ErrorCode, InitializeResultMethod, JsonRpcMessage, ListToolsRequestMethod, PingRequestMethod,
};
use serde_json::{json, Value};

use super::repeated_keys::first_repeated_key;

/// The header whose repetition is refused.
const VERSION_HEADER: &str = "mcp-protocol-version";

/// A refused envelope: the JSON-RPC error to answer and its HTTP status.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// 400 for what is not one message, 200 for a request's in-band error.
    pub status: StatusCode,
    /// The JSON-RPC error code (-32700, -32600 or -32602).
    pub code: ErrorCode,
    /// The request's `id` when one could be read, else JSON `null`.
    pub id: Value,
    /// What is wrong, naming the member; never a value.
    pub message: String,
}

impl Refusal {
    fn new(code: ErrorCode, id: Option<&Value>, message: impl Into<String>) -> Self {
        let status = if code == ErrorCode::INVALID_PARAMS && id.is_some() {
            StatusCode::OK
        } else {
            StatusCode::BAD_REQUEST
        };
        Self {
            status,
            code,
            id: id.cloned().unwrap_or(Value::Null),
            message: message.into(),
        }
    }

    /// The answer: `application/json`, one JSON-RPC error response.
    pub fn response(&self) -> HttpResponse {
        let body = json!({
            "jsonrpc": "2.0",
            "id": self.id,
            "error": {"code": self.code.0, "message": self.message},
        });
        HttpResponse::build(self.status)
            .content_type("application/json")
            .body(body.to_string())
    }
}

/// Checks the headers and `body` of a POST whose `Content-Type` is JSON.
///
/// Errors: the [`Refusal`] of the first rule broken (module table), the version
/// header first, then the body as JSON, as a message, then its `params`.
pub fn check(headers: &HeaderMap, body: &[u8]) -> Result<(), Refusal> {
    let versions: Vec<_> = headers.get_all(VERSION_HEADER).collect();
    if versions.len() > 1 || versions.iter().any(|v| v.as_bytes().contains(&b',')) {
        return Err(Refusal::new(
            ErrorCode::INVALID_REQUEST,
            None,
            "Invalid request: send one MCP-Protocol-Version header with one version",
        ));
    }
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        Refusal::new(
            ErrorCode::PARSE_ERROR,
            None,
            format!(
                "Parse error: the body is not JSON (line {}, column {})",
                e.line(),
                e.column()
            ),
        )
    })?;
    let object = match &value {
        Value::Object(object) => object,
        Value::Array(_) => {
            return Err(invalid_request(
                None,
                "a batch (JSON array): send one message a POST (MCP 2025-06-18 and later)",
            ))
        }
        _ => {
            return Err(invalid_request(
                None,
                "the body must be a JSON-RPC message object",
            ))
        }
    };
    let id = object.get("id").filter(|id| is_request_id(id));
    if let Some(repeated) = first_repeated_key(body) {
        return Err(match (repeated.in_params(), id) {
            (true, Some(id)) => invalid_params(id, format!("{repeated} is given twice")),
            _ => invalid_request(
                id.filter(|_| repeated.key != "id"),
                &format!("{repeated} is given twice"),
            ),
        });
    }
    if object.get("jsonrpc") != Some(&json!("2.0")) {
        return Err(invalid_request(id, "`jsonrpc` must be \"2.0\""));
    }
    let Some(method) = object.get("method") else {
        let answers = object.contains_key("result") != object.contains_key("error");
        let addressed = id.is_some() || object.get("id") == Some(&Value::Null);
        return if answers && addressed {
            Ok(())
        } else {
            Err(invalid_request(
                id,
                "a message needs a `method` (request, notification) or one of `result` and `error` with an `id` (response)",
            ))
        };
    };
    let Some(method) = method.as_str() else {
        return Err(invalid_request(id, "`method` must be a string"));
    };
    let Some(id) = id else {
        if object.contains_key("id") {
            return Err(invalid_request(None, "`id` must be a string or an integer"));
        }
        return check_notification(object);
    };
    check_params(id, method, object.get("params"))?;
    // What the SDK will read: a request of a method it serves that falls through to
    // its catch-all is one whose params did not fit.
    match serde_json::from_slice::<ClientJsonRpcMessage>(body) {
        Ok(JsonRpcMessage::Request(request)) => match request.request {
            ClientRequest::CustomRequest(custom) if served(&custom.method) => {
                Err(invalid_params(id, format!("params do not fit `{method}`")))
            }
            _ => Ok(()),
        },
        Ok(_) => Ok(()),
        Err(_) => Err(invalid_request(Some(id), "not a JSON-RPC message of MCP")),
    }
}

/// A notification cannot be answered: `params` that are not an object refuse it.
fn check_notification(object: &serde_json::Map<String, Value>) -> Result<(), Refusal> {
    match object.get("params") {
        None | Some(Value::Null | Value::Object(_)) => Ok(()),
        Some(_) => Err(invalid_request(None, "`params` must be an object")),
    }
}

fn check_params(id: &Value, method: &str, params: Option<&Value>) -> Result<(), Refusal> {
    let params = match params {
        None | Some(Value::Null) => None,
        Some(Value::Object(params)) => Some(params),
        Some(_) => return Err(invalid_params(id, "`params` must be an object")),
    };
    if method == CallToolRequestMethod::VALUE {
        let name = params.and_then(|p| p.get("name"));
        if !name.is_some_and(Value::is_string) {
            return Err(invalid_params(
                id,
                "`params.name` must be the tool's name, a string",
            ));
        }
        match params.and_then(|p| p.get("arguments")) {
            None | Some(Value::Null | Value::Object(_)) => {}
            Some(_) => {
                return Err(invalid_params(
                    id,
                    "`params.arguments` must be an object of the tool's arguments",
                ))
            }
        }
    }
    Ok(())
}

/// The methods `/mcp` serves.
fn served(method: &str) -> bool {
    [
        InitializeResultMethod::VALUE,
        PingRequestMethod::VALUE,
        DiscoverRequestMethod::VALUE,
        ListToolsRequestMethod::VALUE,
        CallToolRequestMethod::VALUE,
    ]
    .contains(&method)
}

/// JSON-RPC 2.0 allows a string, a number or null; MCP a string or an integer.
fn is_request_id(id: &Value) -> bool {
    id.is_string() || id.as_i64().is_some()
}

fn invalid_request(id: Option<&Value>, what: &str) -> Refusal {
    Refusal::new(
        ErrorCode::INVALID_REQUEST,
        id,
        format!("Invalid request: {what}"),
    )
}

fn invalid_params(id: &Value, what: impl fmt::Display) -> Refusal {
    Refusal::new(
        ErrorCode::INVALID_PARAMS,
        Some(id),
        format!("Invalid params: {what}"),
    )
}

/// An error answer of the SDK in plain text, as a JSON-RPC error of the same status
/// (-32600, no `id`); any other answer is `None` (kept as it is).
pub fn as_json_rpc(status: StatusCode, content_type: Option<&str>, body: &[u8]) -> Option<Refusal> {
    if !status.is_client_error() || content_type.is_some_and(is_json) {
        return None;
    }
    let text = String::from_utf8_lossy(body);
    let message = match text.trim() {
        "" => status.canonical_reason().unwrap_or("refused").to_owned(),
        text => text.to_owned(),
    };
    Some(Refusal {
        status,
        code: ErrorCode::INVALID_REQUEST,
        id: Value::Null,
        message,
    })
}

/// Whether `headers` declare a JSON body (what [`check`] applies to).
pub fn declares_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(is_json)
}

/// Whether the `Content-Type` value `content_type` is JSON: its media type (before
/// any parameter), in any case, is `application/json`.
fn is_json(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or("").trim();
    essence.eq_ignore_ascii_case("application/json")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(body: &str) -> (i32, u16, Value) {
        let r = check(&HeaderMap::new(), body.as_bytes()).unwrap_err();
        (r.code.0, r.status.as_u16(), r.id)
    }

    #[test]
    fn each_malformed_envelope_has_its_code() {
        assert_eq!(refused("{").0, -32700);
        assert_eq!(refused("[]").0, -32600);
        assert_eq!(refused("null").0, -32600);
        assert_eq!(
            refused(r#"{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}"#),
            (-32600, 400, Value::Null)
        );
        assert_eq!(
            refused(r#"{"jsonrpc": "2.0", "id": 1, "id": 2, "method": "ping"}"#),
            (-32600, 400, Value::Null)
        );
        assert_eq!(
            refused(r#"{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": []}"#),
            (-32602, 200, json!(3))
        );
        assert_eq!(
            refused(r#"{"jsonrpc": "2.0", "method": "notifications/x", "params": 1}"#),
            (-32600, 400, Value::Null)
        );
        // A served method whose params the SDK cannot read.
        assert_eq!(
            refused(r#"{"jsonrpc": "2.0", "id": 4, "method": "initialize", "params": {}}"#),
            (-32602, 200, json!(4))
        );
    }

    #[test]
    fn well_formed_messages_pass() {
        for body in [
            r#"{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}"#,
            r#"{"jsonrpc": "2.0", "id": "a", "method": "tools/call", "params": {"name": "read_page", "arguments": {"slug": "vim"}}}"#,
            r#"{"jsonrpc": "2.0", "method": "notifications/initialized"}"#,
            r#"{"jsonrpc": "2.0", "id": 5, "result": {}}"#,
            r#"{"jsonrpc": "2.0", "id": null, "error": {"code": -1, "message": "m"}}"#,
            r#"{"jsonrpc": "2.0", "id": 6, "method": "prompts/list", "params": {"cursor": 5}}"#,
        ] {
            assert_eq!(check(&HeaderMap::new(), body.as_bytes()), Ok(()), "{body}");
        }
    }

    #[test]
    fn the_sdks_plain_text_refusals_become_json_rpc_errors() {
        let r = as_json_rpc(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Some("text/plain"),
            b"no",
        )
        .unwrap();
        assert_eq!(
            (r.code, r.message.as_str()),
            (ErrorCode::INVALID_REQUEST, "no")
        );
        assert!(as_json_rpc(StatusCode::OK, None, b"{}").is_none());
        assert!(as_json_rpc(StatusCode::BAD_REQUEST, Some("application/json"), b"{}").is_none());
    }
}
