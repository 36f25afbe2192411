//! The domains provider's cloud binding: the simulated DNS (`DnsSim`: the seeds' `DNSRecord` objects
//! and the zones the DNS extension writes them into; trees `sim/dns` and `sim/dns-audit`, the world
//! file's `dns:` section). There is no real DNS client yet: with `--cloud azure|gcp` too, domains
//! plans read and write the simulated DNS. A domains plan is kept in a workspace of its own
//! (`<technical id>+domains`, [`WORKSPACE_SUFFIX`]), described by `trellis state show` ([`describe`]).

use crate::backend::Backend;
use crate::binding::{CloudBinding, Shows, SimTrees, Simulator};
use serde_json::Value;
use std::sync::Arc;
use trellis_planner::cloud::{Call, CloudWrite};
use trellis_sim::{DnsSim, Faults, SharedFlush, SimError, SyncReport, WorldFile, WorldSection};
use trellis_state::Workspace;

/// The domains provider's binding.
pub struct Dns;

/// The domains provider's binding, as the registry holds it.
pub static DNS: Dns = Dns;

/// The account of the domains provider's calls: the simulated DNS has none.
pub const ACCOUNT: &str = "dns";

/// What the workspace of a domains plan is called after the shoot's technical id
/// (`shoot--dev--a+domains`): a Shoot's infrastructure plan and its domains plan are kept apart (the
/// state refuses one workspace with two provider types), and no technical id holds a `+`.
pub const WORKSPACE_SUFFIX: &str = "+domains";

impl Simulator for DnsSim {
    fn cloud(&self) -> Arc<dyn CloudWrite> {
        Arc::new(self.clone())
    }

    fn share_flush(&self, flush: SharedFlush, _store: &Backend) -> Result<(), SimError> {
        DnsSim::share_flush(self, flush);
        Ok(())
    }

    fn sync_world(&self, world: &WorldFile) -> Result<SyncReport, SimError> {
        DnsSim::sync_world(self, world)
    }

    fn persist_audit(&self, tree: &sled::Tree) -> Result<usize, SimError> {
        DnsSim::persist_audit(self, tree)
    }

    fn calls(&self) -> Vec<Call> {
        DnsSim::calls(self)
    }

    fn get_now(&self, id: &str) -> Option<Value> {
        DnsSim::get_now(self, id)
    }

    fn set_faults(&self, faults: Faults) {
        DnsSim::set_faults(self, faults)
    }
}

#[async_trait::async_trait]
impl CloudBinding for Dns {
    fn provider_type(&self) -> &'static str {
        trellis_providers::domains::PROVIDER_TYPE
    }

    fn sim_name(&self) -> &'static str {
        "dns"
    }

    fn trees(&self) -> SimTrees {
        SimTrees { cloud: "sim/dns", audit: "sim/dns-audit" }
    }

    fn world_section(&self) -> Option<&'static dyn WorldSection> {
        Some(&trellis_sim::dns::world::SECTION)
    }

    /// `seeds:`: where each seed's API-server records point (`GET /seeds/{seed}`).
    fn more_world_sections(&self) -> &'static [&'static dyn WorldSection] {
        static MORE: [&dyn WorldSection; 1] = [&trellis_sim::dns::seeds::SECTION];
        &MORE
    }

    fn open_sim(&self, tree: sled::Tree, _world: Option<&WorldFile>) -> Result<Arc<dyn Simulator>, SimError> {
        Ok(Arc::new(DnsSim::open(tree)?))
    }

    fn sim_account(&self, _sim: &dyn Simulator) -> String {
        ACCOUNT.to_string()
    }

    /// A DNS id (`/dns/zones/…`, `/seeds/…/dnsrecords/…`).
    fn shows(&self, id: &str) -> Shows {
        match id.parse::<trellis_sim::dns::DnsId>() {
            Ok(_) => Shows::Yes("simulated DNS"),
            Err(_) => Shows::No,
        }
    }

    fn shows_help(&self) -> Option<&'static str> {
        Some("a DNS id of the simulated DNS (`/dns/zones/ZONE/records/NAME/TYPE`, `/seeds/SEED/namespaces/NS/dnsrecords/NAME`)")
    }
}

/// What `trellis state show` says about a domains workspace: its phase and roles
/// (`DomainsState::describe`).
pub fn describe(ws: &Workspace) -> Vec<String> {
    match ws.provider_state::<trellis_providers::domains::state::DomainsState>() {
        Ok(Some(state)) => state.describe(),
        Ok(None) => vec!["phase: none (nothing applied yet)".to_string()],
        Err(e) => vec![format!("its provider state cannot be read: {e}")],
    }
}
