//! Parsing a JSON request body or a tool call's arguments: one JSON object of the
//! expected type, every refusal naming the failing field (and never echoing a
//! PIN). Reading the bytes off an HTTP request is [`crate::http::body`]'s.

use serde::de::DeserializeOwned;
use serde_json::error::Category;

use super::error::ApiError;

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
