//! Request and response bodies of the agent API, and the field rules both faces
//! state (the OpenAPI document, the MCP tools' input schemas). Their doc comments
//! and schema attributes are what agents are told.

use std::sync::LazyLock;

use serde::{Deserialize, Serialize};
use utoipa::openapi::schema::{
    AllOfBuilder, AnyOfBuilder, ObjectBuilder, Schema, SchemaType, Type,
};
use utoipa::openapi::RefOr;
use utoipa::{IntoParams, ToSchema};

use crate::domain::{is_visible, BODY_MAX_BYTES, TITLE_MAX};
use crate::invisible::is_dropped;
use crate::pin::{PIN_MAX, PIN_MIN};

/// `POST /api/pages`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, expecting = "a JSON object")]
pub struct CreatePage {
    /// The page's URL name. Left out (or null), it is derived from the title
    /// (`Café Guide` → `cafe-guide`), with `-2`, `-3`, … added when taken.
    #[schema(pattern = "^[a-z0-9][a-z0-9.+-]{0,79}$", example = "kubernetes-guide")]
    pub slug: Option<String>,
    #[schema(schema_with = title_required)]
    pub title: String,
    /// Plain text, at most 262144 bytes of UTF-8 (`maxLength` counts characters, so
    /// text beyond ASCII reaches the byte limit sooner); empty when left out.
    #[schema(max_length = 262144, example = "How to deploy.")]
    pub body: Option<String>,
    #[schema(schema_with = pin_schema)]
    pub pin: Option<String>,
}

/// `PUT /api/pages/{slug}`: the fields to replace; give at least one that is not
/// null (the document's `anyOf`).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, expecting = "a JSON object")]
pub struct UpdatePage {
    #[schema(schema_with = title_optional)]
    pub title: Option<String>,
    /// Plain text, at most 262144 bytes of UTF-8 (`maxLength` counts characters).
    #[schema(max_length = 262144)]
    pub body: Option<String>,
}

/// SPEC §3's slug, as `crate::domain::PageSlug::parse` checks it.
pub const SLUG_PATTERN: &str = "^[a-z0-9][a-z0-9.+-]{0,79}$";

/// The regular expressions of the document that restate a rule of the server, built
/// from the very functions and constants that apply it, so the two cannot drift.
///
/// They are read with Unicode code points (as JSON Schema asks): chars inside the
/// Basic Multilingual Plane are written `\uXXXX`, which ECMA-262, Python and Rust
/// regexes all read; chars beyond it are written as themselves.
pub struct Patterns {
    /// A title as [`crate::domain::PageTitle::parse`] counts it: after removing the
    /// invisible chars that go wherever they stand ([`is_dropped`]) and trimming
    /// whitespace, 1–200 chars.
    pub title_length: String,
    /// Holds at least one visible char ([`is_visible`]); unanchored.
    pub title_visible: String,
    /// A PIN as [`crate::pin::check`] takes it: 6–64 chars, no control char, no
    /// whitespace at either end.
    pub pin: String,
    /// A PIN as an `X-Page-Pin` header value can carry it whatever the client: the
    /// same lengths over printable ASCII (U+0020–U+007E), no space at either end.
    /// The server reads the header's bytes as UTF-8, so a PIN beyond ASCII works
    /// when sent as its UTF-8 bytes, but a header string is Latin-1 to most HTTP
    /// clients (one byte per char, which is not UTF-8 past U+007F): the document
    /// promises only what every client sends unchanged.
    pub pin_header: String,
}

pub static PATTERNS: LazyLock<Patterns> = LazyLock::new(|| {
    let bidi = class(is_dropped);
    let space = class(char::is_whitespace);
    let control = class(char::is_control);
    let edge = format!("{bidi}{space}");
    Patterns {
        title_length: format!(
            "^[{edge}]*[^{edge}](?:(?:[{bidi}]*[^{bidi}]){{0,{}}}[{bidi}]*[^{edge}])?[{edge}]*$",
            TITLE_MAX - 2
        ),
        title_visible: format!("[{}]", class(is_visible)),
        pin: format!(
            "^[^{space}{control}][^{control}]{{{},{}}}[^{space}{control}]$",
            PIN_MIN - 2,
            PIN_MAX - 2
        ),
        pin_header: format!(
            "^[\\u0021-\\u007E][\\u0020-\\u007E]{{{},{}}}[\\u0021-\\u007E]$",
            PIN_MIN - 2,
            PIN_MAX - 2
        ),
    }
});

/// The body of a regex character class (no brackets) of every char for which `keep`
/// holds, as ranges.
fn class(keep: impl Fn(char) -> bool) -> String {
    let write = |out: &mut String, c: u32| {
        if c <= 0xFFFF {
            out.push_str(&format!("\\u{c:04X}"));
        } else {
            out.push(char::from_u32(c).expect("a scalar value"));
        }
    };
    let mut out = String::new();
    let mut start: Option<u32> = None;
    // One past the end: every range is closed by a char that is not kept.
    for c in 0..=0x11_0000u32 {
        let kept = char::from_u32(c).is_some_and(&keep);
        match (kept, start) {
            (true, None) => start = Some(c),
            (false, Some(first)) => {
                let last = c - 1;
                // A range never spans the surrogates (they are not chars).
                write(&mut out, first);
                if last > first {
                    out.push('-');
                    write(&mut out, last);
                }
                start = None;
            }
            _ => {}
        }
    }
    out
}

fn string_type(nullable: bool) -> SchemaType {
    if nullable {
        SchemaType::from_iter([Type::String, Type::Null])
    } else {
        SchemaType::new(Type::String)
    }
}

/// A title: 1–200 chars once bidi controls are removed and whitespace trimmed, at
/// least one of them visible. Two patterns, so `allOf`.
fn title(nullable: bool) -> Schema {
    let shape = ObjectBuilder::new()
        .schema_type(string_type(nullable))
        .min_length(Some(1))
        .pattern(Some(PATTERNS.title_length.clone()));
    let shape = if nullable {
        shape
    } else {
        shape.examples([serde_json::json!("Kubernetes guide")])
    };
    AllOfBuilder::new()
        .description(Some(
            "1–200 characters after invisible characters are removed (Unicode's \
             Default_Ignorable_Code_Point: tag characters, bidi controls, zero-width \
             spaces; zero-width joiners and variation selectors count here and are kept \
             only where a script needs them) and whitespace is trimmed, at least one of \
             them visible (a letter, digit, punctuation mark or symbol).",
        ))
        .item(shape)
        .item(
            ObjectBuilder::new()
                .schema_type(SchemaType::AnyValue)
                .pattern(Some(PATTERNS.title_visible.clone())),
        )
        .into()
}

fn title_required() -> Schema {
    title(false)
}

fn title_optional() -> Schema {
    title(true)
}

fn pin_schema() -> Schema {
    pin_schema_of(true)
}

/// The PIN rules of [`pin_schema`] for a PIN that must be given (a new PIN, issue 32
/// §5): the same pattern and lengths, not nullable.
pub fn new_pin_schema() -> Schema {
    pin_schema_of(false)
}

fn pin_schema_of(nullable: bool) -> Schema {
    ObjectBuilder::new()
        .schema_type(string_type(nullable))
        .description(Some(
            "6–64 characters, none of them a control character, not starting or ending \
             with whitespace: it travels back in the X-Page-Pin header. Needed later to \
             update, archive or claim the page: a page published without one can never be \
             changed through the API. Stored only as an argon2id hash.",
        ))
        .min_length(Some(PIN_MIN))
        .max_length(Some(PIN_MAX))
        .pattern(Some(PATTERNS.pin.clone()))
        .examples([serde_json::json!("correct horse")])
        .into()
}

/// `UpdatePage` as the server takes it: the derived object, and at least one of
/// `title` and `body` given as a string.
pub fn update_page_schema() -> RefOr<Schema> {
    let given = |field: &str| {
        ObjectBuilder::new()
            .required(field)
            .property(field, ObjectBuilder::new().schema_type(Type::String))
    };
    AllOfBuilder::new()
        .description(Some(
            "The fields to replace: title, body or both; at least one of them must be a \
             string (not null).",
        ))
        .item(<UpdatePage as utoipa::PartialSchema>::schema())
        .item(AnyOfBuilder::new().item(given("title")).item(given("body")))
        .into()
}

const _: () = assert!(BODY_MAX_BYTES == 262144, "the documented body maxLength");

/// A page just published (kept as sent for an idempotency key's replays, hence
/// `Deserialize`).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Created {
    pub slug: String,
    /// Always 1.
    pub version: i64,
    /// Where people read it (the HTML page).
    pub url: String,
}

/// A page just changed.
#[derive(Debug, Serialize, ToSchema)]
pub struct Updated {
    pub slug: String,
    /// The new `current_version`: one more than before this update.
    pub version: i64,
}

/// A page after archive or claim.
#[derive(Debug, Serialize, ToSchema)]
pub struct StateChanged {
    pub slug: String,
    /// The version after this call (unchanged when the call changed nothing).
    pub version: i64,
    /// `active` or `archived`.
    pub lifecycle: String,
    /// When the page was claimed (unix seconds), or null.
    pub claimed_at: Option<i64>,
}

/// A published page. Times are unix seconds.
#[derive(Debug, Serialize, ToSchema)]
pub struct PageView {
    pub slug: String,
    pub title: String,
    pub body: String,
    /// Starts at 1, +1 on every change.
    pub version: i64,
    pub created_at: i64,
    pub updated_at: i64,
    /// Where people read it (the HTML page).
    pub url: String,
}

/// One row of the page list (no body). Times are unix seconds.
#[derive(Debug, Serialize, ToSchema)]
pub struct PageListItem {
    pub slug: String,
    pub title: String,
    pub version: i64,
    pub updated_at: i64,
    pub url: String,
}

/// One page of the list of published pages, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct PageList {
    pub pages: Vec<PageListItem>,
    /// This page number, from 1.
    pub page: i64,
    pub per_page: i64,
    /// Published pages in all.
    pub total: i64,
    /// The next page number, or null on the last page.
    pub next_page: Option<i64>,
}

/// Query of `GET /api/pages`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Page number, from 1 (default 1) to 92233720368547758 (`i64::MAX / 100`, so the
    /// row offset always fits; the document's `maximum` is set from the same constant).
    #[param(value_type = Option<i64>, minimum = 1)]
    pub page: Option<String>,
    /// Rows per page, 1–100 (default 50).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 100)]
    pub per_page: Option<String>,
}
