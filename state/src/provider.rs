//! The provider's part of a workspace: typed and versioned by the provider, opaque to this crate.
//!
//! A provider keeps what it must remember between runs (the configuration as last applied, decisions
//! a plan took, facts about user resources) in one serde type of its own that implements
//! [`VersionedState`]. The workspace stores it as a [`ProviderState`]: the provider's name, the
//! version of the type that wrote it and the data as JSON. Reading it back
//! ([`Workspace::provider_state`]) runs the provider's migrations from the stored version up to the
//! current one, in memory; the next commit writes the current version
//! ([`Workspace::set_provider_state`]). State of a newer version than this trellis knows is refused
//! ([`StateError::NewerProviderState`]): an older binary must not plan against facts it cannot read.
//!
//! Workspaces written before provider state was versioned kept the Azure provider's facts at the top
//! level (`last_applied`, a string map `memory`); they are read as version 1 of provider
//! [`LEGACY_PROVIDER`] (see `WorkspaceRepr` in `lib.rs`).

use crate::{StateError, Workspace};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The provider of workspaces written before provider state was versioned: every trellis until then
/// planned Azure shoots only. Their `last_applied` and `memory` are that provider's version 1:
/// `{"last_applied": <value or null>, "memory": {<key>: <string>}}`.
pub const LEGACY_PROVIDER: &str = "azure";

/// A provider's state as stored: whose it is, the version of its schema, and the data.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ProviderState {
    /// The provider that wrote it (`azure`, …).
    pub provider: String,
    /// The version of the provider's state schema that wrote `data` (1 = the first).
    pub version: u32,
    pub data: Value,
}

/// One step of a provider's migration chain: the data of version N → the data of version N + 1, or a
/// message saying what in the old data cannot be carried over.
pub type Migration = fn(Value) -> Result<Value, String>;

/// A provider's typed state.
pub trait VersionedState: Serialize + DeserializeOwned {
    /// The provider's name, as stored in [`ProviderState::provider`].
    const PROVIDER: &'static str;
    /// The migration chain: `MIGRATIONS[i]` turns version `i + 1` into version `i + 2`. The current
    /// version — the one this type is — is therefore `MIGRATIONS.len() + 1`; adding a version is adding
    /// its migration here.
    const MIGRATIONS: &'static [Migration];

    /// The version this trellis writes.
    fn version() -> u32 {
        u32::try_from(Self::MIGRATIONS.len()).map_or(u32::MAX, |n| n.saturating_add(1))
    }
}

impl ProviderState {
    /// `state` as stored, at the current version.
    pub fn of<T: VersionedState>(state: &T) -> Result<ProviderState, serde_json::Error> {
        Ok(ProviderState {
            provider: T::PROVIDER.to_string(),
            version: T::version(),
            data: serde_json::to_value(state)?,
        })
    }

    /// The typed state, migrated from the stored version to the current one. `shoot` names the
    /// workspace in errors.
    pub fn read<T: VersionedState>(&self, shoot: &str) -> Result<T, StateError> {
        let corrupt = |detail: String| StateError::Corrupt { shoot: shoot.to_string(), detail };
        if self.provider != T::PROVIDER {
            return Err(StateError::ProviderChanged {
                shoot: shoot.to_string(),
                stored: self.provider.clone(),
                wanted: T::PROVIDER.to_string(),
            });
        }
        let current = T::version();
        if self.version > current {
            return Err(StateError::NewerProviderState {
                shoot: shoot.to_string(),
                provider: self.provider.clone(),
                version: self.version,
                supported: current,
            });
        }
        if self.version == 0 {
            return Err(corrupt(format!(
                "its {} provider state has version 0, which no trellis writes; inspect it with `trellis state pull {shoot}`",
                self.provider
            )));
        }
        let mut data = self.data.clone();
        for (from, step) in (self.version..current).zip(&T::MIGRATIONS[self.version as usize - 1..]) {
            data = step(data).map_err(|e| {
                corrupt(format!(
                    "its {} provider state cannot be migrated from version {from} to {}: {e}; inspect it with \
                     `trellis state pull {shoot}`",
                    self.provider,
                    from + 1
                ))
            })?;
        }
        serde_json::from_value(data).map_err(|e| {
            corrupt(format!(
                "its {} provider state (version {current}) does not parse: {e}; inspect it with `trellis state pull {shoot}`",
                self.provider
            ))
        })
    }
}

impl Workspace {
    /// The provider's typed state, migrated to the current version; `None` when nothing is stored (a
    /// new workspace, or one emptied by a destroy).
    pub fn provider_state<T: VersionedState>(&self) -> Result<Option<T>, StateError> {
        self.provider_state.as_ref().map(|s| s.read(&self.shoot)).transpose()
    }

    /// Replaces the provider's state (`None` forgets it), at the current version.
    pub fn set_provider_state<T: VersionedState>(&mut self, state: Option<&T>) -> Result<(), StateError> {
        self.provider_state = state.map(ProviderState::of).transpose().map_err(|e| StateError::Corrupt {
            shoot: self.shoot.clone(),
            detail: format!("its provider state does not serialise: {e}"),
        })?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Version 3 of a made-up provider: v1 had `n` as a string, v2 as a number, v3 calls it `count`.
    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Counter {
        count: u64,
    }

    fn v1_to_v2(mut v: Value) -> Result<Value, String> {
        let n = v["n"].as_str().ok_or("n is not a string")?.parse::<u64>().map_err(|e| e.to_string())?;
        v["n"] = json!(n);
        Ok(v)
    }

    fn v2_to_v3(v: Value) -> Result<Value, String> {
        Ok(json!({"count": v["n"]}))
    }

    impl VersionedState for Counter {
        const PROVIDER: &'static str = "counter";
        const MIGRATIONS: &'static [Migration] = &[v1_to_v2, v2_to_v3];
    }

    fn stored(version: u32, data: Value) -> Workspace {
        let mut ws = Workspace::new("shoot--p--s");
        ws.provider_state = Some(ProviderState { provider: "counter".into(), version, data });
        ws
    }

    #[test]
    fn older_provider_state_is_migrated_step_by_step() {
        assert_eq!(Counter::version(), 3);
        assert_eq!(stored(1, json!({"n": "7"})).provider_state::<Counter>().unwrap(), Some(Counter { count: 7 }));
        assert_eq!(stored(2, json!({"n": 7})).provider_state::<Counter>().unwrap(), Some(Counter { count: 7 }));
        assert_eq!(stored(3, json!({"count": 7})).provider_state::<Counter>().unwrap(), Some(Counter { count: 7 }));
        assert_eq!(Workspace::new("s").provider_state::<Counter>().unwrap(), None);
        let mut ws = stored(1, json!({"n": "7"}));
        let state = ws.provider_state::<Counter>().unwrap().unwrap();
        ws.set_provider_state(Some(&state)).unwrap();
        assert_eq!(
            ws.provider_state,
            Some(ProviderState { provider: "counter".into(), version: 3, data: json!({"count": 7}) })
        );
    }

    #[test]
    fn regression_newer_provider_state_is_refused_with_upgrade_advice() {
        let err = stored(4, json!({"count": 7, "phase": "rotating"})).provider_state::<Counter>().unwrap_err();
        assert!(matches!(err, StateError::NewerProviderState { version: 4, supported: 3, .. }), "{err:?}");
        let text = err.to_string();
        assert!(!text.contains('\n'), "{text}");
        assert!(
            text.contains("shoot--p--s") && text.contains("version 4") && text.contains("upgrade trellis"),
            "{text}"
        );
    }

    #[test]
    fn unreadable_provider_state_names_the_step_that_failed() {
        let err = stored(1, json!({"n": "seven"})).provider_state::<Counter>().unwrap_err().to_string();
        assert!(err.contains("from version 1 to 2") && err.contains("shoot--p--s"), "{err}");
        let err = stored(3, json!({"count": "x"})).provider_state::<Counter>().unwrap_err().to_string();
        assert!(err.contains("does not parse"), "{err}");
        let mut ws = stored(3, json!({"count": 1}));
        ws.provider_state.as_mut().unwrap().provider = "gcp".into();
        let err = ws.provider_state::<Counter>().unwrap_err().to_string();
        assert!(err.contains("recorded with provider type gcp"), "{err}");
        let err = stored(0, json!({})).provider_state::<Counter>().unwrap_err().to_string();
        assert!(err.contains("version 0"), "{err}");
    }

    /// A workspace as trellis wrote it before provider state was versioned (`trellis state pull` of
    /// commit c63fad5, shortened).
    const LEGACY: &str = r#"{"shoot":"shoot--dev--alpha","lineage":"l","serial":3,"last_applied":{"infrastructureConfig":{"networks":{"workers":"10.250.0.0/19"}}},"resources":{},"outputs":null,"memory":{"azure/overlay":"false"}}"#;

    #[test]
    fn regression_state_without_provider_version_is_read_as_version_1() {
        let ws: Workspace = serde_json::from_str(LEGACY).unwrap();
        assert_eq!(
            ws.provider_state,
            Some(ProviderState {
                provider: LEGACY_PROVIDER.into(),
                version: 1,
                data: json!({
                    "last_applied": {"infrastructureConfig": {"networks": {"workers": "10.250.0.0/19"}}},
                    "memory": {"azure/overlay": "false"},
                }),
            })
        );
        // Written back in the current form, and read again the same.
        let again: Workspace = serde_json::from_slice(&serde_json::to_vec(&ws).unwrap()).unwrap();
        assert_eq!(again, ws);
        // An empty legacy workspace (never applied, or destroyed) has no provider state.
        let empty = LEGACY
            .replace(
                r#""last_applied":{"infrastructureConfig":{"networks":{"workers":"10.250.0.0/19"}}}"#,
                "\"last_applied\":null",
            )
            .replace(r#"{"azure/overlay":"false"}"#, "{}");
        assert_eq!(serde_json::from_str::<Workspace>(&empty).unwrap().provider_state, None);
    }

    #[test]
    fn regression_pulled_file_of_an_earlier_trellis_passes_its_checksum() {
        let sum = crate::integrity::checksum_bytes(LEGACY.as_bytes());
        let file = format!(r#"{{"checksum": "{sum}", "workspace": {LEGACY}}}"#);
        let ws = crate::WorkspaceFile::parse("pulled.json", &file).unwrap();
        assert_eq!(ws.provider_state.unwrap().version, 1);
        let edited = file.replace("10.250.0.0/19", "10.250.0.0/18");
        assert!(crate::WorkspaceFile::parse("pulled.json", &edited)
            .unwrap_err()
            .to_string()
            .contains("does not match"));
    }
}
