//! Issue #7 items 9 and 10 through the real binary: a BYO subnet that is not dedicated to the shoot
//! plans with warnings in the printed plan.

mod common;
use common::{scenario, Sandbox};

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
