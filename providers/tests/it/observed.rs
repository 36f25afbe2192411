//! The Azure pipeline's stages read `Observed` strictly: a resource or list discovery never fetched
//! is a bug (`NotFetched`), never "absent" — no create, no "not found" pre-flight error.

use trellis_planner::discover::{NotFetched, Observed};
use trellis_providers::azure::{desired, names, preflight, render, warnings, AzureShoot, Ctx};

const SUB: &str = "00000000-0000-0000-0000-000000000001";

use crate::common;
use common::data_shoot as shoot;

/// Round one fetched, everything absent: a new managed shoot.
fn round1_absent(shoot: &AzureShoot, ctx: &Ctx) -> Observed {
    let mut observed = Observed::new(&trellis_planner::ids::ArmIds);
    for id in desired::discovery_round1(&shoot.spec.provider.infrastructure_config, ctx) {
        observed.insert(&id, None);
    }
    observed
}

#[test]
fn regression_managed_stages_refuse_a_forgotten_round_two() {
    let shoot = shoot("azure-managed.yaml");
    let cfg = &shoot.spec.provider.infrastructure_config;
    let ctx = Ctx::new(&shoot, SUB, &Default::default());
    let mut observed = round1_absent(&shoot, &ctx);
    // Round two never ran: the route table (and the rest) were never looked up.
    let rt = names::resource_id(SUB, &ctx.tn, names::rtype::ROUTE_TABLE, names::ROUTE_TABLE_NAME);
    let desired = desired::desired(cfg, &ctx, &observed);
    assert!(matches!(desired, Err(NotFetched::Resource(_))), "desired: {desired:?}");
    assert_eq!(warnings::warnings(cfg, &ctx, &observed), Err(NotFetched::Resource(rt)));
    assert!(render::artifacts(cfg, &ctx, &observed, &[]).is_err(), "the NAT's public IP was never fetched");

    // Round two run: the resource group and VNet are absent, so their lists are not run and answer
    // "absent" for every id they cover (as `Observed::fetch` does); every GET is absent too.
    let (ids, lists) = desired::discovery_round2(cfg, &ctx, &observed).unwrap();
    for id in ids.iter().chain(lists.iter().flat_map(|l| l.covers.iter())) {
        observed.insert(id, None);
    }
    let nodes = trellis_planner::diff::plan_nodes(desired::desired(cfg, &ctx, &observed).unwrap(), &observed).unwrap();
    assert!(nodes.iter().all(|n| n.action() == trellis_plans::Action::Create), "a new shoot is created");
    assert_eq!(preflight::check(cfg, &ctx, &observed), Ok(vec![]));
    assert!(render::artifacts(cfg, &ctx, &observed, &[]).is_ok());
}

#[test]
fn regression_preflight_does_not_call_a_forgotten_user_vnet_missing() {
    let shoot = shoot("azure-byo.yaml");
    let cfg = &shoot.spec.provider.infrastructure_config;
    let ctx = Ctx::new(&shoot, SUB, &Default::default());
    let got = preflight::check(cfg, &ctx, &Observed::new(&trellis_planner::ids::ArmIds));
    assert!(matches!(got, Err(NotFetched::Resource(_))), "never looked up is not 'not found': {got:?}");
    // Looked up and absent: the user's error.
    let errs = preflight::check(cfg, &ctx, &round1_absent(&shoot, &ctx)).unwrap();
    assert!(errs[0].message.starts_with("user vnet not found"), "{errs:?}");
}

#[test]
fn regression_a_forgotten_fetch_stops_the_plan_as_a_bug() {
    let shoot = shoot("azure-managed.yaml");
    let cfg = &shoot.spec.provider.infrastructure_config;
    let ctx = Ctx::new(&shoot, SUB, &Default::default());
    let observed = round1_absent(&shoot, &ctx);
    let err = desired::desired(cfg, &ctx, &observed).unwrap_err().in_stage("azure desired");
    let text = trellis_providers::provider::ProviderError::from(err).to_string();
    assert!(text.starts_with("bug: /subscriptions/"), "{text}");
    assert!(text.ends_with("was never fetched before planning (stage: azure desired); please report"), "{text}");
}
