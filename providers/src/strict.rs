//! Booleans and integers decoded as Kubernetes decodes them: a string is never a boolean or a number.
//!
//! The API server reads JSON (kubectl turns YAML into JSON first): `"zoned": "yes"` or
//! `"minimum": "3"` is a string for a bool or int32 field and is refused ("cannot unmarshal string
//! into Go struct field … of type bool"). YAML's quoted scalars are strings in that translation, so
//! `zoned: "true"` and `minimum: "3"` are refused too, while plain `zoned: true` and `minimum: 3`
//! are a boolean and a number. serde-saphyr parses a quoted scalar into a bool or an integer field
//! as if it were plain (and has no option to stop that), so every bool and integer field of the
//! manifest types reads its value through these functions (`#[serde(deserialize_with = …)]`):
//! they ask the parser what the value is (`deserialize_any`: a quoted scalar is a string) and take
//! only a boolean or an integer. The same works for the JSON in state and plan files.
//!
//! Plain YAML 1.1 booleans (`yes`, `on`) stay booleans, as they are in Kubernetes' YAML 1.1 reader.
//! A null is refused for a field that is not optional, as it was before.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserializer, Unexpected, Visitor};

/// The words the manifest loader uses for what a field expects (also in its own parse errors).
pub use trellis_planner::yaml::expected_in_words;

struct BoolVisitor;

impl<'de> Visitor<'de> for BoolVisitor {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&expected_in_words("bool"))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<bool, E> {
        Ok(v)
    }
}

/// A bool field: a boolean only.
pub fn bool<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    d.deserialize_any(BoolVisitor)
}

/// An optional bool field: a boolean, or null for none.
pub fn opt_bool<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    d.deserialize_any(Optional(BoolVisitor))
}

struct IntVisitor<T>(PhantomData<T>);

impl<T> IntVisitor<T> {
    fn type_name() -> &'static str {
        let full = std::any::type_name::<T>();
        full.rsplit("::").next().unwrap_or(full)
    }
}

impl<'de, T: TryFrom<i64> + TryFrom<u64>> Visitor<'de> for IntVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&expected_in_words(Self::type_name()))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        T::try_from(v).map_err(|_| E::invalid_value(Unexpected::Signed(v), &self))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        T::try_from(v).map_err(|_| E::invalid_value(Unexpected::Unsigned(v), &self))
    }
}

/// An integer field (`i32`, `i64`): an integer in range only.
pub fn int<'de, D: Deserializer<'de>, T: TryFrom<i64> + TryFrom<u64>>(d: D) -> Result<T, D::Error> {
    d.deserialize_any(IntVisitor(PhantomData))
}

/// An optional integer field: an integer in range, or null for none.
pub fn opt_int<'de, D: Deserializer<'de>, T: TryFrom<i64> + TryFrom<u64>>(d: D) -> Result<Option<T>, D::Error> {
    d.deserialize_any(Optional(IntVisitor(PhantomData)))
}

/// `V`'s value, or `None` for null.
struct Optional<V>(V);

impl<'de, V: Visitor<'de>> Visitor<'de> for Optional<V> {
    type Value = Option<V::Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(f)?;
        f.write_str(" or null")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        self.0.visit_bool(v).map(Some)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        self.0.visit_i64(v).map(Some)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        self.0.visit_u64(v).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Fields {
        #[serde(default, deserialize_with = "bool")]
        b: bool,
        #[serde(default, deserialize_with = "opt_bool")]
        ob: Option<bool>,
        #[serde(default, deserialize_with = "int")]
        i: i32,
        #[serde(default, deserialize_with = "opt_int")]
        oi: Option<i32>,
    }

    fn json(s: &str) -> Result<Fields, String> {
        serde_json::from_str(s).map_err(|e| e.to_string())
    }

    #[test]
    fn json_takes_booleans_and_integers_only() {
        assert_eq!(
            json(r#"{"b": true, "ob": false, "i": -3, "oi": 7}"#),
            Ok(Fields { b: true, ob: Some(false), i: -3, oi: Some(7) })
        );
        assert_eq!(json(r#"{"ob": null, "oi": null}"#), Ok(Fields { b: false, ob: None, i: 0, oi: None }));
        assert!(json(r#"{"b": "true"}"#).unwrap_err().contains("expected a boolean (true or false)"));
        assert!(json(r#"{"i": "3"}"#).unwrap_err().contains("expected an integer (i32)"));
        assert!(json(r#"{"i": 3.0}"#).is_err());
        assert!(json(r#"{"i": 4294967296}"#).is_err());
        assert!(json(r#"{"oi": "3"}"#).unwrap_err().contains("expected an integer (i32) or null"));
    }
}
