//! Who asks, as every page operation sees them, whichever face the request came
//! through: the client whose budgets count and the public origin its page URLs
//! are on. The HTTP face reads both from a request ([`crate::http::caller`]).

use crate::client_ip::ClientIp;

/// Scheme and host an answer's absolute URLs use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// `http` or `https`.
    pub scheme: &'static str,
    /// `host` or `host:port`, checked to be a plain URL authority (no user info,
    /// nothing that could end the URL early).
    pub host: String,
}

impl Origin {
    /// `scheme://host` followed by `path` (which starts with `/`).
    pub fn url(&self, path: &str) -> String {
        format!("{}://{}{path}", self.scheme, self.host)
    }
}

/// Who asks, as every page operation sees them: the client whose budgets count
/// (SPEC §5 gate 2: the socket peer, or the client a trusted proxy names in
/// `X-Forwarded-For`) and the public origin its page URLs are on.
#[derive(Debug, Clone)]
pub struct Caller {
    /// Key material of the publish and PIN-failure budgets.
    pub client: ClientIp,
    /// The host the client asked, or the one a trusted proxy forwarded
    /// ([`crate::http::origin`]).
    pub origin: Origin,
}

impl Caller {
    /// Where people read the page `slug`: an absolute URL on the caller's origin.
    pub fn page_url(&self, slug: &str) -> String {
        self.origin.url(&format!("/p/{slug}"))
    }
}
