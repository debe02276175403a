//! What a `/mcp` request says about its calls beyond its JSON-RPC message (issue 30
//! §5), read by the route ([`super::transport`]) and carried on the request's
//! extensions to the handler ([`super::PagesMcp`]):
//!
//! - **The read-only face**: `POST /mcp/readonly`, or `/mcp` with
//!   `X-MCP-Readonly: true`, lists and serves only [`READ_TOOLS`]; a call of any
//!   other tool is answered as a call of a tool that does not exist. Most visiting
//!   agents only read, and then no PIN-bearing tool is in their context: so the
//!   history reads (`list_versions`, `read_version`), which take an optional PIN
//!   for a gone page and count a wrong one against it, are not on this face.
//! - **The PIN header**: `X-Page-Pin` on the request gives the PIN of every tool
//!   that takes one and was called without it (a `pin` argument, when given, is the
//!   one used), so a host can keep the PIN out of the model's context. It is never
//!   logged or echoed.

use actix_web::HttpRequest;
use rmcp::model::JsonObject;
use serde_json::Value;

/// The path of the read-only face.
pub const READ_ONLY_PATH: &str = "/mcp/readonly";

/// The header that asks for the read-only face on `/mcp` (value `true`, in any
/// case).
pub const READ_ONLY_HEADER: &str = "x-mcp-readonly";

/// The header a PIN may come in, as on the HTTP API.
pub const PIN_HEADER: &str = "x-page-pin";

/// The tools of the read-only face.
pub const READ_TOOLS: &[&str] = &["search_pages", "read_page", "list_pages"];

/// Marks a request made to the read-only face.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadOnly;

/// The PIN of the request's `X-Page-Pin` header (its UTF-8 text).
#[derive(Clone)]
pub struct HeaderPin(String);

impl std::fmt::Debug for HeaderPin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HeaderPin(..)")
    }
}

/// Whether `req` asks for the read-only face.
pub fn read_only(req: &HttpRequest) -> bool {
    req.path() == READ_ONLY_PATH
        || req
            .headers()
            .get(READ_ONLY_HEADER)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// The PIN `req` carries in `X-Page-Pin`; a value that is not UTF-8 is none (a
/// tool then answers as without a PIN).
pub fn header_pin(req: &HttpRequest) -> Option<HeaderPin> {
    req.headers()
        .get(PIN_HEADER)
        .and_then(|v| std::str::from_utf8(v.as_bytes()).ok())
        .map(|pin| HeaderPin(pin.to_owned()))
}

/// Whether the tool `name` is served on the face `read_only` says.
pub fn serves(read_only: Option<&ReadOnly>, name: &str) -> bool {
    read_only.is_none() || READ_TOOLS.contains(&name)
}

/// `arguments` with the header PIN as `pin` when the tool takes one (its input
/// schema has a `pin` property) and none (or null) was given.
pub fn with_pin(
    arguments: Option<JsonObject>,
    takes_pin: bool,
    pin: Option<&HeaderPin>,
) -> Option<JsonObject> {
    let (true, Some(HeaderPin(pin))) = (takes_pin, pin) else {
        return arguments;
    };
    let mut arguments = arguments.unwrap_or_default();
    if arguments.get("pin").is_none_or(Value::is_null) {
        arguments.insert("pin".into(), Value::String(pin.clone()));
    }
    Some(arguments)
}
