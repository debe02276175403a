//! What every HTTP route shares, whichever face it serves (the routes of
//! [`crate::routes`], MCP's `/mcp`): who asks ([`caller`]: the client IP of gate 2
//! by the trusted-proxy rules, and the public [`origin`]), the service's own names
//! and origins ([`own_origins`]: the rules against DNS rebinding), reading a JSON body
//! ([`body`]), problem documents and the API's errors as responses ([`problem`]),
//! and the `RateLimit` headers ([`rate_limit_headers`]). Below both faces, above the
//! operations they call.

pub mod allowed_origins;
pub mod body;
pub mod origin;
pub mod own_origins;
pub mod page_request;
pub mod preconditions;
pub mod problem;
pub mod rate_limit_headers;

use std::net::{IpAddr, Ipv4Addr};

use actix_web::HttpRequest;

use crate::client_ip::{self, ClientIp, TrustedProxies};
use crate::operations::Caller;

/// The caller of `req`, believing forwarded headers only from `trusted` peers.
pub fn caller(req: &HttpRequest, trusted: &TrustedProxies) -> Caller {
    Caller {
        client: client_ip(req, trusted),
        origin: own_origins::answer_origin(req, trusted),
    }
}

/// Gate 2 (SPEC §5) on this request: the socket peer, or the client a trusted proxy
/// names in `X-Forwarded-For`. Search budgets and PIN failures both count per this.
pub fn client_ip(req: &HttpRequest, trusted: &TrustedProxies) -> ClientIp {
    let peer = peer(req);
    // A header that is not visible ASCII cannot hold an address: keep it in the walk
    // as an unparseable entry rather than dropping it.
    let forwarded: Vec<&str> = req
        .headers()
        .get_all("x-forwarded-for")
        .map(|v| v.to_str().unwrap_or("unparseable"))
        .collect();
    client_ip::resolve(peer, &forwarded, trusted)
}

/// The socket peer of `req` (0.0.0.0 when unknown, which no sane
/// `TRUSTED_PROXY_CIDRS` holds).
fn peer(req: &HttpRequest) -> IpAddr {
    req.peer_addr()
        .map(|a| a.ip())
        .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED))
}

/// Whether the socket peer of `req` is one of our reverse proxies
/// (`TRUSTED_PROXY_CIDRS`): the one rule for believing any forwarded header, the
/// client address of gate 2 ([`client_ip`]) and the public host and scheme
/// ([`own_origins::answer_origin`]) alike.
pub fn peer_is_trusted(req: &HttpRequest, trusted: &TrustedProxies) -> bool {
    trusted.contains(peer(req))
}
