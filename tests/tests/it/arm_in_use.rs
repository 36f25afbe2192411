//! Issue #8, "a simulator that behaves like Azure": a NIC, load balancer or VM in a subnet or behind a
//! public IP blocks its deletion (`InUseSubnetCannotBeDeleted`, `PublicIPAddressCannotBeDeleted`,
//! `NicInUse`). A destroy that runs while the bastion controller's VM still stands in the shoot's
//! subnet fails with Azure's answer, names it, deletes nothing it must not — and converges once the
//! bastion is gone.

use std::sync::Arc;
use trellis_planner::cloud::CloudWrite;
use trellis_sim::runtime::Bastion;
use trellis_tests::{node, Scenario};

#[tokio::test]
async fn regression_i8_3_a_bastion_in_the_shoot_subnet_blocks_its_deletion_until_it_is_gone() {
    // I7-9: the shoot's managed subnet lives in the user's VNet, so a destroy deletes it on its own.
    let s = Scenario::new("I7-9");
    let report = s.apply().await.unwrap();
    assert!(report.ok, "{report:#?}");
    let plan = s.plan().await.unwrap();
    let subnet = node(&plan, "-nodes").id.clone().unwrap();
    let artifacts = report.shoots[0].artifacts.clone().unwrap();
    let values = artifacts["cloud_provider_config"]["values"].as_object().unwrap().clone();
    let cloud: Arc<dyn CloudWrite> = Arc::new(s.sim().clone());
    let bastion = Bastion::new(cloud, &values).unwrap();
    bastion.create("cli-abc", vec!["203.0.113.7/32".into()], &["10.0.0.0/8".into()]).await.unwrap();

    let refused = s.destroy_files(&["shoot.yaml"]).await.unwrap();
    assert!(!refused.ok, "the bastion's NIC is still in the subnet: {refused:#?}");
    let failure = format!("{:?}", refused.shoots[0].nodes);
    assert!(failure.contains("InUseSubnetCannotBeDeleted"), "{failure}");
    assert!(failure.contains("/networkInterfaces/cli-abc"), "Azure names the NIC: {failure}");
    assert!(s.exists(&subnet), "the subnet is still there");

    bastion.delete("cli-abc").await.unwrap();
    let report = s.destroy_files(&["shoot.yaml"]).await.unwrap();
    assert!(report.ok, "{report:#?}");
    assert!(!s.exists(&subnet));
}
