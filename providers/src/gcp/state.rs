//! What the GCP provider remembers about a shoot between runs ([`GcpState`]), typed and versioned
//! (stored by the state crate as a [`trellis_state::ProviderState`], see [`VersionedState`]).
//!
//! Versions:
//! - **1**: [`GcpState`] — the last-applied configuration (InfrastructureConfig, networking, workers)
//!   and the selfLink of the BYO workers subnet the shoot used (for the fleet check).

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
