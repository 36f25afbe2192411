//! The registry: every provider the engine plans with, each paired with its cloud binding
//! ([`crate::binding::CloudBinding`]). [`Registry::builtin`] is trellis' own list (Azure, GCP, and the
//! GEP-0066 domains provider); [`Registry::with`] adds a provider at run time (a test's own), and a
//! [`crate::ops::Session`] opened with that registry plans, applies and destroys its shoots on its
//! binding's cloud like any other's.
//!
//! The loader dispatches Shoots by `spec.provider.type` through [`Registry::providers`]; a provider
//! whose plans are derived from other inputs (domains: a Shoot paired with its Seed) is registered
//! with [`Entry::derived`] and is not dispatched by type: its [`Derived`] hooks make its inputs and
//! run its Seed-level rules, so the engine names none of its types.

use crate::binding::{Chosen, CloudBinding, CloudChoice};
use crate::bindings;
use anyhow::{bail, Context as _, Result};
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock};
use trellis_plans::Plan;
use trellis_providers::features::Features;
use trellis_providers::manifest::LoadedSeed;
use trellis_providers::provider::{Provider, ProviderError, ProviderShoot};
use trellis_providers::seed::Seed;
use trellis_sim::{WorldFile, WorldSection};
use trellis_state::Workspace;

/// The providers built into trellis, with their bindings: the registry line.
static BUILTIN: LazyLock<Arc<Registry>> = LazyLock::new(|| {
    use trellis_providers::{azure, domains, gcp};
    let domains = Derived {
        workspace_suffix: bindings::dns::WORKSPACE_SUFFIX,
        describe: bindings::dns::describe,
        pair: domains::pair,
        check_seeds: domains::check_seeds,
    };
    Arc::new(Registry::new(vec![
        Entry::new(&azure::provider::AZURE, &bindings::azure::AZURE),
        Entry::new(&gcp::provider::GCP, &bindings::gcp::GCP),
        Entry::derived(&domains::DOMAINS, &bindings::dns::DNS, domains),
    ]))
});

/// One registered provider and its cloud binding.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    pub provider: &'static dyn Provider,
    /// Its cloud (`binding.provider_type()` is the provider's type).
    pub binding: &'static dyn CloudBinding,
    /// `Some` for a provider whose plans are derived from other inputs instead of dispatched by
    /// `spec.provider.type`.
    pub derived: Option<Derived>,
}

/// What sets a provider of derived plans apart (domains: each Shoot paired with its Seed gets one),
/// and its Seed-pairing hooks, which the provider owns: the engine pairs Shoots with Seeds by
/// `spec.seedName` ([`trellis_providers::manifest::pair_seeds`]) and hands each pair to [`Derived::pair`]
/// ([`crate::ops::derived_inputs`]), and a fleet's derived inputs to [`Derived::check_seeds`]
/// ([`crate::ops::check_seeds`]).
#[derive(Clone, Copy)]
pub struct Derived {
    /// Appended to the shoot's technical id to name the plan's workspace (`+domains`), so the
    /// shoot's own plan and the derived one are kept apart. No technical id holds a `+`.
    pub workspace_suffix: &'static str,
    /// What `trellis state show SHOOT` says about the derived workspace, beside the shoot's own.
    pub describe: fn(&Workspace) -> Vec<String>,
    /// The derived input of one Shoot (its document as JSON) on the Seed its `spec.seedName` names,
    /// under the run's feature gates; `file` names the Shoot in errors. A refusal fails the fleet
    /// ([`crate::ops::FleetError`], the shoot's derived workspace named).
    pub pair: PairFn,
    /// The Seed-level rules over a fleet ([`CheckSeedsFn`]).
    pub check_seeds: CheckSeedsFn,
}

/// [`Derived::pair`]: `(shoot, seed, features, file)`.
pub type PairFn = fn(&serde_json::Value, &Seed, Features, &Path) -> Result<Box<dyn ProviderShoot>, ProviderError>;

/// [`Derived::check_seeds`]: `(inputs, seeds, features, applied)` — the provider's derived inputs of
/// the fleet with their files (grouping them by Seed is the provider's: only it knows the Seed an
/// input was paired with), every Seed of the run (those without any of the inputs are checked too),
/// the run's feature gates, and the workspaces in state carrying the provider's workspace suffix as
/// (technical id, workspace), read on demand. Returns each broken rule's subject (`seed NAME`), file and
/// errors (the engine sorts them by subject and fails the fleet with them); `Err` when state cannot
/// be read.
pub type CheckSeedsFn = fn(
    &[(&dyn ProviderShoot, &Path)],
    &[LoadedSeed],
    Features,
    &dyn Fn() -> Result<Vec<(String, Workspace)>, ProviderError>,
) -> Result<Vec<(String, PathBuf, ProviderError)>, ProviderError>;

impl std::fmt::Debug for Derived {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Derived").field("workspace_suffix", &self.workspace_suffix).finish_non_exhaustive()
    }
}

impl Entry {
    /// A provider dispatched by `spec.provider.type`, on `binding`'s cloud.
    pub fn new(provider: &'static dyn Provider, binding: &'static dyn CloudBinding) -> Entry {
        Entry { provider, binding, derived: None }
    }

    /// A provider of derived plans ([`Derived`]), on `binding`'s cloud.
    pub fn derived(provider: &'static dyn Provider, binding: &'static dyn CloudBinding, derived: Derived) -> Entry {
        Entry { provider, binding, derived: Some(derived) }
    }
}

/// A binding's flag that configures its real client only ([`Registry::real_client_flags`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RealClientFlag {
    /// The clap id.
    pub id: String,
    /// The long name, without `--`.
    pub long: String,
    /// The `--cloud` it needs: `--cloud azure`, or `--cloud azure or --cloud gcp` for a binding
    /// whose real client rides on another's.
    pub needs: String,
}

/// The registered providers, in registration order (the first of a type wins).
#[derive(Clone)]
pub struct Registry {
    entries: Vec<Entry>,
    /// The providers dispatched by `spec.provider.type`, for the loader.
    by_type: trellis_providers::registry::Registry,
}

impl Registry {
    pub fn new(entries: Vec<Entry>) -> Registry {
        let by_type = entries.iter().filter(|e| e.derived.is_none()).map(|e| e.provider).collect();
        Registry { entries, by_type: trellis_providers::registry::Registry::new(by_type) }
    }

    /// The providers built into trellis: Azure, GCP, domains.
    pub fn builtin() -> Arc<Registry> {
        Arc::clone(&BUILTIN)
    }

    /// This registry's entries and `entry` after them: `Registry::builtin().with(Entry::new(&MINE,
    /// &MY_BINDING))`.
    pub fn with(&self, entry: Entry) -> Registry {
        let mut entries = self.entries.clone();
        entries.push(entry);
        Registry::new(entries)
    }

    /// Every entry, in registration order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The entry of `provider_type`.
    pub fn entry(&self, provider_type: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.provider.type_name() == provider_type)
    }

    /// The providers dispatched by `spec.provider.type` (what the loader reads Shoots with).
    pub fn providers(&self) -> &trellis_providers::registry::Registry {
        &self.by_type
    }

    /// The suffix of the workspaces of `provider_type`'s plans ([`Derived::workspace_suffix`]; empty
    /// for a provider dispatched by type).
    pub fn workspace_suffix(&self, provider_type: &str) -> &'static str {
        self.entry(provider_type).and_then(|e| e.derived).map_or("", |d| d.workspace_suffix)
    }

    /// The workspace a plan of `provider_type` for the shoot `technical_id` is kept in: the technical id
    /// for its own plan, with the provider's suffix for a derived one (`<technical id>+domains`).
    pub fn workspace_name(&self, technical_id: &str, provider_type: &str) -> String {
        format!("{technical_id}{}", self.workspace_suffix(provider_type))
    }

    /// The workspace of a plan ([`Registry::workspace_name`] of its shoot and provider).
    pub fn plan_workspace(&self, plan: &Plan) -> String {
        self.workspace_name(&plan.shoot, plan.provider.as_str())
    }

    /// The bindings, each once (entries sharing a binding's trees share its simulated cloud), in
    /// registration order.
    pub fn bindings(&self) -> Vec<&'static dyn CloudBinding> {
        let mut out: Vec<&'static dyn CloudBinding> = Vec::new();
        for e in &self.entries {
            if !out.iter().any(|b| b.trees() == e.binding.trees()) {
                out.push(e.binding);
            }
        }
        out
    }

    /// The world-file sections of the bindings.
    pub fn world_sections(&self) -> Vec<&'static dyn WorldSection> {
        let mut out: Vec<&'static dyn WorldSection> = Vec::new();
        let sections = self
            .bindings()
            .into_iter()
            .flat_map(|b| b.world_section().into_iter().chain(b.more_world_sections().iter().copied()));
        for section in sections {
            if !out.iter().any(|s| s.key() == section.key()) {
                out.push(section);
            }
        }
        out
    }

    /// Reads and checks a world file (`--world`): its sections are the bindings'.
    pub fn load_world(&self, path: &Path) -> Result<WorldFile> {
        let text = trellis_providers::manifest::read_input(path)
            .with_context(|| format!("cannot read world file {}", path.display()))?;
        Ok(WorldFile::parse_with(&path.display().to_string(), &text, &self.world_sections())?)
    }

    /// `--cloud`'s values: `sim`, then each binding's real cloud.
    pub fn cloud_names(&self) -> Vec<&'static str> {
        std::iter::once("sim").chain(self.bindings().iter().filter_map(|b| b.real_cloud())).collect()
    }

    /// The bindings' own flags ([`CloudBinding::args`]), in registration order.
    pub fn args(&self) -> Vec<clap::Arg> {
        self.bindings().iter().flat_map(|b| b.args()).collect()
    }

    /// What each entry's shoots talk to for one command (in entry order), from `--cloud`, `--endpoint`
    /// and the bindings' flags. Every problem is an error here, before anything is opened.
    pub async fn choose(&self, choice: &CloudChoice<'_>) -> Result<Vec<Chosen>> {
        if choice.cloud == "sim" && choice.endpoint.is_some() {
            bail!(
                "--endpoint needs {}: it points a real client at an emulator; the simulated cloud (--cloud sim) lives in the state dir or --sim-dir",
                self.real_clouds().iter().map(|c| format!("--cloud {c}")).collect::<Vec<_>>().join(" or ")
            );
        }
        if choice.cloud == "sim" {
            self.refuse_real_client_flags(choice.flags)?;
        }
        // A world file with a real cloud: checked before any client signs in.
        if let Some(path) = choice.world.filter(|_| self.real_clouds().contains(&choice.cloud)) {
            self.check_world_beside_real(&self.load_world(path)?, choice.cloud)?;
        }
        let mut chosen = Vec::with_capacity(self.entries.len());
        for e in &self.entries {
            chosen.push(e.binding.choose(choice).await?);
        }
        Ok(chosen)
    }

    /// The bindings' flags that configure a real client only (not in their [`CloudBinding::sim_flags`]):
    /// what `--cloud sim` refuses on the command line, and `trellis sim` altogether.
    pub fn real_client_flags(&self) -> Vec<RealClientFlag> {
        let any = self.real_clouds().iter().map(|c| format!("--cloud {c}")).collect::<Vec<_>>().join(" or ");
        let mut out = Vec::new();
        for b in self.bindings() {
            let needs = b.real_cloud().map_or_else(|| any.clone(), |c| format!("--cloud {c}"));
            for arg in b.args().into_iter().filter(|a| !b.sim_flags().contains(&a.get_id().as_str())) {
                if let Some(long) = arg.get_long() {
                    out.push(RealClientFlag {
                        id: arg.get_id().to_string(),
                        long: long.to_string(),
                        needs: needs.clone(),
                    });
                }
            }
        }
        out
    }

    /// `--cloud sim` with a flag that configures a real client only, given on the command line (an
    /// environment variable such as `AZURE_SUBSCRIPTION_ID` is left alone: a CI job's environment
    /// serves both): refused, naming it and the `--cloud` it needs, rather than silently ignored.
    fn refuse_real_client_flags(&self, flags: &clap::ArgMatches) -> Result<()> {
        let given = |id: &str| {
            flags.try_contains_id(id).unwrap_or(false)
                && flags.value_source(id) == Some(clap::parser::ValueSource::CommandLine)
        };
        // The common case, no binding flag on the command line, builds nothing.
        if !flags.ids().any(|id| given(id.as_str())) {
            return Ok(());
        }
        let refused: Vec<RealClientFlag> = self.real_client_flags().into_iter().filter(|f| given(&f.id)).collect();
        let Some(RealClientFlag { long, needs, .. }) = refused.first() else { return Ok(()) };
        let drop: Vec<String> = refused.iter().map(|f| format!("--{}", f.long)).collect();
        bail!(
            "--{long} needs {needs}: it configures the real client, and the simulated cloud (--cloud sim, the default) does not use it (a world file names the simulated accounts); drop {}, or add {needs}",
            drop.join(" and ")
        )
    }

    /// With a real cloud (`--cloud NAME`), a world file may hold only the sections that stay simulated
    /// beside it ([`CloudBinding::world_sections_beside_real`]): every other section describes what
    /// the real clients read from the cloud itself, and is refused, naming it.
    pub fn check_world_beside_real(&self, world: &WorldFile, cloud: &str) -> Result<()> {
        let bindings = self.bindings();
        let kept: Vec<&str> = bindings.iter().flat_map(|b| b.world_sections_beside_real()).map(|s| s.key()).collect();
        let refused: Vec<String> = self
            .world_sections()
            .iter()
            .map(|s| s.key())
            .filter(|key| world.has(key) && !kept.contains(key))
            .map(|key| format!("`{key}:`"))
            .collect();
        if refused.is_empty() {
            return Ok(());
        }
        let path = trellis_plans::escape::text(&world.path);
        if kept.is_empty() {
            bail!("--world {path} cannot be used with --cloud {cloud}: world files describe the simulated cloud; with --cloud {cloud} trellis reads the cloud itself");
        }
        let kept: Vec<String> = kept.iter().map(|k| format!("`{k}:`")).collect();
        bail!(
            "--world {path}: with --cloud {cloud} a world file may hold only what stays simulated ({}), but it holds {}, which --cloud {cloud} reads from the cloud itself; remove {} or plan with --cloud sim",
            kept.join(", "),
            refused.join(", "),
            if refused.len() == 1 { "that section" } else { "those sections" }
        )
    }

    /// The `--cloud` values of real clients.
    fn real_clouds(&self) -> Vec<&'static str> {
        self.bindings().iter().filter_map(|b| b.real_cloud()).collect()
    }

    /// `--endpoint`'s help.
    pub fn endpoint_help(&self) -> String {
        format!(
            "With --cloud {}: the API endpoint instead of the cloud's own (an emulator such as `trellis sim serve`); plain http only on a loopback address",
            self.real_clouds().join(" or ")
        )
    }

    /// The bindings' `trellis sim` subcommands, listed in this order.
    pub fn sim_commands(&self) -> Vec<clap::Command> {
        let commands = self.bindings().iter().flat_map(|b| b.sim_commands()).collect::<Vec<_>>();
        commands.into_iter().enumerate().map(|(i, c)| c.display_order(i)).collect()
    }

    /// The binding whose `trellis sim` subcommand `name` is.
    pub fn sim_command_binding(&self, name: &str) -> Option<&'static dyn CloudBinding> {
        self.bindings().into_iter().find(|b| b.sim_commands().iter().any(|c| c.get_name() == name))
    }

    /// `trellis sim show`'s help for its id.
    pub fn show_help(&self) -> String {
        self.bindings().iter().filter_map(|b| b.shows_help()).collect::<Vec<_>>().join(", or ")
    }

    /// `trellis sim audit --output`'s help.
    pub fn audit_output_help(&self) -> String {
        let logs: Vec<String> = self.bindings().iter().map(|b| format!("\"{}\": […]", b.sim_name())).collect();
        format!("text: one call a line (`cloud method status target`); json: `{{{}}}`", logs.join(", "))
    }

    /// `trellis sim serve`'s description.
    pub fn serve_about(&self) -> String {
        let apis: Vec<String> =
            self.bindings().iter().filter_map(|b| b.http_api()).map(|a| format!("{a} REST")).collect();
        format!(
            "Serve the simulated clouds of the state dir over HTTP, {} on one port, for the real clients (`--cloud {} --endpoint URL`); until Ctrl-C",
            apis.join(" and "),
            self.real_clouds().join("|")
        )
    }
}

/// Each kind as its provider tells Terraform's readers (`show --output terraform-json`), for every
/// registered provider (derived ones included); a provider the registry does not know, or a kind its
/// provider maps to nothing, is `<provider>_<kind>`.
impl trellis_plans::terraform::TerraformKinds for Registry {
    fn terraform_kind(
        &self,
        provider: trellis_plans::Provider,
        kind: trellis_plans::Kind,
        id: Option<&str>,
        body: Option<&serde_json::Value>,
        related: &[&serde_json::Value],
    ) -> trellis_plans::terraform::TerraformKind {
        match self.entry(provider.as_str()) {
            Some(entry) => entry.provider.terraform_kind(kind, id, body, related),
            None => trellis_plans::terraform::TerraformKind::default(),
        }
    }
}
