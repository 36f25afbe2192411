//! Whether a shoot's CNI runs an overlay (then the CCM's route controller is off:
//! `--configure-cloud-routes=false` in user-managed egress, and no route table is required), as it
//! is decided on Azure when `spec.networking.providerConfig` does not say:
//!
//! 1. gardener-extension-provider-azure's Shoot mutator (`pkg/admission/mutator/shoot.go`,
//!    `mutateNetworkConfig`, ported by [`mutate_networking`]) fills `overlay` into the provider
//!    config of a Cilium shoot (or one without a type) that has workers: `{"enabled": false}` on
//!    create, the old shoot's `overlay` on update (nothing when the old shoot had none either).
//! 2. What is still unset takes the networking extension's own default ([`overlay_enabled`]):
//!    - **Cilium** (gardener-extension-networking-cilium): a VXLAN tunnel (`tunnel: vxlan` in its
//!      chart defaults; `TunnelMode` is only changed when `overlay` is given) — overlay **on**, for
//!      every IP family. Reached only by a shoot whose old version had no `overlay` either (a
//!      shoot that had no workers, say).
//!    - **Calico** (gardener-extension-networking-calico) would default to IP-in-IP for IPv4, but
//!      provider-azure's Network webhook (`pkg/webhook/network`) sets `backend: none` in every
//!      Calico network config on Azure, which turns IP-in-IP off (`ipv4.mode: Never`) — overlay
//!      **off**, whatever the IP families. `overlay.enabled: true` is refused by validation.
//!    - any other CNI: trellis knows no default and assumes no overlay (the route controller runs
//!      and, in user-managed egress, a route table is required).
//!
//! trellis keeps the mutated networking in the last-applied configuration, so "the old shoot" is
//! what the last apply ran with. A state written before trellis kept it counts as no old shoot:
//! that apply ran without overlay unless `overlay.enabled: true` was given.

use serde_json::{json, Value as Json};

use crate::azure::validation::shoot::decode_network_config;
use crate::manifest::Networking;

/// The CNI types the mutator handles: Cilium, and a shoot without a type.
fn is_mutated_type(networking: &Networking) -> bool {
    matches!(networking.type_.as_deref(), None | Some("cilium"))
}

/// The `overlay` entry of a provider config, unless absent or `null` (Go's `== nil`).
fn overlay_of(networking: &Networking) -> Option<&Json> {
    networking.provider_config.as_ref()?.as_object()?.get("overlay").filter(|v| !v.is_null())
}

/// provider-azure's `mutateNetworkConfig` for a shoot with workers: `new` with `overlay` filled in
/// from `old` (update) or `{"enabled": false}` (create, `old` is `None`). A provider config that is
/// not a JSON object is left as it is (validation reports it).
pub fn mutate_networking(new: &Networking, old: Option<&Networking>) -> Networking {
    let mut out = new.clone();
    if !is_mutated_type(new) {
        return out;
    }
    let Ok(mut config) = decode_network_config(new.provider_config.as_ref().unwrap_or(&Json::Null)) else {
        return out;
    };
    if config.get("overlay").is_none_or(Json::is_null) {
        match old {
            None => {
                config.insert("overlay".to_string(), json!({"enabled": false}));
            }
            Some(old) => {
                if let Some(overlay) = overlay_of(old) {
                    config.insert("overlay".to_string(), overlay.clone());
                }
            }
        }
    }
    out.provider_config = Some(Json::Object(config));
    out
}

/// Whether the CNI runs an overlay: `providerConfig.overlay.enabled` when `overlay` is given (an
/// `overlay` without `enabled` is `false`, as the extensions decode it), else the extension's
/// default on Azure (see the module docs). Call it on the networking after [`mutate_networking`].
pub fn overlay_enabled(networking: &Networking) -> bool {
    match overlay_of(networking) {
        Some(overlay) => overlay.get("enabled").and_then(Json::as_bool).unwrap_or(false),
        None => networking.type_.as_deref() == Some("cilium"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(type_: Option<&str>, provider_config: Option<Json>) -> Networking {
        Networking { type_: type_.map(str::to_string), provider_config, ..Default::default() }
    }

    #[test]
    fn mutator_as_upstreams_unit_tests() {
        // "should disable overlay for a new shoot"
        let m = mutate_networking(&net(Some("cilium"), None), None);
        assert_eq!(m.provider_config, Some(json!({"overlay": {"enabled": false}})));
        // "... with non empty network config"
        let m = mutate_networking(&net(Some("cilium"), Some(json!({"foo": {"enabled": true}}))), None);
        assert_eq!(m.provider_config, Some(json!({"foo": {"enabled": true}, "overlay": {"enabled": false}})));
        // "should take overlay field value from old shoot when unspecified in new shoot"
        let old = net(Some("cilium"), Some(json!({"overlay": {"enabled": true}})));
        let m = mutate_networking(&net(Some("cilium"), None), Some(&old));
        assert_eq!(m.provider_config, Some(json!({"overlay": {"enabled": true}})));
        // "should not add the overlay field for when unspecified in new and old shoot"
        let m = mutate_networking(&net(Some("cilium"), None), Some(&net(Some("cilium"), None)));
        assert_eq!(m.provider_config, Some(json!({})));
        // Calico and other CNIs are left alone.
        let calico = net(Some("calico"), None);
        assert_eq!(mutate_networking(&calico, None), calico);
    }

    #[test]
    fn extension_defaults_when_overlay_is_unset() {
        assert!(overlay_enabled(&net(Some("cilium"), Some(json!({})))));
        assert!(!overlay_enabled(&net(Some("calico"), None)));
        assert!(!overlay_enabled(&net(Some("other"), None)));
        assert!(!overlay_enabled(&net(Some("cilium"), Some(json!({"overlay": {}})))));
        assert!(overlay_enabled(&net(Some("calico"), Some(json!({"overlay": {"enabled": true}})))));
    }
}
