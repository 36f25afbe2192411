//! Issue #8, "a simulator that behaves like Azure": ARM does not echo a PUT body. It answers the
//! location in its normal form and adds its defaults (a NAT gateway's and a public IP's idle timeout,
//! a public IP's SKU tier and allocation, a subnet's network policies, …). No managed attribute that
//! ARM rewrites may become a perpetual update: the plan after an apply is "No changes".

use serde_json::json;
use trellis_plans::Action;
use trellis_tests::{all_scenario_dirs, node, text, Scenario};

#[tokio::test]
async fn regression_i8_2_values_arm_rewrites_are_no_perpetual_update() {
    let s = Scenario::new("I8-2");
    let report = s.apply().await.unwrap();
    assert!(report.ok, "{report:#?}");
    let plan = s.plan().await.unwrap();
    assert!(!plan.has_changes(), "{}", text(&plan));

    // What ARM made of it: the region in its normal form, the NAT's default idle timeout.
    let nat = s.sim().get_now(node(&plan, ".shoot--dev--india-nat-gateway").id.as_deref().unwrap()).unwrap();
    assert_eq!(nat["location"], json!("westeurope"));
    assert_eq!(nat["properties"]["idleTimeoutInMinutes"], json!(4));
    let rg =
        s.sim().get_now(node(&plan, "azure.resource_group.shoot--dev--india.shoot--dev--india").id.as_deref().unwrap());
    assert_eq!(rg.unwrap()["location"], json!("westeurope"));
}

#[tokio::test]
async fn regression_every_scenario_plans_no_changes_after_its_apply() {
    let dirs = all_scenario_dirs();
    let mut applied = 0;
    for dir in dirs {
        let world = dir.join("world.yaml");
        let s = Scenario::with_world(dir.clone(), world.exists().then_some(world));
        // `shoot.yaml`, or a fleet's `shoot-a.yaml`, `shoot-b.yaml`, … (other files are updates).
        let manifests: Vec<String> = if dir.join("shoot.yaml").exists() {
            vec!["shoot.yaml".to_string()]
        } else {
            let mut fleet: Vec<String> = std::fs::read_dir(&dir)
                .unwrap()
                .filter_map(|e| e.unwrap().file_name().into_string().ok())
                .filter(|n| n.starts_with("shoot-") && n.ends_with(".yaml"))
                .collect();
            fleet.sort();
            fleet
        };
        let manifests: Vec<&str> = manifests.iter().map(String::as_str).collect();
        // Scenarios whose shoot is refused (group C) have nothing to apply.
        let Ok(plans) = s.plan_files(&manifests).await else { continue };
        // Every node of every scenario plan has a reason code its action may carry (the scenario
        // driver checks every plan step the same way).
        for p in &plans {
            trellis_tests::check_reason_codes(&p.planned.plan).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        }
        // A node whose values GCE assigns on create (GCP dual-stack's IPv6 firewall rules) is planned
        // "known after apply": a second apply writes it; after that nothing may change.
        let known_after_apply = plans.iter().any(|p| {
            p.planned.plan.nodes.iter().any(|n| n.reason.code() == Some(trellis_plans::ReasonCode::KnownAfterApply))
        });
        let report = s.apply_plans(plans, trellis_engine::ops::ApplyOp::Apply).await.unwrap();
        assert!(report.ok, "{}: {report:#?}", dir.display());
        if known_after_apply {
            let report = s
                .apply_plans(s.plan_files(&manifests).await.unwrap(), trellis_engine::ops::ApplyOp::Apply)
                .await
                .unwrap();
            assert!(report.ok, "{}: {report:#?}", dir.display());
        }
        for again in s.plan_files(&manifests).await.unwrap() {
            let plan = &again.planned.plan;
            trellis_tests::check_reason_codes(plan).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
            assert!(
                plan.nodes
                    .iter()
                    .all(|n| !matches!(n.action(), Action::Create | Action::Update | Action::Replace | Action::Delete)),
                "{}: the plan after the apply is not \"No changes\":\n{}",
                dir.display(),
                text(plan)
            );
        }
        applied += 1;
    }
    assert!(applied >= 20, "only {applied} scenarios applied");
}
