//! Idempotent publishes (issue 32 §3, the IETF httpapi `Idempotency-Key` draft):
//! a publish may carry a key (the `Idempotency-Key` header, `publish_page`'s
//! `idempotency_key`), and the same key with the same request within a day answers
//! the first answer again and creates nothing.
//!
//! What this module decides, for both faces:
//!
//! - **The key** ([`IdempotencyKey::parse`]): 1–255 visible ASCII characters
//!   (`0x21`–`0x7E`); anything else is a validation error naming the field.
//! - **Its scope**: the client gate 2 computes (the [`Caller`](super::Caller)'s
//!   `client`). The page store keeps only hex(SHA-256(client || 0x00 || key)), never
//!   the key, and counts a client's keys by hex(SHA-256("idempotency-client:" ||
//!   client)).
//! - **The request's fingerprint**: SHA-256 of the body bytes as received (HTTP), or
//!   of the canonical JSON of the tool arguments other than `idempotency_key`
//!   ([`canonical_json`]: object keys sorted by their UTF-8 bytes, no whitespace,
//!   strings and numbers as serde_json writes them). Any difference (a space, the
//!   order of fields over HTTP, a `null` against a left-out field) is another
//!   request.
//! - **The flow** ([`begin`], then [`end`]): checked after the body's fields and
//!   before the publish budget, so a replay or a refusal here spends nothing. The
//!   page store's rules ([`crate::page_store::idempotency`]) say what a claim finds;
//!   only a 2xx answer is kept, so a publish refused for any reason (budget, slug
//!   taken, storage) can be sent again with the same key.

use sha2::{Digest, Sha256};

use super::error::ApiError;
use super::types::Created;
use crate::client_ip::ClientIp;
use crate::page_store::idempotency::MAX_KEYS_PER_CLIENT;
use crate::page_store::{Claimed, KeyClaim, StoredAnswer};
use crate::state::AppState;

/// The request header of a key.
pub const HEADER: &str = "Idempotency-Key";

/// The response header of a replayed answer (`true`).
pub const REPLAYED_HEADER: &str = "Idempotent-Replayed";

/// The longest key, in bytes (= characters: they are ASCII).
pub const KEY_MAX: usize = 255;

/// The key rule as a regular expression (the OpenAPI header's pattern).
pub const KEY_PATTERN: &str = "^[\\x21-\\x7E]{1,255}$";

/// The status a publish answers, the one kept for its key.
pub const PUBLISHED_STATUS: u16 = 201;

/// An idempotency key as sent, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    /// `key` as sent in `field` (`Idempotency-Key`, `idempotency_key`).
    ///
    /// Errors: empty, longer than [`KEY_MAX`], or holding a byte outside
    /// `0x21`–`0x7E` (a space, a control, anything beyond ASCII): a validation
    /// error on `field` that does not echo the key.
    pub fn parse(field: &str, key: &[u8]) -> Result<Self, ApiError> {
        let visible = key.iter().all(|b| (0x21..=0x7E).contains(b));
        if key.is_empty() || key.len() > KEY_MAX || !visible {
            return Err(ApiError::validation(
                field,
                format!(
                    "{field} must be 1 to {KEY_MAX} visible ASCII characters \
                     (0x21 to 0x7E: no space, no control, nothing beyond ASCII)"
                ),
            ));
        }
        Ok(Self(String::from_utf8_lossy(key).into_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What a publish carrying a key brings: the key, the request's fingerprint, and
/// the field to name in refusals (the header or the tool argument).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Idempotency {
    pub key: IdempotencyKey,
    /// Lowercase hex of the SHA-256 of the request.
    pub fingerprint: String,
    /// `Idempotency-Key` or `idempotency_key`.
    pub field: &'static str,
}

impl Idempotency {
    /// A key sent with the HTTP body `body` (its bytes as received).
    pub fn of_body(key: IdempotencyKey, body: &[u8]) -> Self {
        Self {
            key,
            fingerprint: hex(&Sha256::digest(body)),
            field: HEADER,
        }
    }

    /// A key sent as the tool argument `field` beside `arguments` (the other
    /// arguments): their [`canonical_json`].
    pub fn of_arguments(
        key: IdempotencyKey,
        arguments: &serde_json::Map<String, serde_json::Value>,
        field: &'static str,
    ) -> Self {
        let rest: serde_json::Map<_, _> = arguments
            .iter()
            .filter(|(name, _)| name.as_str() != field)
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        let canonical = canonical_json(&serde_json::Value::Object(rest));
        Self {
            key,
            fingerprint: hex(&Sha256::digest(canonical.as_bytes())),
            field,
        }
    }
}

/// `value` as canonical JSON: object keys sorted by their UTF-8 bytes at every
/// depth, no whitespace, strings and numbers as serde_json writes them.
pub fn canonical_json(value: &serde_json::Value) -> String {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            let inner: Vec<String> = entries
                .into_iter()
                .map(|(k, v)| format!("{}:{}", Value::String(k.clone()), canonical_json(v)))
                .collect();
            format!("{{{}}}", inner.join(","))
        }
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(canonical_json).collect();
            format!("[{}]", inner.join(","))
        }
        other => other.to_string(),
    }
}

/// Lowercase hex of `bytes`.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The stored name of `key` sent by `client`: hex(SHA-256(client || 0x00 || key)),
/// `client` as gate 2 writes it (`1.2.3.4`, `2001:db8:1:2::/64`).
pub fn key_hash(client: &ClientIp, key: &IdempotencyKey) -> String {
    let mut hasher = Sha256::new();
    hasher.update(client.to_string().as_bytes());
    hasher.update([0u8]);
    hasher.update(key.as_str().as_bytes());
    hex(&hasher.finalize())
}

/// What a client's keys are counted by: hex(SHA-256("idempotency-client:" || client)).
pub fn client_hash(client: &ClientIp) -> String {
    let mut hasher = Sha256::new();
    hasher.update(b"idempotency-client:");
    hasher.update(client.to_string().as_bytes());
    hex(&hasher.finalize())
}

/// A fresh claim, to [`end`] once the publish answered.
#[derive(Debug)]
pub struct Claim {
    key_hash: String,
    started_at: i64,
}

/// What [`begin`] found.
#[derive(Debug)]
pub enum Begun {
    /// Publish, then [`end`] the claim.
    Fresh(Claim),
    /// The first answer, with its status: send it again.
    Replay { status: u16, answer: Created },
}

/// Claims `idempotency` for `client` at the clock's now.
///
/// Errors: [`ApiError::IdempotencyKeyReused`] (the key came with another request),
/// [`ApiError::IdempotencyKeyInFlight`] (its first request is still running),
/// [`ApiError::TooManyIdempotencyKeys`] (the client holds
/// [`MAX_KEYS_PER_CLIENT`] live keys), or the page store's faults; none of them
/// wrote anything.
pub async fn begin(
    state: &AppState,
    client: &ClientIp,
    idempotency: &Idempotency,
) -> Result<Begun, ApiError> {
    let now = state.clock.now();
    let claim = KeyClaim {
        key_hash: key_hash(client, &idempotency.key),
        client_hash: client_hash(client),
        fingerprint: idempotency.fingerprint.clone(),
        now,
        max_keys: MAX_KEYS_PER_CLIENT,
    };
    let key_hash = claim.key_hash.clone();
    let field = idempotency.field;
    match state.pages.store.claim_key(claim).await? {
        Claimed::Fresh => Ok(Begun::Fresh(Claim {
            key_hash,
            started_at: now,
        })),
        Claimed::Replay(StoredAnswer { status, body }) => {
            let answer = serde_json::from_str(&body).map_err(|e| {
                ApiError::Internal(anyhow::Error::new(e).context("a stored idempotent answer"))
            })?;
            Ok(Begun::Replay { status, answer })
        }
        Claimed::Reused => Err(ApiError::IdempotencyKeyReused { field }),
        Claimed::InFlight => Err(ApiError::IdempotencyKeyInFlight { field }),
        Claimed::TooMany { retry_after } => Err(ApiError::TooManyIdempotencyKeys {
            field,
            max: MAX_KEYS_PER_CLIENT,
            retry_after,
        }),
    }
}

/// Ends `claim` with the publish's answer: a 2xx is kept for replays, anything
/// else deletes the claim (the key can be sent again). A store that fails here is
/// logged and the answer stands: the claim stays `running` and is taken over
/// after a minute.
pub async fn end(state: &AppState, claim: Claim, published: &Result<Created, ApiError>) {
    let store = &state.pages.store;
    let ended = match published {
        Ok(created) => {
            let body = serde_json::to_string(created).expect("an answer serializes");
            let answer = StoredAnswer {
                status: PUBLISHED_STATUS,
                body,
            };
            store
                .finish_key(&claim.key_hash, claim.started_at, answer)
                .await
        }
        Err(_) => store.release_key(&claim.key_hash, claim.started_at).await,
    };
    if let Err(e) = ended {
        tracing::warn!(
            error = %e,
            kept = published.is_ok(),
            "an idempotency key's claim could not be ended: it is taken over after a minute"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_key_is_one_to_255_visible_ascii_characters() {
        for good in ["a", "!", "~", &"k".repeat(255), "550e8400-e29b-41d4"] {
            assert!(
                IdempotencyKey::parse(HEADER, good.as_bytes()).is_ok(),
                "{good}"
            );
        }
        let long = "k".repeat(256);
        for bad in ["", " ", "a b", "a\tb", "\x7f", "é", &long] {
            let e = IdempotencyKey::parse(HEADER, bad.as_bytes()).unwrap_err();
            assert_eq!(e.problem().field.as_deref(), Some(HEADER), "{bad:?}");
        }
    }

    #[test]
    fn canonical_json_sorts_keys_at_every_depth_without_whitespace() {
        let a = json!({"title": "T", "body": "b", "x": {"z": 1, "a": [true, null]}});
        assert_eq!(
            canonical_json(&a),
            r#"{"body":"b","title":"T","x":{"a":[true,null],"z":1}}"#
        );
    }

    #[test]
    fn the_fingerprint_of_arguments_leaves_the_key_out() {
        let key = IdempotencyKey::parse("idempotency_key", b"k1").unwrap();
        let with = json!({"title": "T", "idempotency_key": "k1"});
        let without = json!({"title": "T"});
        let of = |v: &serde_json::Value| {
            Idempotency::of_arguments(key.clone(), v.as_object().unwrap(), "idempotency_key")
                .fingerprint
        };
        assert_eq!(of(&with), of(&without));
        assert_eq!(
            of(&without),
            Idempotency::of_body(key.clone(), br#"{"title":"T"}"#).fingerprint
        );
    }

    #[test]
    fn keys_are_scoped_to_the_client_and_never_stored_as_sent() {
        let key = IdempotencyKey::parse(HEADER, b"same").unwrap();
        let a = ClientIp::from_addr("192.0.2.1".parse().unwrap());
        let b = ClientIp::from_addr("192.0.2.2".parse().unwrap());
        assert_ne!(key_hash(&a, &key), key_hash(&b, &key));
        // printf '192.0.2.1\0same' | sha256sum
        let mut expected = Sha256::new();
        expected.update(b"192.0.2.1\0same");
        assert_eq!(key_hash(&a, &key), hex(&expected.finalize()));
        assert!(!key_hash(&a, &key).contains("same"));
    }
}
