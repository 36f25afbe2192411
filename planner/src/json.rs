//! Small JSON helpers: RFC 7386 merge patch, JSON pointers, and attribute changes.

use crate::ids::IdScheme;
use serde_json::Value;
use trellis_plans::Change;

/// RFC 7386 merge patch; it lives with the plan document, whose Terraform JSON renders its result.
pub use trellis_plans::merge::merge_patch;

/// Compares references (`…/id` attributes) as the provider's id scheme does (ARM: case-insensitively,
/// GCE: exactly); other values exactly.
pub fn same_value_in(ids: &dyn IdScheme, path: &str, a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::String(x), Value::String(y)) if path.ends_with("/id") => ids.same(x, y),
        (Value::Array(xs), Value::Array(ys)) => {
            xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| same_value_in(ids, path, x, y))
        }
        (Value::Object(xm), Value::Object(ym)) => {
            xm.len() == ym.len()
                && xm
                    .iter()
                    .all(|(k, xv)| ym.get(k).is_some_and(|yv| same_value_in(ids, &format!("{path}/{k}"), xv, yv)))
        }
        _ => a == b,
    }
}

/// The attribute changes a merge patch makes to `current` (`None`: the resource does not exist),
/// references compared through `ids`: one [`Change`] per leaf of the patch (an array, a
/// scalar, an empty object; `null`: must be absent), in the patch's order, whose value differs from what `current` holds at that JSON pointer.
pub fn changes_in(ids: &dyn IdScheme, current: Option<&Value>, patch: &Value) -> Vec<Change> {
    let mut out = Vec::new();
    let mut path = String::new();
    walk_changes(ids, current, patch, &mut path, &mut out);
    out
}

/// [`changes_in`] below `path`: `current` is what `current` holds at `path` (as `Value::pointer`
/// finds it), `patch` the patch's value there. Walks both at once, so nothing is copied but a change.
fn walk_changes(ids: &dyn IdScheme, current: Option<&Value>, patch: &Value, path: &mut String, out: &mut Vec<Change>) {
    match patch {
        Value::Object(map) if !map.is_empty() => {
            for (key, child) in map {
                let len = path.len();
                path.push('/');
                push_escaped(path, key);
                walk_changes(ids, current.and_then(|c| pointer_child(c, key)), child, path, out);
                path.truncate(len);
            }
        }
        after => {
            let after = if after.is_null() { None } else { Some(after) };
            let equal = match (current, after) {
                (None, None) => true,
                (Some(b), Some(a)) => same_value_in(ids, path, b, a),
                _ => false,
            };
            if !equal {
                out.push(Change { path: path.clone(), before: current.cloned(), after: after.cloned() });
            }
        }
    }
}

/// A JSON pointer's reference token: `~` as `~0`, `/` as `~1` (RFC 6901).
fn push_escaped(path: &mut String, key: &str) {
    if key.contains(['~', '/']) {
        path.push_str(&key.replace('~', "~0").replace('/', "~1"));
    } else {
        path.push_str(key);
    }
}

/// The child `key` of `v` as `Value::pointer` resolves one reference token: an object's member, an
/// array's element by a decimal index without leading zeros, nothing in a scalar.
fn pointer_child<'v>(v: &'v Value, key: &str) -> Option<&'v Value> {
    match v {
        Value::Object(map) => map.get(key),
        Value::Array(items) => {
            if key.starts_with('+') || (key.starts_with('0') && key.len() != 1) {
                return None;
            }
            items.get(key.parse::<usize>().ok()?)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::ArmIds;
    use serde_json::json;

    #[test]
    fn merge_patch_keeps_unmanaged_attributes_and_removes_nulls() {
        let mut live = json!({"properties": {"routes": [{"name": "node-1"}], "natGateway": {"id": "x"}}});
        merge_patch(&mut live, &json!({"location": "westeurope", "properties": {"natGateway": null}}));
        assert_eq!(live, json!({"properties": {"routes": [{"name": "node-1"}]}, "location": "westeurope"}));
    }

    #[test]
    fn changes_report_only_differing_leaves_and_ignore_id_case() {
        let live = json!({"properties": {"addressPrefix": "10.0.0.0/16", "routeTable": {"id": "/A/B"}}});
        let patch = json!({"properties": {"addressPrefix": "10.1.0.0/16", "routeTable": {"id": "/a/b"}}});
        let c = changes_in(&ArmIds, Some(&live), &patch);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].path, "/properties/addressPrefix");
        assert_eq!(c[0].before, Some(json!("10.0.0.0/16")));
    }

    #[test]
    fn regression_references_differing_only_in_case_are_no_change_for_arm_a_change_for_gce() {
        let live = json!({"properties": {"network": {"id": "projects/p/global/networks/Net"}}});
        let patch = json!({"properties": {"network": {"id": "projects/p/global/networks/net"}}});
        assert!(changes_in(&ArmIds, Some(&live), &patch).is_empty());
        assert_eq!(changes_in(&crate::ids::GceIds, Some(&live), &patch).len(), 1);
    }

    /// The leaves of a merge patch as (JSON pointer, value) pairs. Arrays and scalars are leaves;
    /// `null` leaves mean "must be absent".
    fn patch_leaves(patch: &Value) -> Vec<(String, Value)> {
        let mut out = Vec::new();
        collect_leaves(patch, String::new(), &mut out);
        out
    }

    fn collect_leaves(v: &Value, prefix: String, out: &mut Vec<(String, Value)>) {
        match v {
            Value::Object(map) if !map.is_empty() => {
                for (k, child) in map {
                    let escaped = k.replace('~', "~0").replace('/', "~1");
                    collect_leaves(child, format!("{prefix}/{escaped}"), out);
                }
            }
            _ => out.push((prefix, v.clone())),
        }
    }

    /// [`changes_in`] as it is defined: every leaf of the patch, looked up in `current` by its JSON
    /// pointer.
    fn changes_by_pointer(ids: &dyn IdScheme, current: Option<&Value>, patch: &Value) -> Vec<Change> {
        let mut out = Vec::new();
        for (path, after) in patch_leaves(patch) {
            let before = current.and_then(|c| c.pointer(&path)).cloned();
            let after = if after.is_null() { None } else { Some(after) };
            let equal = match (&before, &after) {
                (None, None) => true,
                (Some(b), Some(a)) => same_value_in(ids, &path, b, a),
                _ => false,
            };
            if !equal {
                out.push(Change { path, before, after });
            }
        }
        out
    }

    /// JSON values over a few keys that matter to pointers: `~` and `/`, array indices (`0`, `1`,
    /// `01`, `+1`), `id`.
    fn json_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let key = prop::sample::select(vec!["a", "id", "0", "1", "01", "+1", "x~y", "p/q", "~1", ""]);
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            (0..3i64).prop_map(Value::from),
            prop::sample::select(vec!["v", "V", "projects/p/global/networks/n", "projects/p/global/networks/N"])
                .prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 32, 4, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                prop::collection::vec((key.clone(), inner), 0..4)
                    .prop_map(|kv| Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())),
            ]
        })
    }

    proptest::proptest! {
        /// The walk finds exactly the changes the definition does, in the same order, for both id schemes.
        #[test]
        fn changes_walk_agrees_with_the_pointer_definition(current in proptest::option::of(json_value()), patch in json_value()) {
            for ids in [&ArmIds as &dyn IdScheme, &crate::ids::GceIds] {
                proptest::prop_assert_eq!(
                    changes_in(ids, current.as_ref(), &patch),
                    changes_by_pointer(ids, current.as_ref(), &patch)
                );
            }
        }
    }

    #[test]
    fn regression_changes_resolve_array_indices_and_escaped_keys_as_pointers_do() {
        let live = json!({"a": ["x", "y"], "p/q": {"~": 1}});
        let patch = json!({"a": {"1": "y", "01": "y", "+1": "y"}, "p/q": {"~": 2}});
        let paths: Vec<String> = changes_in(&ArmIds, Some(&live), &patch).into_iter().map(|c| c.path).collect();
        assert_eq!(paths, ["/a/01", "/a/+1", "/p~1q/~0"]);
    }

    #[test]
    fn null_leaf_on_absent_attribute_is_no_change() {
        assert!(changes_in(&ArmIds, Some(&json!({})), &json!({"properties": {"natGateway": null}})).is_empty());
        assert_eq!(changes_in(&ArmIds, None, &json!({"a": 1})).len(), 1);
    }
}
