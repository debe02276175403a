//! `AGENT_PAGES_MCP_ALLOWED_ORIGINS`: which browser origins may call `/mcp` beside the
//! service's own (the MCP transport's security notes). Parsed by `configuration`,
//! applied with the service's own origins by `http::own_origins`.

/// Browser origins `/mcp` accepts beside the service's own
/// (`AGENT_PAGES_MCP_ALLOWED_ORIGINS`, comma-separated `scheme://host[:port]`, or
/// `*` for any). A request without `Origin` (agents, command-line clients) is
/// always accepted; one with an `Origin` that is neither one of the service's own
/// (`http::own_origins`) nor listed is refused with 403
/// `/problems/origin-not-allowed`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowedOrigins {
    any: bool,
    listed: Vec<String>,
}

/// A `AGENT_PAGES_MCP_ALLOWED_ORIGINS` entry that is not an origin.
#[derive(Debug, thiserror::Error)]
#[error("`{0}` is not an origin: write scheme://host or scheme://host:port (or *)")]
pub struct InvalidOrigin(String);

impl std::str::FromStr for AllowedOrigins {
    type Err = InvalidOrigin;

    /// Comma-separated origins (`https://app.example`, `http://localhost:3000`) or
    /// `*`; empty is none. Compared case-insensitively, without a trailing `/`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut allowed = AllowedOrigins::default();
        for entry in s.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            if entry == "*" {
                allowed.any = true;
                continue;
            }
            let origin = entry.trim_end_matches('/').to_ascii_lowercase();
            let valid = ["http://", "https://"].iter().any(|scheme| {
                origin
                    .strip_prefix(scheme)
                    .is_some_and(|host| !host.is_empty() && !host.contains(['/', '@', '?', '#']))
            });
            if !valid {
                return Err(InvalidOrigin(entry.to_owned()));
            }
            allowed.listed.push(origin);
        }
        Ok(allowed)
    }
}

impl AllowedOrigins {
    /// Whether `origin` (an `Origin` header) is listed (or `*` was given).
    pub fn allows(&self, origin: &str) -> bool {
        let origin = origin.trim().to_ascii_lowercase();
        self.any || self.listed.contains(&origin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_parse_and_match() {
        let allowed: AllowedOrigins = "https://App.example/, http://localhost:3000"
            .parse()
            .unwrap();
        assert!(allowed.allows("https://app.example"));
        assert!(allowed.allows("http://localhost:3000"));
        assert!(!allowed.allows("http://localhost:3001"));
        assert!(!allowed.allows("null"));
        let none = AllowedOrigins::default();
        assert!(!none.allows("https://evil.example"));
        assert!("*".parse::<AllowedOrigins>().unwrap().allows("null"));
        for bad in ["app.example", "ftp://a", "https://a/path", "https://"] {
            assert!(bad.parse::<AllowedOrigins>().is_err(), "{bad}");
        }
    }
}
