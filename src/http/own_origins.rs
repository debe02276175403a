//! The service's own names and origins (SPEC §11 "Origins are known, not inferred"),
//! against DNS rebinding: a page on `evil.example` whose name the attacker points at
//! the service's address sends `Host: evil.example` and `Origin: http://evil.example`,
//! so a request agreeing with itself proves nothing. What the service calls its own
//! comes from configuration ([`PublicUrl`], `AGENT_PAGES_PUBLIC_URL`) or from names it
//! knows are its own: the loopback names and the address it is bound to.
//!
//! The rules ([`OwnOrigins`]):
//! - **`/mcp`**: the name the client asked for (a trusted proxy's forwarded host,
//!   else `Host`) must be a known name, else 403 `/problems/host-not-allowed`; a
//!   browser `Origin` must be an own origin or listed in
//!   `AGENT_PAGES_MCP_ALLOWED_ORIGINS`, else 403 `/problems/origin-not-allowed`.
//! - **Writes to `/api`** (every method but GET, HEAD, OPTIONS): a browser `Origin`
//!   must be an own origin, else 403 `/problems/origin-not-allowed`. Browsers send
//!   `Origin` on every such request (same-origin ones too); agents send none.
//! - Everything else answers whatever name reaches it (docs/api.md says why).
//!
//! Known names: `localhost`, `127.0.0.1`, `[::1]`, the public URL's host, and the bound
//! address when it is a specific IP; compared without the port (a rebinding page
//! changes the name; a browser never sends a loopback name or an IP for a page it
//! loaded from elsewhere). Own origins are exact (scheme, host, port): the public
//! URL's, and `http://` on the bound port with each loopback name (when bound to
//! loopback or all addresses) or with the bound IP.

use std::net::SocketAddr;

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::ORIGIN;
use actix_web::http::{uri::Authority, Method, StatusCode};
use actix_web::middleware::Next;
use actix_web::{web, HttpRequest, HttpResponse};

use super::origin::Origin;
use crate::client_ip::TrustedProxies;
use crate::http::allowed_origins::AllowedOrigins;
use crate::operations::problem::Problem;

/// The names every service knows are its own, as `Host` names them.
pub const LOOPBACK_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// `AGENT_PAGES_PUBLIC_URL`: where visitors reach the service, `http(s)://host[:port]`
/// (a trailing `/` allowed; no path, query, fragment or user info). Its origin is the
/// service's own, its host a known name, and it is the base of every absolute URL in
/// answers (forwarded host and scheme then change nothing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicUrl {
    origin: Site,
}

/// An `AGENT_PAGES_PUBLIC_URL` that cannot be used, and why.
#[derive(Debug, thiserror::Error)]
#[error("must be http://host[:port] or https://host[:port] with no path ({0})")]
pub struct InvalidPublicUrl(&'static str);

impl std::str::FromStr for PublicUrl {
    type Err = InvalidPublicUrl;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        let uri: actix_web::http::Uri = s.parse().map_err(|_| InvalidPublicUrl("not a URL"))?;
        if uri.query().is_some() || s.contains('#') {
            return Err(InvalidPublicUrl("a query or fragment"));
        }
        if !matches!(uri.path(), "" | "/") {
            return Err(InvalidPublicUrl(
                "a path: the service serves its routes at the root",
            ));
        }
        let origin = Site::parse(s.trim_end_matches('/'))
            .ok_or(InvalidPublicUrl("not an http or https origin"))?;
        Ok(Self { origin })
    }
}

impl PublicUrl {
    /// The scheme and host of absolute URLs (`host:port` only for a port other than
    /// the scheme's default).
    pub fn origin(&self) -> Origin {
        let Site { scheme, host, port } = &self.origin;
        let host = if Some(*port) == default_port(scheme) {
            host.clone()
        } else {
            format!("{host}:{port}")
        };
        Origin { scheme, host }
    }
}

/// A web origin as compared: scheme, lowercase host (IPv6 in brackets), port (the
/// scheme's default when the serialization leaves it out, RFC 6454).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Site {
    scheme: &'static str,
    host: String,
    port: u16,
}

impl Site {
    /// `scheme://host[:port]` exactly (an `Origin` header's form); `None` for `null`,
    /// another scheme, user info or anything after the authority.
    fn parse(origin: &str) -> Option<Self> {
        let (scheme, rest) = origin.trim().split_once("://")?;
        let scheme = match scheme.to_ascii_lowercase().as_str() {
            "http" => "http",
            "https" => "https",
            _ => return None,
        };
        if rest.is_empty() || rest.contains(['/', '?', '#', '@']) {
            return None;
        }
        let authority: Authority = rest.parse().ok()?;
        let port = match authority.port_u16() {
            Some(port) => port,
            None if authority.as_str().ends_with(':') => return None,
            None => default_port(scheme)?,
        };
        Some(Self {
            scheme,
            host: name_of(&authority)?,
            port,
        })
    }
}

fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    }
}

/// The host of `authority`, lowercase, when it is a plain DNS name or IP literal.
fn name_of(authority: &Authority) -> Option<String> {
    let host = authority.host();
    let plain = !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._:[]".contains(&b));
    plain.then(|| host.to_ascii_lowercase())
}

/// What the service knows of itself: its known names and own origins, and the
/// origins `/mcp` serves beside them. Built once the listener is bound.
#[derive(Debug, Clone)]
pub struct OwnOrigins {
    public: Option<PublicUrl>,
    names: Vec<String>,
    origins: Vec<Site>,
    mcp_allowed: AllowedOrigins,
}

impl OwnOrigins {
    /// The names and origins of a service reached at `public` (when configured) and
    /// bound to `bound`, serving `mcp_allowed` browser origins on `/mcp` too.
    pub fn new(public: Option<PublicUrl>, bound: SocketAddr, mcp_allowed: AllowedOrigins) -> Self {
        let mut names: Vec<String> = LOOPBACK_NAMES.iter().map(|n| (*n).to_owned()).collect();
        let mut origins = Vec::new();
        let ip = bound.ip();
        let site = |host: &str| Site {
            scheme: "http",
            host: host.to_owned(),
            port: bound.port(),
        };
        if ip.is_loopback() || ip.is_unspecified() {
            origins.extend(LOOPBACK_NAMES.iter().map(|n| site(n)));
        } else {
            let own = match ip {
                std::net::IpAddr::V4(v4) => v4.to_string(),
                std::net::IpAddr::V6(v6) => format!("[{v6}]"),
            };
            origins.push(site(&own));
            names.push(own);
        }
        if let Some(public) = &public {
            names.push(public.origin.host.clone());
            origins.push(public.origin.clone());
        }
        Self {
            public,
            names,
            origins,
            mcp_allowed,
        }
    }

    /// The configured public URL, when there is one.
    pub fn public(&self) -> Option<&PublicUrl> {
        self.public.as_ref()
    }

    /// Whether `authority` (`host` or `host:port`, as `Host` carries it) names this
    /// service.
    pub fn knows(&self, authority: &str) -> bool {
        authority
            .trim()
            .parse::<Authority>()
            .ok()
            .and_then(|a| name_of(&a))
            .is_some_and(|name| self.names.contains(&name))
    }

    /// Whether `origin` (an `Origin` header) is one of the service's own.
    pub fn is_own(&self, origin: &str) -> bool {
        Site::parse(origin).is_some_and(|site| self.origins.contains(&site))
    }

    /// The `/mcp` rules on `req`: its name known, its `Origin` (if any) own or listed.
    pub fn check_mcp(&self, req: &HttpRequest, trusted: &TrustedProxies) -> Result<(), Refusal> {
        let asked = super::origin::asked_authority(req, trusted);
        if !asked.as_deref().is_some_and(|a| self.knows(a)) {
            return Err(Refusal::HostNotAllowed);
        }
        match req.headers().get(ORIGIN).map(|v| v.to_str()) {
            None => Ok(()),
            Some(Ok(origin)) if self.is_own(origin) || self.mcp_allowed.allows(origin) => Ok(()),
            Some(_) => Err(Refusal::OriginNotAllowed),
        }
    }

    /// The write rule on `req`: a browser `Origin` on a write must be an own one.
    fn check_write(&self, req: &ServiceRequest) -> Result<(), Refusal> {
        if matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS) {
            return Ok(());
        }
        match req.headers().get(ORIGIN).map(|v| v.to_str()) {
            None => Ok(()),
            Some(Ok(origin)) if self.is_own(origin) => Ok(()),
            Some(_) => Err(Refusal::OriginNotAllowed),
        }
    }
}

/// Why a request was refused for the name or origin it came with (403 either way).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The name the client asked for is not one of the service's.
    #[error("this service does not answer /mcp under this name")]
    HostNotAllowed,
    /// A browser page of another origin sent the request.
    #[error("requests from this browser origin are refused")]
    OriginNotAllowed,
}

impl Refusal {
    /// The problem document (403).
    pub fn response(self) -> HttpResponse {
        let (kind, title, detail) = match self {
            Refusal::HostNotAllowed => (
                "/problems/host-not-allowed",
                "Host not allowed",
                "/mcp answers only the service's own names (localhost, 127.0.0.1, [::1], \
                 the bound address and AGENT_PAGES_PUBLIC_URL's host): set \
                 AGENT_PAGES_PUBLIC_URL to the URL clients use",
            ),
            Refusal::OriginNotAllowed => (
                "/problems/origin-not-allowed",
                "Origin not allowed",
                "requests from this browser origin are refused: only the service's own \
                 origin (AGENT_PAGES_PUBLIC_URL) may write, and /mcp serves the origins \
                 listed in AGENT_PAGES_MCP_ALLOWED_ORIGINS too",
            ),
        };
        super::problem::response(Problem::new(
            StatusCode::FORBIDDEN,
            kind,
            title,
            detail.into(),
        ))
    }
}

/// Middleware of the `/api` scope: refuses a write from another browser origin
/// before its body is read.
pub async fn refuse_foreign_writes(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    let refusal = req
        .app_data::<web::Data<OwnOrigins>>()
        .and_then(|own| own.check_write(&req).err());
    match refusal {
        Some(refusal) => Ok(req.into_response(refusal.response()).map_into_right_body()),
        None => next
            .call(req)
            .await
            .map(ServiceResponse::map_into_left_body),
    }
}

/// The origin of `req`'s answers: the public URL's when one is configured, else
/// the one the request names ([`super::origin::asked`]).
pub fn answer_origin(req: &HttpRequest, trusted: &TrustedProxies) -> Origin {
    match of(req).and_then(|own| own.public()) {
        Some(public) => public.origin(),
        None => super::origin::asked(req, trusted),
    }
}

/// The own origins of `req`'s application (`None` outside one built by
/// `startup`, e.g. a handler test).
pub fn of(req: &HttpRequest) -> Option<&OwnOrigins> {
    req.app_data::<web::Data<OwnOrigins>>().map(|d| d.get_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own(public: Option<&str>, bound: &str) -> OwnOrigins {
        OwnOrigins::new(
            public.map(|p| p.parse().unwrap()),
            bound.parse().unwrap(),
            AllowedOrigins::default(),
        )
    }

    #[test]
    fn a_public_url_is_an_origin_without_a_path() {
        let url: PublicUrl = "HTTPS://Pages.Example/".parse().unwrap();
        assert_eq!(url.origin().url("/p/a"), "https://pages.example/p/a");
        let url: PublicUrl = "http://pages.example:8080".parse().unwrap();
        assert_eq!(url.origin().url("/p/a"), "http://pages.example:8080/p/a");
        let url: PublicUrl = "https://pages.example:443".parse().unwrap();
        assert_eq!(url.origin().url(""), "https://pages.example");
        for bad in [
            "pages.example",
            "ftp://pages.example",
            "https://pages.example/pages",
            "https://pages.example/?a=1",
            "https://user@pages.example",
            "https://",
            "https://pages.example:",
            "https://pages.example#top",
        ] {
            assert!(bad.parse::<PublicUrl>().is_err(), "{bad}");
        }
    }

    #[test]
    fn names_are_known_by_host_and_origins_exactly() {
        let local = own(None, "127.0.0.1:8080");
        for host in ["localhost", "LOCALHOST:9", "127.0.0.1:8080", "[::1]:1"] {
            assert!(local.knows(host), "{host}");
        }
        for host in [
            "evil.example",
            "localhost.evil.example",
            "127.0.0.2",
            "",
            "a b",
        ] {
            assert!(!local.knows(host), "{host}");
        }
        assert!(local.is_own("http://localhost:8080"));
        assert!(local.is_own("http://[::1]:8080"));
        assert!(!local.is_own("http://localhost:8081"));
        assert!(!local.is_own("https://localhost:8080"));
        assert!(!local.is_own("null"));
        assert!(!local.is_own("http://localhost:8080/"));

        let lan = own(Some("https://pages.example"), "192.0.2.7:8080");
        assert!(lan.knows("192.0.2.7:8080") && lan.knows("pages.example"));
        assert!(lan.is_own("http://192.0.2.7:8080"));
        assert!(lan.is_own("https://pages.example") && lan.is_own("https://pages.example:443"));
        assert!(
            !lan.is_own("http://localhost:8080"),
            "loopback does not reach it"
        );
        assert!(!lan.is_own("http://pages.example"));
        let v6 = own(None, "[2001:db8::7]:8080");
        assert!(v6.knows("[2001:DB8::7]") && v6.is_own("http://[2001:db8::7]:8080"));
    }
}
