use serde_saphyr::DuplicateKeyPolicy;
use std::time::Instant;
fn main() {
    let dir = std::env::args().nth(1).unwrap();
    let mut texts = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        texts.push((p.clone(), std::fs::read_to_string(&p).unwrap()));
    }
    texts.sort();
    type Env = trellis_providers::manifest::ShootEnvelope;
    let run = |name: &str, mk: &dyn Fn() -> serde_saphyr::Options| {
        let mut best = f64::MAX;
        for _ in 0..3 {
            let t = Instant::now();
            for (_, s) in &texts {
                let v: Env = serde_saphyr::from_str_with_options(s, mk()).unwrap();
                std::hint::black_box(v);
            }
            best = best.min(t.elapsed().as_secs_f64());
        }
        println!("{name:30} {:.0} ms", best * 1e3);
    };
    run("default", &|| serde_saphyr::options! {});
    run("no budget", &|| serde_saphyr::options! { budget: None });
    run("dup passthrough", &|| serde_saphyr::options! { duplicate_keys: DuplicateKeyPolicy::PassThrough });
    run("both", &|| serde_saphyr::options! { budget: None, duplicate_keys: DuplicateKeyPolicy::PassThrough });
    let t = Instant::now();
    for (_, s) in &texts {
        for ev in
            serde_saphyr::granit_parser::Parser::new_from_str_with_options(s, trellis_planner::yaml::parser_options())
        {
            std::hint::black_box(ev.unwrap());
        }
    }
    println!("events {:?}", t.elapsed());
}
