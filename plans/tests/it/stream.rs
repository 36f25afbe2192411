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
