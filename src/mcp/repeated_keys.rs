//! Keys given twice in one JSON object. RFC 8259 leaves their meaning open and serde
//! keeps the last one silently; the HTTP API refuses them (`duplicate field`), so
//! `/mcp` looks for them in the raw body before anything deduplicates it
//! ([`super::envelope`]).

use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;

use serde::de::{DeserializeSeed, Error as _, MapAccess, SeqAccess, Visitor};

/// A key met twice in one object, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repeated {
    /// Members from the message down to the object, e.g. `["params", "arguments"]`.
    pub path: Vec<String>,
    /// The key itself.
    pub key: String,
}

impl Repeated {
    /// Whether it is inside the message's `params`.
    pub fn in_params(&self) -> bool {
        self.path.first().is_some_and(|first| first == "params")
    }
}

impl fmt::Display for Repeated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.path.as_slice() {
            [] => write!(f, "`{}`", self.key),
            path => write!(f, "`{}` in `{}`", self.key, path.join(".")),
        }
    }
}

/// The first key repeated in any object of `json` (which already parsed).
pub fn first_repeated_key(json: &[u8]) -> Option<Repeated> {
    let found = RefCell::new(None);
    let mut de = serde_json::Deserializer::from_slice(json);
    let _ = Walk {
        path: &[],
        found: &found,
    }
    .deserialize(&mut de);
    found.into_inner()
}

/// Visits every value, remembering the first repeated key (and failing there, to
/// stop the walk).
struct Walk<'a> {
    path: &'a [String],
    found: &'a RefCell<Option<Repeated>>,
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut path = self.path.to_vec();
        path.push(String::new());
        for index in 0.. {
            *path.last_mut().expect("pushed") = format!("{index}");
            let walk = Walk {
                path: &path,
                found: self.found,
            };
            if seq.next_element_seed(walk)?.is_none() {
                break;
            }
        }
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if seen.contains(&key) {
                *self.found.borrow_mut() = Some(Repeated {
                    path: self.path.to_vec(),
                    key,
                });
                return Err(A::Error::custom("repeated key"));
            }
            let mut path = self.path.to_vec();
            path.push(key.clone());
            map.next_value_seed(Walk {
                path: &path,
                found: self.found,
            })?;
            seen.insert(key);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_keys_are_found_at_any_depth_and_named_by_path() {
        let found = |json: &str| first_repeated_key(json.as_bytes()).map(|r| r.to_string());
        assert_eq!(found(r#"{"a": 1, "b": {"c": [1, {"d": 2}]}}"#), None);
        assert_eq!(found(r#"{"a": 1, "a": 2}"#).as_deref(), Some("`a`"));
        assert_eq!(
            found(r#"{"params": {"arguments": {"title": "x", "pin": "1", "title": "y"}}}"#)
                .as_deref(),
            Some("`title` in `params.arguments`")
        );
        assert_eq!(
            found(r#"{"p": [{"k": 1}, {"k": 1, "k": 2}]}"#).as_deref(),
            Some("`k` in `p.1`")
        );
    }
}
