//! The parameters several API routes take alike, written once for their
//! `#[utoipa::path]` attributes: `params(PinnedWrite)` puts the same names, places,
//! descriptions and schemas into each route's OpenAPI entry (the document is as if
//! each route spelled them out). [`super::openapi`]'s `ServerRules` then gives
//! `slug` and `X-Page-Pin` their patterns, wherever they come from.

use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
use utoipa::openapi::Required;
use utoipa::IntoParams;

use crate::operations::pin_check::PIN_HEADER;

/// A parameter `name` in `place`: a string, or (when not `required`) a string or
/// null, as utoipa writes `String` and `Option<String>`.
fn parameter(name: &str, place: ParameterIn, required: bool, description: &str) -> Parameter {
    let schema = if required {
        SchemaType::Type(Type::String)
    } else {
        SchemaType::from_iter([Type::String, Type::Null])
    };
    ParameterBuilder::new()
        .name(name)
        .parameter_in(place)
        .required(if required {
            Required::True
        } else {
            Required::False
        })
        .description(Some(description))
        .schema(Some(ObjectBuilder::new().schema_type(schema)))
        .build()
}

fn slug() -> Parameter {
    parameter("slug", ParameterIn::Path, true, "The page's slug")
}

fn if_match() -> Parameter {
    parameter(
        "If-Match",
        ParameterIn::Header,
        false,
        "`\"v{version}\"`: write only if the page is at this version (else 412 and nothing changes); `*` or absent: whatever version it is at",
    )
}

fn if_none_match() -> Parameter {
    parameter(
        "If-None-Match",
        ParameterIn::Header,
        false,
        "Entity tags the client holds (`\"v7\"`, `W/\"v7\"`, a list, or `*`): 304 when one matches the current `ETag` under the weak comparison",
    )
}

fn if_modified_since() -> Parameter {
    parameter(
        "If-Modified-Since",
        ParameterIn::Header,
        false,
        "An HTTP-date: 304 when `Last-Modified` is at or before it (whole seconds); ignored with `If-None-Match`, or when it is not one HTTP-date",
    )
}

/// One unit struct per shared list, each an [`IntoParams`] for `params(…)`; the
/// parameters are listed in the order given.
macro_rules! parameter_lists {
    ($($(#[$doc:meta])* $name:ident => [$($parameter:expr),+ $(,)?];)+) => {
        $(
            $(#[$doc])*
            pub struct $name;

            impl IntoParams for $name {
                fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
                    vec![$($parameter),+]
                }
            }
        )+
    };
}

parameter_lists! {
    /// The page a route names in its path.
    PagePath => [slug()];
    /// A write that needs the page's PIN and honours `If-Match`.
    PinnedWrite => [
        slug(),
        parameter(PIN_HEADER, ParameterIn::Header, true, "The PIN the page was published with"),
        if_match(),
    ];
    /// A conditional read of a published page.
    ConditionalRead => [if_none_match(), if_modified_since()];
    /// A conditional read of a history, which an archived or claimed page shows only
    /// to its PIN.
    GatedRead => [
        parameter(
            PIN_HEADER,
            ParameterIn::Header,
            false,
            "The page's PIN: needed only when it is archived or claimed",
        ),
        if_none_match(),
        if_modified_since(),
    ];
}
