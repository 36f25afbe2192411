//! `docs/dev/writing-a-provider.md` made true: a provider trellis does not ship — `toy`, object-store
//! buckets on a simulated cloud of its own — registers through the public registry and is planned,
//! applied, re-planned, changed and destroyed through the engine exactly as the built-in ones are.
//!
//! What it took, all in this directory ([`PROVIDER_FILES`], checked below):
//! - `stages.rs`: its [`Stages`](trellis_providers::stages::Stages) (typed shoot, context, state,
//!   id scheme, kinds) and the [`Staged`](trellis_providers::stages::Staged) provider;
//! - `binding.rs`: its [`CloudBinding`](trellis_engine::binding::CloudBinding) and simulated cloud;
//! - `mod.rs` (this file): the registry line (`Registry::builtin().with(Entry::new(&TOY, &TOY_BINDING))`)
//!   and the tests.
//!
//! No file outside it was edited for it.

mod binding;
mod stages;

use binding::{ToyCloud, TOY_BINDING};
use stages::{shoot_yaml, TOY};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use trellis_engine::backend::SimPlace;
use trellis_engine::binding::Chosen;
use trellis_engine::ops::{self, ApplyOp, ApplyOptions, Quiet, Session};
use trellis_engine::registry::{Entry, Registry};
use trellis_plans::Action;
use trellis_state::StateLocation;

/// The files the toy provider needed, relative to this directory.
const PROVIDER_FILES: [&str; 3] = ["binding.rs", "mod.rs", "stages.rs"];

/// The registry line: trellis' own providers and the toy one.
fn registry() -> Arc<Registry> {
    Arc::new(Registry::builtin().with(Entry::new(&TOY, &TOY_BINDING)))
}

fn open(state: &Path, operation: &str) -> Session {
    let location = StateLocation::Dir(state.to_path_buf());
    Session::open_with(registry(), &location, &SimPlace::InState, operation, None, Default::default())
        .expect("the state dir opens")
        .0
}

fn write_shoot(dir: &Path, buckets: &[&str]) -> PathBuf {
    let file = dir.join("toy-shoot.yaml");
    std::fs::write(&file, shoot_yaml("alpha", buckets)).unwrap();
    file
}

/// The actions of the plans, as `(node name, action)`.
fn actions(plans: &[ops::ShootPlan]) -> Vec<(String, Action)> {
    plans.iter().flat_map(|p| p.planned.plan.nodes.iter().map(|n| (n.name.clone(), n.action()))).collect()
}

/// Plans `file` (or its destroy) and applies the plan; the plans applied.
async fn plan_and_apply(state: &Path, file: &Path, destroy: bool) -> Vec<(String, Action)> {
    let operation = if destroy { ApplyOp::Destroy } else { ApplyOp::Apply };
    let session = open(state, operation.as_str());
    let result = async {
        let plans = ops::plan_files(&session, &[file.to_path_buf()], destroy, None).await?.plans;
        let planned = actions(&plans);
        let opts = ApplyOptions::new(4, operation);
        let report = ops::apply(&session, plans, &opts, &mut Quiet).await?;
        anyhow::ensure!(report.ok, "the apply failed: {report:?}");
        Ok(planned)
    }
    .await;
    session.finish(result).unwrap()
}

/// The buckets in the toy cloud of the state dir.
fn buckets_in_cloud(state: &Path) -> Vec<String> {
    let session = open(state, "plan");
    let ids = session.sim::<ToyCloud>().expect("the toy cloud is open in every session").ids();
    session.close().unwrap();
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_outside_trellis_plans_applies_and_destroys_on_its_own_binding() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let file = write_shoot(tmp.path(), &["logs", "backups"]);

    // The first plan: each bucket created, in the plan JSON under the toy provider's own names.
    let session = open(&state, "plan");
    let plans = ops::plan_files(&session, std::slice::from_ref(&file), false, None).await.unwrap().plans;
    let json: serde_json::Value = serde_json::from_str(&ops::plan_set(&plans).to_json()).unwrap();
    session.close().unwrap();
    assert_eq!(json["provider"], "toy", "{json}");
    let kinds: Vec<&serde_json::Value> = json["nodes"].as_array().unwrap().iter().map(|n| &n["kind"]).collect();
    assert_eq!(kinds, ["bucket", "bucket"]);
    assert_eq!(json["artifacts"]["buckets"], serde_json::json!(["logs", "backups"]));
    // A kind its provider maps to no Terraform type: `<provider>_<kind>`, through the registry that knows it.
    let terraform = trellis_plans::terraform::plan_json(&ops::plan_set(&plans), "test", &*registry());
    assert!(terraform.to_string().contains("\"type\":\"toy_bucket\""), "{terraform}");
    assert!(terraform.to_string().contains("\"provider_name\":\"trellis/toy\""), "{terraform}");

    // Applied: the buckets exist in the toy cloud (and nowhere else); a re-plan changes nothing.
    let applied = plan_and_apply(&state, &file, false).await;
    assert_eq!(applied, [("backups".to_string(), Action::Create), ("logs".to_string(), Action::Create)]);
    assert_eq!(
        buckets_in_cloud(&state),
        ["toy://toy-account/shoot--dev--alpha/backups", "toy://toy-account/shoot--dev--alpha/logs"]
    );
    let session = open(&state, "plan");
    let again = ops::plan_files(&session, std::slice::from_ref(&file), false, None).await.unwrap().plans;
    session.close().unwrap();
    assert!(actions(&again).iter().all(|(_, a)| *a == Action::Noop), "{:?}", actions(&again));

    // A bucket no longer listed is deleted, driven by the state's record of it.
    write_shoot(tmp.path(), &["logs"]);
    let changed = plan_and_apply(&state, &file, false).await;
    assert_eq!(changed, [("backups".to_string(), Action::Delete), ("logs".to_string(), Action::Noop)]);
    assert_eq!(buckets_in_cloud(&state), ["toy://toy-account/shoot--dev--alpha/logs"]);

    // Destroyed: the cloud is empty again.
    let destroyed = plan_and_apply(&state, &file, true).await;
    assert_eq!(destroyed, [("logs".to_string(), Action::Delete)]);
    assert!(buckets_in_cloud(&state).is_empty());
}

#[test]
fn its_admission_rules_run_after_gardeners_and_say_where() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("bad.yaml");
    std::fs::write(&file, shoot_yaml("alpha", &["Logs", "logs", "logs"])).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let session = open(&tmp.path().join("state"), "plan");
    let err = rt.block_on(ops::plan_files(&session, &[file], false, None)).err().expect("invalid buckets are refused");
    session.discard().unwrap();
    let text = format!("{err:#}");
    assert!(text.contains("spec.provider.infrastructureConfig.buckets[0]: Invalid value: \"Logs\""), "{text}");
    assert!(
        text.contains("spec.provider.infrastructureConfig.buckets[2]: Invalid value: \"logs\": listed twice"),
        "{text}"
    );
}

#[test]
fn the_provider_is_exactly_the_files_it_lists() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/toy_provider");
    let mut files: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    files.sort();
    assert_eq!(files, PROVIDER_FILES);
    // The registry line is the only place it is registered, and trellis' own registry does not know it.
    assert!(Registry::builtin().entry("toy").is_none());
    assert!(registry().entry("toy").is_some());
}

/// `trellis world export` is the engine's and the bindings': with the toy's cloud chosen as its real
/// client, the export plans the toy shoot, records what its plan read (the buckets that exist, not the
/// one still to create) and the toy binding writes its section; no other binding writes one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn world_export_writes_the_section_of_the_chosen_binding_from_what_its_plans_read() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let file = write_shoot(tmp.path(), &["logs"]);
    plan_and_apply(&state, &file, false).await;
    write_shoot(tmp.path(), &["logs", "new"]);

    let mut session = open(&state, "world export");
    let registry = Arc::clone(&session.registry);
    let chosen = registry
        .entries()
        .iter()
        .map(|e| match e.provider.type_name() {
            "toy" => Chosen::Real(session.sim_of("toy").unwrap().cloud(), "toy-account".to_string()),
            _ => Chosen::Sim(None),
        })
        .collect();
    let files = ops::read_ahead(Arc::clone(&registry), vec![file.clone()]);
    let mut planned = Vec::new();
    let export = ops::export_world(
        &mut session,
        chosen,
        &[file],
        files,
        |_| {},
        |p| {
            if let ops::ExportProgress::Planned { shoot, .. } = p {
                planned.push(shoot.to_string());
            }
        },
    )
    .await;
    let export = session.finish(export).unwrap();
    assert_eq!(planned, ["shoot--dev--alpha"]);
    assert_eq!(export.sections, [("toy", 1)]);
    assert_eq!(
        export.yaml,
        "# Written by `trellis world export`: every resource the shoots' plans read, as the cloud returned it.\n\
         toy:\n  account: toy-account\n  buckets:\n  - name: logs\n    labels:\n      shoot: shoot--dev--alpha\n    \
         id: toy://toy-account/shoot--dev--alpha/logs\n"
    );

    // Without a real client among the chosen: refused, naming the real clouds of the registry.
    let err = ops::check_export_clouds(&registry, &[Chosen::Sim(None)]).unwrap_err().to_string();
    assert!(err.starts_with("trellis world export reads a real cloud: pass --cloud azure or --cloud gcp"), "{err}");
}
