//! Admission validation of the Shoot itself for GCP: gardener-extension-provider-gcp's
//! `pkg/apis/gcp/validation/shoot.go`, as its Shoot validator webhook
//! (`pkg/admission/validator/shoot.go`) calls it, with upstream's field paths (`spec.networking…`,
//! `spec.provider.workers[i]…`) and messages:
//!
//! - [`validate_networking`] (`ValidateNetworking`, shoot.go:29-46): a nodes CIDR is required;
//!   IPv6 single-stack is not supported; with IPv6 the CNI's `overlay.enabled` must be set and
//!   false (`validateIPv6`, shoot.go:129-147).
//! - [`validate_workers`] (`ValidateWorkers`, shoot.go:49-70): every worker has a `volume` with a
//!   `type` that is not `SCRATCH` and a `size`, and at least one zone.
//! - [`validate_workers_update`] (`ValidateWorkersUpdate`, shoot.go:86-110, the same function as
//!   provider-azure's, shared in [`crate::workers`]).
//! - [`validate_shoot`]: the webhook's `validateCreate` / `validateUpdate` (validator/shoot.go):
//!   a workerless shoot is skipped; on update the InfrastructureConfig's update rules (when the
//!   config changed), the spec's stack-migration rule (D6) and the workers' update rules come first,
//!   then the create rules of the new shoot (`validateContext`): networking, InfrastructureConfig,
//!   workers.
//!
//! Not ported here (not part of the infrastructure slice): the ControlPlaneConfig, DNS and
//! WorkerConfig rules of `validateContext`.

use serde_json::Value as Json;

use crate::field::{ErrorList, FieldError, Path, Value};
use crate::gcp::api::InfrastructureConfig;
use crate::manifest::{Networking, Shoot, Worker};
use crate::networking::{decode_network_config, is_ipv6_single_stack, IP_FAMILY_IPV6};

pub use crate::workers::validate_workers_update;

/// `worker.VolumeTypeScratch` (`pkg/controller/worker/machines.go`).
pub const VOLUME_TYPE_SCRATCH: &str = "SCRATCH";

/// `ValidateNetworking(networking, fldPath)`.
pub fn validate_networking(networking: &Networking, fld: &Path) -> ErrorList {
    let mut errs = Vec::new();
    if networking.nodes.is_none() {
        errs.push(FieldError::required(fld.child("nodes"), "a nodes CIDR must be provided for GCP shoots"));
    }
    if is_ipv6_single_stack(&networking.ip_families) {
        errs.push(FieldError::invalid_value(
            fld.child("ipFamilies"),
            ip_families_value(&networking.ip_families),
            "IPv6 single-stack networking is not supported",
        ));
    }
    if networking.ip_families.iter().any(|f| f == IP_FAMILY_IPV6) {
        errs.extend(validate_ipv6(networking, fld));
    }
    errs
}

/// A `[]IPFamily` as apimachinery renders it: JSON, `null` when nil (not written).
fn ip_families_value(families: &[String]) -> Value {
    if families.is_empty() {
        return Value::null();
    }
    Value::json(&serde_json::json!(families))
}

/// `validateIPv6(networking, fldPath)`: the CNI must not run an overlay.
fn validate_ipv6(networking: &Networking, fld: &Path) -> ErrorList {
    let mut errs = Vec::new();
    let provider_config_path = fld.child("providerConfig");
    let config = match networking.provider_config.as_ref().map(decode_network_config).transpose() {
        Ok(config) => config.unwrap_or_default(),
        Err(e) => {
            let raw = networking.provider_config.as_ref().unwrap_or(&Json::Null);
            errs.push(FieldError::invalid_value(
                &provider_config_path,
                Value::json(raw),
                format!("failed to decode networking provider config: {e}"),
            ));
            return errs;
        }
    };
    const MSG: &str = "overlay must be set to false in conjunction with IPv6";
    match config.get("overlay") {
        // Upstream's type assertions: anything but `{enabled: true}` passes.
        Some(Json::Object(overlay)) => {
            if overlay.get("enabled") == Some(&Json::Bool(true)) {
                errs.push(FieldError::invalid_value(
                    provider_config_path.child("overlay").child("enabled"),
                    Value::display(true),
                    MSG,
                ));
            }
        }
        Some(_) => {}
        None => errs.push(FieldError::invalid_value(
            fld.child("ipFamilies"),
            ip_families_value(&networking.ip_families),
            MSG,
        )),
    }
    errs
}

/// `ValidateWorkers(workers, fldPath)`.
pub fn validate_workers(workers: &[Worker], fld: &Path) -> ErrorList {
    let mut errs = Vec::new();
    for (i, worker) in workers.iter().enumerate() {
        let path = fld.index(i);
        match &worker.volume {
            None => errs.push(FieldError::required(path.child("volume"), "must not be nil")),
            Some(volume) => {
                let volume_path = path.child("volume");
                match volume.type_.as_deref() {
                    None => errs.push(FieldError::required(volume_path.child("type"), "must not be empty")),
                    Some(VOLUME_TYPE_SCRATCH) => errs.push(FieldError::invalid(
                        volume_path.child("type"),
                        VOLUME_TYPE_SCRATCH,
                        format!("type {VOLUME_TYPE_SCRATCH} is not allowed as boot disk"),
                    )),
                    Some(_) => {}
                }
                if volume.size.is_empty() {
                    errs.push(FieldError::required(volume_path.child("size"), "must not be empty"));
                }
            }
        }
        if worker.zones.is_empty() {
            errs.push(FieldError::required(path.child("zones"), "at least one zone must be configured"));
        }
        // (Upstream's "too many zones" guard, more than MaxInt32 zones, cannot be reached.)
    }
    errs
}

/// A GCP shoot: a Shoot whose `spec.provider.infrastructureConfig` is GCP's.
pub type GcpShoot = Shoot<InfrastructureConfig>;

/// provider-gcp's Shoot validator webhook for `new` (and, on update, `old`), all errors at once in
/// upstream's order; see the module documentation.
pub fn validate_shoot(new: &GcpShoot, old: Option<&GcpShoot>) -> ErrorList {
    let mut errs = Vec::new();
    if new.spec.provider.workers.is_empty() {
        return errs;
    }
    let spec = Path::new("spec");
    let networking_path = spec.child("networking");
    let provider_path = spec.child("provider");
    let infra_path = provider_path.child("infrastructureConfig");
    let workers_path = provider_path.child("workers");
    let cfg = &new.spec.provider.infrastructure_config;

    if let Some(old) = old {
        let old_cfg = &old.spec.provider.infrastructure_config;
        if old_cfg != cfg {
            errs.extend(super::validate_infrastructure_config_update_at(old_cfg, cfg, &infra_path));
        }
        errs.extend(super::validate_infrastructure_config_stack_migration(
            cfg,
            &old.spec.networking.ip_families,
            &new.spec.networking.ip_families,
            &networking_path,
        ));
        errs.extend(validate_workers_update(&old.spec.provider.workers, &new.spec.provider.workers, &workers_path));
    }

    errs.extend(validate_networking(&new.spec.networking, &networking_path));
    errs.extend(super::validate_infrastructure_config_at(cfg, new, &infra_path));
    errs.extend(validate_workers(&new.spec.provider.workers, &workers_path));
    errs
}
