//! The provider registry and the loader's dispatch by kind: Shoots by `spec.provider.type` through
//! the registry, Seeds into typed `Seed`s beside them.

use std::path::{Path, PathBuf};

use trellis_providers::azure::AzureShoot;
use trellis_providers::manifest;
use trellis_providers::registry::{Registry, UnknownProvider};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

#[test]
fn regression_registry_refuses_an_unknown_provider_type_listing_the_known_ones() {
    let registry = Registry::builtin();
    assert_eq!(registry.types(), ["azure", "gcp"]);
    assert_eq!(registry.get("azure").unwrap().type_name(), "azure");
    assert_eq!(registry.get("gcp").unwrap().type_name(), "gcp");
    let err = registry.get("aws").expect_err("aws is not registered");
    assert_eq!(err, UnknownProvider { provider_type: "aws".to_string(), supported: vec!["azure", "gcp"] });
    assert_eq!(err.to_string(), "unsupported provider type \"aws\"; trellis supports: azure, gcp");
    assert_eq!(registry.get("").err().unwrap().to_string(), "not set; trellis supports: azure, gcp");
}

#[test]
fn regression_a_loaded_shoot_is_parsed_by_its_registered_provider() {
    let loaded = manifest::load(&[data("azure-managed.yaml")]).unwrap();
    let shoot = &loaded.shoots[0];
    assert_eq!(shoot.provider_type(), "azure");
    assert_eq!(shoot.technical_id(), "shoot--dev--payments");
    let azure: &AzureShoot = shoot.shoot.downcast_ref().expect("the Azure provider parsed it");
    assert_eq!(azure.spec.region, "westeurope");
    // A plan file's source manifest reads back through the same provider.
    let json = shoot.shoot.to_json().unwrap();
    let back = shoot.provider.shoot_from_json(&json).unwrap();
    assert_eq!(back.downcast_ref::<AzureShoot>(), Some(azure));
}

#[test]
fn regression_upstream_seed_example_loads() {
    let file = data("upstream/gardener-50-seed.yaml");
    let loaded = manifest::load(std::slice::from_ref(&file)).unwrap_or_else(|e| panic!("{e}"));
    assert!(loaded.shoots.is_empty());
    assert_eq!(loaded.seeds.len(), 1);
    let doc = &loaded.seeds[0];
    // The file opens with comments, then `---`: the Seed is its one document.
    assert_eq!((doc.file.as_path(), doc.doc_index), (file.as_path(), 0));
    let seed = &doc.seed;
    assert_eq!(seed.metadata.name, "my-seed");
    assert_eq!(
        (seed.spec.provider.type_.as_str(), seed.spec.provider.region.as_str()),
        ("<provider-name>", "europe-1")
    );
    assert_eq!(seed.spec.provider.zones, ["europe-1a"]);
    let dns = seed.spec.dns.provider.as_ref().expect("spec.dns.provider");
    assert_eq!(dns.type_, "aws-route53");
    assert_eq!(dns.credentials_ref.as_ref().and_then(|r| r.name.as_deref()), Some("ingress-secret"));
    let internal = seed.spec.dns.internal.as_ref().expect("spec.dns.internal");
    assert_eq!((internal.type_.as_str(), internal.domain.as_str()), ("aws-route53", "internal.dev.example.com"));
    let ingress = seed.spec.ingress.as_ref().expect("spec.ingress");
    assert_eq!(
        (ingress.domain.as_str(), ingress.controller.kind.as_str()),
        ("ingress.dev.my-seed.example.com", "nginx")
    );
    let networks = &seed.spec.networks;
    assert_eq!(networks.nodes.as_deref(), Some("10.240.0.0/16"));
    assert_eq!((networks.pods.as_str(), networks.services.as_str()), ("10.241.128.0/17", "10.241.0.0/17"));
    assert_eq!(networks.block_cidrs, ["169.254.169.254/32"]);
    assert_eq!(networks.ip_families, ["IPv4"]);
    let backup = seed.spec.backup.as_ref().expect("spec.backup");
    assert_eq!((backup.provider.as_str(), backup.region.as_deref()), ("<provider-name>", Some("europe-1")));
    assert!(seed.spec.settings.is_some() && seed.spec.extensions.is_some());
}

#[test]
fn regression_a_fleet_with_a_seed_and_shoots_loads_both() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(data("upstream/gardener-50-seed.yaml"), dir.path().join("00-seed.yaml")).unwrap();
    for name in ["10-payments.yaml", "20-ledger.yml"] {
        std::fs::copy(data("fleet").join(name), dir.path().join(name)).unwrap();
    }
    // A Seed and a Shoot in one file, too.
    let seed = "apiVersion: core.gardener.cloud/v1beta1\nkind: Seed\nmetadata:\n  name: other-seed\nspec:\n  provider:\n    type: azure\n    region: westeurope\n";
    let shoot =
        std::fs::read_to_string(data("azure-managed.yaml")).unwrap().replacen("name: payments", "name: billing", 1);
    std::fs::write(dir.path().join("30-mixed.yaml"), format!("{seed}---\n{shoot}")).unwrap();

    let loaded = manifest::load(&[dir.path().to_path_buf()]).unwrap_or_else(|e| panic!("{e}"));
    let shoots: Vec<String> = loaded.shoots.iter().map(|s| s.technical_id()).collect();
    assert_eq!(shoots, ["shoot--dev--payments", "shoot--garden--ledger", "shoot--dev--billing"].map(String::from));
    let seeds: Vec<(&str, usize)> = loaded.seeds.iter().map(|s| (s.seed.metadata.name.as_str(), s.doc_index)).collect();
    assert_eq!(seeds, [("my-seed", 0), ("other-seed", 0)]);
    assert_eq!(loaded.seeds[1].seed.spec.provider.region, "westeurope");
}

#[test]
fn regression_seed_with_an_unknown_field_is_a_file_line_col_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("seed.yaml");
    let text = "apiVersion: core.gardener.cloud/v1beta1\nkind: Seed\nmetadata:\n  name: s\nspec:\n  dns:\n    provider:\n      type: azure-dns\n      secretRef:\n        name: dns\n";
    std::fs::write(&file, text).unwrap();
    let err = manifest::load(std::slice::from_ref(&file)).expect_err("secretRef is tombstoned upstream").to_string();
    assert_eq!(err, format!("{}:9:7: unknown field `secretRef`, expected one of type, credentialsRef", file.display()));
}
