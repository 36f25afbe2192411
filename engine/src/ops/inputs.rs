//! The inputs: Shoots loaded from manifests (and the domains inputs of Shoots whose Seed is among
//! them), and a planned shoot.

use anyhow::{bail, Result};
use std::path::PathBuf;
use trellis_providers::features::Features;
use trellis_providers::manifest::{self, ManifestError};
use trellis_providers::provider::{Planned, Provider, ProviderError, ProviderShoot};
use trellis_state::Workspace;

use crate::registry::Registry;

use super::*;

/// One plan input from the manifests: a Shoot with the provider that parsed it (its infrastructure
/// plan), or a Shoot paired with its Seed for the domains provider (its domains plan).
pub struct ShootInput {
    pub file: PathBuf,
    pub provider: &'static dyn Provider,
    pub shoot: Box<dyn ProviderShoot>,
    /// What its workspace's name adds to the technical id ([`Registry::workspace_suffix`]).
    pub workspace_suffix: &'static str,
}

impl ShootInput {
    /// An input of `provider` (registered in `registry`).
    pub fn new(
        registry: &Registry,
        file: PathBuf,
        provider: &'static dyn Provider,
        shoot: Box<dyn ProviderShoot>,
    ) -> Self {
        let workspace_suffix = registry.workspace_suffix(provider.type_name());
        ShootInput { file, provider, shoot, workspace_suffix }
    }

    /// The workspace its plan is kept in ([`Registry::workspace_name`]).
    pub fn id(&self) -> String {
        format!("{}{}", self.shoot.technical_id(), self.workspace_suffix)
    }
}

/// Loads every Shoot from the given files and directories, under every feature gate's default
/// ([`load_shoots_with`]).
pub fn load_shoots(paths: &[PathBuf]) -> Result<Vec<ShootInput>> {
    load_shoots_with(paths, Features::default())
}

/// Loads every Shoot from the given files and directories with the builtin registry: each Shoot's
/// infrastructure plan input, then the domains plan input of each Shoot whose Seed is among them
/// ([`domains_inputs`]).
pub fn load_shoots_with(paths: &[PathBuf], features: Features) -> Result<Vec<ShootInput>> {
    Ok(load_inputs(&Registry::builtin(), paths, features)?.0)
}

/// [`load_shoots_with`] through `registry`, and the Seeds among the inputs ([`check_seeds`] reads them).
pub fn load_inputs(
    registry: &Registry,
    paths: &[PathBuf],
    features: Features,
) -> Result<(Vec<ShootInput>, Vec<manifest::LoadedSeed>)> {
    if paths.is_empty() {
        bail!("no manifests given; pass -f FILE or -f DIR (a directory is a fleet: every Shoot in it)");
    }
    let loaded = manifest::load_with(registry.providers(), paths)?;
    if loaded.shoots.is_empty() && loaded.domains_only.is_empty() {
        return Err(ManifestError::NoManifests { paths: paths.to_vec() }.into());
    }
    let domains = domains_inputs(registry, &loaded, features)?;
    let mut inputs: Vec<ShootInput> = Vec::with_capacity(loaded.shoots.len() + domains.len());
    inputs.extend(loaded.shoots.into_iter().map(|l| ShootInput::new(registry, l.file, l.provider, l.shoot)));
    inputs.extend(domains);
    Ok((inputs, loaded.seeds))
}

/// The domains plan inputs of `loaded`: each Shoot whose `spec.seedName` names a loaded Seed
/// ([`manifest::pair_seeds`]), paired by [`trellis_providers::domains::pair`] under `features`, in
/// shoot order, then those of the Shoots without an infrastructure plan
/// ([`manifest::DomainsOnlyShoot`], paired by [`manifest::load`]), each with a note on stderr saying
/// that its infrastructure is not planned. A Shoot whose Seed is not among the inputs (while some
/// Seed is) gets a note on stderr and its infrastructure plan only; without Seeds nothing is said.
/// A registry without the domains provider pairs nothing.
pub fn domains_inputs(registry: &Registry, loaded: &manifest::Loaded, features: Features) -> Result<Vec<ShootInput>> {
    let Some(provider) = registry.entry(trellis_providers::domains::PROVIDER_TYPE).map(|e| e.provider) else {
        return Ok(Vec::new());
    };
    let pairing = manifest::pair_seeds(loaded)?;
    for u in &pairing.unpaired {
        let shoot = &loaded.shoots[u.shoot];
        let names: Vec<&str> = loaded.seeds.iter().map(|s| s.seed.metadata.name.as_str()).collect();
        let seed = if u.seed_name.is_empty() {
            "no spec.seedName".to_string()
        } else {
            format!("spec.seedName {:?}", u.seed_name)
        };
        eprintln!(
            "note: {} ({}): {seed} names none of the given Seeds ({}); no domains plan, its infrastructure plan only",
            trellis_plans::escape::text(&shoot.technical_id()),
            trellis_plans::escape::text(&shoot.file.display().to_string()),
            trellis_plans::escape::text(&names.join(", "))
        );
    }
    let mut out = Vec::with_capacity(pairing.pairs.len());
    let mut failures = Vec::new();
    for pair in &pairing.pairs {
        let l = &loaded.shoots[pair.shoot];
        let seed = &loaded.seeds[pair.seed].seed;
        let paired = l
            .shoot
            .to_json()
            .map_err(|e| ProviderError::Other(Box::new(e)))
            .and_then(|json| trellis_providers::domains::pair(&json, seed, features, &l.file));
        match paired {
            Ok(shoot) => out.push(ShootInput::new(registry, l.file.clone(), provider, shoot)),
            Err(e) => {
                failures.push((registry.workspace_name(&l.technical_id(), provider.type_name()), l.file.clone(), e))
            }
        }
    }
    for d in &loaded.domains_only {
        let id = d.shoot.technical_id();
        eprintln!(
            "note: {} ({}): {}; no infrastructure plan is attempted (its infrastructure is not checked), its domains plan only",
            trellis_plans::escape::text(&id),
            trellis_plans::escape::text(&d.file.display().to_string()),
            trellis_plans::escape::text(&d.reason)
        );
        let seed_name = d.shoot.spec.seed_name.as_deref().unwrap_or_default();
        let Some(seed) = loaded.seeds.iter().find(|s| s.seed.metadata.name == seed_name) else {
            // [`manifest::load`] refuses such a Shoot already; said again for any other caller.
            bail!(
                "{}: shoot {id}: {}, so it gets a domains plan only, which needs its Seed {seed_name:?} (spec.seedName) among the inputs; pass the Seed with -f",
                d.file.display(),
                d.reason
            );
        };
        let paired = serde_json::to_value(&d.shoot)
            .map_err(|e| ProviderError::Other(Box::new(e)))
            .and_then(|json| trellis_providers::domains::pair(&json, &seed.seed, features, &d.file));
        match paired {
            Ok(shoot) => out.push(ShootInput::new(registry, d.file.clone(), provider, shoot)),
            Err(e) => failures.push((registry.workspace_name(&id, provider.type_name()), d.file.clone(), e)),
        }
    }
    if !failures.is_empty() {
        return Err(FleetError { failures }.into());
    }
    Ok(out)
}

/// A planned shoot, ready to show or apply.
pub struct ShootPlan {
    pub input_file: PathBuf,
    pub provider: &'static dyn Provider,
    pub shoot: Box<dyn ProviderShoot>,
    pub workspace: Workspace,
    pub planned: Planned,
}

/// The manifest files of `paths` in input order ([`manifest::list_files`]): each path as given, a
/// directory's `*.yaml`/`*.yml` files sorted. Lists only; nothing is parsed.
pub fn list_manifest_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    if paths.is_empty() {
        bail!("no manifests given; pass -f FILE or -f DIR (a directory is a fleet: every Shoot in it)");
    }
    Ok(manifest::list_files(paths)?)
}
