//! `agent-pages mcp --url URL`: an MCP server on stdio for agents that launch their
//! tools as local processes, relaying every tool list and call to the service's
//! `/mcp` over Streamable HTTP. Both sides are the SDK's (a client to `URL`, a
//! server on stdin/stdout), and each negotiates its own protocol version; the bridge
//! keeps no state of its own, so every call is an HTTP request from this machine and
//! every budget of the service applies to it.
//!
//! Tools, their schemas and their results (tool errors included) are passed on as
//! the service gives them. Every exchange with the service has a deadline: the
//! handshake [`HANDSHAKE_DEADLINE`] (the bridge then exits 1 naming the URL), each
//! call `--timeout-secs` ([`CALL_DEADLINE`] by default); a call past it, or one that
//! cannot reach the service, is a JSON-RPC internal error naming the URL, and the
//! bridge goes on serving. A URL without a path gets `/mcp`. Logs go to stderr
//! (stdout is the protocol).

use std::borrow::Cow;
use std::time::Duration;

use anyhow::Context as _;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ResultType, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ErrorData, RoleClient, RoleServer, ServerHandler, ServiceError, ServiceExt as _};

/// The environment variable whose value, when set, the bridge sends as
/// `X-Page-Pin` with every request to the service: the PIN of every tool called
/// without one, kept out of the agent's context (issue 30 §5).
pub const PIN_ENV: &str = "AGENT_PAGES_PIN";

/// How long connecting to the service and the MCP handshake may take, together.
pub const HANDSHAKE_DEADLINE: Duration = Duration::from_secs(5);

/// How long one relayed call may take unless `--timeout-secs` says otherwise: the
/// service's own bounds on a request (10 s for its body, 5 s waiting for a busy
/// SQLite writer, 3 s a PostgreSQL statement, a few argon2 hashes) plus a margin.
pub const CALL_DEADLINE: Duration = Duration::from_secs(30);

/// The stdio server: the service's identity and tools, relayed.
struct Bridge {
    remote: RunningService<RoleClient, ()>,
    url: String,
    info: ServerConfig,
    deadline: Duration,
}

impl Bridge {
    fn failed(&self, e: ServiceError) -> ErrorData {
        match e {
            ServiceError::McpError(error) => error,
            other => {
                tracing::warn!(url = %self.url, error = %other, "the service did not answer");
                ErrorData::internal_error(
                    format!(
                        "agent-pages at {} did not answer: {}",
                        self.url,
                        one_line(&other)
                    ),
                    None,
                )
            }
        }
    }

    /// `call` with the call deadline: past it, an internal error naming the URL.
    async fn relay<T>(
        &self,
        call: impl std::future::Future<Output = Result<T, ServiceError>>,
    ) -> Result<T, ErrorData> {
        match tokio::time::timeout(self.deadline, call).await {
            Ok(answer) => answer.map_err(|e| self.failed(e)),
            Err(_) => {
                tracing::warn!(url = %self.url, seconds = self.deadline.as_secs(), "the service did not answer in time");
                Err(ErrorData::internal_error(
                    format!(
                        "agent-pages at {} did not answer within {} s",
                        self.url,
                        self.deadline.as_secs()
                    ),
                    None,
                ))
            }
        }
    }
}

impl ServerHandler for Bridge {
    fn get_info(&self) -> ServerConfig {
        self.info.clone()
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(super::PROTOCOL_VERSIONS)
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // The result as this side's peer gets it: the SDK marks it complete where the
        // stdio peer's revision wants that (the service's side may have left it out).
        let mut result = self.relay(self.remote.list_tools(request)).await?;
        result.result_type = Some(ResultType::COMPLETE);
        Ok(result)
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        super::tools::TOOLS.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        // The arguments (a PIN among them) go to the service only, never to a log.
        let mut forwarded = CallToolRequestParams::new(request.name);
        forwarded.arguments = request.arguments;
        let mut result = self.relay(self.remote.call_tool(forwarded)).await?;
        result.result_type = Some(ResultType::COMPLETE);
        Ok(result.into())
    }
}

/// The MCP endpoint of `url`: itself, or with `/mcp` when its path is empty (the
/// service's base URL).
///
/// Errors: not an `http://` or `https://` URL with a host.
pub fn endpoint(url: &str) -> anyhow::Result<String> {
    let uri: http::Uri = url.trim().parse().with_context(|| {
        format!("{url} is not a URL: give the service's /mcp URL, e.g. https://pages.example/mcp")
    })?;
    let usable = matches!(uri.scheme_str(), Some("http" | "https")) && uri.authority().is_some();
    if !usable {
        anyhow::bail!(
            "{url} is not an http:// or https:// URL: give the service's /mcp URL, e.g. https://pages.example/mcp"
        );
    }
    if !matches!(uri.path(), "" | "/") {
        return Ok(url.trim().to_owned());
    }
    let mut parts = uri.into_parts();
    let query = parts
        .path_and_query
        .as_ref()
        .and_then(|p| p.query())
        .map(|q| format!("?{q}"))
        .unwrap_or_default();
    parts.path_and_query = Some(format!("/mcp{query}").parse().context("appending /mcp")?);
    Ok(http::Uri::from_parts(parts)
        .context("appending /mcp")?
        .to_string())
}

/// `X-Page-Pin` from [`PIN_ENV`] (marked sensitive), or no header when it is unset
/// or empty.
///
/// Errors: the value is not UTF-8 or holds a char a header cannot carry.
fn pin_header() -> anyhow::Result<reqwest13::header::HeaderMap> {
    let mut headers = reqwest13::header::HeaderMap::new();
    let pin = match std::env::var(PIN_ENV) {
        Ok(pin) if !pin.is_empty() => pin,
        Err(std::env::VarError::NotUnicode(_)) => {
            anyhow::bail!("{PIN_ENV} is not UTF-8 text")
        }
        _ => return Ok(headers),
    };
    let mut value = reqwest13::header::HeaderValue::from_str(&pin)
        .map_err(|_| anyhow::anyhow!("{PIN_ENV} holds a character an HTTP header cannot carry"))?;
    value.set_sensitive(true);
    headers.insert("x-page-pin", value);
    Ok(headers)
}

/// The first line of an error's text, at most 300 characters: the SDK's errors can
/// carry a whole HTML page.
fn one_line(e: &dyn std::fmt::Display) -> String {
    let text = e.to_string();
    let line = text.lines().next().unwrap_or("");
    match line.char_indices().nth(300) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}

/// Connects to `url` (the service's `/mcp`, or its base URL), then serves stdio
/// until the agent closes it, giving each call `deadline`.
///
/// Errors: the URL is not usable; the service cannot be reached, does not speak MCP
/// at the URL or does not finish the handshake within [`HANDSHAKE_DEADLINE`] (at
/// start); or stdio fails.
pub fn run(url: &str, deadline: Duration) -> anyhow::Result<()> {
    let url = endpoint(url)?;
    // rustls for https:// URLs, with the crypto the rest of the binary uses.
    let _ = rustls::crypto::ring::default_provider().install_default();
    // The SDK's own client has no deadlines: this one gives up on connecting with the
    // handshake's and on any request a little after the call deadline, so a call the
    // bridge gave up on does not keep its connection forever. No redirects: a
    // redirected POST could lose its body or carry it to another host.
    let client = reqwest13::Client::builder()
        .default_headers(pin_header()?)
        .connect_timeout(HANDSHAKE_DEADLINE)
        .timeout(deadline + HANDSHAKE_DEADLINE)
        .pool_max_idle_per_host(0)
        .redirect(reqwest13::redirect::Policy::none())
        .build()
        .context("making the HTTP client")?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    runtime.block_on(async {
        let transport = StreamableHttpClientTransport::with_client(
            client,
            StreamableHttpClientTransportConfig::with_uri(url.clone()),
        );
        let remote = match tokio::time::timeout(HANDSHAKE_DEADLINE, ().serve(transport)).await {
            Ok(Ok(remote)) => remote,
            Ok(Err(e)) => anyhow::bail!(
                "connecting to the MCP endpoint {url}: {} (is it the service's /mcp URL?)",
                one_line(&e)
            ),
            Err(_) => anyhow::bail!(
                "the service at {url} did not finish the MCP handshake within {} s",
                HANDSHAKE_DEADLINE.as_secs()
            ),
        };
        let info = remote
            .peer_info()
            .map(|info| {
                let mut config = ServerConfig::new(info.capabilities.clone());
                if let Some(identity) = info.server_info.clone() {
                    config = config.with_server_info(identity);
                }
                config.instructions = info.instructions.clone();
                config
            })
            .unwrap_or_default();
        tracing::info!(%url, timeout_s = deadline.as_secs(), "relaying stdio to the MCP endpoint");
        let bridge = Bridge {
            remote,
            url,
            info,
            deadline,
        };
        let server = bridge
            .serve(rmcp::transport::stdio())
            .await
            .context("serving MCP on stdio")?;
        server.waiting().await.context("serving MCP on stdio")?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_base_url_gets_the_mcp_path() {
        for (given, used) in [
            ("http://127.0.0.1:8080", "http://127.0.0.1:8080/mcp"),
            ("https://pages.example/", "https://pages.example/mcp"),
            ("https://pages.example/mcp", "https://pages.example/mcp"),
            (
                "https://pages.example/other/mcp",
                "https://pages.example/other/mcp",
            ),
        ] {
            assert_eq!(endpoint(given).unwrap(), used, "{given}");
        }
        for bad in ["pages.example/mcp", "ftp://pages.example/mcp", "/mcp", ""] {
            let e = endpoint(bad).unwrap_err().to_string();
            assert!(e.contains("/mcp URL"), "{bad}: {e}");
        }
    }
}
