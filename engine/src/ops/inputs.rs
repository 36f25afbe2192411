//! The inputs: Shoots loaded from manifests (and the derived inputs of Shoots whose Seed is among
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
/// plan), or a Shoot paired with its Seed for a provider of derived plans (the domains plan).
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
/// infrastructure plan input, then the derived inputs of each Shoot whose Seed is among them
/// ([`derived_inputs`]). The notes are dropped ([`load_inputs`] hands them out).
pub fn load_shoots_with(paths: &[PathBuf], features: Features) -> Result<Vec<ShootInput>> {
    Ok(load_inputs(&Registry::builtin(), paths, features, &mut |_| {})?.0)
}

/// [`load_shoots_with`] through `registry`, and the Seeds among the inputs ([`check_seeds`] reads
/// them). The notes on the pairing ([`derived_inputs`]) go to `note` as they are found, before any
/// error that follows them.
pub fn load_inputs(
    registry: &Registry,
    paths: &[PathBuf],
    features: Features,
    note: &mut dyn FnMut(String),
) -> Result<(Vec<ShootInput>, Vec<manifest::LoadedSeed>)> {
    if paths.is_empty() {
        bail!("no manifests given; pass -f FILE or -f DIR (a directory is a fleet: every Shoot in it)");
    }
    let loaded = manifest::load_with(registry.providers(), paths)?;
    if loaded.shoots.is_empty() && loaded.domains_only.is_empty() {
        return Err(ManifestError::NoManifests { paths: paths.to_vec() }.into());
    }
    let derived = derived_inputs(registry, &loaded, features, note)?;
    let mut inputs: Vec<ShootInput> = Vec::with_capacity(loaded.shoots.len() + derived.len());
    inputs.extend(loaded.shoots.into_iter().map(|l| ShootInput::new(registry, l.file, l.provider, l.shoot)));
    inputs.extend(derived);
    Ok((inputs, loaded.seeds))
}

/// The derived plan inputs of `loaded`, of each provider of derived plans in `registry` (the
/// domains provider: [`crate::registry::Derived`]), through its [`crate::registry::Derived::pair`]
/// hook under `features`: each Shoot whose `spec.seedName` names a loaded Seed
/// ([`manifest::pair_seeds`]), in shoot order, then the Shoots without an infrastructure plan
/// ([`manifest::DomainsOnlyShoot`], paired by [`manifest::load`]), each with a note saying that its
/// infrastructure is not planned. A Shoot whose Seed is not among the inputs (while some Seed is)
/// gets a note and its infrastructure plan only; without Seeds nothing is said. The notes (one line
/// each, `note: …`, their values escaped) go to `note` as they are found, before any error that
/// follows them; the caller prints them. A registry without a provider of derived plans pairs
/// nothing.
pub fn derived_inputs(
    registry: &Registry,
    loaded: &manifest::Loaded,
    features: Features,
    note: &mut dyn FnMut(String),
) -> Result<Vec<ShootInput>> {
    let derived: Vec<_> = registry.entries().iter().filter_map(|e| Some((e.provider, e.derived?))).collect();
    if derived.is_empty() {
        return Ok(Vec::new());
    }
    let pairing = manifest::pair_seeds(loaded)?;
    let mut out = Vec::new();
    let mut failures = Vec::new();
    for (provider, hooks) in derived {
        let kind = provider.type_name();
        for u in &pairing.unpaired {
            let shoot = &loaded.shoots[u.shoot];
            let names: Vec<&str> = loaded.seeds.iter().map(|s| s.seed.metadata.name.as_str()).collect();
            let seed = if u.seed_name.is_empty() {
                "no spec.seedName".to_string()
            } else {
                format!("spec.seedName {:?}", u.seed_name)
            };
            note(format!(
                "note: {} ({}): {seed} names none of the given Seeds ({}); no {kind} plan, its infrastructure plan only",
                trellis_plans::escape::text(&shoot.technical_id()),
                trellis_plans::escape::text(&shoot.file.display().to_string()),
                trellis_plans::escape::text(&names.join(", "))
            ));
        }
        for pair in &pairing.pairs {
            let l = &loaded.shoots[pair.shoot];
            let seed = &loaded.seeds[pair.seed].seed;
            let paired = l
                .shoot
                .to_json()
                .map_err(|e| ProviderError::Other(Box::new(e)))
                .and_then(|json| (hooks.pair)(&json, seed, features, &l.file));
            match paired {
                Ok(shoot) => out.push(ShootInput::new(registry, l.file.clone(), provider, shoot)),
                Err(e) => failures.push((registry.workspace_name(&l.technical_id(), kind), l.file.clone(), e)),
            }
        }
        for d in &loaded.domains_only {
            let id = d.shoot.technical_id();
            note(format!(
                "note: {} ({}): {}; no infrastructure plan is attempted (its infrastructure is not checked), its {kind} plan only",
                trellis_plans::escape::text(&id),
                trellis_plans::escape::text(&d.file.display().to_string()),
                trellis_plans::escape::text(&d.reason)
            ));
            let seed_name = d.shoot.spec.seed_name.as_deref().unwrap_or_default();
            let Some(seed) = loaded.seeds.iter().find(|s| s.seed.metadata.name == seed_name) else {
                // [`manifest::load`] refuses such a Shoot already; said again for any other caller.
                bail!(
                    "{}: shoot {id}: {}, so it gets a {kind} plan only, which needs its Seed {seed_name:?} (spec.seedName) among the inputs; pass the Seed with -f",
                    d.file.display(),
                    d.reason
                );
            };
            let paired = serde_json::to_value(&d.shoot)
                .map_err(|e| ProviderError::Other(Box::new(e)))
                .and_then(|json| (hooks.pair)(&json, &seed.seed, features, &d.file));
            match paired {
                Ok(shoot) => out.push(ShootInput::new(registry, d.file.clone(), provider, shoot)),
                Err(e) => failures.push((registry.workspace_name(&id, kind), d.file.clone(), e)),
            }
        }
    }
    if !failures.is_empty() {
        return Err(FleetError::new(failures).into());
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

/// A planned shoot in a test's failure message: its workspace (the plan itself is too large to print).
impl std::fmt::Debug for ShootPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShootPlan").field("workspace", &self.workspace.shoot).finish_non_exhaustive()
    }
}

/// The manifest files of `paths` in input order ([`manifest::list_files`]): each path as given, a
/// directory's `*.yaml`/`*.yml` files sorted. Lists only; nothing is parsed.
pub fn list_manifest_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    if paths.is_empty() {
        bail!("no manifests given; pass -f FILE or -f DIR (a directory is a fleet: every Shoot in it)");
    }
    Ok(manifest::list_files(paths)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    const AWS_SHOOT: &str = "apiVersion: core.gardener.cloud/v1beta1
kind: Shoot
metadata:
  name: edge
  namespace: garden-platform
spec:
  seedName: azure-eu1
  region: eu-west-1
  provider:
    type: aws
";

    /// The example Seed and Shoot, a Shoot on a Seed not given, and an `aws` Shoot on the example Seed.
    fn fleet() -> (tempfile::TempDir, Vec<PathBuf>) {
        let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/domains");
        let dir = tempfile::tempdir().unwrap();
        let shoot = std::fs::read_to_string(example.join("shoot.yaml")).unwrap();
        let other = shoot.replace("name: web\n", "name: api\n").replace("seedName: azure-eu1", "seedName: nowhere");
        assert!(other.contains("name: api\n") && other.contains("nowhere"), "the example Shoot changed");
        std::fs::write(dir.path().join("other.yaml"), other).unwrap();
        std::fs::write(dir.path().join("aws.yaml"), AWS_SHOOT).unwrap();
        let paths = vec![
            example.join("seed.yaml"),
            example.join("shoot.yaml"),
            dir.path().join("other.yaml"),
            dir.path().join("aws.yaml"),
        ];
        (dir, paths)
    }

    fn refuse(
        _: &serde_json::Value,
        _: &trellis_providers::seed::Seed,
        _: Features,
        _: &Path,
    ) -> Result<Box<dyn ProviderShoot>, ProviderError> {
        Err(ProviderError::Fleet("refused by the hook".into()))
    }

    /// Seed pairing goes through the registered hook of each provider of derived plans, and its
    /// notes are handed to the caller (the engine prints nothing), in the order they are found and
    /// before an error that follows them.
    #[test]
    fn derived_inputs_pair_through_the_registered_hook_and_hand_out_their_notes() {
        let (dir, paths) = fleet();
        let registry = Registry::builtin();
        let mut notes = Vec::new();
        let (inputs, seeds) = load_inputs(&registry, &paths, Features::default(), &mut |n| notes.push(n)).unwrap();
        let ids: Vec<(String, &str)> = inputs.iter().map(|i| (i.id(), i.provider.type_name())).collect();
        assert_eq!(
            ids,
            [
                ("shoot--platform--web".to_string(), "azure"),
                ("shoot--platform--api".to_string(), "azure"),
                ("shoot--platform--web+domains".to_string(), "domains"),
                ("shoot--platform--edge+domains".to_string(), "domains"),
            ]
        );
        assert_eq!(seeds.len(), 1);
        let at = |f: &str| dir.path().join(f).display().to_string();
        assert_eq!(
            notes,
            [
                format!("note: shoot--platform--api ({}): spec.seedName \"nowhere\" names none of the given Seeds (azure-eu1); no domains plan, its infrastructure plan only", at("other.yaml")),
                format!("note: shoot--platform--edge ({}): trellis has no infrastructure provider for spec.provider.type \"aws\"; no infrastructure plan is attempted (its infrastructure is not checked), its domains plan only", at("aws.yaml")),
            ]
        );

        // The hook refuses: the notes were handed out all the same, then the fleet fails naming the
        // derived workspaces.
        let entries: Vec<_> = registry
            .entries()
            .iter()
            .map(|e| {
                let mut e = *e;
                if let Some(d) = e.derived.as_mut() {
                    d.pair = refuse;
                }
                e
            })
            .collect();
        let mut again = Vec::new();
        let e =
            load_inputs(&Registry::new(entries), &paths, Features::default(), &mut |n| again.push(n)).err().unwrap();
        assert_eq!(again, notes);
        let e = e.downcast::<FleetError>().unwrap();
        let failed: Vec<&str> = e.failures.iter().map(|f| f.0.as_str()).collect();
        assert_eq!(failed, ["shoot--platform--web+domains", "shoot--platform--edge+domains"]);

        // A registry without a provider of derived plans pairs nothing and says nothing.
        let plain = Registry::new(registry.entries().iter().filter(|e| e.derived.is_none()).copied().collect());
        let mut none = Vec::new();
        let loaded = manifest::load_with(plain.providers(), &paths[..3]).unwrap();
        assert!(derived_inputs(&plain, &loaded, Features::default(), &mut |n| none.push(n)).unwrap().is_empty());
        assert!(none.is_empty(), "{none:?}");
    }
}
