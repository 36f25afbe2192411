//! Spec acceptance A2 across steps (the data scenario `azure/A2-managed-nat` holds the rest): a replaced
//! public IP gets a new address from ARM, so its egress CIDR is known only after the apply.

use trellis_plans::Action;
use trellis_tests::{node, text, Scenario};

#[tokio::test]
async fn regression_a2_replaced_public_ip_shows_its_egress_cidr_as_known_after_apply() {
    let s = Scenario::new("A2");
    let first = s.apply().await.unwrap();
    assert!(first.ok, "{first:#?}");
    let old = first.shoots[0].artifacts.as_ref().unwrap()["egress_cidrs"].clone();
    assert!(old[0].as_str().unwrap().ends_with("/32"), "{old}");

    // The zone change replaces the public IP: ARM gives the new one another address.
    let plan = s.plan_file("shoot-zone2.yaml").await.unwrap();
    assert_eq!(node(&plan, ".shoot--dev--bravo-nat-gateway-ip").action(), Action::Replace);
    assert_eq!(plan.artifacts.egress_cidrs(), Some(Some(&["(known after apply)".to_string()][..])));
    assert!(text(&plan).contains("egress CIDRs: (known after apply)"), "{}", text(&plan));

    let report = s.apply_files(&["shoot-zone2.yaml"]).await.unwrap();
    assert!(report.ok, "{report:#?}");
    let new = report.shoots[0].artifacts.as_ref().unwrap()["egress_cidrs"].clone();
    assert!(new[0].as_str().unwrap().ends_with("/32"), "{new}");
    assert_ne!(new, old, "the replaced public IP has a new address");
    // Once applied, the address is known again.
    let after = s.plan_file("shoot-zone2.yaml").await.unwrap();
    assert_eq!(after.artifacts.egress_cidrs(), Some(Some(&[new[0].as_str().unwrap().to_string()][..])));
}
