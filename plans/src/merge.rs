//! RFC 7386 JSON merge patch: how a node's patch becomes the object it writes. The executor applies it
//! (`trellis_planner::json` re-exports it) and the Terraform JSON renderer shows its result, so both
//! agree on what an update leaves behind by construction.

use serde_json::{Map, Value};

/// Applies a JSON merge patch (RFC 7386): objects merge key by key, `null` removes a key, anything
/// else replaces.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch_map) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(target_map) = target else { return };
    for (key, value) in patch_map {
        if value.is_null() {
            target_map.remove(key);
        } else {
            merge_patch(target_map.entry(key.clone()).or_insert(Value::Null), value);
        }
    }
}

/// The object a merge patch makes of `base` (`None`: written onto an empty object, as a create is).
pub fn merged(base: Option<&Value>, patch: &Value) -> Value {
    let mut out = base.cloned().unwrap_or_else(|| Value::Object(Map::new()));
    merge_patch(&mut out, patch);
    out
}
