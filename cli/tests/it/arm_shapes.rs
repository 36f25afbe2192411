//! Issue #7 items 9 and 10 through the real binary: a managed subnet that the user's VNet cannot take
//! is refused by `trellis plan` with one line per pre-flight error (exit 1, nothing written), and a BYO
//! subnet that is not dedicated to the shoot plans with warnings in the printed plan.

use crate::common;
use common::{scenario, Sandbox};

#[test]
fn regression_plan_refuses_a_managed_subnet_the_user_vnet_cannot_take() {
    let sb = Sandbox::new();
    let world = scenario("I7-9-managed-subnet-in-user-vnet/world.yaml");
    let run = sb
        .run(&["plan", "-f", &scenario("I7-9-managed-subnet-in-user-vnet/shoot-overlapping.yaml"), "--world", &world])
        .code(1)
        .stderr_has("overlaps subnet subnet1 (10.0.1.0/24) of VNet test-vnet (resource group rg1)")
        .stderr_has("NetcfgSubnetRangesOverlap");
    let lines = run.stderr_lines();
    assert!(lines.iter().any(|l| l.starts_with("error: ") && l.ends_with("1 pre-flight error(s)")), "{lines:?}");
    assert!(lines.iter().all(|l| !l.contains("panicked")), "{lines:?}");
    sb.run(&["plan", "-f", &scenario("I7-9-managed-subnet-in-user-vnet/shoot-outside.yaml"), "--world", &world])
        .code(1)
        .stderr_has("lies outside the address space of VNet test-vnet (resource group rg1): 10.0.0.0/16");
    sb.run(&["plan", "-f", &scenario("I7-9-managed-subnet-in-user-vnet/shoot-other-region.yaml"), "--world", &world])
        .code(1)
        .stderr_has("networks.vnet: VNet test-vnet (resource group rg1) is in location westus, but the shoot's region is eastus");
    sb.assert_no_workspaces();
}

#[test]
fn regression_plan_warns_about_a_byo_subnet_that_is_not_dedicated() {
    let sb = Sandbox::new();
    let shoot = scenario("I7-10-byo-subnet-not-dedicated/shoot.yaml");
    let world = scenario("I7-10-byo-subnet-not-dedicated/world.yaml");
    sb.run(&["plan", "-f", &shoot, "--world", &world])
        .code(0)
        .stdout_has("Warning: subnet /subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Network/virtualNetworks/test-vnet/subnets/subnet1 is delegated to Microsoft.Provider/resourceType (delegation myDelegation)")
        .stdout_has("already hosts 1 IP configuration(s) of other resources");
}
