//! The GCP provider (issue #9): its API, admission validation, and planning as pure functions.
//!
//! - [`api`]: InfrastructureConfig / InfrastructureStatus / InfrastructureState as upstream
//!   (`gcp.provider.extensions.gardener.cloud/v1alpha1`) plus the user-managed-egress spec's
//!   `subnetWorkers` / `subnetServices`; the mode ([`api::Mode`]) derived from `subnetWorkers` alone.
//! - [`validation`]: admission validation, create and update, with upstream's field paths and
//!   messages and the spec's C1–C12, C18 and D1–D6; [`validation::shoot`] is provider-gcp's Shoot
//!   validator (networking, workers) and [`validation::shoot::validate_shoot`] the webhook as a whole.
//! - [`names`]: upstream's resource names, selfLink paths, plan addresses.
//! - [`desired`]: discovery (what to read), the reconcile graph (managed, and the BYO early return)
//!   and the delete graph, as [`trellis_planner::model::Desired`].
//! - [`preflight`]: runtime rules against the observed cloud (C13–C17, the user's VPC, router, NAT IPs).
//! - [`render`]: InfrastructureStatus, egress CIDRs, `cloudprovider.conf`, CCM flags.
//! - [`warnings`]: BYO firewall equivalents missing, routes approaching the VPC's quota.
//!
//! Every planning function is pure over ([`api::InfrastructureConfig`], [`Ctx`],
//! [`trellis_planner::discover::Observed`] keyed by [`trellis_planner::ids::GceIds`]).
//! [`provider::Gcp`] is this module as a [`crate::provider::Provider`] (registered in
//! [`crate::registry`]); [`state::GcpState`] is what it keeps per shoot between runs.

pub mod api;
pub mod desired;
pub mod fleet;
pub mod kind;
pub mod names;
pub mod preflight;
pub mod provider;
pub mod render;
pub mod state;
pub mod validation;
pub mod warnings;

#[cfg(test)]
mod tests;

use crate::manifest::Shoot;
use validation::Stack;

/// `spec.provider.type` of a GCP Shoot.
pub const PROVIDER_TYPE: &str = "gcp";

/// The provider, as its plans name it.
pub const PROVIDER: trellis_plans::Provider = trellis_plans::Provider::new(PROVIDER_TYPE);

pub type GcpShoot = Shoot<api::InfrastructureConfig>;

/// Everything the planning stages need to know about the shoot besides its InfrastructureConfig.
#[derive(Clone, Debug, Default)]
pub struct Ctx {
    /// Technical id `shoot--<project>--<name>`: resource-name prefix, network tag of every worker VM.
    pub tn: String,
    /// The GCP project the shoot's credentials point at.
    pub project: String,
    pub region: String,
    /// `spec.provider.controlPlaneConfig.zone` (cloudprovider.conf's `local-zone`).
    pub zone: String,
    pub nodes: Option<String>,
    pub pods: Option<String>,
    pub services: Option<String>,
    /// `spec.networking.ipFamilies`, defaulted to `[IPv4]` when empty (as Gardener defaults it).
    pub ip_families: Vec<String>,
    /// Whether the CNI runs an overlay (`spec.networking.providerConfig.overlay.enabled`).
    pub overlay: bool,
    /// Σ workers[].maximum.
    pub max_nodes: i64,
}

impl Ctx {
    pub fn new(shoot: &GcpShoot, project: &str) -> Ctx {
        let n = &shoot.spec.networking;
        let ip_families = if n.ip_families.is_empty() { vec!["IPv4".to_string()] } else { n.ip_families.clone() };
        Ctx {
            tn: shoot.technical_id(),
            project: project.to_string(),
            region: shoot.spec.region.clone(),
            zone: shoot
                .spec
                .provider
                .control_plane_config
                .as_ref()
                .and_then(|c| c.get("zone"))
                .and_then(|z| z.as_str())
                .unwrap_or_default()
                .to_string(),
            nodes: n.nodes.clone(),
            pods: n.pods.clone(),
            services: n.services.clone(),
            ip_families,
            overlay: shoot.overlay_enabled(),
            max_nodes: shoot.max_nodes(),
        }
    }

    /// The stack (upstream `isDualStack` on the spec: `ipFamilies` contains IPv6).
    pub fn stack(&self) -> Stack {
        Stack::of(&self.ip_families)
    }

    pub fn dual_stack(&self) -> bool {
        self.stack() == Stack::DualStack
    }
}
