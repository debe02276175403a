//! The `outputSchema` of every tool (issue 30 §5): what its structured content
//! holds on success (a tool error carries a problem document instead, which clients
//! do not check against it).
//!
//! The page tools answer the body types of the HTTP routes, so their schemas are the
//! ones the OpenAPI document lists (`utoipa`'s derives on
//! [`crate::operations::types`]), with the schemas they refer to under `$defs` (an
//! output schema is a document of its own: `#/components/schemas/X` becomes
//! `#/$defs/X`); the history tools answer those of the history routes
//! ([`crate::operations::history`]). `read_page` and `read_version` add the fields
//! of a part ([`super::paging`]);
//! `search_pages` answers the JSON of `/search`, which the OpenAPI document does not
//! cover, so its schema is written here after `operations::search::json`.

use serde_json::{json, Map, Value};
use utoipa::ToSchema;

use crate::operations::history::{PinRotated, VersionList, VersionView};
use crate::operations::types::{Created, PageList, PageView, StateChanged, Updated};

/// The output schema of the tool `name`; `None` for a name no tool has.
pub fn for_tool(name: &str) -> Option<Map<String, Value>> {
    let schema = match name {
        "search_pages" => search_answer(),
        "read_page" => with_part(of::<PageView>()),
        "list_pages" => of::<PageList>(),
        "publish_page" => of::<Created>(),
        "update_page" => of::<Updated>(),
        "archive_page" | "claim_page" => of::<StateChanged>(),
        "list_versions" => of::<VersionList>(),
        "read_version" => with_part(of::<VersionView>()),
        "restore_page" => of::<Updated>(),
        "rotate_pin" => of::<PinRotated>(),
        _ => return None,
    };
    match schema {
        Value::Object(schema) => Some(schema),
        _ => None,
    }
}

/// `T`'s derived schema, with the schemas it refers to under `$defs`.
fn of<T: ToSchema>() -> Value {
    let mut referred = Vec::new();
    T::schemas(&mut referred);
    let mut schema = serde_json::to_value(T::schema()).expect("a schema serializes");
    if !referred.is_empty() {
        let defs: Map<String, Value> = referred
            .into_iter()
            .map(|(name, s)| (name, serde_json::to_value(s).expect("a schema serializes")))
            .collect();
        schema["$defs"] = Value::Object(defs);
    }
    local_refs(&mut schema);
    schema
}

/// Every `$ref` to `#/components/schemas/X` made `#/$defs/X`.
fn local_refs(value: &mut Value) {
    match value {
        Value::Object(object) => {
            for (key, inner) in object.iter_mut() {
                match inner {
                    Value::String(target) if key == "$ref" => {
                        if let Some(name) = target.strip_prefix("#/components/schemas/") {
                            *target = format!("#/$defs/{name}");
                        }
                    }
                    _ => local_refs(inner),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(local_refs),
        _ => {}
    }
}

/// `schema` (a page or a version, with a `body`) and, when a part was asked for,
/// where it lies.
fn with_part(mut schema: Value) -> Value {
    let part = json!({
        "offset": {"type": "integer", "minimum": 0,
                   "description": "Characters of the body before this part."},
        "total_chars": {"type": "integer", "minimum": 0,
                        "description": "Characters of the whole body."},
        "remaining_chars": {"type": "integer", "minimum": 0,
                            "description": "Characters of the body after this part."},
        "next_offset": {"type": ["integer", "null"], "minimum": 0,
                        "description": "The offset that reads on; null when nothing is left."},
    });
    if let (Some(Value::Object(props)), Value::Object(part)) = (schema.get_mut("properties"), part)
    {
        props.extend(part);
    }
    schema
}

/// The JSON answer of `/search`: a page of results, or (query too short) none
/// with a `message`.
fn search_answer() -> Value {
    let count = json!({"type": "integer", "minimum": 0});
    json!({
        "type": "object",
        "description": "One page of search results (the JSON answer of /search).",
        "properties": {
            "query": {"type": "string", "description": "The query as searched."},
            "results": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "slug": {"type": "string"},
                        "title": {"type": "string"},
                        "score": {"type": "number", "minimum": 0, "maximum": 100},
                        "updated_at": {"type": "integer",
                                       "description": "Unix seconds."},
                        "marks": {
                            "type": "array",
                            "description": "Matched words of title as [start, end) offsets \
                                in Unicode scalar values.",
                            "items": {"type": "array", "items": count,
                                      "minItems": 2, "maxItems": 2},
                        },
                    },
                    "required": ["slug", "title", "score", "updated_at", "marks"],
                },
            },
            "total": count,
            "truncated": {"type": "boolean"},
            "cache": {"type": "string"},
            "page": count,
            "pages": count,
            "capped": {"type": "boolean"},
            "close_matches": {"type": "boolean"},
            "message": {"type": "string",
                        "description": "Why nothing was searched (the query is too short)."},
        },
        "required": ["query", "results", "total", "truncated"],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `$ref` of `value`.
    fn refs(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Object(object) => {
                for (key, inner) in object {
                    match inner {
                        Value::String(target) if key == "$ref" => out.push(target.clone()),
                        _ => refs(inner, out),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }

    #[test]
    fn every_tool_has_an_object_schema_whose_refs_resolve_in_it() {
        for tool in super::super::tools::TOOLS.iter() {
            let schema = for_tool(&tool.name).unwrap_or_else(|| panic!("{}", tool.name));
            assert_eq!(schema["type"], "object", "{}", tool.name);
            let mut found = Vec::new();
            refs(&Value::Object(schema.clone()), &mut found);
            for target in found {
                let name = target
                    .strip_prefix("#/$defs/")
                    .unwrap_or_else(|| panic!("{target}"));
                assert!(
                    schema["$defs"].get(name).is_some(),
                    "{}: {target}",
                    tool.name
                );
            }
        }
        let version = for_tool("read_version").unwrap();
        assert!(
            version["properties"]["next_offset"].is_object(),
            "{version:?}"
        );
        assert!(version["properties"]["kind"].is_object(), "{version:?}");
        let list = for_tool("list_pages").unwrap();
        assert_eq!(
            list["properties"]["pages"]["items"]["$ref"],
            "#/$defs/PageListItem"
        );
    }
}
