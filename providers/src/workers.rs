//! Gardener-level rules on a Shoot's worker pools that the providers' Shoot validators share word
//! for word: `ValidateWorkersUpdate` (provider-azure's and provider-gcp's
//! `pkg/apis/<provider>/validation/shoot.go` are the same function), with upstream's field paths
//! (`spec.provider.workers[i]…`) and messages.
//!
//! - [`validate_workers_update`]: a worker's zones may only be appended to; with an in-place update
//!   strategy its `providerConfig` and `dataVolumes` are immutable.
//!
//! Bad values that are not plain strings render as JSON, as apimachinery ≥ 0.34 does; upstream
//! validates the internal API types, whose JSON field names are the Go names.

use serde_json::{json, Value as Json};

use crate::field::{ErrorList, FieldError, Path, Value, FIELD_IMMUTABLE_ERROR_MSG};
use crate::manifest::{DataVolume, Worker};

/// `ValidateWorkersUpdate(oldWorkers, newWorkers, fldPath)`: each new worker against the old
/// worker of the same name.
pub fn validate_workers_update(old: &[Worker], new: &[Worker], fld: &Path) -> ErrorList {
    let mut errs = Vec::new();
    for (i, new_worker) in new.iter().enumerate() {
        let Some(old_worker) = old.iter().find(|w| w.name == new_worker.name) else { continue };
        let path = fld.index(i);
        if should_enforce_immutability(&new_worker.zones, &old_worker.zones) && new_worker.zones != old_worker.zones {
            errs.push(FieldError::invalid_value(
                path.child("zones"),
                strings_value(&new_worker.zones),
                FIELD_IMMUTABLE_ERROR_MSG,
            ));
        }
        // Changing these changes the worker pool hash; neither machine-controller-manager nor
        // gardener-node-agent can apply that in place.
        if new_worker.has_in_place_update_strategy() {
            if !semantic_eq(new_worker.provider_config.as_ref(), old_worker.provider_config.as_ref()) {
                errs.push(FieldError::invalid_value(
                    path.child("providerConfig"),
                    new_worker.provider_config.as_ref().map_or_else(Value::null, Value::json),
                    "providerConfig is immutable when update strategy is in-place",
                ));
            }
            if new_worker.data_volumes != old_worker.data_volumes {
                errs.push(FieldError::invalid_value(
                    path.child("dataVolumes"),
                    data_volumes_value(&new_worker.data_volumes),
                    "dataVolumes are immutable when update strategy is in-place",
                ));
            }
        }
    }
    errs
}

/// A `[]string` as upstream renders it: JSON, `null` when empty (an omitted list is nil).
fn strings_value(items: &[String]) -> Value {
    if items.is_empty() {
        return Value::raw("null");
    }
    Value::json(&json!(items))
}

/// Gardener's `ShouldEnforceImmutability(new, old)`: false only when `new` is `old` with zones
/// appended at the end.
pub fn should_enforce_immutability(new: &[String], old: &[String]) -> bool {
    !(new.len() > old.len() && new[..old.len()] == *old)
}

/// `apiequality.Semantic.DeepEqual` of two optional raw extensions: a missing one equals `null`.
fn semantic_eq(a: Option<&Json>, b: Option<&Json>) -> bool {
    a.unwrap_or(&Json::Null) == b.unwrap_or(&Json::Null)
}

/// `[]core.DataVolume` as upstream renders it: JSON of the internal type, whose field names are
/// the Go names.
fn data_volumes_value(volumes: &[DataVolume]) -> Value {
    if volumes.is_empty() {
        return Value::raw("null");
    }
    let items: Vec<Json> = volumes
        .iter()
        .map(|v| {
            json!({
                "Name": v.name,
                "Type": v.type_,
                "VolumeSize": v.size,
                "Encrypted": v.encrypted,
            })
        })
        .collect();
    Value::json(&Json::Array(items))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn immutability_is_enforced_unless_zones_were_appended() {
        assert!(!should_enforce_immutability(&s(&["1", "2", "3"]), &s(&["1", "2"])));
        assert!(should_enforce_immutability(&s(&["1", "2"]), &s(&["1", "2"])));
        assert!(should_enforce_immutability(&s(&["2", "1", "3"]), &s(&["1", "2"])));
        assert!(should_enforce_immutability(&s(&["1"]), &s(&["1", "2"])));
    }
}
