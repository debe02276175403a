//! Reading a JSON request body: media type, size cap, a slot among the bodies read
//! at once and a deadline for the whole body, then parsing with the failing field
//! named. Bodies are read by hand rather than with `web::Json` so that every
//! refusal is a problem document and an oversized body is refused from its
//! `Content-Length` before a byte of it is read.

use actix_web::http::header;
use actix_web::{web, HttpRequest};
use futures_util::StreamExt as _;
use serde::de::DeserializeOwned;
use serde_json::error::Category;

use super::error::ApiError;
use crate::request_limits::BodyGate;

/// Largest request body, in bytes (300 KiB): a 256 KiB page body plus JSON escaping
/// and the other fields.
pub const BODY_LIMIT: usize = 300 * 1024;

/// Reads the body of `req` and parses it as `T`.
///
/// Errors: [`ApiError::UnsupportedMediaType`] for a non-JSON `Content-Type` (none at
/// all is taken as JSON); [`ApiError::PayloadTooLarge`] past [`BODY_LIMIT`];
/// [`ApiError::TooManyOpenBodies`] when the gate's cap of bodies is being read
/// already (no waiting); [`ApiError::BodyTimeout`] when the body has not arrived in
/// full within the gate's deadline (the connection is then closed);
/// [`ApiError::MalformedJson`] for an unreadable, empty or non-JSON body;
/// [`ApiError::Validation`] for JSON of the wrong shape (wrong type, unknown,
/// missing or repeated field), naming the field.
pub async fn read_json<T: DeserializeOwned>(
    gate: &BodyGate,
    req: &HttpRequest,
    payload: web::Payload,
) -> Result<T, ApiError> {
    check_media_type(req)?;
    let bytes = read_capped(gate, req, payload, BODY_LIMIT).await?;
    parse(&bytes)
}

fn check_media_type(req: &HttpRequest) -> Result<(), ApiError> {
    let Some(value) = req.headers().get(header::CONTENT_TYPE) else {
        return Ok(());
    };
    let essence = value
        .to_str()
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
    {
        Ok(())
    } else {
        Err(ApiError::UnsupportedMediaType)
    }
}

pub(crate) async fn read_capped(
    gate: &BodyGate,
    req: &HttpRequest,
    mut payload: web::Payload,
    limit: usize,
) -> Result<Vec<u8>, ApiError> {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(ApiError::PayloadTooLarge { limit });
    }
    let _slot = gate
        .try_slot()
        .map_err(|_| ApiError::TooManyOpenBodies { cap: gate.cap() })?;
    let read = async {
        let mut body = Vec::with_capacity(declared.unwrap_or(0) as usize);
        while let Some(chunk) = payload.next().await {
            let chunk = chunk.map_err(|e| ApiError::MalformedJson {
                field: None,
                detail: format!("the request body could not be read: {e}"),
            })?;
            if body.len() + chunk.len() > limit {
                return Err(ApiError::PayloadTooLarge { limit });
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    };
    tokio::time::timeout(gate.deadline(), read)
        .await
        .unwrap_or(Err(ApiError::BodyTimeout {
            seconds: gate.deadline().as_secs(),
        }))
}

/// Parses `bytes` as one JSON value of type `T` (whitespace around it allowed).
pub fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::MalformedJson {
            field: None,
            detail: "the request body is empty: send a JSON object".into(),
        });
    }
    // serde's derived structs also accept a JSON array (fields by position), which
    // no agent means: only an object is a page.
    if bytes.trim_ascii_start().first() != Some(&b'{') {
        return Err(match serde_json::from_slice::<serde_json::Value>(bytes) {
            Ok(_) => ApiError::validation("body", "the request body must be a JSON object"),
            Err(e) => refusal(None, &e),
        });
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        // `.` is the body itself, `?` a key not read yet: neither names a field.
        let field = (path != "." && path != "?")
            .then_some(path)
            .or_else(|| quoted_field(&inner.to_string()));
        refusal(field, &inner)
    })?;
    de.end().map_err(|e| refusal(None, &e))?;
    Ok(value)
}

/// serde names a missing, unknown or repeated field only in its message (as
/// `` `title` ``): the path of such an error is the object holding it, `.` here.
fn quoted_field(message: &str) -> Option<String> {
    ["missing field `", "unknown field `", "duplicate field `"]
        .iter()
        .find_map(|prefix| message.strip_prefix(prefix))
        .and_then(|rest| rest.split_once('`'))
        .map(|(name, _)| name.to_owned())
}

fn refusal(field: Option<String>, e: &serde_json::Error) -> ApiError {
    // serde echoes a wrongly typed value (`invalid type: integer `123456``): never
    // for the PIN, which must not reach a response or, through it, a log.
    let message = match field.as_deref() {
        Some("pin") => "must be a string of 6 to 64 characters".to_owned(),
        _ => e.to_string(),
    };
    let detail = match &field {
        Some(name) if !message.contains(&format!("`{name}`")) => format!("{name}: {message}"),
        Some(_) => message,
        None => format!("request body: {message}"),
    };
    match e.classify() {
        Category::Data => ApiError::Validation {
            field: field.unwrap_or_else(|| "body".into()),
            detail,
        },
        Category::Syntax | Category::Eof | Category::Io => {
            ApiError::MalformedJson { field, detail }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields, expecting = "a JSON object")]
    #[allow(dead_code)]
    struct Input {
        title: String,
        body: Option<String>,
        pin: Option<String>,
    }

    fn refused(json: &[u8]) -> (&'static str, Option<String>, String) {
        match parse::<Input>(json).unwrap_err() {
            ApiError::Validation { field, detail } => ("validation", Some(field), detail),
            ApiError::MalformedJson { field, detail } => ("malformed", field, detail),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn each_refusal_names_its_field() {
        let cases: [(&[u8], &str, Option<&str>); 12] = [
            (b"{\"title\": 5}", "validation", Some("title")),
            (
                b"{\"title\": \"a\", \"extra\": 1}",
                "validation",
                Some("extra"),
            ),
            (b"{\"body\": \"a\"}", "validation", Some("title")),
            (
                b"{\"title\": \"a\", \"title\": \"b\"}",
                "validation",
                Some("title"),
            ),
            (b"[\"a title\"]", "validation", Some("body")),
            (b"\"a title\"", "validation", Some("body")),
            (b"nonsense", "malformed", None),
            (b"{\"title\": \"a\xff\"}", "malformed", Some("title")),
            (b"{\"title\": \"\\ud800\"}", "malformed", Some("title")),
            (b"{\"title\": ", "malformed", Some("title")),
            (b"{title: 1}", "malformed", None),
            (b"{\"title\": \"a\"} x", "malformed", None),
        ];
        for (json, kind, field) in cases {
            let (k, f, detail) = refused(json);
            assert_eq!((k, f.as_deref()), (kind, field), "{detail}");
            if let Some(field) = field {
                assert!(detail.contains(field), "{detail}");
            }
        }
    }

    #[test]
    fn a_wrongly_typed_pin_is_never_echoed() {
        let (_, field, detail) = refused(b"{\"title\": \"a\", \"pin\": 987654}");
        assert_eq!(field.as_deref(), Some("pin"));
        assert!(!detail.contains("987654"), "{detail}");
    }

    #[test]
    fn an_empty_body_is_malformed() {
        assert_eq!(refused(b"  ").0, "malformed");
    }
}
