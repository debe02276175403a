//! The tool annotations (MCP 2025-11-25 "Tool annotations"): hints a host shows or
//! acts on (confirming a destructive call, warning of untrusted content), so they
//! must tell the truth. This is their one place: a tool's hints change here.
//!
//! - The read tools (`search_pages`, `read_page`, `list_pages`) change nothing and
//!   answer text anonymous third parties wrote: `readOnlyHint` and `openWorldHint`.
//! - `publish_page` adds a page and changes no other: not destructive, not
//!   idempotent (a second call publishes a second page).
//! - `update_page` replaces a title and body no one can get back yet, `archive_page`
//!   and `claim_page` take a page out of the list, search and (claim) its URL:
//!   `destructiveHint` (issue 30 §2). Archive and claim again change nothing:
//!   idempotent. When page history makes an update undoable, `update_page` stops
//!   being destructive here.

use rmcp::model::ToolAnnotations;

/// The hints of the tool `name` (every tool of [`super::tools::TOOLS`]); a name
/// this module does not know gets the most cautious ones (writes, destructive,
/// open world).
pub fn for_tool(name: &str) -> ToolAnnotations {
    let read = || {
        ToolAnnotations::new()
            .read_only(true)
            .destructive(false)
            .open_world(true)
    };
    let write = |destructive: bool, idempotent: bool| {
        ToolAnnotations::new()
            .read_only(false)
            .destructive(destructive)
            .idempotent(idempotent)
            .open_world(false)
    };
    match name {
        "search_pages" | "read_page" | "list_pages" => read(),
        "publish_page" => write(false, false),
        "update_page" => write(true, false),
        "archive_page" | "claim_page" => write(true, true),
        _ => write(true, false).open_world(true),
    }
}
