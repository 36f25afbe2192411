//! The domains provider's cloud binding: the simulated DNS (`DnsSim`: the seeds' `DNSRecord` objects
//! and the zones and record sets the DNS extension writes them into; trees `sim/dns` and
//! `sim/dns-audit`, the world file's `dns:` section), and the clouds' own DNS.
//!
//! - `--cloud sim`: everything in the simulated DNS.
//! - `--cloud azure`: [`Chosen::Beside`] — the record sets and zones (`/dns…` ids) go to Azure DNS
//!   ([`trellis_azure_client::dns::AzureDns`] over the ARM client the Azure binding builds: the same
//!   `--subscription`, `--endpoint` / `--azure-endpoint` and credential), the `DNSRecord` objects
//!   (`/seeds/…`) stay in the simulated seed: trellis has no Kubernetes client.
//! - `--cloud gcp`: [`Chosen::Beside`] — the record sets and zones go to Cloud DNS
//!   ([`trellis_gcp_client::dns::CloudDns`], google-cloud-dns-v1, with the GCP binding's `--project`,
//!   credentials and `--endpoint`; `--dns-project` for zones in other projects: [`super::dns_gcp`]).
//!
//! `trellis sim serve` serves the simulated DNS in Azure DNS's REST shapes
//! ([`trellis_sim_http::arm_dns`]) beside ARM and GCE. A domains plan is kept in a workspace of its
//! own (`<technical id>+domains`, [`WORKSPACE_SUFFIX`]), described by `trellis state show`
//! ([`describe`]).

use crate::backend::Backend;
use crate::binding::{
    Chosen, CloudBinding, CloudChoice, ExportedSection, Read, ServeOptions, Served, Shows, SimTrees, Simulator,
};
use anyhow::Result;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use trellis_planner::cloud::{Call, CloudRead, CloudWrite};
use trellis_sim::dns::store::{normal_name, within};
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

    fn persist_audit(&self, file: &trellis_sim::AuditFile) -> Result<usize, SimError> {
        DnsSim::persist_audit(self, file)
    }

    fn keep_audit(&self, file: trellis_sim::AuditFile) -> Result<usize, SimError> {
        DnsSim::keep_audit(self, file)
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
        SimTrees { cloud: "sim/dns", audit_file: "audit/dns.jsonl", legacy_audit: "sim/dns-audit" }
    }

    fn world_section(&self) -> Option<&'static dyn WorldSection> {
        Some(&trellis_sim::dns::world::SECTION)
    }

    /// `seeds:`: where each seed's API-server records point (`GET /seeds/{seed}`).
    fn more_world_sections(&self) -> &'static [&'static dyn WorldSection] {
        static MORE: [&dyn WorldSection; 1] = [&trellis_sim::dns::seeds::SECTION];
        &MORE
    }

    /// `seeds:` stays simulated with `--cloud azure|gcp` (trellis has no Kubernetes client; the
    /// seeds' ingress is read from the simulated seed store beside Azure DNS / Cloud DNS).
    fn world_sections_beside_real(&self) -> &'static [&'static dyn WorldSection] {
        self.more_world_sections()
    }

    fn open_sim(&self, tree: sled::Tree, _world: Option<&WorldFile>) -> Result<Arc<dyn Simulator>, SimError> {
        Ok(Arc::new(DnsSim::open(tree)?))
    }

    fn sim_account(&self, _sim: &dyn Simulator) -> String {
        ACCOUNT.to_string()
    }

    /// `--cloud azure`: Azure DNS for the record sets and zones, beside the simulated seed's
    /// `DNSRecord` objects, in the subscription of `--subscription` (the Azure binding's flags, read
    /// here, not registered twice).
    async fn choose(&self, choice: &CloudChoice<'_>) -> Result<Chosen> {
        match choice.cloud {
            "azure" => {
                let (client, subscription) = super::azure::arm_client(choice)?;
                let real = trellis_azure_client::dns::AzureDns::new(Arc::new(client), subscription.clone());
                Ok(Chosen::Beside {
                    real: Arc::new(real),
                    account: subscription,
                    claims: trellis_azure_client::dns::claims,
                })
            }
            // `--cloud gcp`: Cloud DNS (google-cloud-dns-v1) with the GCP binding's `--project`,
            // credentials and `--endpoint`, beside the simulated seed ([`super::dns_gcp`]).
            "gcp" => super::dns_gcp::choose(choice).await,
            _ => Ok(Chosen::Sim(None)),
        }
    }

    /// `dns:` — the zones the plans listed (with where each lives: `azure: {subscription,
    /// resourceGroup}` or `gcp: {project, managedZone}`, as the real client names it) and the record
    /// sets they read (`name`, `type`, `ttl`, `values`) — and `seeds:`, the seeds whose ingress they
    /// read from the simulated seed store ([`export_dns`]).
    async fn export_world(
        &self,
        read: Vec<Read>,
        cloud: &dyn CloudRead,
        _account: &str,
    ) -> Result<Vec<ExportedSection>> {
        export_dns(read, cloud).await
    }

    /// `--dns-project` (the Cloud DNS arm's).
    fn args(&self) -> Vec<clap::Arg> {
        super::dns_gcp::args()
    }

    fn http_api(&self) -> Option<&'static str> {
        Some("Azure DNS and Cloud DNS")
    }

    /// The simulated DNS in Azure DNS's REST shapes (ARM `Microsoft.Network/dnszones…`, taken before
    /// the generic ARM routes: `serves_path`).
    fn serve(&self, sim: &dyn Simulator, opts: &ServeOptions) -> Option<Served> {
        let dns = (sim as &dyn std::any::Any).downcast_ref::<DnsSim>()?;
        let defaults = trellis_sim_http::ServerOptions::default();
        let page_size = opts.page_size.or(defaults.page_size);
        let server_opts = trellis_sim_http::ServerOptions { page_size, ..defaults };
        let router = trellis_sim_http::arm_dns::ArmDnsServer::new(dns.clone(), server_opts).router();
        let router = super::dns_gcp::with_cloud_dns(router, dns);
        Some(Served { claims: Some(serves_path), router })
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

/// The sections of a world file declaring what a domains plan read ([`CloudBinding::export_world`]):
///
/// - `dns:` — every zone listed or read (`/dns/zones/{zone}`: `name` and its `azure` / `gcp` block as
///   the client returned it), sorted by name, each with the record sets read in it (`records`: `name`,
///   `type`, `ttl`, `values` and the `etag` read, so an offline plan carries the version an online
///   one does; `zone` left out), sorted by name and type. A
///   record set whose zone was not read is completed with a GET of the zone through `cloud`.
/// - `seeds:` — every seed read (`/seeds/{seed}`: `name`, `ingress`), sorted by name.
///
/// The seeds' `DNSRecord` objects (`/seeds/{seed}/namespaces/…`) are what trellis writes, never a
/// world file's: left out.
pub async fn export_dns(read: Vec<Read>, cloud: &dyn CloudRead) -> Result<Vec<ExportedSection>> {
    let mut zones: BTreeMap<String, Value> = BTreeMap::new();
    let mut records: Vec<(Option<String>, Value)> = Vec::new();
    let mut seeds: BTreeMap<String, Value> = BTreeMap::new();
    for Read { asked, value } in read {
        let id = asked.as_deref().or_else(|| value.get("id").and_then(Value::as_str)).unwrap_or_default();
        let segments: Vec<&str> = id.trim_start_matches('/').split('/').collect();
        match segments.as_slice() {
            ["dns", "zones", zone] => {
                zones.insert(normal_name(zone), value);
            }
            ["seeds", seed] if value.get("ingress").is_some() => {
                seeds.insert(seed.to_string(), value);
            }
            ["dns", "zones", zone, "records", ..] => records.push((Some(normal_name(zone)), value)),
            // A record set from a zone's list: its zone is the one it is in.
            _ if value.get("type").is_some() && value.get("values").is_some() => {
                let zone = value.get("zone").and_then(Value::as_str).map(normal_name);
                records.push((zone, value));
            }
            _ => {}
        }
    }
    // Each record set in its zone (a listed one carries no zone: the innermost zone holding it).
    let mut by_zone: BTreeMap<String, BTreeMap<(String, String), Value>> = BTreeMap::new();
    for (zone, value) in records {
        let name = normal_name(value.get("name").and_then(Value::as_str).unwrap_or_default());
        let rtype = value.get("type").and_then(Value::as_str).unwrap_or_default().to_string();
        let zone = zone.or_else(|| zones.keys().filter(|z| within(&name, z)).max_by_key(|z| z.len()).cloned());
        let Some(zone) = zone else { continue };
        let mut record = serde_json::Map::new();
        record.insert("name".to_string(), Value::String(name.clone()));
        record.insert("type".to_string(), Value::String(rtype.clone()));
        for field in ["ttl", "values", "etag"] {
            if let Some(v) = value.get(field) {
                record.insert(field.to_string(), v.clone());
            }
        }
        by_zone.entry(zone).or_default().insert((name, rtype), Value::Object(record));
    }
    for zone in by_zone.keys() {
        if zones.contains_key(zone) {
            continue;
        }
        let id = format!("/dns/zones/{zone}");
        match cloud.get(&id).await? {
            Some(found) => {
                zones.insert(zone.clone(), found);
            }
            None => anyhow::bail!(
                "world export: zone {zone} holds record sets the plans read but the DNS no longer has it; export again"
            ),
        }
    }
    let mut sections = Vec::new();
    if !zones.is_empty() {
        let mut resources = 0;
        let mut out = Vec::new();
        for (name, zone) in &zones {
            let mut entry = serde_json::Map::new();
            entry.insert("name".to_string(), Value::String(name.clone()));
            for block in ["azure", "gcp"] {
                if let Some(b) = zone.get(block).filter(|b| b.is_object()) {
                    entry.insert(block.to_string(), b.clone());
                }
            }
            resources += 1;
            if let Some(records) = by_zone.remove(name) {
                resources += records.len();
                entry.insert("records".to_string(), Value::Array(records.into_values().collect()));
            }
            out.push(Value::Object(entry));
        }
        let mut body = serde_json::Map::new();
        body.insert("zones".to_string(), Value::Array(out));
        sections.push(ExportedSection { key: "dns", body: Value::Object(body), resources });
    }
    if !seeds.is_empty() {
        let resources = seeds.len();
        let list = seeds
            .into_iter()
            .map(|(name, seed)| serde_json::json!({"name": name, "ingress": seed.get("ingress").cloned().unwrap_or_default()}))
            .collect();
        sections.push(ExportedSection { key: "seeds", body: Value::Array(list), resources });
    }
    Ok(sections)
}

/// The request paths the simulated DNS answers in `trellis sim serve`: Azure DNS's and Cloud DNS's.
fn serves_path(path: &str) -> bool {
    trellis_sim_http::arm_dns::is_arm_dns_path(path) || super::dns_gcp::claims_path(path)
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(asked: Option<&str>, value: Value) -> Read {
        Read { asked: asked.map(str::to_string), value }
    }

    /// Zones from the list, record sets from GETs and from a zone's list (in the innermost zone
    /// holding them), seeds from their GET; `DNSRecord` objects left out; a record set's zone that
    /// was not read is completed through the cloud.
    #[tokio::test]
    async fn the_dns_and_seeds_sections_hold_what_was_read() {
        let sim = DnsSim::in_memory();
        let world = "dns:\n  zones:\n    - name: example.com\n      azure: {resourceGroup: dns-rg}\n    - name: dev.example.com\n    - name: other.org\n";
        sim.sync_world(&WorldFile::parse("w.yaml", world).unwrap()).unwrap();
        let zone = |name: &str| sim.get_now(&format!("/dns/zones/{name}")).unwrap();
        let set = json!({"name": "api.a.dev.example.com", "type": "A", "ttl": 120, "values": ["192.0.2.1"], "etag": "e1", "zone": "dev.example.com"});
        let listed = json!({"name": "www.dev.example.com", "type": "CNAME", "ttl": 300, "values": ["lb.example.net"]});
        let reads = vec![
            read(None, zone("example.com")),
            read(None, zone("dev.example.com")),
            read(Some("/dns/zones/dev.example.com/records/api.a.dev.example.com/A"), set),
            read(None, listed),
            read(
                Some("/dns/zones/other.org/records/x.other.org/TXT"),
                json!({"name": "x.other.org", "type": "TXT", "ttl": 60, "values": ["v"]}),
            ),
            read(Some("/seeds/s1"), json!({"name": "s1", "ingress": {"hostname": "lb.example.net"}})),
            read(None, json!({"apiVersion": "extensions.gardener.cloud/v1alpha1", "kind": "DNSRecord", "spec": {}})),
        ];
        let sections = export_dns(reads, &sim).await.unwrap();
        let keys: Vec<(&str, usize)> = sections.iter().map(|s| (s.key, s.resources)).collect();
        assert_eq!(keys, [("dns", 6), ("seeds", 1)]);
        let zones = sections[0].body["zones"].as_array().unwrap();
        let names: Vec<&str> = zones.iter().map(|z| z["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["dev.example.com", "example.com", "other.org"]);
        assert_eq!(zones[1]["azure"]["resourceGroup"], "dns-rg");
        assert_eq!(
            zones[0]["records"],
            json!([
                {"name": "api.a.dev.example.com", "type": "A", "ttl": 120, "values": ["192.0.2.1"], "etag": "e1"},
                {"name": "www.dev.example.com", "type": "CNAME", "ttl": 300, "values": ["lb.example.net"]},
            ])
        );
        assert!(zones[1].get("records").is_none(), "{zones:#?}");
        assert_eq!(zones[2]["records"][0]["name"], "x.other.org", "the zone read through the cloud");
        assert_eq!(sections[1].body, json!([{"name": "s1", "ingress": {"hostname": "lb.example.net"}}]));
    }
}
