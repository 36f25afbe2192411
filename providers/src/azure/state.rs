//! What the Azure provider remembers about a shoot between runs ([`AzureState`]), typed and versioned
//! (stored by the state crate as a [`trellis_state::ProviderState`], see [`VersionedState`]).
//!
//! Versions:
//! - **1** (trellis before issue #8; no version stored): `{"last_applied": <value or null>, "memory":
//!   {<key>: <string>}}` with the memory keys `azure/overlay` (`"true"`/`"false"`),
//!   `azure/migrated-zone` (a zone number), `azure/byo/subnet-cidr`, `azure/byo/nsg-id` and
//!   `azure/byo/route-table-id` (`""` for "no route table").
//! - **2**: [`AzureState`] — the last-applied configuration typed, each memory key a field.

use super::api::InfrastructureConfig;
use crate::manifest::{Networking, Worker};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use trellis_state::{Migration, VersionedState};

/// The Azure provider's state of one shoot (version 2).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AzureState {
    /// The configuration as last applied; `None` before the first successful apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_applied: Option<LastApplied>,
    /// Whether the CNI runs an overlay, as the plan decided it ([`super::overlay::overlay_enabled`] of
    /// the mutated networking), so the artifacts rendered after the apply and a later destroy agree with
    /// the plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlay: Option<bool>,
    /// The zone that kept the single-subnet names after a single → multi-subnet migration (upstream's
    /// `migration.azure.provider.extensions.gardener.cloud/zone` annotation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub migrated_zone: Option<i32>,
    /// What the BYO subnet looked like at the last successful apply (user-managed egress only), to
    /// report drift ([`super::preflight::drift`]).
    #[serde(default, skip_serializing_if = "ByoFacts::is_empty")]
    pub byo: ByoFacts,
}

/// The shoot's spec as last applied: the InfrastructureConfig, the networking as provider-azure's
/// mutator left it, and the workers. Every update rule and the mutator read the old shoot from here.
/// Other keys are ignored, as trellis always read this value (a key it does not know is no old spec).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LastApplied {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infrastructure_config: Option<InfrastructureConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub networking: Option<Networking>,
    /// `None` in a state written before trellis kept the workers: then there is no old spec and the
    /// update rules of `spec.networking` and the workers are skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers: Option<Vec<Worker>>,
}

/// The BYO subnet's facts at the last apply: each `None` when it was not known.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ByoFacts {
    /// The subnet's prefixes as [`super::prefixes::SubnetPrefixes::display`] shows them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subnet_cidr: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nsg_id: Option<String>,
    /// `Some("")`: the subnet had no route table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route_table_id: Option<String>,
}

impl ByoFacts {
    pub fn is_empty(&self) -> bool {
        self == &ByoFacts::default()
    }

    /// Takes every fact `now` knows; keeps the others as they were.
    pub fn update(&mut self, now: ByoFacts) {
        let ByoFacts { subnet_cidr, nsg_id, route_table_id } = now;
        self.subnet_cidr = subnet_cidr.or(self.subnet_cidr.take());
        self.nsg_id = nsg_id.or(self.nsg_id.take());
        self.route_table_id = route_table_id.or(self.route_table_id.take());
    }
}

impl VersionedState for AzureState {
    const PROVIDER: &'static str = "azure";
    const MIGRATIONS: &'static [Migration] = &[migrate_v1_to_v2];
}

/// Version 1 → 2: the memory's string keys become typed fields; the last-applied value is kept as it
/// was (version 2 reads the same JSON into [`LastApplied`]). An unknown memory key is refused rather
/// than dropped: it would be a fact this trellis does not know how to keep.
pub fn migrate_v1_to_v2(v1: Value) -> Result<Value, String> {
    let Value::Object(mut v1) = v1 else { return Err("expected an object".to_string()) };
    let mut v2 = Map::new();
    match v1.remove("last_applied") {
        None | Some(Value::Null) => {}
        Some(applied) => {
            v2.insert("last_applied".to_string(), applied);
        }
    }
    let memory = match v1.remove("memory") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m,
        Some(other) => return Err(format!("memory is not a map of strings: {other}")),
    };
    if let Some(extra) = v1.keys().next() {
        return Err(format!("unknown field {extra:?}"));
    }
    let mut byo = Map::new();
    for (key, value) in memory {
        let Value::String(text) = value else { return Err(format!("memory key {key:?} is not a string: {value}")) };
        match key.as_str() {
            "azure/overlay" => match text.as_str() {
                "true" => v2.insert("overlay".to_string(), Value::Bool(true)),
                "false" => v2.insert("overlay".to_string(), Value::Bool(false)),
                _ => return Err(format!("memory key {key:?} is {text:?}, expected \"true\" or \"false\"")),
            },
            "azure/migrated-zone" => {
                let zone: i32 =
                    text.parse().map_err(|_| format!("memory key {key:?} is {text:?}, expected a zone number"))?;
                v2.insert("migrated_zone".to_string(), zone.into())
            }
            "azure/byo/subnet-cidr" => byo.insert("subnet_cidr".to_string(), Value::String(text)),
            "azure/byo/nsg-id" => byo.insert("nsg_id".to_string(), Value::String(text)),
            "azure/byo/route-table-id" => byo.insert("route_table_id".to_string(), Value::String(text)),
            _ => return Err(format!("unknown memory key {key:?}")),
        };
    }
    if !byo.is_empty() {
        v2.insert("byo".to_string(), Value::Object(byo));
    }
    Ok(Value::Object(v2))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use trellis_state::{ProviderState, Workspace};

    fn v1(data: Value) -> Workspace {
        let mut ws = Workspace::new("shoot--dev--alpha");
        ws.provider_state = Some(ProviderState { provider: "azure".into(), version: 1, data });
        ws
    }

    #[test]
    fn regression_version_1_memory_keys_become_typed_fields() {
        let ws = v1(json!({
            "last_applied": {"infrastructureConfig": {"networks": {"workers": "10.250.0.0/19"}}},
            "memory": {
                "azure/overlay": "true",
                "azure/migrated-zone": "2",
                "azure/byo/subnet-cidr": "10.0.0.0/24",
                "azure/byo/nsg-id": "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/networkSecurityGroups/nsg",
                "azure/byo/route-table-id": "",
            },
        }));
        let state: AzureState = ws.provider_state().unwrap().unwrap();
        assert_eq!(state.overlay, Some(true));
        assert_eq!(state.migrated_zone, Some(2));
        assert_eq!(state.byo.subnet_cidr.as_deref(), Some("10.0.0.0/24"));
        assert_eq!(state.byo.route_table_id.as_deref(), Some(""));
        let applied = state.last_applied.unwrap();
        assert_eq!(applied.infrastructure_config.unwrap().networks.workers.as_deref(), Some("10.250.0.0/19"));
        assert_eq!((applied.networking, applied.workers), (None, None));
        // Nothing remembered: an empty state.
        assert_eq!(
            v1(json!({"last_applied": null, "memory": {}})).provider_state::<AzureState>().unwrap(),
            Some(AzureState::default())
        );
    }

    #[test]
    fn regression_version_1_with_an_unknown_memory_key_is_refused_not_dropped() {
        let err = v1(json!({"last_applied": null, "memory": {"azure/ca-phase": "rotating"}}))
            .provider_state::<AzureState>()
            .unwrap_err()
            .to_string();
        assert!(err.contains("from version 1 to 2") && err.contains("azure/ca-phase"), "{err}");
        let err =
            v1(json!({"memory": {"azure/overlay": "yes"}})).provider_state::<AzureState>().unwrap_err().to_string();
        assert!(err.contains("expected \"true\" or \"false\""), "{err}");
    }
}
