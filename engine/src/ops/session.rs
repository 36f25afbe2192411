//! The session: where state and the simulated clouds live, and which cloud each registered provider
//! plans in ([`crate::registry`], [`crate::binding`]).

use crate::backend::{Backend, SimPlace, StateLocation};
use crate::binding::{BesideCloud, Chosen, CloudBinding, Served, Shows, Simulator};
use crate::registry::Registry;
use anyhow::Result;
use axum::response::IntoResponse as _;
use std::path::Path;
use std::sync::Arc;
use trellis_planner::cloud::{Call, CloudWrite};
use trellis_planner::retry::RetryPolicy;
use trellis_providers::provider::{CloudCtx, Provider, ProviderError};
use trellis_sim::{AuditFile, Faults, SyncReport, WorldFile};
use trellis_state::LockWait;

/// The operations that write to the cloud; only their audit log is kept in the state dir.
const WRITING_OPERATIONS: [&str; 3] = ["apply", "destroy", "sim"];

/// State and clouds for one command.
pub struct Session {
    /// The providers and their bindings this session plans with.
    pub registry: Arc<Registry>,
    /// Per registry entry, in its order: the cloud its shoots talk to.
    bound: Vec<Bound>,
    /// The simulated clouds, one per binding ([`Registry::bindings`]), kept in the state dir (also
    /// when a provider's shoots talk to a real cloud: world files sync into them).
    sims: Vec<(&'static dyn CloudBinding, Arc<dyn Simulator>)>,
    /// The feature gates plans are made under (`--feature-gates`; every gate off by default).
    pub features: trellis_providers::features::Features,
    // After `bound` and `sims`, which hold sled trees: dropped last, so the store can seal sled's files.
    /// The state (`--state`) and the simulated clouds' database (`--sim-dir`, or the sled state dir).
    pub store: Arc<Backend>,
    pub retry: RetryPolicy,
    /// Take out-of-band changes to the user's BYO resources on purpose (`--accept-drift`).
    pub accept_drift: bool,
    /// How long the command waits for a lock another process holds (`--lock-timeout`): the dirs' at
    /// open, each workspace's when apply takes it.
    pub lock_wait: LockWait,
    /// What plans cover and replace on request (`--target`, `--replace`; empty: everything, nothing).
    pub targeting: super::Targeting,
    /// Whether [`Session::close`] keeps the simulated clouds' audit logs (commands that write the cloud).
    keep_audit: bool,
}

/// The cloud one provider's shoots talk to.
struct Bound {
    provider_type: &'static str,
    /// Its binding's simulated cloud, or a real client.
    cloud: Arc<dyn CloudWrite>,
    /// The account its shoots live in (Azure: the subscription; GCP: the project).
    account: String,
}

impl Session {
    /// Opens the sled state dir (creating it) and the simulated clouds inside it; syncs `--world` if given
    /// ([`Session::open_at`] with the dir and [`SimPlace::InState`]).
    pub fn open(state_dir: &Path, operation: &str, world: Option<&Path>) -> Result<(Session, Option<String>)> {
        Session::open_at(&StateLocation::Dir(state_dir.to_path_buf()), &SimPlace::InState, operation, world)
    }

    /// [`Session::open_with`] the builtin registry.
    pub fn open_at(
        state: &StateLocation,
        sim_place: &SimPlace,
        operation: &str,
        world: Option<&Path>,
    ) -> Result<(Session, Option<String>)> {
        Session::open_with(Registry::builtin(), state, sim_place, operation, world, LockWait::default())
    }

    /// Opens the state (creating a state dir) and the simulated cloud of every binding of `registry`
    /// ([`SimPlace`]: inside a sled state dir, or in a dir of its own); syncs `--world` if given (its
    /// note: "world: N added, N updated, N removed"). `operation` names the command (`plan`, `apply`,
    /// `destroy`, `sim`, …) in the dir's holder record and the database's lock records; `lock_wait` how
    /// long a dir or workspace lock another process holds is waited for (kept as
    /// [`Session::lock_wait`]). Every
    /// provider's shoots talk to its binding's simulated cloud until [`Session::use_chosen`] or
    /// [`Session::use_cloud`] says otherwise. If anything after opening the state fails, what this
    /// open created is removed again.
    pub fn open_with(
        registry: Arc<Registry>,
        state: &StateLocation,
        sim_place: &SimPlace,
        operation: &str,
        world: Option<&Path>,
        lock_wait: LockWait,
    ) -> Result<(Session, Option<String>)> {
        let world = world.map(|w| registry.load_world(w)).transpose()?;
        let store = Backend::open(state, sim_place, operation, &lock_wait)?;
        let opened = open_sims(&registry, &store, world.as_ref());
        let (sims, note) = match opened {
            Ok(opened) => opened,
            Err(e) => {
                let _ = store.discard();
                return Err(e);
            }
        };
        let store = Arc::new(store);
        // The simulated clouds live in the state's database (a sled state dir without `--sim-dir`):
        // their writes join the state's grouped flushes, so a write and the commits made meanwhile are
        // made durable together (in a `--sim-dir` of its own, each state commit flushes it first). An
        // ARM call's write does not wait for a flush, nor is it written to sled: every flush of the
        // database holding the simulated cloud first writes the writes made before it in one batch, so
        // the state commit of its node (begun after the write) makes it durable before the node counts
        // as done (see `Persist::record` and each binding's `Simulator::share_flush`).
        let weak = Arc::downgrade(&store);
        let shared_flush: trellis_sim::SharedFlush = Arc::new(move || match weak.upgrade() {
            Some(store) => store.flush().map_err(|e| e.to_string()),
            None => Err("the state dir was closed".to_string()),
        });
        for (_, sim) in &sims {
            sim.share_flush(Arc::clone(&shared_flush), &store)?;
        }
        let bound = registry
            .entries()
            .iter()
            .map(|e| {
                let (binding, sim) = sim_of(&sims, e.binding);
                Bound { provider_type: e.provider.type_name(), cloud: sim.cloud(), account: binding.sim_account(sim) }
            })
            .collect();
        Ok((
            Session {
                registry,
                bound,
                sims,
                features: Default::default(),
                store,
                retry: RetryPolicy::default(),
                accept_drift: false,
                lock_wait,
                targeting: Default::default(),
                keep_audit: WRITING_OPERATIONS.contains(&operation),
            },
            note,
        ))
    }

    /// The simulated cloud of type `T` (`ArmSim`, `GceSim`, `DnsSim`, or a registered binding's own).
    pub fn sim<T: Simulator>(&self) -> Option<&T> {
        self.sims.iter().find_map(|(_, sim)| (sim.as_ref() as &dyn std::any::Any).downcast_ref::<T>())
    }

    /// The simulated cloud of `provider_type`'s binding.
    pub fn sim_of(&self, provider_type: &str) -> Option<&dyn Simulator> {
        let entry = self.registry.entry(provider_type)?;
        self.sims.iter().find(|(b, _)| b.trees() == entry.binding.trees()).map(|(_, sim)| sim.as_ref())
    }

    /// Every simulated cloud, with its binding, in registration order.
    pub fn sims(&self) -> impl Iterator<Item = (&'static dyn CloudBinding, &dyn Simulator)> {
        self.sims.iter().map(|(b, sim)| (*b, sim.as_ref()))
    }

    /// The cloud `provider_type`'s shoots talk to.
    pub fn cloud(&self, provider_type: &str) -> Option<&Arc<dyn CloudWrite>> {
        self.bound.iter().find(|b| b.provider_type == provider_type).map(|b| &b.cloud)
    }

    /// The account `provider_type`'s shoots live in (Azure: the subscription; GCP: the project).
    pub fn account(&self, provider_type: &str) -> Option<&str> {
        self.bound.iter().find(|b| b.provider_type == provider_type).map(|b| b.account.as_str())
    }

    /// `provider_type`'s shoots talk to `cloud` (e.g. a real client, or a wrapper of the simulated
    /// cloud) instead, in `account` if given. Returns whether `provider_type` is registered.
    pub fn use_cloud(&mut self, provider_type: &str, cloud: Arc<dyn CloudWrite>, account: Option<String>) -> bool {
        let Some(bound) = self.bound.iter_mut().find(|b| b.provider_type == provider_type) else { return false };
        bound.cloud = cloud;
        if let Some(account) = account {
            bound.account = account;
        }
        true
    }

    /// What [`Registry::choose`] chose for this command, entry by entry.
    /// A [`Chosen::Beside`] composes its real client with the entry's simulated cloud
    /// ([`BesideCloud`]).
    pub fn use_chosen(&mut self, chosen: Vec<Chosen>) {
        let entries = self.registry.entries();
        for ((bound, entry), chosen) in self.bound.iter_mut().zip(entries).zip(chosen) {
            match chosen {
                Chosen::Sim(None) => {}
                Chosen::Sim(Some(account)) => bound.account = account,
                Chosen::Real(cloud, account) => {
                    bound.cloud = cloud;
                    bound.account = account;
                }
                Chosen::Beside { real, account, claims } => {
                    let sim = sim_of(&self.sims, entry.binding).1.cloud();
                    bound.cloud = Arc::new(BesideCloud { real, sim, claims });
                    bound.account = account;
                }
            }
        }
    }

    /// Installs `faults` (e.g. simulated latency) in every simulated cloud.
    pub fn set_sim_faults(&self, faults: Faults) {
        for (_, sim) in &self.sims {
            sim.set_faults(faults.clone());
        }
    }

    /// Re-syncs a world file into every simulated cloud (an out-of-band change).
    pub fn sync_world(&self, world: &WorldFile) -> Result<SyncReport> {
        sync_world(&self.sims, world)
    }

    /// Every call the simulated clouds answered in this session, cloud by cloud in registration order.
    pub fn sim_calls(&self) -> Vec<Call> {
        self.sims.iter().flat_map(|(_, sim)| sim.calls()).collect()
    }

    /// The cloud of each provider with its context (the account, the retry policy, `--accept-drift`),
    /// by `spec.provider.type`: a fleet may mix providers, and each shoot's provider decides its cloud.
    pub fn clouds(&self) -> Clouds {
        self.clouds_replacing(&self.targeting.replace)
    }

    /// [`Session::clouds`], their plans replacing the managed resources at `replace` (`--replace`).
    pub fn clouds_replacing(&self, replace: &std::collections::BTreeSet<String>) -> Clouds {
        let replace = Arc::new(replace.clone());
        let ctx = |account: &str| CloudCtx {
            account: account.to_string(),
            retry: self.retry.clone(),
            accept_drift: self.accept_drift,
            replace: Arc::clone(&replace),
        };
        Clouds {
            by_type: self.bound.iter().map(|b| (b.provider_type, Arc::clone(&b.cloud), ctx(&b.account))).collect(),
        }
    }

    /// The audit logs the state dir keeps, by simulated cloud (`trellis sim audit`).
    pub fn audit_logs(&self) -> Result<Vec<(&'static str, Vec<Call>)>> {
        let mut logs = Vec::new();
        for (binding, _) in &self.sims {
            let calls = self.audit_file(*binding)?.read()?;
            logs.push((binding.sim_name(), calls));
        }
        Ok(logs)
    }

    /// `trellis sim show ID`: the simulated cloud `id` is looked up in (the one whose binding takes
    /// it, else the one taking any other id), with the words naming it.
    pub fn sim_showing(&self, id: &str) -> Option<(&dyn Simulator, &'static str)> {
        let mut otherwise = None;
        for (binding, sim) in &self.sims {
            match binding.shows(id) {
                Shows::Yes(what) => return Some((sim.as_ref(), what)),
                Shows::Otherwise(what) if otherwise.is_none() => otherwise = Some((sim.as_ref(), what)),
                _ => {}
            }
        }
        otherwise
    }

    /// `trellis sim serve`: one router for the simulated clouds that have an HTTP API
    /// ([`CloudBinding::serve`]; a request goes to the cloud whose paths it is on, else to the one
    /// taking any other path), and their names. Their audit logs are kept in the state dir's audit
    /// trees as the calls are made (the trees `trellis sim audit` reads).
    ///
    /// Durability: a served simulated cloud leaves its flushes to the state dir as in process (where
    /// the node's state commit flushes); here the answer acknowledges a write, so every request that
    /// may write is answered after the state dir's grouped flush
    /// ([`trellis_sim_http::flush_before_answer`]). The audit entries are written as the calls are
    /// made, so that flush makes a write's entry durable with it; a read's entry is made durable by
    /// the next write's flush, or the stop ([`Session::persist_served_audit`]).
    pub fn serve(&self, opts: &crate::binding::ServeOptions) -> Result<(axum::Router, Vec<&'static str>)> {
        let mut served = Vec::new();
        let mut apis = Vec::new();
        for (binding, sim) in &self.sims {
            if let Some(s) = binding.serve(sim.as_ref(), opts) {
                sim.keep_audit(self.audit_file(*binding)?)?;
                apis.extend(binding.http_api());
                served.push(s);
            }
        }
        let store = Arc::downgrade(&self.store);
        let flush: trellis_sim::SharedFlush = Arc::new(move || match store.upgrade() {
            Some(store) => store.flush().map_err(|e| e.to_string()),
            None => Err("the state dir was closed".to_string()),
        });
        Ok((trellis_sim_http::flush_before_answer(route(served), flush), apis))
    }

    /// After `trellis sim serve`: appends what the served clouds' audit logs hold in memory (what a
    /// failed keep left) and flushes it.
    pub fn persist_served_audit(&self) -> Result<()> {
        for (binding, sim) in &self.sims {
            if binding.http_api().is_some() {
                sim.persist_audit(&self.audit_file(*binding)?)?;
            }
        }
        Ok(())
    }

    /// Where `binding`'s simulated cloud keeps its audit log: its file beside the database, and the
    /// tree an earlier trellis kept it in, if the database has it (see `AuditFile`).
    fn audit_file(&self, binding: &dyn CloudBinding) -> Result<AuditFile> {
        let trees = binding.trees();
        let legacy = self.store.existing_tree(trees.legacy_audit)?;
        Ok(AuditFile::new(self.store.sim_dir().join(trees.audit_file), legacy))
    }

    /// Ends the command: keeps the simulated clouds' audit logs of a command that writes the cloud
    /// (`apply`, `destroy`, `trellis sim …`; a plan's reads stay in memory, so a plan writes nothing), then
    /// closes the state (see [`Backend::close`]).
    pub fn close(self) -> Result<()> {
        let kept = self.persist_audit();
        let store = self.release();
        match Arc::try_unwrap(store) {
            Ok(store) => store.close()?,
            Err(shared) => drop(shared), // someone still holds it: dropping closes it without sealing
        }
        kept
    }

    /// Ends a command that failed: keeps the audit log as [`Session::close`] does, then removes what this
    /// command created in the state dir if it recorded nothing (see [`Backend::discard`]), so a typo
    /// leaves no `.trellis` behind — never a directory another process holds.
    pub fn discard(self) -> Result<()> {
        let kept = self.persist_audit();
        let store = self.release();
        if let Ok(store) = Arc::try_unwrap(store) {
            store.discard()?;
        }
        kept
    }

    /// [`Session::close`] when `result` is a success, else [`Session::discard`]; returns `result`.
    pub fn finish<T>(self, result: Result<T>) -> Result<T> {
        match result {
            Ok(value) => {
                self.close()?;
                Ok(value)
            }
            Err(e) => {
                // The command's own error is the one to report.
                let _ = self.discard();
                Err(e)
            }
        }
    }

    fn persist_audit(&self) -> Result<()> {
        if self.keep_audit {
            for (binding, sim) in &self.sims {
                sim.persist_audit(&self.audit_file(*binding)?)?;
            }
        }
        Ok(())
    }

    /// Drops the clouds and the simulated clouds (which hold sled trees) and hands back the store.
    fn release(self) -> Arc<Backend> {
        let Session { bound, sims, store, .. } = self;
        drop(bound);
        drop(sims);
        store
    }
}

/// One router for `served`: each request goes to the first whose paths it is on, else to the first
/// taking any other path (404 when none does).
fn route(served: Vec<Served>) -> axum::Router {
    use tower::ServiceExt as _;
    let served = Arc::new(served);
    axum::Router::new().fallback(move |req: axum::extract::Request| {
        let path = req.uri().path();
        let router = served
            .iter()
            .find(|s| s.claims.is_some_and(|claims| claims(path)))
            .or_else(|| served.iter().find(|s| s.claims.is_none()))
            .map(|s| s.router.clone());
        async move {
            match router {
                Some(router) => match router.oneshot(req).await {
                    Ok(response) => response,
                    Err(never) => match never {},
                },
                None => axum::http::StatusCode::NOT_FOUND.into_response(),
            }
        }
    })
}

/// Opens the simulated cloud of every binding of `registry` on its tree, and syncs `world` into them.
#[allow(clippy::type_complexity)]
fn open_sims(
    registry: &Registry,
    store: &Backend,
    world: Option<&WorldFile>,
) -> Result<(Vec<(&'static dyn CloudBinding, Arc<dyn Simulator>)>, Option<String>)> {
    let mut sims = Vec::new();
    for binding in registry.bindings() {
        let tree = store.tree(binding.trees().cloud)?;
        sims.push((binding, binding.open_sim(tree, world)?));
    }
    let note = match world {
        Some(world) => {
            let report = sync_world(&sims, world)?;
            Some(format!(
                "world: {} added, {} updated, {} removed",
                report.added.len(),
                report.updated.len(),
                report.removed.len()
            ))
        }
        None => None,
    };
    Ok((sims, note))
}

fn sync_world(sims: &[(&'static dyn CloudBinding, Arc<dyn Simulator>)], world: &WorldFile) -> Result<SyncReport> {
    let mut report = SyncReport::default();
    for (_, sim) in sims {
        report.extend(sim.sync_world(world)?);
    }
    Ok(report)
}

/// The simulated cloud of `binding` (the one opened on its trees).
fn sim_of<'a>(
    sims: &'a [(&'static dyn CloudBinding, Arc<dyn Simulator>)],
    binding: &'static dyn CloudBinding,
) -> (&'static dyn CloudBinding, &'a dyn Simulator) {
    let (binding, sim) = sims
        .iter()
        .find(|(b, _)| b.trees() == binding.trees())
        .expect("every binding of the registry has its simulated cloud opened");
    (*binding, sim.as_ref())
}

/// The cloud each registered provider's shoots are planned and applied against, with the context of
/// their calls (the account: Azure's subscription, GCP's project), by `spec.provider.type`: a fleet may
/// mix providers, and each shoot's provider decides its cloud. Built from the session's registry, so
/// every registered provider has one.
#[derive(Clone)]
pub struct Clouds {
    by_type: Vec<(&'static str, Arc<dyn CloudWrite>, CloudCtx)>,
}

impl Clouds {
    /// The cloud and context of `provider`'s shoots.
    pub fn of(&self, provider: &dyn Provider) -> Result<(&Arc<dyn CloudWrite>, &CloudCtx), ProviderError> {
        self.by_type.iter().find(|(t, _, _)| *t == provider.type_name()).map(|(_, cloud, ctx)| (cloud, ctx)).ok_or_else(
            || {
                ProviderError::Other(
                    format!("bug: provider {} is not in the session's registry; please report", provider.type_name())
                        .into(),
                )
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn example(rel: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples").join(rel)
    }

    /// A command costs what it touches (issue #27): opening a session reads no simulated cloud's
    /// resources, and a cloud is read when its shoots first call it. An Azure plan against a state dir
    /// whose simulated GCE cloud cannot be read plans (GCE's tree was read whole at every open, the
    /// cost of every GCP shoot in the dir paid by every command); a GCP plan fails, naming the key.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn regression_a_command_reads_only_the_simulated_clouds_it_calls() {
        let dir = tempfile::tempdir().unwrap();
        let (session, _) = Session::open(dir.path(), "apply", None).unwrap();
        let gce = session.store.tree("sim/gce").unwrap();
        gce.insert("e projects/p/global/networks/broken", b"{not json".to_vec()).unwrap();
        drop(gce);
        session.close().unwrap();

        let (session, _) = Session::open(dir.path(), "plan", None).expect("opening reads no cloud's resources");
        let azure = super::super::plan_files(&session, &[example("azure-managed/shoot.yaml")], false, None).await;
        assert!(azure.expect("the Azure shoot plans").plans[0].planned.plan.has_changes());
        let gcp = super::super::plan_files(&session, &[example("gcp/managed/shoot.yaml")], false, None).await;
        let err = format!("{:#}", gcp.err().expect("the GCP shoot's cloud cannot be read"));
        assert!(err.contains("projects/p/global/networks/broken"), "{err}");
    }
}
