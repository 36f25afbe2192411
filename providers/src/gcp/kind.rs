//! The resource kinds gcp plans name, as the plan JSON spells them (see [`trellis_plans::Kind`]).

use super::names::COMPUTE_V1;
use serde_json::Value;
use trellis_plans::terraform::{TerraformKind, TerraformType};
use trellis_plans::Kind;

pub const SERVICE_ACCOUNT: Kind = Kind::new("service_account");
pub const NETWORK: Kind = Kind::new("network");
pub const SUBNETWORK: Kind = Kind::new("subnetwork");
pub const ROUTER: Kind = Kind::new("router");
pub const CLOUD_NAT: Kind = Kind::new("cloud_nat");
pub const ADDRESS: Kind = Kind::new("address");
pub const FIREWALL: Kind = Kind::new("firewall");
pub const ROUTE: Kind = Kind::new("route");

/// The Terraform provider whose types are the same GCP resources (`hashicorp/google`).
pub const GOOGLE: &str = "registry.terraform.io/hashicorp/google";

/// Each kind's `google` resource type (the same GCE or IAM resource), and what the API sets on a create.
const TERRAFORM: [(Kind, &str, &[&str]); 8] = [
    (NETWORK, "google_compute_network", &["/id", "/creationTimestamp"]),
    (SUBNETWORK, "google_compute_subnetwork", &["/id", "/creationTimestamp", "/fingerprint", "/gatewayAddress"]),
    (ROUTER, "google_compute_router", &["/id", "/creationTimestamp"]),
    // An entry of its router: GCE gives it nothing of its own.
    (CLOUD_NAT, "google_compute_router_nat", &[]),
    (FIREWALL, "google_compute_firewall", &["/id", "/creationTimestamp"]),
    (ADDRESS, "google_compute_address", &["/id", "/creationTimestamp", "/address"]),
    (ROUTE, "google_compute_route", &["/id", "/creationTimestamp"]),
    (SERVICE_ACCOUNT, "google_service_account", &["/uniqueId", "/oauth2ClientId", "/etag"]),
];

/// What Terraform's readers are told about a GCP kind: its `google` type; unknown after a create what
/// GCE or IAM assigns (the numeric id, the creation time, a subnetwork's fingerprint and gateway, a new
/// address's IP), unknown after any write a fingerprint (only subnetworks have one in GCE's v1 API);
/// known after a create the `selfLink` (a GCE resource) or the `name` and `email` (a service account),
/// from the id.
pub fn terraform_kind(kind: Kind, id: Option<&str>) -> TerraformKind {
    let Some((_, name, computed)) = TERRAFORM.iter().find(|(k, _, _)| *k == kind) else {
        return TerraformKind::default();
    };
    let known_on_create = match (kind, id) {
        (CLOUD_NAT, _) | (_, None) => Vec::new(),
        (SERVICE_ACCOUNT, Some(id)) => vec![
            ("/name", Value::String(id.to_string())),
            ("/email", Value::String(id.rsplit('/').next().unwrap_or(id).to_string())),
        ],
        (_, Some(id)) => vec![("/selfLink", Value::String(format!("{COMPUTE_V1}{id}")))],
    };
    TerraformKind {
        resource_type: Some(TerraformType { name, source: GOOGLE }),
        computed,
        rewritten: if kind == SUBNETWORK { &["/fingerprint"] } else { &[] },
        known_on_create,
    }
}
