//! Helpers shared by the providers' integration tests.

use std::path::Path;
use trellis_providers::azure::AzureShoot;

/// The Azure shoot of the one-document manifest `text` (read as the file `path`), after `edit`: (from,
/// to) replacements, each of which must match.
pub fn azure_shoot(path: &Path, mut text: String, edit: &[(&str, &str)]) -> AzureShoot {
    for (from, to) in edit {
        assert!(text.contains(from), "{from:?} not in {}", path.display());
        text = text.replacen(from, to, 1);
    }
    let loaded = trellis_providers::manifest::parse_str(path, &text)
        .unwrap_or_else(|e| panic!("{} does not load: {e}\n{text}", path.display()));
    let shoot = loaded.shoots.into_iter().next().expect("one document").shoot;
    shoot.downcast_ref::<AzureShoot>().expect("an Azure shoot").clone()
}

/// The Azure shoot of `providers/tests/data/<file>`.
#[allow(dead_code)] // not every test module uses it
pub fn data_shoot(file: &str) -> AzureShoot {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    azure_shoot(&path, text, &[])
}

/// A valid managed shoot (Calico, one worker, zoned single-subnet layout) with `edit` applied to
/// its YAML text (a list of (from, to) replacements).
#[allow(dead_code)] // not every test module uses it
pub fn managed_shoot(edit: &[(&str, &str)]) -> AzureShoot {
    let text = String::from(
        "apiVersion: core.gardener.cloud/v1beta1
kind: Shoot
metadata:
  name: web
  namespace: garden-dev
spec:
  region: westeurope
  networking:
    type: calico
    nodes: 10.250.0.0/16
    pods: 100.96.0.0/11
    services: 100.64.0.0/13
  provider:
    type: azure
    infrastructureConfig:
      apiVersion: azure.provider.extensions.gardener.cloud/v1alpha1
      kind: InfrastructureConfig
      networks:
        vnet:
          cidr: 10.250.0.0/16
        workers: 10.250.0.0/19
      zoned: true
    workers:
      - name: worker
        minimum: 1
        maximum: 3
        volume:
          type: StandardSSD_LRS
          size: 50Gi
        zones: ['1', '2']
",
    );
    azure_shoot(std::path::Path::new("shoot.yaml"), text, edit)
}
