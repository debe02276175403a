//! The tool annotations (MCP 2025-11-25 "Tool annotations"): hints a host shows or
//! acts on (confirming a destructive call, warning of untrusted content), so they
//! must tell the truth. This is their one place: a tool's hints change here.
//!
//! - The read tools (`search_pages`, `read_page`, `list_pages`, `list_versions`,
//!   `read_version`) change no page and answer text anonymous third parties wrote:
//!   `readOnlyHint` and `openWorldHint`. (A history read given a wrong PIN for a gone
//!   page counts a failed PIN check, as `search_pages` spends a search: budgets and
//!   counters are not the pages a host is warned about.)
//! - `publish_page` adds a page and changes no other: not destructive, not
//!   idempotent (a second call publishes a second page).
//! - `update_page` and `restore_page` make a new version and keep the one before it
//!   in the history, whence `restore_page` brings it back (issue 32 §5): not
//!   destructive. Not idempotent: a second call makes another version (and may prune
//!   the oldest kept one).
//! - `archive_page` and `claim_page` take a page out of the list, search and (claim)
//!   its URL, which no tool undoes: `destructiveHint`. Archive and claim again change
//!   nothing: idempotent.
//! - `rotate_pin` is `destructiveHint`: it adds nothing, it replaces the PIN hash,
//!   and no history keeps the old one. Whoever held the old PIN (the page's owner,
//!   when an agent was talked into rotating it to a PIN a third party chose) is
//!   locked out of the page for good, and only the holder of the new PIN can undo
//!   that. That is the call a host should confirm. Not idempotent: a repeat with the
//!   same arguments is refused as a wrong PIN, and counted.

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
        "search_pages" | "read_page" | "list_pages" | "list_versions" | "read_version" => read(),
        "publish_page" | "update_page" | "restore_page" => write(false, false),
        "archive_page" | "claim_page" => write(true, true),
        "rotate_pin" => write(true, false),
        _ => write(true, false).open_world(true),
    }
}
