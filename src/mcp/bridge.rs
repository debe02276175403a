//! `agent-pages mcp --url URL`: an MCP server on stdio for agents that launch their
//! tools as local processes, relaying every tool list and call to the service's
//! `/mcp` over Streamable HTTP. Both sides are the SDK's (a client to `URL`, a
//! server on stdin/stdout), and each negotiates its own protocol version; the bridge
//! keeps no state of its own, so every call is an HTTP request from this machine and
//! every budget of the service applies to it.
//!
//! Tools, their schemas and their results (tool errors included) are passed on as
//! the service gives them; a failure to reach the service is a JSON-RPC internal
//! error naming the URL. Logs go to stderr (stdout is the protocol).

use std::borrow::Cow;

use anyhow::Context as _;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ResultType, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ErrorData, RoleClient, RoleServer, ServerHandler, ServiceError, ServiceExt as _};

/// The stdio server: the service's identity and tools, relayed.
struct Bridge {
    remote: RunningService<RoleClient, ()>,
    url: String,
    info: ServerConfig,
}

impl Bridge {
    fn failed(&self, e: ServiceError) -> ErrorData {
        match e {
            ServiceError::McpError(error) => error,
            other => {
                tracing::warn!(url = %self.url, error = %other, "the service did not answer");
                ErrorData::internal_error(
                    format!("agent-pages at {} did not answer: {other}", self.url),
                    None,
                )
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
        let mut result = self
            .remote
            .list_tools(request)
            .await
            .map_err(|e| self.failed(e))?;
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
        let mut result = self
            .remote
            .call_tool(forwarded)
            .await
            .map_err(|e| self.failed(e))?;
        result.result_type = Some(ResultType::COMPLETE);
        Ok(result.into())
    }
}

/// Connects to `url` (the service's `/mcp`), then serves stdio until the agent
/// closes it.
///
/// Errors: the service cannot be reached or does not speak MCP at `url` (at start),
/// or stdio fails.
pub fn run(url: &str) -> anyhow::Result<()> {
    // rustls for https:// URLs, with the crypto the rest of the binary uses.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    runtime.block_on(async {
        let remote = ()
            .serve(StreamableHttpClientTransport::from_uri(url))
            .await
            .with_context(|| format!("connecting to the MCP endpoint {url}"))?;
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
        tracing::info!(%url, "relaying stdio to the MCP endpoint");
        let bridge = Bridge {
            remote,
            url: url.to_owned(),
            info,
        };
        let server = bridge
            .serve(rmcp::transport::stdio())
            .await
            .context("serving MCP on stdio")?;
        server.waiting().await.context("serving MCP on stdio")?;
        Ok(())
    })
}
