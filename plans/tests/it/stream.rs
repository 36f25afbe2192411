//! The streaming plan-file writer writes exactly the bytes of `PlanSet::write_json`.

use crate::common;

use common::*;
use trellis_plans::{Plan, PlanSet, PlanSetWriter, RenderedPlan, FORMAT_VERSION};

/// `PlanSet::write_json` of `plans` in the given order (no sorting).
fn reference(plans: &[Plan]) -> Vec<u8> {
    let set = PlanSet { format_version: FORMAT_VERSION, plans: plans.to_vec() };
    let mut out = Vec::new();
    set.write_json(&mut out).unwrap();
    out
}

fn streamed(plans: &[Plan]) -> Vec<u8> {
    let mut w = PlanSetWriter::new(Vec::new());
    for (i, p) in plans.iter().enumerate() {
        // Both ways in: rendered here, or rendered elsewhere (a worker thread) and handed over.
        if i % 2 == 0 {
            w.push(p).unwrap();
        } else {
            w.push_rendered(RenderedPlan::of(p)).unwrap();
        }
    }
    assert_eq!(w.len(), plans.len());
    w.finish().unwrap()
}

fn plans(n: usize) -> Vec<Plan> {
    // Out of id order on purpose: the writer keeps the order it is given.
    (0..n)
        .map(|i| match i % 3 {
            0 => azure_drifted_plan(&format!("shoot--dev--z{i}")),
            1 => azure_managed_plan(&format!("shoot--dev--a{i}")),
            _ => azure_user_managed_plan(&format!("shoot--dev--m{i}")),
        })
        .collect()
}

#[test]
fn streamed_plan_file_equals_write_json_for_one_plan() {
    let one = plans(1);
    assert_eq!(String::from_utf8(streamed(&one)).unwrap(), String::from_utf8(reference(&one)).unwrap());
}

#[test]
fn streamed_plan_file_equals_write_json_for_several_plans() {
    for n in [2, 3, 7] {
        let several = plans(n);
        let bytes = streamed(&several);
        assert_eq!(
            String::from_utf8(bytes.clone()).unwrap(),
            String::from_utf8(reference(&several)).unwrap(),
            "{n} plans"
        );
        // And it reads back as the same plans, in the same order.
        let back = PlanSet::from_json("fleet.json", std::str::from_utf8(&bytes).unwrap()).unwrap();
        assert_eq!(back.plans, several);
    }
}

#[test]
fn streamed_plan_file_of_no_plans_equals_write_json() {
    assert_eq!(streamed(&[]), reference(&[]));
}

#[test]
fn streamed_plan_file_with_hostile_strings_equals_write_json() {
    let mut hostile = plans(2);
    hostile[0].warnings.push(format!("{TERMINAL_ATTACK}\n\n  indented"));
    hostile[1].warnings.push("line\r\nbreak\u{2028}sep".to_string());
    assert_eq!(streamed(&hostile), reference(&hostile));
    assert_eq!(streamed(&hostile[..1]), reference(&hostile[..1]));
}

/// A plan made without its digest ([`Plan::undigested`]) and rendered ([`RenderedPlan::of`],
/// [`RenderedPlan::of_filling`]) has its body hashed while it is written: the digest is the one
/// [`Plan::body_digest`] computes from the whole document, and the bytes are those of the digested
/// plan, for every shape of body (escapes in keys and values, a partial plan's `targets`, no nodes).
#[test]
fn the_digest_computed_while_rendering_is_the_whole_documents() {
    let mut cases = plans(3);
    cases.push(hostile(&azure_managed_plan("shoot--dev--h"), TERMINAL_ATTACK));
    cases.push(hostile(&azure_user_managed_plan("shoot--dev--q"), "\"quoted\" \\ back\u{1}slash\u{2028}"));
    let mut partial = azure_managed_plan("shoot--dev--p");
    let first = partial.nodes[0].address.clone();
    assert!(partial.restrict(&[first]).is_empty());
    assert!(partial.is_partial());
    cases.push(partial);
    let mut empty = azure_managed_plan("shoot--dev--e");
    empty.nodes.clear();
    empty.digest = empty.body_digest();
    cases.push(empty);
    for digested in &mut cases {
        // `hostile` reaches the digest too.
        digested.digest = digested.body_digest();
    }
    for digested in &cases {
        let mut plan = digested.clone();
        plan.digest.clear();
        assert_eq!(RenderedPlan::of(&plan), RenderedPlan::of(digested), "{}", digested.shoot);
        let rendered = RenderedPlan::of_filling(&mut plan);
        assert_eq!(plan.digest, digested.body_digest(), "{}", digested.shoot);
        assert_eq!(&plan, digested);
        assert_eq!(rendered, RenderedPlan::of(digested));
        // As a whole file, alone and in a fleet: the bytes of `PlanSet::write_json` of the digested plan.
        let undigested = Plan { digest: String::new(), ..digested.clone() };
        assert_eq!(streamed(std::slice::from_ref(&undigested)), reference(std::slice::from_ref(digested)));
        let two = [undigested, cases[0].clone()];
        assert_eq!(streamed(&two), reference(&[digested.clone(), cases[0].clone()]));
    }
}

/// `Plan::new` is `Plan::undigested` with its digest filled in.
#[test]
fn a_new_plan_is_an_undigested_one_with_its_digest() {
    let plan = azure_managed_plan("shoot--dev--n");
    let (n, a, w) = (plan.nodes.clone(), plan.artifacts.clone(), plan.warnings.clone());
    let new =
        Plan::new(plan.shoot.clone(), plan.provider, plan.mode, plan.prior.clone(), n.clone(), a.clone(), w.clone());
    let mut undigested = Plan::undigested(plan.shoot.clone(), plan.provider, plan.mode, plan.prior.clone(), n, a, w);
    assert!(undigested.digest.is_empty());
    undigested.fill_digest();
    assert_eq!(undigested, new);
    assert_eq!(new.digest, new.body_digest());
}
