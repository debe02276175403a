//! Reading a JSON request body: media type, size cap, a slot among the bodies read
//! at once and a deadline for the whole body, then parsing with the failing field
//! named ([`crate::operations::body::parse`]). Bodies are read by hand rather than with `web::Json` so that every
//! refusal is a problem document and an oversized body is refused from its
//! `Content-Length` before a byte of it is read.

use actix_web::http::header;
use actix_web::{web, HttpRequest};
use futures_util::StreamExt as _;
use serde::de::DeserializeOwned;

use crate::operations::body::parse;
use crate::operations::error::ApiError;
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

/// [`read_json`], answering the body's bytes as received beside the value (the
/// fingerprint of an idempotent publish is theirs).
pub async fn read_json_bytes<T: DeserializeOwned>(
    gate: &BodyGate,
    req: &HttpRequest,
    payload: web::Payload,
) -> Result<(T, Vec<u8>), ApiError> {
    check_media_type(req)?;
    let bytes = read_capped(gate, req, payload, BODY_LIMIT).await?;
    Ok((parse(&bytes)?, bytes))
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

/// The raw body of `req`, at most `limit` bytes, read within the gate's deadline
/// in one of its slots; errors as [`read_json`]'s, before the parsing.
pub async fn read_capped(
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
