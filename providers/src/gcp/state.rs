//! What the GCP provider remembers about a shoot between runs ([`GcpState`]), typed and versioned
//! (stored by the state crate as a [`trellis_state::ProviderState`], see [`VersionedState`]).
//!
//! Versions:
//! - **1**: [`GcpState`] — the last-applied configuration (InfrastructureConfig, networking, workers)
//!   the selfLink of the BYO workers subnet the shoot used (for the fleet check) and the region.

use super::api::InfrastructureConfig;
use crate::manifest::{Networking, Worker};
use serde::{Deserialize, Serialize};
use trellis_state::{Migration, VersionedState};

/// The GCP provider's state of one shoot (version 1).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GcpState {
    /// The configuration as last applied; `None` before the first successful apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_applied: Option<LastApplied>,
    /// The selfLink of the user's workers subnet (`networks.subnetWorkers`) as last applied; `None`
    /// in managed mode. Read by the fleet check: a BYO workers subnet belongs to one shoot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub byo_workers_subnet: Option<String>,
    /// The shoot's region as last applied (`spec.region`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
}

/// Where an applied shoot's nodes live, as the runtime writers (CCM, bastion controller) see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppliedNetwork {
    pub region: String,
    /// The VPC's name (the user's in user-managed egress).
    pub network: String,
    /// The workers subnet's name (`<tn>-nodes`, or the user's `networks.subnetWorkers`).
    pub workers_subnet: String,
}

impl GcpState {
    /// The applied shoot's network (`tn`: its technical id); `None` before the first apply.
    pub fn applied_network(&self, tn: &str) -> Option<AppliedNetwork> {
        let applied = self.last_applied.as_ref()?;
        let cfg = &applied.infrastructure_config;
        let workers_subnet = match &cfg.networks.subnet_workers {
            Some(w) => w.name.clone(),
            None => super::names::nodes_subnet(tn),
        };
        Some(AppliedNetwork { region: self.region.clone()?, network: super::names::vpc_name(cfg, tn), workers_subnet })
    }
}

/// The shoot's spec as last applied: what provider-gcp's update rules read of the old shoot.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LastApplied {
    pub infrastructure_config: InfrastructureConfig,
    pub networking: Networking,
    pub workers: Vec<Worker>,
}

impl VersionedState for GcpState {
    const PROVIDER: &'static str = "gcp";
    const MIGRATIONS: &'static [Migration] = &[];
}
