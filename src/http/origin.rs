//! The origin (scheme and host) a request names, for absolute URLs in answers.
//!
//! With `AGENT_PAGES_PUBLIC_URL` set ([`super::own_origins::PublicUrl`]) that origin
//! is not used: [`super::own_origins::answer_origin`] answers the public one, whatever
//! the request or a proxy names. Without it:
//! `X-Forwarded-Host`, `X-Forwarded-Proto` and `Forwarded` (RFC 7239 `host=`,
//! `proto=`) are believed only when the socket peer is a trusted proxy — the same
//! rule, through [`super::peer_is_trusted`], as the client address of gate 2 — and a
//! forwarded scheme only when it is `http` or `https`. Otherwise the request's own
//! `Host` is used, with the scheme of the connection itself. actix's
//! `connection_info()` believes forwarded headers from anyone, so it is not used.
//! (Which names `/mcp` answers at all is `super::own_origins`'s rule.)

use actix_web::http::header::{HeaderMap, HOST};
use actix_web::http::uri::Authority;
use actix_web::HttpRequest;

use crate::client_ip::TrustedProxies;
pub use crate::operations::Origin;

/// The name the client asked for, as `Host` carries it (`host[:port]`, unchecked): a
/// trusted proxy's forwarded host when it gives one, else the request's own `Host`
/// (or, in HTTP/2, its authority). `None` when there is none.
pub fn asked_authority(req: &HttpRequest, trusted: &TrustedProxies) -> Option<String> {
    let headers = req.headers();
    let forwarded = super::peer_is_trusted(req, trusted)
        .then(|| {
            last_forwarded_param(headers, "host")
                .or_else(|| last_list_value(headers, "x-forwarded-host"))
        })
        .flatten();
    forwarded
        .or_else(|| {
            headers
                .get(HOST)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).trim().to_owned())
        })
        .or_else(|| req.uri().authority().map(|a| a.as_str().to_owned()))
        .filter(|a| !a.is_empty())
}

/// The origin `req` names: forwarded values from a trusted peer, else its own.
pub fn asked(req: &HttpRequest, trusted: &TrustedProxies) -> Origin {
    let own_scheme = if req.app_config().secure() {
        "https"
    } else {
        "http"
    };
    let own_host = req
        .uri()
        .authority()
        .map(|a| a.as_str().to_owned())
        .or_else(|| {
            req.headers()
                .get(HOST)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        })
        .and_then(|h| valid_host(&h))
        .unwrap_or_else(|| req.app_config().local_addr().to_string());
    resolve(
        super::peer_is_trusted(req, trusted),
        req.headers(),
        own_scheme,
        own_host,
    )
}

/// The pure rule behind [`asked`]: with `peer_trusted`, `Forwarded` is read first, then
/// `X-Forwarded-Host` / `X-Forwarded-Proto`; of a list, the last (nearest) entry
/// counts. A forwarded value that is not usable (a scheme other than `http`/`https`,
/// a host that is not a plain authority) is ignored and the request's own is kept.
pub fn resolve(
    peer_trusted: bool,
    headers: &HeaderMap,
    own_scheme: &'static str,
    own_host: String,
) -> Origin {
    let mut origin = Origin {
        scheme: own_scheme,
        host: own_host,
    };
    if !peer_trusted {
        return origin;
    }
    let forwarded = |param: &str| last_forwarded_param(headers, param);
    let x_forwarded = |name: &str| last_list_value(headers, name);
    let proto = forwarded("proto").or_else(|| x_forwarded("x-forwarded-proto"));
    if let Some(scheme) = proto.as_deref().and_then(valid_scheme) {
        origin.scheme = scheme;
    }
    let host = forwarded("host").or_else(|| x_forwarded("x-forwarded-host"));
    if let Some(host) = host.as_deref().and_then(valid_host) {
        origin.host = host;
    }
    origin
}

fn valid_scheme(s: &str) -> Option<&'static str> {
    if s.eq_ignore_ascii_case("https") {
        Some("https")
    } else if s.eq_ignore_ascii_case("http") {
        Some("http")
    } else {
        None
    }
}

/// `host` or `host:port` as a URL authority without user info, lowercased.
fn valid_host(s: &str) -> Option<String> {
    let s = s.trim();
    if s.is_empty() || s.contains('@') {
        return None;
    }
    let authority: Authority = s.parse().ok()?;
    // `Authority` accepts a few characters a host never has.
    let host = authority.host();
    let plain = host
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-.:[]".contains(&b));
    (plain && !host.is_empty()).then(|| authority.as_str().to_ascii_lowercase())
}

/// The last comma-separated value of the last `name` header.
fn last_list_value(headers: &HeaderMap, name: &str) -> Option<String> {
    let value = headers.get_all(name).last()?.to_str().ok()?;
    value
        .rsplit(',')
        .next()
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// `param` of the last `Forwarded` element that has it (quotes removed).
fn last_forwarded_param(headers: &HeaderMap, param: &str) -> Option<String> {
    let mut found = None;
    for value in headers.get_all("forwarded") {
        let Ok(value) = value.to_str() else { continue };
        for element in value.split(',') {
            for pair in element.split(';') {
                if let Some((k, v)) = pair.split_once('=') {
                    if k.trim().eq_ignore_ascii_case(param) {
                        found = Some(v.trim().trim_matches('"').to_owned());
                    }
                }
            }
        }
    }
    found
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use actix_web::http::header::{HeaderName, HeaderValue};

    /// The headers `pairs` name, in order (a name given twice is sent twice); the
    /// other request-header tests of `crate::http` build theirs with it too.
    pub(crate) fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        map
    }

    fn origin(trusted: bool, pairs: &[(&str, &str)]) -> Origin {
        resolve(trusted, &headers(pairs), "http", "own.example:8080".into())
    }

    #[test]
    fn an_untrusted_peer_never_moves_the_origin() {
        for pairs in [
            &[
                ("x-forwarded-host", "evil.example"),
                ("x-forwarded-proto", "https"),
            ][..],
            &[("forwarded", "host=evil.example;proto=https")],
        ] {
            assert_eq!(
                origin(false, pairs).url("/p/a"),
                "http://own.example:8080/p/a"
            );
        }
    }

    #[test]
    fn a_trusted_peer_moves_it_with_usable_values_only() {
        let o = origin(
            true,
            &[
                ("x-forwarded-host", "pages.example"),
                ("x-forwarded-proto", "https"),
            ],
        );
        assert_eq!(o.url("/p/a"), "https://pages.example/p/a");
        let o = origin(
            true,
            &[(
                "forwarded",
                "for=1.2.3.4;host=\"Pages.Example:8443\";proto=HTTPS",
            )],
        );
        assert_eq!(o.url("/p/a"), "https://pages.example:8443/p/a");
        for (proto, host) in [
            ("javascript", "a@evil.example"),
            ("ftp", "evil.example/x"),
            ("", "evil example"),
            ("https:", "evil.example\"><script>"),
        ] {
            let o = origin(
                true,
                &[("x-forwarded-host", host), ("x-forwarded-proto", proto)],
            );
            assert_eq!(
                o.url("/p/a"),
                "http://own.example:8080/p/a",
                "{proto} {host}"
            );
        }
        // The nearest entry of a list counts.
        let o = origin(true, &[("x-forwarded-host", "a.example, b.example")]);
        assert_eq!(o.host, "b.example");
    }
}
