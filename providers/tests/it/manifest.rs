//! Loading Gardener Shoot manifests: the typed parse, `file:line:col` errors, multi-document files,
//! fleets (directories) and duplicate shoots.

use std::path::{Path, PathBuf};

use trellis_providers::azure::api::{InfrastructureConfig, API_VERSION, INFRASTRUCTURE_CONFIG_KIND};
use trellis_providers::manifest::{self, LoadedShoot, Shoot};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

fn azure(loaded: &LoadedShoot) -> &Shoot<InfrastructureConfig> {
    loaded.shoot.downcast_ref().expect("an Azure shoot")
}

/// Writes `files` (name, contents) into a temp dir, loads `load` (names in it; "" = the dir) and
/// returns the error with the temp dir shown as `<dir>`.
#[track_caller]
fn load_err_files(files: &[(&str, &str)], load: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let paths: Vec<PathBuf> =
        load.iter().map(|n| if n.is_empty() { dir.path().to_path_buf() } else { dir.path().join(n) }).collect();
    let err = manifest::load(&paths).expect_err("load must fail");
    err.to_string().replace(&dir.path().display().to_string(), "<dir>")
}

/// `yaml` as the file `shoot.yaml`: the error it gives.
#[track_caller]
fn check_err(yaml: &str, expected: &str) {
    assert_eq!(load_err_files(&[("shoot.yaml", yaml)], &["shoot.yaml"]), expected);
}

const HEAD: &str =
    "apiVersion: core.gardener.cloud/v1beta1\nkind: Shoot\nmetadata:\n  name: a\n  namespace: garden-p\n";

fn azure_shoot(infra_body: &str) -> String {
    format!(
        "{HEAD}spec:\n  provider:\n    type: azure\n    infrastructureConfig:\n      apiVersion: {API_VERSION}\n      kind: {INFRASTRUCTURE_CONFIG_KIND}\n{infra_body}"
    )
}

#[test]
fn managed_shoot_parses_typed_with_opaque_parts_kept() {
    let loaded = manifest::load(&[data("azure-managed.yaml")]).unwrap().shoots;
    assert_eq!(loaded.len(), 1);
    assert_eq!((loaded[0].doc_index, loaded[0].provider_type()), (0, "azure"));
    let shoot = azure(&loaded[0]);
    assert_eq!(shoot.technical_id(), "shoot--dev--payments");
    assert_eq!(shoot.spec.region, "westeurope");
    assert!(shoot.overlay_enabled());
    assert_eq!(shoot.max_nodes(), 8);
    assert_eq!(shoot.annotation("azure.provider.extensions.gardener.cloud/skip-allow-egress"), Some("false"));
    assert_eq!(shoot.spec.networking.nodes.as_deref(), Some("10.250.0.0/16"));
    assert_eq!(shoot.spec.networking.ip_families, vec!["IPv4"]);
    let cfg = &shoot.spec.provider.infrastructure_config;
    assert_eq!(cfg.networks.workers.as_deref(), Some("10.250.0.0/19"));
    assert_eq!(cfg.networks.nat_gateway.as_ref().unwrap().zone, Some(1));
    assert!(cfg.zoned);
    assert_eq!(shoot.spec.provider.workers[0].zones, vec!["1"]);
    assert_eq!(shoot.spec.provider.workers[0].machine.as_ref().unwrap()["type"], "Standard_D4s_v5");
    assert_eq!(shoot.spec.kubernetes.as_ref().unwrap()["version"], "1.33.2");
    assert_eq!(shoot.status.as_ref().unwrap()["lastOperation"]["progress"], 100);
    assert!(!shoot.has_worker_with_in_place_update());
}

#[test]
fn byo_shoot_parses_subnet_reference() {
    let loaded = manifest::load(&[data("azure-byo.yaml")]).unwrap().shoots;
    let shoot = azure(&loaded[0]);
    assert_eq!(shoot.technical_id(), "shoot--fin--ledger");
    assert!(!shoot.overlay_enabled());
    let cfg = &shoot.spec.provider.infrastructure_config;
    assert_eq!(cfg.networks.subnet.as_ref().unwrap().name, "ledger-workers");
    assert!(cfg.is_using_user_managed_egress());
}

#[test]
fn missing_fields_parse_to_empty_values() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.yaml");
    std::fs::write(&file, azure_shoot("")).unwrap();
    let loaded = manifest::load(&[file]).unwrap().shoots;
    let shoot = azure(&loaded[0]);
    assert_eq!(shoot.spec.provider.infrastructure_config.networks, Default::default());
    assert_eq!(shoot.spec.region, "");
    assert!(shoot.spec.provider.workers.is_empty());
}

#[test]
fn namespace_garden_is_project_garden() {
    let loaded = manifest::load(&[data("fleet/20-ledger.yml")]).unwrap().shoots;
    assert_eq!(loaded[0].shoot.technical_id(), "shoot--garden--ledger");
}

#[test]
fn directory_is_a_fleet_of_yaml_files_in_name_order() {
    let loaded = manifest::load(&[data("fleet")]).unwrap().shoots;
    let ids: Vec<String> = loaded.iter().map(|l| l.shoot.technical_id()).collect();
    assert_eq!(ids, vec!["shoot--dev--payments", "shoot--garden--ledger"]);
    assert!(loaded[1].file.ends_with("fleet/20-ledger.yml"));
}

#[test]
fn multi_document_file_yields_every_shoot_and_skips_empty_documents() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("two.yaml");
    let text = format!(
        "---\n{}---\n# only a comment\n---\n{}\n---\n",
        azure_shoot("      networks:\n        workers: 10.0.0.0/16\n"),
        azure_shoot("      zoned: true\n").replace("name: a", "name: b"),
    );
    std::fs::write(&file, text).unwrap();
    let loaded = manifest::load(&[file]).unwrap().shoots;
    let docs: Vec<(usize, String)> = loaded.iter().map(|l| (l.doc_index, l.shoot.technical_id())).collect();
    assert_eq!(docs, vec![(0, "shoot--p--a".to_string()), (2, "shoot--p--b".to_string())]);
}

#[test]
fn malformed_yaml_gives_file_line_column() {
    check_err(
        "apiVersion: core.gardener.cloud/v1beta1\nkind: Shoot\nmetadata:\n  name: a\n   namespace: b\n",
        "<dir>/shoot.yaml:5:13: mapping values are not allowed in this context",
    );
    check_err("a: [1, 2\n", "<dir>/shoot.yaml:1:4: unclosed bracket '['");
}

#[test]
fn unknown_field_in_infrastructure_config_gives_file_line_column() {
    check_err(
        &azure_shoot("      networks:\n        vnett: {}\n"),
        "<dir>/shoot.yaml:13:9: unknown field `vnett`, expected one of vnet, workers, natGateway, serviceEndpoints, zones, subnet",
    );
}

#[test]
fn unknown_field_in_shoot_gives_file_line_column() {
    check_err(
        &format!("{HEAD}spec:\n  provider:\n    type: azure\n  regoin: westeurope\n"),
        "<dir>/shoot.yaml:9:3: unknown field `regoin`, expected one of cloudProfileName, cloudProfile, region, secretBindingName, credentialsBindingName, seedName, seedSelector, purpose, kubernetes, networking, provider, dns, maintenance, hibernation, addons, extensions, resources, tolerations, exposureClassName, controlPlane, systemComponents, schedulerName, monitoring, accessRestrictions",
    );
}

#[test]
fn wrong_type_gives_file_line_column_and_the_value() {
    check_err(
        &format!("{HEAD}spec:\n  provider:\n    type: azure\n    workers:\n    - name: w\n      maximum: lots\n"),
        "<dir>/shoot.yaml:11:16: invalid value \"lots\": expected an integer (i32)",
    );
    check_err(
        &azure_shoot("      networks:\n        zones:\n        - name: one\n          cidr: 10.0.0.0/24\n"),
        "<dir>/shoot.yaml:14:17: invalid value \"one\": expected an integer (i32)",
    );
}

#[test]
fn duplicate_key_is_an_error() {
    check_err(
        "apiVersion: core.gardener.cloud/v1beta1\nkind: Shoot\nmetadata:\n  name: a\n  name: b\n",
        "<dir>/shoot.yaml:5:3: duplicate key \"name\"",
    );
}

#[test]
fn errors_in_a_multi_document_file_name_the_document() {
    let text = format!("{}---\n{}", azure_shoot(""), azure_shoot("      zonde: true\n"));
    check_err(&text, "<dir>/shoot.yaml:24:7: document 2: unknown field `zonde`, expected one of apiVersion, kind, resourceGroup, networks, identity, zoned");
}

#[test]
fn wrong_kind_is_rejected() {
    check_err(
        "apiVersion: core.gardener.cloud/v1beta1\nkind: CloudProfile\nmetadata:\n  name: a\n",
        "<dir>/shoot.yaml: document 1: expected apiVersion core.gardener.cloud/v1beta1, kind Shoot or Seed; found core.gardener.cloud/v1beta1 CloudProfile",
    );
    check_err(
        "apiVersion: core.gardener.cloud/v1alpha1\nkind: Seed\nmetadata:\n  name: a\n",
        "<dir>/shoot.yaml: document 1: expected apiVersion core.gardener.cloud/v1beta1, kind Shoot or Seed; found core.gardener.cloud/v1alpha1 Seed",
    );
    check_err(
        "apiVersion: v1\nkind: ConfigMap\n---\n",
        "<dir>/shoot.yaml: document 1: expected apiVersion core.gardener.cloud/v1beta1, kind Shoot or Seed; found v1 ConfigMap",
    );
    check_err(
        "metadata:\n  name: a\n",
        "<dir>/shoot.yaml: document 1: expected apiVersion core.gardener.cloud/v1beta1, kind Shoot or Seed; found <none> <none>",
    );
}

#[test]
fn unsupported_provider_is_rejected() {
    check_err(
        &format!("{HEAD}spec:\n  provider:\n    type: aws\n"),
        "<dir>/shoot.yaml: document 1: spec.provider.type: unsupported provider type \"aws\"; trellis supports: azure, gcp",
    );
    check_err(
        &format!("{HEAD}spec: {{}}\n"),
        "<dir>/shoot.yaml: document 1: spec.provider.type: not set; trellis supports: azure, gcp",
    );
}

/// Issue #10 item 1: a Shoot trellis cannot plan the infrastructure of (a provider type without an
/// infrastructure provider, or no infrastructureConfig) loads when its Seed is among the inputs, in
/// any file; without it (or with another Seed) the old refusal stays; its name and technical id are
/// checked like every Shoot's.
#[test]
fn regression_a_shoot_without_an_infrastructure_plan_loads_beside_its_seed() {
    let seed = "apiVersion: core.gardener.cloud/v1beta1\nkind: Seed\nmetadata:\n  name: s1\n";
    let aws = format!("{HEAD}spec:\n  seedName: s1\n  provider:\n    type: aws\n");
    let bare = format!("{HEAD}spec:\n  seedName: s1\n  provider:\n    type: azure\n").replace("name: a\n", "name: b\n");
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in [("1-aws.yaml", aws.as_str()), ("2-bare.yaml", bare.as_str()), ("3-seed.yaml", seed)] {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let loaded = manifest::load(&[dir.path().to_path_buf()]).unwrap_or_else(|e| panic!("{e}"));
    assert!(loaded.shoots.is_empty());
    let ids: Vec<String> = loaded.domains_only.iter().map(|d| d.shoot.technical_id()).collect();
    assert_eq!(ids, ["shoot--p--a", "shoot--p--b"]);
    assert_eq!(loaded.domains_only[1].reason, "no spec.provider.infrastructureConfig");

    let other_seed = seed.replace("name: s1", "name: s2");
    assert_eq!(
        load_err_files(&[("a.yaml", &aws), ("s.yaml", &other_seed)], &["a.yaml", "s.yaml"]),
        "<dir>/a.yaml: document 1: spec.provider.type: unsupported provider type \"aws\"; trellis supports: azure, gcp"
    );
    assert!(
        load_err_files(&[("b.yaml", &bare)], &["b.yaml"]).contains("found none (the infrastructureConfig is missing")
    );
    // An infrastructureConfig of the wrong kind is refused even with the Seed.
    let wrong = azure_shoot("")
        .replace("kind: InfrastructureConfig", "kind: ControlPlaneConfig")
        .replace("spec:\n", "spec:\n  seedName: s1\n");
    assert!(
        load_err_files(&[("w.yaml", &wrong), ("s.yaml", seed)], &["w.yaml", "s.yaml"]).contains("ControlPlaneConfig")
    );
    // The same technical id as an Azure shoot: a duplicate.
    let twin = azure_shoot("");
    assert!(load_err_files(&[("a.yaml", &aws), ("t.yaml", &twin), ("s.yaml", seed)], &[""])
        .starts_with("duplicate shoot shoot--p--a: defined in <dir>/a.yaml and in <dir>/t.yaml"));
}

#[test]
fn infrastructure_config_of_the_wrong_kind_is_rejected() {
    check_err(
        &azure_shoot("").replace("kind: InfrastructureConfig", "kind: ControlPlaneConfig"),
        "<dir>/shoot.yaml: document 1: spec.provider.infrastructureConfig: expected apiVersion azure.provider.extensions.gardener.cloud/v1alpha1, kind InfrastructureConfig for provider azure; found azure.provider.extensions.gardener.cloud/v1alpha1 ControlPlaneConfig",
    );
    check_err(
        &azure_shoot("").replace("azure.provider.extensions.gardener.cloud/v1alpha1", "aws.provider.extensions.gardener.cloud/v1alpha1"),
        "<dir>/shoot.yaml: document 1: spec.provider.infrastructureConfig: expected apiVersion azure.provider.extensions.gardener.cloud/v1alpha1, kind InfrastructureConfig for provider azure; found aws.provider.extensions.gardener.cloud/v1alpha1 InfrastructureConfig",
    );
    check_err(
        &format!("{HEAD}spec:\n  provider:\n    type: azure\n"),
        "<dir>/shoot.yaml: document 1: spec.provider.infrastructureConfig: expected apiVersion azure.provider.extensions.gardener.cloud/v1alpha1, kind InfrastructureConfig for provider azure; found none (the infrastructureConfig is missing or has neither apiVersion nor kind)",
    );
}

#[test]
fn two_documents_with_the_same_technical_id_are_rejected_naming_both() {
    let err = manifest::load(&[data("duplicate")]).unwrap_err().to_string();
    let dir = data("duplicate").display().to_string();
    assert_eq!(
        err,
        format!("duplicate shoot shoot--dev--payments: defined in {dir}/a.yaml and in {dir}/b.yaml (document 2)")
    );
    // The same file given twice is read once (`list_files`): one shoot, not a duplicate of itself.
    let loaded = manifest::load(&[data("azure-byo.yaml"), data("azure-byo.yaml")]).expect("one file, read once");
    assert_eq!(loaded.shoots.len(), 1);
}

#[test]
fn empty_directory_and_empty_files_are_errors() {
    assert_eq!(load_err_files(&[("notes.txt", "hi")], &[""]), "<dir>: no *.yaml or *.yml files in this directory");
    assert_eq!(load_err_files(&[("empty.yaml", "---\n# nothing\n")], &[""]), "no Shoot manifests found in <dir>");
    assert_eq!(
        load_err_files(&[], &["missing.yaml"]),
        "cannot read <dir>/missing.yaml: No such file or directory (os error 2); check the path given with -f"
    );
}

/// A fleet directory with one valid shoot (`a.yaml`) and whatever `add` puts next to it; the error
/// of loading the directory, with the directory shown as `<dir>`.
#[track_caller]
fn fleet_err(add: impl FnOnce(&Path)) -> String {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.yaml"), azure_shoot("")).unwrap();
    add(dir.path());
    let err = manifest::load(&[dir.path().to_path_buf()]).expect_err("the fleet must be refused");
    err.to_string().replace(&dir.path().display().to_string(), "<dir>")
}

#[test]
fn regression_fleet_dir_refuses_a_dangling_symlink() {
    let err = fleet_err(|dir| std::os::unix::fs::symlink(dir.join("gone.yaml"), dir.join("b.yaml")).unwrap());
    assert_eq!(
        err,
        "<dir>/b.yaml: cannot read it: it is a symbolic link to <dir>/gone.yaml: No such file or directory (os error 2); fix or remove it, or move it out of <dir>"
    );
}

#[test]
fn regression_fleet_dir_refuses_a_looping_symlink() {
    let err = fleet_err(|dir| {
        std::os::unix::fs::symlink(dir.join("c.yaml"), dir.join("b.yaml")).unwrap();
        std::os::unix::fs::symlink(dir.join("b.yaml"), dir.join("c.yaml")).unwrap();
    });
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    for (line, name) in lines.iter().zip(["b.yaml", "c.yaml"]) {
        assert!(line.starts_with(&format!("<dir>/{name}: cannot read it: it is a symbolic link to <dir>/")), "{line}");
        assert!(line.contains("Too many levels of symbolic links"), "{line}");
    }
}

#[test]
fn regression_fleet_dir_refuses_a_directory_named_yaml() {
    let err = fleet_err(|dir| std::fs::create_dir(dir.join("b.yaml")).unwrap());
    assert_eq!(
        err,
        "<dir>/b.yaml: is a directory, not a manifest file (a fleet directory is not read recursively); rename it or move it out of <dir>"
    );
}

#[test]
fn regression_fleet_dir_reports_every_unreadable_entry_by_path() {
    let err = fleet_err(|dir| {
        std::fs::create_dir(dir.join("d.yml")).unwrap();
        std::os::unix::fs::symlink(dir.join("gone.yaml"), dir.join("b.yaml")).unwrap();
        // Not a manifest name: not read, not an error.
        std::os::unix::fs::symlink(dir.join("gone.txt"), dir.join("notes.txt")).unwrap();
    });
    let paths: Vec<&str> = err.lines().map(|l| l.split(": ").next().unwrap()).collect();
    assert_eq!(paths, vec!["<dir>/b.yaml", "<dir>/d.yml"], "{err}");
}

/// A Shoot that sets every boolean and integer field trellis reads; each such line ends in a comment
/// naming the field's type.
const EVERY_TYPED_FIELD: &str = "\
apiVersion: core.gardener.cloud/v1beta1
kind: Shoot
metadata:
  name: a
  namespace: garden-p
  generation: 3 # i64
  deletionGracePeriodSeconds: 30 # i64
spec:
  provider:
    type: azure
    infrastructureConfig:
      apiVersion: azure.provider.extensions.gardener.cloud/v1alpha1
      kind: InfrastructureConfig
      networks:
        natGateway:
          enabled: true # bool
          idleConnectionTimeoutMinutes: 4 # i32
          zone: 1 # i32
          ipAddresses:
          - name: ip
            resourceGroup: rg
            zone: 1 # i32
        zones:
        - name: 2 # i32
          cidr: 10.0.0.0/24
          natGateway: {enabled: true} # bool
        - {cidr: 10.0.1.0/24, name: 3} # i32
      identity:
        name: id
        resourceGroup: rg
        acrAccess: false # bool
      zoned: true # bool
    workers:
    - name: w
      minimum: 1 # i32
      maximum: 2 # i32
";

#[test]
fn plain_booleans_and_integers_parse_in_every_typed_field() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("shoot.yaml");
    std::fs::write(&file, EVERY_TYPED_FIELD).unwrap();
    let loaded = manifest::load(&[file]).unwrap().shoots;
    let shoot = azure(&loaded[0]);
    assert_eq!((shoot.metadata.generation, shoot.metadata.deletion_grace_period_seconds), (Some(3), Some(30)));
    let cfg = &shoot.spec.provider.infrastructure_config;
    let nat = cfg.networks.nat_gateway.as_ref().unwrap();
    assert_eq!(
        (nat.enabled, nat.idle_connection_timeout_minutes, nat.zone, nat.ip_addresses[0].zone),
        (true, Some(4), Some(1), Some(1))
    );
    assert_eq!(cfg.networks.zones.iter().map(|z| z.name).collect::<Vec<_>>(), vec![2, 3]);
    assert!(cfg.networks.zones[0].nat_gateway.as_ref().unwrap().enabled);
    assert_eq!(cfg.identity.as_ref().unwrap().acr_access, Some(false));
    assert!(cfg.zoned);
    assert_eq!((shoot.spec.provider.workers[0].minimum, shoot.spec.provider.workers[0].maximum), (1, 2));
    // YAML 1.1 booleans written plain are booleans, as in Kubernetes' YAML reader.
    let text = EVERY_TYPED_FIELD.replace("zoned: true", "zoned: yes");
    let loaded = manifest::parse_str(Path::new("s.yaml"), &text).unwrap().shoots;
    assert!(azure(&loaded[0]).spec.provider.infrastructure_config.zoned);
}

#[test]
fn regression_quoted_booleans_and_integers_are_refused_with_file_line_column() {
    let lines: Vec<&str> = EVERY_TYPED_FIELD.lines().collect();
    let mut checked = 0;
    for (i, line) in lines.iter().enumerate() {
        let Some((code, ty)) = line.split_once(" # ") else { continue };
        // The value: after the last `key: ` of the line, up to the end of a flow mapping.
        let key_end = code.rfind(": ").unwrap() + 2;
        let value: String = code[key_end..].chars().take_while(|c| c.is_ascii_alphanumeric()).collect();
        let expected = match ty {
            "bool" => "a boolean (true or false)".to_string(),
            t => format!("an integer ({t})"),
        };
        let optional =
            ["generation:", "deletionGracePeriodSeconds:", "idleConnectionTimeoutMinutes:", "zone:", "acrAccess:"]
                .iter()
                .any(|k| code.trim_start().starts_with(k));
        let expected = if optional { format!("{expected} or null") } else { expected };
        for quote in ['"', '\''] {
            let quoted = format!("{}{quote}{value}{quote}{}", &code[..key_end], &code[key_end + value.len()..]);
            let mut text = lines.clone();
            text[i] = &quoted;
            let text = text.join("\n") + "\n";
            let err = load_err_files(&[("shoot.yaml", &text)], &["shoot.yaml"]);
            assert_eq!(
                err,
                format!(
                    "<dir>/shoot.yaml:{}:{}: invalid value {quote}{value}{quote}: expected {expected}, not a quoted string; write the value without quotes (Kubernetes reads a quoted value as a string)",
                    i + 1,
                    key_end + 1
                ),
                "line {}: {quoted}",
                i + 1
            );
        }
        checked += 1;
    }
    assert_eq!(checked, 13, "every typed field was tried");
}

#[test]
fn regression_quoted_yes_is_not_a_boolean() {
    check_err(
        &azure_shoot("      zoned: \"yes\"\n"),
        "<dir>/shoot.yaml:12:14: invalid value \"yes\": expected a boolean (true or false), not a quoted string; write the value without quotes (Kubernetes reads a quoted value as a string)",
    );
    check_err(
        &format!("{HEAD}spec:\n  provider:\n    type: azure\n    workers:\n    - name: w\n      maximum: \"3\"\n"),
        "<dir>/shoot.yaml:11:16: invalid value \"3\": expected an integer (i32), not a quoted string; write the value without quotes (Kubernetes reads a quoted value as a string)",
    );
}

/// A list or a mapping where a boolean or integer belongs is named as what it is (a flow list was cut
/// at its first `]` and quoted as if it were a string, `invalid value "[1"`; a mapping quoted the
/// value of its first key).
#[test]
fn regression_a_list_or_mapping_for_a_boolean_is_named_as_such() {
    for (value, found) in [("[1, [2]]   # no", "a list"), ("{a: 1}", "a mapping"), ("\n        - true", "a list")] {
        let err = load_err_files(&[("shoot.yaml", &azure_shoot(&format!("      zoned: {value}\n")))], &["shoot.yaml"]);
        assert!(err.starts_with("<dir>/shoot.yaml:1"), "{err}");
        assert!(err.ends_with(&format!(": expected a boolean (true or false), found {found}")), "{value}: {err}");
    }
    let err = load_err_files(
        &[(
            "shoot.yaml",
            &format!("{HEAD}spec:\n  provider:\n    type: azure\n    workers:\n    - name: w\n      maximum: [3]\n"),
        )],
        &["shoot.yaml"],
    );
    assert!(err.ends_with(": expected an integer (i32), found a list"), "{err}");
}

/// `s` as a double-quoted YAML scalar (JSON's escapes are YAML's).
fn json_quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// `azure_shoot("")` with another name and namespace; the error of loading it.
#[track_caller]
fn named_err(name: &str, namespace: &str) -> String {
    let text = azure_shoot("").replace(
        "  name: a\n  namespace: garden-p\n",
        &format!("  name: {}\n  namespace: {}\n", json_quoted(name), json_quoted(namespace)),
    );
    load_err_files(&[("shoot.yaml", &text)], &["shoot.yaml"])
}

const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

#[test]
fn regression_invalid_shoot_names_are_refused_as_gardener_refuses_them() {
    let header = "<dir>/shoot.yaml: 1 validation error(s) in the shoot's name:";
    let one = |e: String| format!("{header}\n{e}");
    let long = "a".repeat(5000);
    for (name, namespace, expected) in [
        ("", "garden-p", one("metadata.name: Required value: name or generateName is required".into())),
        ("Web", "garden-p", one(format!("metadata.name: Invalid value: \"Web\": {LABEL_MSG}"))),
        ("wéb", "garden-p", one(format!("metadata.name: Invalid value: \"wéb\": {LABEL_MSG}"))),
        ("a/b", "garden-p", one(format!("metadata.name: Invalid value: \"a/b\": {LABEL_MSG}"))),
        ("a.b", "garden-p", one("metadata.name: Invalid value: \"a.b\": must not contain dots".into())),
        (&long, "garden-p", one(format!("metadata.name: Invalid value: \"{long}\": must be no more than 63 characters"))),
        ("a--b", "garden-p", one("metadata.name: Invalid value: \"a--b\": name may not contain two consecutive hyphens".into())),
        // Control characters are shown escaped, in the error as everywhere.
        ("a\u{1b}[2J\rb", "garden-p", one(format!("metadata.name: Invalid value: \"a\\x1b[2J\\rb\": {LABEL_MSG}"))),
        ("a", "", one("metadata.namespace: Required value".into())),
        ("a", "Garden-P", one(format!("metadata.namespace: Invalid value: \"Garden-P\": {LABEL_MSG}"))),
        ("a", "dev", one("metadata.namespace: Invalid value: \"dev\": must start with garden- (a shoot lives in its project's namespace, garden-<project>, or in garden)".into())),
        ("a", "garden-abcdefghijk", one("metadata.namespace: Invalid value: \"garden-abcdefghijk\": project name \"abcdefghijk\": must be no more than 10 characters".into())),
        ("a", "garden-x--y", one("metadata.namespace: Invalid value: \"garden-x--y\": the project name must not contain two consecutive hyphens (project: x--y)".into())),
        ("a", "garden--x", one(format!("metadata.namespace: Invalid value: \"garden--x\": project name \"-x\": {LABEL_MSG}"))),
    ] {
        assert_eq!(named_err(name, namespace), expected, "name {name:?}, namespace {namespace:?}");
    }
    // Every error at once.
    assert_eq!(
        named_err("Web--x", "prod"),
        format!("<dir>/shoot.yaml: 3 validation error(s) in the shoot's name:\nmetadata.name: Invalid value: \"Web--x\": {LABEL_MSG}\nmetadata.name: Invalid value: \"Web--x\": name may not contain two consecutive hyphens\nmetadata.namespace: Invalid value: \"prod\": must start with garden- (a shoot lives in its project's namespace, garden-<project>, or in garden)")
    );
}

#[test]
fn regression_shoots_that_would_share_a_technical_id_are_refused_by_name() {
    // `shoot--p--a--b` could be project p + shoot a--b or project p--a + shoot b: both are refused.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("1.yaml"), azure_shoot("").replace("name: a\n", "name: a--b\n")).unwrap();
    std::fs::write(
        dir.path().join("2.yaml"),
        azure_shoot("").replace("namespace: garden-p", "namespace: garden-p--a").replace("name: a\n", "name: b\n"),
    )
    .unwrap();
    let err = manifest::load(&[dir.path().to_path_buf()])
        .unwrap_err()
        .to_string()
        .replace(&dir.path().display().to_string(), "<dir>");
    assert_eq!(
        err,
        "<dir>/1.yaml: 1 validation error(s) in the shoot's name:\nmetadata.name: Invalid value: \"a--b\": name may not contain two consecutive hyphens\n<dir>/2.yaml: 1 validation error(s) in the shoot's name:\nmetadata.namespace: Invalid value: \"garden-p--a\": the project name must not contain two consecutive hyphens (project: p--a)"
    );
}

#[test]
fn valid_names_pass() {
    for (name, namespace, id) in [
        ("a", "garden-p", "shoot--p--a"),
        ("web-1", "garden", "shoot--garden--web-1"),
        ("0", "garden-0", "shoot--0--0"),
    ] {
        let text = azure_shoot("")
            .replace("  name: a\n  namespace: garden-p\n", &format!("  name: {name}\n  namespace: {namespace}\n"));
        let loaded = manifest::parse_str(Path::new("s.yaml"), &text).unwrap().shoots;
        assert_eq!(loaded[0].shoot.technical_id(), id);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("s.yaml"), text).unwrap();
        manifest::load(&[dir.path().join("s.yaml")]).unwrap();
    }
}

// Upstream's example manifests (`tests/data/upstream/`, each with a header naming its source).

/// `tests/data/upstream/<name>`.
fn upstream(name: &str) -> PathBuf {
    data("upstream").join(name)
}

/// Loads an upstream Azure example and runs admission validation on it as a new shoot.
#[track_caller]
fn load_and_validate(name: &str) -> Shoot<InfrastructureConfig> {
    let loaded = manifest::load(&[upstream(name)]).unwrap_or_else(|e| panic!("{name} must load: {e}")).shoots;
    assert_eq!(loaded.len(), 1, "{name}");
    let shoot = azure(&loaded[0]).clone();
    let ws = trellis_state::Workspace::new(&shoot.technical_id());
    trellis_providers::azure::validate(&shoot, &ws).unwrap_or_else(|e| panic!("{name} must validate: {e}"));
    shoot
}

#[test]
fn regression_gardener_example_shoot_loads() {
    // example/90-shoot.yaml has `kubernetes:` with no value followed by ~200 comment lines, and a
    // placeholder string where the provider's infrastructureConfig goes. It must parse; its provider
    // type is a placeholder, refused with the usual message (not a YAML error).
    let err = manifest::load(&[upstream("gardener-90-shoot.yaml")]).expect_err("placeholder provider type");
    assert!(matches!(err, manifest::ManifestError::UnsupportedProvider { .. }), "{err}");
    assert!(
        err.to_string().ends_with(
            "gardener-90-shoot.yaml: document 1: spec.provider.type: unsupported provider type \"<some-provider-name>\"; trellis supports: azure, gcp"
        ),
        "{err}"
    );
}

#[test]
fn regression_gardener_example_shoot_as_azure_loads_and_validates() {
    let shoot = load_and_validate("gardener-90-shoot-azure.yaml");
    assert_eq!(shoot.technical_id(), "shoot--dev--crazy-botany");
    // What comes after the long comment block is read too.
    assert_eq!(shoot.spec.kubernetes, None);
    assert_eq!(shoot.spec.dns.as_ref().unwrap().domain.as_deref(), Some("crazy-botany.core.my-custom-domain.com"));
    assert_eq!(shoot.spec.networking.nodes.as_deref(), Some("10.250.0.0/16"));
    assert_eq!(shoot.spec.monitoring.as_ref().unwrap()["alerting"]["emailReceivers"][0], "john.doe@example.com");
    let cfg = &shoot.spec.provider.infrastructure_config;
    assert_eq!(cfg.networks.workers.as_deref(), Some("10.250.0.0/19"));
    assert_eq!(shoot.spec.provider.workers[0].maximum, 5);
}

#[test]
fn azure_extension_example_shoots_load_and_validate() {
    for (name, zoned) in [
        ("azure-usage-shoot-non-zoned.yaml", false),
        ("azure-usage-shoot-zoned.yaml", true),
        ("azure-usage-shoot-zoned-nat.yaml", true),
    ] {
        let shoot = load_and_validate(name);
        assert_eq!(shoot.technical_id(), "shoot--dev--johndoe-azure", "{name}");
        assert_eq!(shoot.spec.provider.infrastructure_config.zoned, zoned, "{name}");
    }
}

#[test]
fn regression_every_upstream_example_shoot_loads_or_names_its_provider() {
    let dir = data("upstream");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.retain(|f| f.extension().is_some_and(|e| e == "yaml"));
    files.sort();
    assert!(files.len() >= 8, "fixtures missing in {}", dir.display());
    for file in files {
        match manifest::load(std::slice::from_ref(&file)) {
            Ok(loaded) => assert!(loaded.shoots.iter().all(|l| l.provider_type() == "azure")),
            Err(manifest::ManifestError::UnsupportedProvider { .. }) => {}
            Err(e) => panic!("{} must load: {e}", file.display()),
        }
    }
}

#[test]
fn regression_long_comment_blocks_parse_anywhere() {
    // A key without a value followed by many comment lines, at the top level, in a nested map, in a
    // list and between documents: comments are not limited in number.
    let comments = "# a comment line\n".repeat(5_000);
    let nested = "    # an indented comment\n".repeat(5_000);
    let shoot = format!(
        "{}  kubernetes:\n{nested}  networking:\n{nested}    nodes: 10.0.0.0/16\n  maintenance:\n{comments}",
        azure_shoot("      networks:\n        workers: 10.0.0.0/16\n")
            .replace("spec:\n", &format!("spec:\n  purpose:\n{comments}  region: westeurope\n"))
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.yaml");
    std::fs::write(&file, format!("{shoot}---\n{comments}---\n{}", shoot.replace("name: a", "name: b"))).unwrap();
    let loaded = manifest::load(&[file]).unwrap_or_else(|e| panic!("{e}")).shoots;
    assert_eq!(loaded.len(), 2);
    let s = azure(&loaded[0]);
    assert_eq!((s.spec.region.as_str(), s.spec.networking.nodes.as_deref()), ("westeurope", Some("10.0.0.0/16")));
    assert_eq!(loaded[1].shoot.technical_id(), "shoot--p--b");
}

/// `azure-managed.yaml` as shoot `name` on seed `seed` (no `spec.seedName` when empty).
fn shoot_on(name: &str, seed: &str) -> String {
    let text = std::fs::read_to_string(data("azure-managed.yaml")).unwrap();
    let text = text.replacen("  name: payments", &format!("  name: {name}"), 1);
    if seed.is_empty() {
        text
    } else {
        text.replacen("spec:\n", &format!("spec:\n  seedName: {seed}\n"), 1)
    }
}

fn seed_named(name: &str) -> String {
    format!("apiVersion: core.gardener.cloud/v1beta1\nkind: Seed\nmetadata:\n  name: {name}\nspec:\n  provider: {{type: azure, region: westeurope}}\n  networks: {{pods: 10.241.128.0/17, services: 10.241.0.0/17}}\n  dns:\n    internal: {{type: azure-dns, domain: internal.example.com}}\n")
}

fn load_dir(files: &[(&str, String)]) -> (tempfile::TempDir, manifest::Loaded) {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let loaded = manifest::load(&[dir.path().to_path_buf()]).unwrap_or_else(|e| panic!("{e}"));
    (dir, loaded)
}

#[test]
fn shoots_pair_with_the_seed_their_seed_name_names() {
    let (_dir, loaded) = load_dir(&[
        ("a-shoot.yaml", shoot_on("a", "eu1")),
        ("b-shoot.yaml", shoot_on("b", "us1")),
        ("c-shoot.yaml", shoot_on("c", "")),
        ("d-shoot.yaml", shoot_on("d", "eu1")),
        ("seeds.yaml", format!("{}---\n{}", seed_named("us1"), seed_named("eu1"))),
    ]);
    let pairing = manifest::pair_seeds(&loaded).unwrap();
    let named = |p: &manifest::SeedPair| {
        (loaded.shoots[p.shoot].metadata().name.clone(), loaded.seeds[p.seed].seed.metadata.name.clone())
    };
    assert_eq!(
        pairing.pairs.iter().map(named).collect::<Vec<_>>(),
        vec![("a".into(), "eu1".into()), ("b".into(), "us1".into()), ("d".into(), "eu1".into())]
    );
    assert_eq!(pairing.unpaired, vec![manifest::Unpaired { shoot: 2, seed_name: String::new() }]);
}

#[test]
fn without_seeds_nothing_pairs_and_nothing_is_said() {
    let (_dir, loaded) = load_dir(&[("a.yaml", shoot_on("a", "eu1"))]);
    assert_eq!(manifest::pair_seeds(&loaded).unwrap(), manifest::Pairing::default());
}

#[test]
fn a_seed_with_no_shoots_and_a_shoot_on_another_seed_are_fine() {
    let (_dir, loaded) = load_dir(&[("a.yaml", shoot_on("a", "us1")), ("seed.yaml", seed_named("eu1"))]);
    let pairing = manifest::pair_seeds(&loaded).unwrap();
    assert!(pairing.pairs.is_empty());
    assert_eq!(pairing.unpaired, vec![manifest::Unpaired { shoot: 0, seed_name: "us1".into() }]);
}

#[test]
fn two_seeds_of_one_name_are_refused_naming_both() {
    let (dir, loaded) = load_dir(&[
        ("a.yaml", seed_named("eu1")),
        ("b.yaml", format!("{}---\n{}", seed_named("x"), seed_named("eu1"))),
    ]);
    let e = manifest::pair_seeds(&loaded).unwrap_err().to_string().replace(&dir.path().display().to_string(), "<dir>");
    assert_eq!(
        e,
        "duplicate seed \"eu1\": defined in <dir>/a.yaml and in <dir>/b.yaml (document 2); each Seed must appear once"
    );
}
