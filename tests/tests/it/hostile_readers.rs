//! Mutation property test over every reader of user files (issue 6, item 9): the bundled examples and
//! scenario files, mutated thousands of times (characters flipped, deleted, inserted, lines duplicated or
//! dropped, the text cut short), read by the manifest loader, the world-file reader and the plan-file
//! reader. No mutation may panic, and every refusal is one line per error, each naming the file.
//! Manifests that still parse are validated and planned against an empty simulated cloud, so the
//! stages behind the reader see hostile values too.

use proptest::prelude::*;
use std::path::{Path, PathBuf};
use trellis_planner::retry::RetryPolicy;
use trellis_plans::PlanSet;
use trellis_providers::manifest;
use trellis_providers::provider::CloudCtx;
use trellis_sim::{ArmSim, WorldFile};
use trellis_state::Workspace;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every `*.yaml` under `dir` (recursively) whose name starts with `prefix`.
fn yaml_files(dir: &Path, keep: &dyn Fn(&str) -> bool) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "yaml") {
                let name = path.file_name().unwrap().to_str().unwrap().to_string();
                if keep(&name) {
                    out.push((path.display().to_string(), std::fs::read_to_string(&path).unwrap()));
                }
            }
        }
    }
    out.sort();
    out
}

fn manifests() -> Vec<(String, String)> {
    let mut all = yaml_files(&repo().join("examples"), &|n| !n.contains("world"));
    all.extend(yaml_files(&repo().join("tests/scenarios"), &|n| n.starts_with("shoot")));
    all
}

fn worlds() -> Vec<(String, String)> {
    let mut all = yaml_files(&repo().join("examples"), &|n| n.contains("world"));
    all.extend(yaml_files(&repo().join("tests/scenarios"), &|n| n.starts_with("world")));
    all
}

/// Plan files: the managed and the BYO example planned against their worlds, one alone and a fleet.
fn plan_files() -> Vec<(String, String)> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let mut single = Vec::new();
    for example in ["azure-managed", "azure-byo-nat"] {
        let dir = repo().join("examples").join(example);
        let sim = ArmSim::in_memory("00000000-0000-0000-0000-000000000000");
        if dir.join("world.yaml").exists() {
            let text = std::fs::read_to_string(dir.join("world.yaml")).unwrap();
            sim.sync_world(&WorldFile::parse("world.yaml", &text).unwrap()).unwrap();
        }
        let loaded = manifest::load(&[dir.join("shoot.yaml")]).unwrap();
        let l = &loaded.shoots[0];
        let ctx = CloudCtx {
            account: sim.subscription(),
            retry: RetryPolicy::immediate(1),
            accept_drift: false,
            replace: Default::default(),
        };
        let planned = rt.block_on(l.provider.plan(l.shoot.as_ref(), &Workspace::new("x"), &sim, &ctx)).unwrap();
        single.push(planned.plan);
    }
    vec![
        ("single.plan.json".to_string(), PlanSet::new(vec![single[0].clone()]).to_json()),
        ("fleet.plan.json".to_string(), PlanSet::new(single).to_json()),
    ]
}

/// One edit of a text.
#[derive(Clone, Debug)]
enum Mutation {
    /// Replace the character at this fraction of the text with one of these.
    Flip(f64, char),
    Delete(f64, usize),
    Insert(f64, String),
    DuplicateLine(f64),
    DropLine(f64),
    Truncate(f64),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    // Characters that matter to YAML and JSON, and some that do not belong in a manifest.
    let special = prop::sample::select(vec![
        ':', '-', ' ', '\n', '\t', '"', '\'', '[', ']', '{', '}', ',', '&', '*', '!', '|', '>', '#', '%', '@', '`',
        '0', '9', '/', '.', '\\', '\u{0}', '\u{1b}', '\r', 'é', '\u{feff}', 'x',
    ]);
    let tokens = prop::sample::select(vec![
        "true",
        "\"yes\"",
        "null",
        "~",
        "-1",
        "99999999999999999999",
        "1e400",
        "NaN",
        "*a",
        "&a ",
        "<<: *a",
        "!!binary",
        "[",
        "{",
        "\"",
        "---\n",
        "...\n",
        "  ",
        "/99",
        "0.0.0.0/0",
        "::/0",
        "10.250.0.0/99999",
        "\"format_version\": 2",
        "\"action\": \"delete\"",
        "\"ownership\": \"user\"",
        "zoned: \"yes\"",
    ])
    .prop_map(str::to_string);
    let at = 0.0..1.0f64;
    prop_oneof![
        (at.clone(), special).prop_map(|(a, c)| Mutation::Flip(a, c)),
        (at.clone(), 1..40usize).prop_map(|(a, n)| Mutation::Delete(a, n)),
        (at.clone(), tokens).prop_map(|(a, t)| Mutation::Insert(a, t)),
        at.clone().prop_map(Mutation::DuplicateLine),
        at.clone().prop_map(Mutation::DropLine),
        at.prop_map(Mutation::Truncate),
    ]
}

fn apply_mutation(text: &str, m: &Mutation) -> String {
    let chars: Vec<char> = text.chars().collect();
    let pos = |f: f64| ((chars.len() as f64) * f) as usize % chars.len().max(1);
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let line = |f: f64| ((lines.len() as f64) * f) as usize % lines.len().max(1);
    match m {
        Mutation::Flip(f, c) => {
            let mut out = chars.clone();
            if !out.is_empty() {
                out[pos(*f)] = *c;
            }
            out.into_iter().collect()
        }
        Mutation::Delete(f, n) => {
            let start = pos(*f);
            chars[..start].iter().chain(chars[(start + n).min(chars.len())..].iter()).collect()
        }
        Mutation::Insert(f, t) => {
            let at = pos(*f);
            chars[..at].iter().copied().chain(t.chars()).chain(chars[at..].iter().copied()).collect()
        }
        Mutation::DuplicateLine(_) | Mutation::DropLine(_) if lines.is_empty() => String::new(),
        Mutation::DuplicateLine(f) => {
            let i = line(*f);
            lines[..=i.min(lines.len().saturating_sub(1))].iter().chain(lines[i..].iter()).copied().collect()
        }
        Mutation::DropLine(f) => {
            let i = line(*f);
            lines.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, l)| *l).collect()
        }
        Mutation::Truncate(f) => chars[..pos(*f)].iter().collect(),
    }
}

fn mutated(files: Vec<(String, String)>) -> impl Strategy<Value = (String, String)> {
    (prop::sample::select(files), prop::collection::vec(mutation(), 1..4)).prop_map(|((name, text), ms)| {
        let text = ms.iter().fold(text, |t, m| apply_mutation(&t, m));
        (name, text)
    })
}

/// `line` without its backquoted spans (what a message quotes of the input).
fn without_quoted(line: &str) -> String {
    line.split('`').step_by(2).collect::<Vec<_>>().join("``")
}

/// A refusal is one line per error, each naming the file (a reader that finds several errors
/// reports them all, one per line).
fn assert_one_line(name: &str, message: &str) -> Result<(), TestCaseError> {
    prop_assert!(!message.is_empty());
    for line in message.lines() {
        prop_assert!(line.contains(name), "each line names the file {name}: {message}");
        // What a reader quotes of the input (`…`) is the user's own text, which may hold anything.
        let own = without_quoted(line);
        prop_assert!(!own.contains("backtrace") && !own.contains(" { "), "no Debug text: {message}");
    }
    Ok(())
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

/// Found by the world-file proptest: a refusal that quotes the user's text (an unknown field named
/// `null  {   properties`) was taken for Debug output. Quoted input is the user's, not trellis's.
#[test]
fn regression_a_refusal_quoting_input_that_looks_like_debug_text_is_one_line() {
    let name = "world.yaml";
    let text = "azure:\n  resources:\n    - id: /subscriptions/s/resourceGroups/rg\n      location: westeurope\nnull  {   properties:\n  x: 1\n";
    let e = WorldFile::parse(name, text).expect_err("an unknown top-level field is refused");
    assert!(e.to_string().contains("`null  {   properties`"), "{e}");
    assert_one_line(name, &e.to_string()).unwrap();
}

/// Found by the property test below: a lone `\r` in a comment is a line break to YAML (and to the
/// parser that numbers the lines), but the general path sliced documents by `\n` only, so a document
/// after it started one line late and lost its first line (`apiVersion`).
#[test]
fn regression_a_lone_carriage_return_in_a_comment_reads_alike_through_both_paths() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/azure-managed/shoot.yaml");
    let text = format!("# a comment\r# and another after a lone CR\n{}", std::fs::read_to_string(&example).unwrap());
    let path = Path::new("shoot.yaml");
    let read = |loaded: manifest::Loaded| loaded.shoots.iter().map(|s| s.shoot.to_json().unwrap()).collect::<Vec<_>>();
    let one = read(manifest::parse_str(path, &text).expect("the one pass reads it"));
    let general = read(manifest::parse_str_general(path, &text).expect("the general path reads it"));
    assert_eq!(one.len(), 1);
    assert_eq!(one[0]["apiVersion"], "core.gardener.cloud/v1beta1");
    assert_eq!(one, general);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn mutated_manifests_never_panic_and_refuse_in_one_line((name, text) in mutated(manifests())) {
        match manifest::parse_str(Path::new(&name), &text) {
            Err(e) => assert_one_line(&name, &e.to_string())?,
            Ok(loaded) => {
                // What still parses goes through validation and planning against an empty cloud.
                let rt = runtime();
                for l in loaded.shoots {
                    let ws = Workspace::new(&l.technical_id());
                    let sim = ArmSim::in_memory("00000000-0000-0000-0000-000000000000");
                    let ctx = CloudCtx { account: sim.subscription(), retry: RetryPolicy::immediate(1), accept_drift: false, replace: Default::default() };
                    let _ = rt.block_on(l.provider.plan(l.shoot.as_ref(), &ws, &sim, &ctx));
                }
            }
        }
    }

    /// The loader reads a plain single-Shoot file in one pass and anything else through the split
    /// and typed passes; both read every mutated manifest alike (same shoots, same error).
    #[test]
    fn mutated_manifests_load_the_same_through_the_one_pass_and_the_general_path((name, text) in mutated(manifests())) {
        let path = Path::new(&name);
        match (manifest::parse_str(path, &text), manifest::parse_str_general(path, &text)) {
            (Err(one), Err(general)) => prop_assert_eq!(one.to_string(), general.to_string()),
            (Ok(one), Ok(general)) => {
                prop_assert_eq!(&one.seeds, &general.seeds);
                prop_assert_eq!(one.shoots.len(), general.shoots.len());
                for (a, b) in one.shoots.iter().zip(&general.shoots) {
                    prop_assert_eq!((a.doc_index, a.provider_type()), (b.doc_index, b.provider_type()));
                    prop_assert_eq!(a.shoot.to_json().unwrap(), b.shoot.to_json().unwrap());
                }
            }
            (one, general) => prop_assert!(false, "one pass: {:?}\ngeneral path: {:?}", one.map(|_| ()), general.map(|_| ())),
        }
    }

    #[test]
    fn mutated_world_files_never_panic_and_refuse_in_one_line((name, text) in mutated(worlds())) {
        match WorldFile::parse(&name, &text) {
            Err(e) => assert_one_line(&name, &e.to_string())?,
            Ok(world) => {
                let sim = ArmSim::in_memory("00000000-0000-0000-0000-000000000000");
                if let Err(e) = sim.sync_world(&world) {
                    assert_one_line(&name, &e.to_string())?;
                }
            }
        }
    }

    #[test]
    fn mutated_plan_files_never_panic_and_refuse_in_one_line((name, text) in mutated(plan_files())) {
        match PlanSet::from_json(&name, &text) {
            Err(e) => assert_one_line(&name, &e.to_string())?,
            Ok(set) => {
                // A plan that still reads back is unchanged in every way that matters (its digest held).
                let _ = trellis_plans::render::text(&set, &trellis_plans::render::TextOptions { color: false, verbose: true });
                let _ = trellis_plans::render::markdown(&set);
            }
        }
    }
}
