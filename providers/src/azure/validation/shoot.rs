//! Admission validation of the Shoot itself for Azure: gardener-extension-provider-azure's
//! `pkg/apis/azure/validation/shoot.go`, as its Shoot validator webhook
//! (`pkg/admission/validator/shoot.go`) calls it, with upstream's field paths (`spec.networking…`,
//! `spec.provider.workers[i]…`) and messages:
//!
//! - [`validate_networking`] (`ValidateNetworking`, create and update): a nodes CIDR is required;
//!   Calico with `overlay.enabled: true` is forbidden; IPv6 single-stack and dual-stack are not
//!   supported.
//! - [`validate_workers`] (`ValidateWorkers`, create and update): every worker has a `volume` with
//!   a `type` and a `size` and no `encrypted`; at most 64 `dataVolumes`, each with a `type` and a
//!   `size` and no `encrypted`; zones on every worker of a zoned cluster and on none of a non-zoned
//!   one, each zone once per worker, and (multi-subnet layout) only zones of
//!   `infrastructureConfig.networks.zones`.
//! - [`validate_workers_update`] (`ValidateWorkersUpdate`, update only): a worker's zones may only be
//!   appended to; with an in-place update strategy its `providerConfig` and `dataVolumes` are
//!   immutable.
//!
//! The webhook skips a workerless shoot entirely; so does [`crate::azure::validate`].
//!
//! Bad values that are not plain strings, numbers or booleans render as JSON, as apimachinery
//! 0.35 (upstream's) does: `["IPv4","IPv6"]`, `["1","2"]`; upstream validates the internal API
//! types, whose JSON field names are the Go names (`[{"Name":"data","Type":"Standard_LRS",…}]`).
//!
//! Where upstream's Go code panics (a Calico `overlay` without a boolean `enabled` makes
//! `overlay["enabled"].(bool)` fail, and the webhook answers with the recovered panic), trellis
//! reports a field error at `spec.networking.providerConfig.overlay.enabled` instead.

use std::collections::BTreeSet;

use serde_json::Value as Json;

use crate::azure::api::{infrastructure_zone_to_string, is_using_single_subnet_layout, InfrastructureConfig};
use crate::field::{ErrorList, FieldError, Path, Value};
use crate::manifest::{Networking, Worker};
use crate::networking::{ip_families, ip_families_value, is_ipv6_single_stack};

// Shared with the other providers' Shoot validators; kept here under their old paths.
pub use crate::networking::decode_network_config;
pub use crate::workers::{should_enforce_immutability, validate_workers_update};

/// Upstream's `maxDataVolumeCount`.
pub const MAX_DATA_VOLUME_COUNT: usize = 64;

/// `ValidateNetworking(networking, fldPath)` on the defaulted networking (an absent
/// `spec.networking` is an empty one after Gardener's defaulting, so upstream's "networking field
/// can't be empty" cannot happen).
pub fn validate_networking(networking: &Networking, fld: &Path) -> ErrorList {
    let mut errs = Vec::new();
    if networking.nodes.is_none() {
        errs.push(FieldError::required(fld.child("nodes"), "a nodes CIDR must be provided for Azure shoots"));
    }
    if let Some(raw) = &networking.provider_config {
        errs.extend(validate_network_provider_config(networking.type_.as_deref(), raw, &fld.child("providerConfig")));
    }

    let families = ip_families(networking);
    if is_ipv6_single_stack(&families) {
        errs.push(FieldError::invalid_value(
            fld.child("ipFamilies"),
            ip_families_value(&families),
            "IPv6 single-stack networking is not supported",
        ));
    }
    if families.len() > 1 {
        errs.push(FieldError::invalid_value(
            fld.child("ipFamilies"),
            ip_families_value(&families),
            "dual-stack networking is not supported",
        ));
    }
    errs
}

/// What upstream reads of `spec.networking.providerConfig`:
///
/// - Calico (`ValidateNetworking`): it must decode as a JSON object, and `overlay.enabled: true` is
///   forbidden. (An `overlay` without a boolean `enabled` makes upstream's type assertion panic;
///   trellis reports it as Required / Invalid.)
/// - Cilium or no type (the Shoot mutator, [`crate::azure::overlay::mutate_networking`]): it must
///   decode as a JSON object; the mutating webhook refuses the shoot with the same JSON error.
/// - Any CNI: `overlay.enabled`, when given, is a boolean (the CNI extensions decode it into a
///   `bool`; trellis reads it to decide whether the CCM writes routes).
fn validate_network_provider_config(type_: Option<&str>, raw: &Json, path: &Path) -> ErrorList {
    let mut errs = Vec::new();
    let calico = type_ == Some("calico");
    if !calico && !matches!(type_, None | Some("cilium")) {
        // Only the CNI extension reads it; trellis reads `overlay.enabled` alone.
        if let Some(enabled) = raw.pointer("/overlay/enabled").filter(|v| !v.is_null() && !v.is_boolean()) {
            errs.push(invalid_enabled(path, enabled));
        }
        return errs;
    }
    let config = match decode_network_config(raw) {
        Ok(config) => config,
        Err(e) => {
            errs.push(FieldError::internal(path, e));
            return errs;
        }
    };
    let Some(Json::Object(overlay)) = config.get("overlay") else { return errs };
    let enabled_path = path.child("overlay").child("enabled");
    match overlay.get("enabled") {
        Some(Json::Bool(true)) if calico => {
            errs.push(FieldError::forbidden(&enabled_path, "Calico overlay network is not supported on azure"))
        }
        Some(Json::Bool(_)) => {}
        None | Some(Json::Null) if calico => {
            errs.push(FieldError::required(&enabled_path, "must be true or false when overlay is set"))
        }
        None | Some(Json::Null) => {}
        Some(other) => errs.push(invalid_enabled(path, other)),
    }
    errs
}

fn invalid_enabled(provider_config_path: &Path, value: &Json) -> FieldError {
    FieldError::invalid_value(
        provider_config_path.child("overlay").child("enabled"),
        Value::json(value),
        "must be true or false",
    )
}

/// `ValidateWorkers(workers, infra, fldPath)`.
pub fn validate_workers(workers: &[Worker], infra: &InfrastructureConfig, fld: &Path) -> ErrorList {
    let mut errs = Vec::new();
    for (i, worker) in workers.iter().enumerate() {
        let path = fld.index(i);

        match &worker.volume {
            None => errs.push(FieldError::required(path.child("volume"), "must not be nil")),
            Some(v) => errs.extend(validate_volume(v.type_.as_deref(), &v.size, v.encrypted, &path.child("volume"))),
        }

        let data_volumes_path = path.child("dataVolumes");
        if worker.data_volumes.len() > MAX_DATA_VOLUME_COUNT {
            errs.push(FieldError::too_many(&data_volumes_path, worker.data_volumes.len(), MAX_DATA_VOLUME_COUNT));
        }
        for (j, v) in worker.data_volumes.iter().enumerate() {
            errs.extend(validate_volume(v.type_.as_deref(), &v.size, v.encrypted, &data_volumes_path.index(j)));
        }

        let zones_path = path.child("zones");
        if infra.zoned && worker.zones.is_empty() {
            errs.push(FieldError::required(&zones_path, "at least one zone must be configured for zoned clusters"));
            continue;
        }
        if !infra.zoned && !worker.zones.is_empty() {
            errs.push(FieldError::required(&zones_path, "zones must not be specified for non zoned clusters"));
            continue;
        }
        // (Upstream's "too many zones" guard, more than MaxInt32 zones, cannot be reached.)

        let mut seen = BTreeSet::new();
        for (j, zone) in worker.zones.iter().enumerate() {
            if !seen.insert(zone.as_str()) {
                errs.push(FieldError::invalid(
                    zones_path.index(j),
                    zone,
                    "must only be specified once per worker group",
                ));
            }
        }

        if !is_using_single_subnet_layout(infra) {
            let infra_zones: BTreeSet<String> =
                infra.networks.zones.iter().map(|z| infrastructure_zone_to_string(z.name)).collect();
            for (j, zone) in worker.zones.iter().enumerate() {
                if !infra_zones.contains(zone) {
                    errs.push(FieldError::invalid(
                        zones_path.index(j),
                        zone,
                        "zone configuration must be specified in \"infrastructureConfig.networks.zones\"",
                    ));
                }
            }
        }
    }
    errs
}

/// Upstream's `validateVolumeFunc`, for the root volume and each data volume.
fn validate_volume(type_: Option<&str>, size: &str, encrypted: Option<bool>, fld: &Path) -> ErrorList {
    let mut errs = Vec::new();
    if type_.is_none() {
        errs.push(FieldError::required(fld.child("type"), "must not be empty"));
    }
    if size.is_empty() {
        errs.push(FieldError::required(fld.child("size"), "must not be empty"));
    }
    if let Some(encrypted) = encrypted {
        errs.push(FieldError::not_supported_value(fld.child("encrypted"), Value::display(encrypted), &[]));
    }
    errs
}
