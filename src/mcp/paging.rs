//! `read_page` in parts (issue 30 §5): a body may be 256 KiB (~64k tokens), beyond
//! what common agent hosts accept in one tool result, so `read_page` takes
//! `max_chars` and `offset` and says how much is left.
//!
//! Both count characters (Unicode scalar values, as JSON Schema's `maxLength`
//! does), from the start of the body. Without either the whole body is answered
//! and the result is the document `GET /api/pages/{slug}` answers; with either,
//! `body` is the part from `offset` (default 0) of at most `max_chars` (default:
//! to the end) and the result adds [`BodyPart`]'s fields. An `offset` at or past
//! the end answers an empty part with nothing left.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::domain::BODY_MAX_BYTES;
use crate::operations::error::ApiError;

/// `read_page`: `{slug, max_chars?, offset?}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a JSON object")]
pub struct ReadArgs {
    pub slug: String,
    pub max_chars: Option<u64>,
    pub offset: Option<u64>,
}

/// The most `max_chars` and `offset` may be: a body has at most this many chars.
pub const MAX_CHARS: u64 = BODY_MAX_BYTES as u64;

/// Where the part of the body answered lies, in chars.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BodyPart {
    /// Chars of the body before this part.
    pub offset: u64,
    /// Chars of the whole body.
    pub total_chars: u64,
    /// Chars of the body after this part.
    pub remaining_chars: u64,
    /// The `offset` that reads on, or null when nothing is left.
    pub next_offset: Option<u64>,
}

impl ReadArgs {
    /// Whether a part was asked for.
    pub fn wants_part(&self) -> bool {
        self.max_chars.is_some() || self.offset.is_some()
    }

    /// Cuts `body` in place to the part asked for and answers that part's
    /// description; `None` (and `body` whole) when no part was asked for. Errors as
    /// [`Self::cut`].
    pub fn take_part(&self, body: &mut String) -> Result<Option<BodyPart>, ApiError> {
        if !self.wants_part() {
            return Ok(None);
        }
        let (piece, part) = self.cut(body)?;
        *body = piece.to_owned();
        Ok(Some(part))
    }

    /// The part of `body` asked for, and where it lies.
    ///
    /// Errors: `max_chars` outside 1–[`MAX_CHARS`] or `offset` over [`MAX_CHARS`]
    /// (400 validation, naming the field).
    pub fn cut<'b>(&self, body: &'b str) -> Result<(&'b str, BodyPart), ApiError> {
        let max_chars = match self.max_chars {
            Some(n) if !(1..=MAX_CHARS).contains(&n) => {
                return Err(ApiError::validation(
                    "max_chars",
                    format!("max_chars must be a whole number from 1 to {MAX_CHARS}"),
                ))
            }
            Some(n) => n,
            None => MAX_CHARS,
        };
        let offset = self.offset.unwrap_or(0);
        if offset > MAX_CHARS {
            return Err(ApiError::validation(
                "offset",
                format!("offset must be a whole number from 0 to {MAX_CHARS}"),
            ));
        }
        let byte_at = |chars: u64| {
            body.char_indices()
                .nth(usize::try_from(chars).unwrap_or(usize::MAX))
                .map_or(body.len(), |(at, _)| at)
        };
        let total_chars = body.chars().count() as u64;
        let start = byte_at(offset);
        let end_chars = offset.saturating_add(max_chars).min(total_chars);
        let end = byte_at(end_chars);
        let part = &body[start..end.max(start)];
        let end_chars = end_chars.max(offset.min(total_chars));
        let remaining_chars = total_chars - end_chars;
        Ok((
            part,
            BodyPart {
                offset,
                total_chars,
                remaining_chars,
                next_offset: (remaining_chars > 0).then_some(end_chars),
            },
        ))
    }
}

impl BodyPart {
    /// What the text block of tool `tool` (`read_page`, `read_version`) says after
    /// the body: the part's place and how to go on.
    pub fn text(&self, tool: &str) -> String {
        let shown = self.total_chars - self.remaining_chars - self.offset.min(self.total_chars);
        match self.next_offset {
            Some(next) => format!(
                "Shown: {shown} characters from offset {} of {}; {} characters are left: \
                 call {tool} with offset {next} to read on.",
                self.offset, self.total_chars, self.remaining_chars
            ),
            None => format!(
                "Shown: {shown} characters from offset {} of {}; this is the end of the body.",
                self.offset, self.total_chars
            ),
        }
    }

    /// The fields as JSON, to add to the page document.
    pub fn add_to(&self, document: &mut Value) {
        if let (Value::Object(document), Value::Object(fields)) = (
            document,
            serde_json::to_value(self).expect("a part serializes"),
        ) {
            document.extend(fields);
        }
    }
}

/// The input schema properties `read_page` takes beside `slug`.
pub fn properties() -> [(&'static str, Value); 2] {
    [
        (
            "max_chars",
            json!({"type": "integer", "minimum": 1, "maximum": MAX_CHARS,
                   "description": "At most this many characters of the body (Unicode \
                    code points), from offset; leave out for the whole body. The answer \
                    then says total_chars, remaining_chars and next_offset."}),
        ),
        (
            "offset",
            json!({"type": "integer", "minimum": 0, "maximum": MAX_CHARS,
                   "description": "Characters of the body to skip (default 0): the \
                    next_offset of the previous part."}),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(max_chars: Option<u64>, offset: Option<u64>) -> ReadArgs {
        ReadArgs {
            slug: "a".into(),
            max_chars,
            offset,
        }
    }

    #[test]
    fn parts_cover_the_body_in_chars() {
        let body = "héllo wörld";
        let (part, place) = args(Some(4), None).cut(body).unwrap();
        assert_eq!(part, "héll");
        assert_eq!(
            place,
            BodyPart {
                offset: 0,
                total_chars: 11,
                remaining_chars: 7,
                next_offset: Some(4)
            }
        );
        let (part, place) = args(Some(4), Some(8)).cut(body).unwrap();
        assert_eq!(
            (part, place.remaining_chars, place.next_offset),
            ("rld", 0, None)
        );
        let (part, place) = args(None, Some(20)).cut(body).unwrap();
        assert_eq!(
            (part, place.remaining_chars, place.next_offset),
            ("", 0, None)
        );
        assert!(
            place.text("read_page").contains("end of the body"),
            "{}",
            place.text("read_page")
        );
        let (part, _) = args(None, Some(6)).cut(body).unwrap();
        assert_eq!(part, "wörld");
    }

    #[test]
    fn out_of_range_numbers_name_their_field() {
        for (a, field) in [
            (args(Some(0), None), "max_chars"),
            (args(Some(MAX_CHARS + 1), None), "max_chars"),
            (args(None, Some(MAX_CHARS + 1)), "offset"),
        ] {
            let e = a.cut("x").unwrap_err();
            assert_eq!(e.problem().field.as_deref(), Some(field), "{e}");
        }
    }
}
