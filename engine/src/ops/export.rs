//! `trellis world export`: the world file of what the shoots' plans read from the real clouds.
//!
//! The plans themselves decide what is read: each real client the command chose is wrapped in a
//! [`Recording`] cloud, the fleet is planned as `trellis plan` plans it (the same discovery rounds,
//! pre-flight and fleet checks), and every resource a GET or list answered is kept as the cloud
//! returned it. Then each binding writes its section of the world file from what its cloud answered
//! ([`CloudBinding::export_world`]: one entry a resource, sorted by id, completed with what the
//! section needs to load by itself), and the sections become one YAML document ([`yaml`]).
//!
//! A real client beside the simulated cloud ([`Chosen::Beside`]: the DNS with `--cloud azure|gcp`)
//! is recorded with its simulated half: what stays simulated (the seeds' ingress, `/seeds/{seed}`)
//! is part of what the plans read, and its section (`seeds:`) is what makes the file plan offline
//! as online. The simulated half answers from the state's simulated cloud (synced from a `--world`
//! holding only `seeds:`).
//! Credentials never reach it: only the answers' bodies are kept, never a request.

use crate::binding::{BesideCloud, Chosen, CloudBinding, ExportedSection, Read};
use crate::registry::Registry;
use anyhow::{bail, Result};
use async_trait::async_trait;
use serde_json::{Map, Value};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use trellis_planner::cloud::{CloudError, CloudRead, CloudWrite, ListFilter, Precondition};
use trellis_providers::provider::ProviderError;

use super::*;

/// A cloud that keeps every resource its reads return ([`Read`]) and refuses to write (a plan never
/// writes; this makes sure an export cannot either). An answer it holds already (the same resource
/// read by many shoots of a fleet, a shared VPC's firewall list) is kept once.
pub struct Recording {
    inner: Arc<dyn CloudWrite>,
    read: Mutex<Kept>,
}

/// What a [`Recording`] kept, and the digests of the answers, to keep each once.
#[derive(Default)]
struct Kept {
    reads: Vec<Read>,
    seen: std::collections::HashSet<[u8; 32]>,
}

impl Recording {
    pub fn new(inner: Arc<dyn CloudWrite>) -> Recording {
        Recording { inner, read: Mutex::new(Kept::default()) }
    }

    /// What the reads returned so far, in the order they first answered it.
    pub fn read(&self) -> Vec<Read> {
        self.read.lock().unwrap_or_else(|e| e.into_inner()).reads.clone()
    }

    /// How many answers the reads returned so far (each once).
    pub fn count(&self) -> usize {
        self.read.lock().unwrap_or_else(|e| e.into_inner()).reads.len()
    }

    fn keep(&self, reads: impl IntoIterator<Item = Read>) {
        use sha2::{Digest as _, Sha256};
        let mut kept = self.read.lock().unwrap_or_else(|e| e.into_inner());
        for read in reads {
            let mut digest = Sha256::new();
            digest.update(read.asked.as_deref().unwrap_or_default());
            digest.update([0]);
            digest.update(read.value.to_string());
            if kept.seen.insert(digest.finalize().into()) {
                kept.reads.push(read);
            }
        }
    }

    fn refused(target: &str) -> CloudError {
        CloudError::Rejected {
            target: target.to_string(),
            status: 405,
            code: "ReadOnly".to_string(),
            message: "bug: trellis world export only reads the cloud; please report".to_string(),
        }
    }
}

#[async_trait]
impl CloudRead for Recording {
    async fn get(&self, id: &str) -> Result<Option<Value>, CloudError> {
        let found = self.inner.get(id).await?;
        if let Some(value) = &found {
            self.keep([Read { asked: Some(id.to_string()), value: value.clone() }]);
        }
        Ok(found)
    }

    async fn list(&self, parent: &str, rtype: &str) -> Result<Vec<Value>, CloudError> {
        let items = self.inner.list(parent, rtype).await?;
        self.keep(items.iter().map(|value| Read { asked: None, value: value.clone() }));
        Ok(items)
    }

    async fn list_where(&self, parent: &str, rtype: &str, filter: &ListFilter) -> Result<Vec<Value>, CloudError> {
        let items = self.inner.list_where(parent, rtype, filter).await?;
        self.keep(items.iter().map(|value| Read { asked: None, value: value.clone() }));
        Ok(items)
    }
}

#[async_trait]
impl CloudWrite for Recording {
    async fn create(&self, id: &str, _body: Value) -> Result<Value, CloudError> {
        Err(Recording::refused(id))
    }

    async fn update(&self, id: &str, _body: Value, _pre: &Precondition) -> Result<Value, CloudError> {
        Err(Recording::refused(id))
    }

    async fn remove(&self, id: &str, _pre: &Precondition) -> Result<(), CloudError> {
        Err(Recording::refused(id))
    }
}

/// What [`export_world`] wrote.
pub struct WorldExport {
    /// The world file, YAML.
    pub yaml: String,
    /// Each section written, with how many resources it declares (in the file's order).
    pub sections: Vec<(&'static str, usize)>,
    /// The shoots whose plans failed pre-flight against what was read, one line each (`shoot (file):
    /// error`): their reads are in the file, so an offline plan with it fails the same way.
    pub preflight_failures: Vec<String>,
    /// Per provider whose shoots were planned in a simulated cloud (another `--cloud`'s provider, or
    /// one without a real client): one line saying so. Their reads are not in the file.
    pub not_exported: Vec<String>,
}

/// A real client of the export, its recording wrapper and its binding.
struct Recorded {
    binding: &'static dyn CloudBinding,
    recording: Arc<Recording>,
    /// The real client itself, for the reads the bindings' sections need besides.
    cloud: Arc<dyn CloudWrite>,
    account: String,
}

/// Progress of [`export_world`], for the caller to show.
pub enum ExportProgress<'a> {
    /// A shoot's plan read what it needed; `resources` answers were kept so far, fleet-wide.
    Planned { shoot: &'a str, resources: usize },
    /// The fleet is planned; the bindings now write their sections (reading what they need to load).
    Writing,
}

/// Plans the shoots of `paths` (`files`: [`read_ahead`] of them) with every real client of
/// `chosen` ([`crate::registry::Registry::choose`], one per registry entry) recording what it reads,
/// and returns the world file of it: each of those bindings' sections ([`CloudBinding::export_world`])
/// in registration order. Refused when `chosen` holds no real client. A plan that fails fails the
/// export, unless every failure is pre-flight's (the reads are complete then; they are reported in
/// [`WorldExport::preflight_failures`]).
pub async fn export_world(
    session: &mut Session,
    chosen: Vec<Chosen>,
    paths: &[PathBuf],
    files: ReadAhead,
    note: impl FnMut(String),
    mut progress: impl FnMut(ExportProgress<'_>),
) -> Result<WorldExport> {
    let registry = Arc::clone(&session.registry);
    let mut recorded: Vec<Recorded> = Vec::new();
    let mut wrapped = Vec::with_capacity(chosen.len());
    for (entry, chosen) in registry.entries().iter().zip(chosen) {
        match chosen {
            Chosen::Real(cloud, account) => {
                let recording = Arc::new(Recording::new(Arc::clone(&cloud)));
                let binding = entry.binding;
                recorded.push(Recorded { binding, recording: Arc::clone(&recording), cloud, account: account.clone() });
                wrapped.push(Chosen::Real(recording, account));
            }
            // A real client beside the simulated cloud: both halves composed here and recorded as one,
            // so the section of what stays simulated (the DNS's `seeds:`, the seeds the plans read)
            // is exported beside the real cloud's, and the file plans offline as online.
            Chosen::Beside { real, account, claims } => {
                let sim = match session.sim_of(entry.provider.type_name()) {
                    Some(sim) => sim.cloud(),
                    None => bail!(
                        "bug: the session has no simulated cloud for the {} provider; please report",
                        entry.provider.type_name()
                    ),
                };
                let cloud: Arc<dyn CloudWrite> = Arc::new(BesideCloud { real, sim, claims });
                let recording = Arc::new(Recording::new(Arc::clone(&cloud)));
                let binding = entry.binding;
                recorded.push(Recorded { binding, recording: Arc::clone(&recording), cloud, account: account.clone() });
                wrapped.push(Chosen::Real(recording, account));
            }
            sim => wrapped.push(sim),
        }
    }
    if recorded.is_empty() {
        check_export_clouds(&registry, &[])?;
    }
    session.use_chosen(wrapped);

    let counted: Vec<Arc<Recording>> = recorded.iter().map(|r| Arc::clone(&r.recording)).collect();
    let count = || counted.iter().map(|r| r.count()).sum::<usize>();
    // The plans of providers whose cloud is not a recorded real client (another `--cloud`'s, or one
    // without a real client), by provider type: planned, but not exported.
    let mut unexported: std::collections::BTreeMap<&'static str, usize> = Default::default();
    let recorded_types: Vec<&str> = recorded.iter().map(|r| r.binding.provider_type()).collect();
    // The world file holds what the shoots read: their own resources, not an account's wide lists.
    let opts = StreamOptions { keep_plans: true, own_reads: true, ..StreamOptions::default() };
    let planned = plan_fleet_streaming(session, paths, files, opts, note, |p| {
        if let Some(kind) = p.plan.map(|plan| plan.provider.as_str()).filter(|k| !recorded_types.contains(k)) {
            *unexported.entry(kind).or_default() += 1;
        }
        progress(ExportProgress::Planned { shoot: &p.shoot, resources: count() });
        Ok(())
    })
    .await;
    let preflight_failures = match planned {
        Ok(_) => Vec::new(),
        Err(e) => preflight_only(&e).ok_or(e)?,
    };
    let not_exported = unexported
        .into_iter()
        .map(|(kind, n)| {
            let how = match registry.entry(kind).and_then(|e| e.binding.real_cloud()) {
                Some(cloud) => format!("export them with --cloud {cloud}"),
                None => "it has no real client yet".to_string(),
            };
            format!("{n} {kind} plan(s) read the simulated cloud, not a real one: not exported ({how})")
        })
        .collect();

    progress(ExportProgress::Writing);
    let mut top = Map::new();
    let mut sections = Vec::new();
    let mut done: Vec<&'static dyn CloudBinding> = Vec::new();
    for Recorded { binding, cloud, account, .. } in &recorded {
        if done.iter().any(|b| b.trees() == binding.trees()) {
            continue;
        }
        done.push(*binding);
        // Entries sharing a binding share its cloud, and so its section.
        let read =
            recorded.iter().filter(|r| r.binding.trees() == binding.trees()).flat_map(|r| r.recording.read()).collect();
        for ExportedSection { key, body, resources } in binding.export_world(read, cloud.as_ref(), account).await? {
            top.insert(key.to_string(), body);
            sections.push((key, resources));
        }
    }
    let mut out = String::from(
        "# Written by `trellis world export`: every resource the shoots' plans read, as the cloud returned it.\n",
    );
    yaml::document(&mut out, &top)?;
    Ok(WorldExport { yaml: out, sections, preflight_failures, not_exported })
}

/// Refuses an export without a real client among `chosen` (`--cloud sim`): it reads a real cloud.
pub fn check_export_clouds(registry: &Registry, chosen: &[Chosen]) -> Result<()> {
    if chosen.iter().any(|c| c.real().is_some()) {
        return Ok(());
    }
    let clouds: Vec<String> = registry.cloud_names().iter().skip(1).map(|c| format!("--cloud {c}")).collect();
    bail!(
        "trellis world export reads a real cloud: pass {} (with its account and credentials, as for `trellis plan`); the simulated cloud's world is its world file already",
        clouds.join(" or ")
    )
}

/// The lines of a fleet failure that is pre-flight's only (`None` for any other error).
fn preflight_only(e: &anyhow::Error) -> Option<Vec<String>> {
    let fleet = e.downcast_ref::<FleetError>()?;
    let all_preflight = fleet.failures.iter().all(|(_, _, err)| matches!(err, ProviderError::Preflight(_)));
    if !all_preflight {
        return None;
    }
    let mut lines = Vec::new();
    for (shoot, file, err) in &fleet.failures {
        if let ProviderError::Preflight(errs) = err {
            lines.extend(errs.iter().map(|e| format!("{shoot} ({}): {e}", file.display())));
        }
    }
    Some(lines)
}

#[cfg(test)]
mod recording_tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn keeps_each_answer_once_as_returned_and_never_writes() {
        let sub = "6d3a9c1e-2b4f-4e8a-9c71-5f0e2d8b4a17";
        let sim = trellis_sim::ArmSim::in_memory(sub);
        let rg = format!("/subscriptions/{sub}/resourceGroups/hub");
        let nsg = format!("{rg}/providers/Microsoft.Network/networkSecurityGroups/nsg");
        sim.put(&rg, json!({"location": "westeurope"})).await.unwrap();
        sim.put(&nsg, json!({"location": "westeurope", "properties": {"securityRules": []}})).await.unwrap();
        let recording = Recording::new(Arc::new(sim.clone()));
        let got = recording.get(&nsg).await.unwrap().expect("the NSG");
        recording.get(&nsg).await.unwrap();
        assert_eq!(recording.get(&format!("{rg}/providers/Microsoft.Network/routeTables/none")).await.unwrap(), None);
        let listed = recording.list(&rg, "Microsoft.Network/networkSecurityGroups").await.unwrap();
        let read = recording.read();
        // The GET once (the second is the same answer), the list's item once more (no id was asked).
        assert_eq!(
            read,
            vec![Read { asked: Some(nsg.clone()), value: got }, Read { asked: None, value: listed[0].clone() }]
        );
        assert_eq!(recording.count(), 2);
        let refused = recording.create(&nsg, json!({})).await.unwrap_err();
        assert!(refused.to_string().contains("only reads the cloud"), "{refused}");
        assert!(recording.remove(&nsg, &Precondition::None).await.is_err());
        assert!(sim.get_now(&nsg).is_some(), "nothing was deleted");
    }
}

/// World files as YAML (block style, as the documented examples read), written by serde-saphyr's
/// serializer, the library that reads them: the document reads back as exactly the values written.
pub mod yaml {
    use serde_json::{Map, Value};

    /// Appends `map` as a YAML document (its keys at the top level).
    pub fn document(out: &mut String, map: &Map<String, Value>) -> anyhow::Result<()> {
        let text = serde_saphyr::to_string(map)
            .map_err(|e| anyhow::anyhow!("world export: the world file cannot be written as YAML: {e}"))?;
        out.push_str(&text);
        if !out.ends_with('\n') {
            out.push('\n');
        }
        Ok(())
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use serde_json::json;

        #[test]
        fn values_read_back_as_written() {
            let value = json!({
                "azure": {
                    "subscriptionId": "0b7c3a52-6e4f-4b8e-9a51-2f1d8c9e7a10",
                    "resources": [
                        {"id": "/subscriptions/x/resourceGroups/rg", "location": "westeurope", "tags": {}},
                        {"properties": {"addressPrefixes": ["10.0.0.0/16"], "port": "443", "n": 443, "f": 1.5,
                          "yes": "yes", "no": false, "none": null, "empty": [], "text": "a: b # c\n\"d\"",
                          "nested": [[1, 2], [], {"k": "v"}], "unicode": "grüße", "tab": "a\tb", "": "empty key",
                          "numberlike": ["1e3", "0o17", "0x1F", "~", "null", ".inf", "-.5", "2026-12-02", "+1"]}}
                    ]
                }
            });
            let mut out = String::new();
            document(&mut out, value.as_object().unwrap()).unwrap();
            let back: Value = trellis_planner::yaml::from_str(&out).unwrap();
            assert_eq!(back, value, "{out}");
            assert!(out.contains("\n  subscriptionId: 0b7c3a52-6e4f-4b8e-9a51-2f1d8c9e7a10\n"), "{out}");
            assert!(out.contains("\n  - id: /subscriptions/x/resourceGroups/rg\n    location: westeurope\n"), "{out}");
        }
    }
}
