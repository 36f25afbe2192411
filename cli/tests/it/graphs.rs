//! `trellis show PLAN --output dot|mermaid|html` on every bundled example of every provider, and a fleet.

use crate::common;

use common::*;
use std::path::{Path, PathBuf};

#[test]
fn dot_and_mermaid_of_every_bundled_example() {
    let bundled = bundled_examples();
    // Every example directory is listed above.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let on_disk = walk_shoots(&root);
    for shoot in &on_disk {
        assert!(
            bundled.iter().any(|(_, ms, _)| ms.iter().any(|m| shoot.starts_with(m) || m == shoot)),
            "{} is not covered by the graph snapshots",
            shoot.display()
        );
    }
    for (name, manifest, world) in bundled {
        let sb = Sandbox::new();
        let plan = plan_example(&sb, &manifest, world.as_deref());
        let json = sb.run_raw(&["show", &plan, "--output", "json"]).code(0).json();
        // One plan is written bare, a fleet as {"plans": [...]}.
        let plans = match json["plans"].as_array() {
            Some(plans) => plans.clone(),
            None => vec![json.clone()],
        };
        let nodes: usize = plans.iter().map(|p| p["nodes"].as_array().expect("nodes").len()).sum();
        let edges: usize = plans
            .iter()
            .flat_map(|p| p["nodes"].as_array().expect("nodes"))
            .map(|n| n["depends_on"].as_array().map_or(0, Vec::len))
            .sum();

        let dot = sb.run_raw(&["show", &plan, "--output", "dot"]).code(0).stdout;
        assert_eq!(dot.matches("fillcolor=").count(), nodes, "{name}: one DOT node per plan node");
        assert_eq!(dot.matches(" -> ").count(), edges, "{name}: one DOT edge per dependency");
        assert_eq!(dot.matches("subgraph \"cluster_").count(), if plans.len() > 1 { plans.len() } else { 0 });
        insta::assert_snapshot!(format!("dot_{name}"), dot);

        let mermaid = sb.run_raw(&["show", &plan, "--output", "mermaid"]).code(0).stdout;
        assert!(mermaid.starts_with("flowchart LR\n"), "{name}");
        assert_eq!(mermaid.matches(" --> ").count(), edges, "{name}: one Mermaid edge per dependency");
        insta::assert_snapshot!(format!("mermaid_{name}"), mermaid);

        // Same plan, same bytes.
        assert_eq!(sb.run_raw(&["show", &plan, "--output", "dot"]).code(0).stdout, dot, "{name}");
    }
}

/// The `shoot.yaml` files and fleet dirs under `examples/`.
fn walk_shoots(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("examples dir") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            out.extend(walk_shoots(&path));
        } else if path.file_name().is_some_and(|n| n == "shoot.yaml")
            || (path.extension().is_some_and(|e| e == "yaml") && path.parent().is_some_and(|p| p.ends_with("fleet")))
        {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// The HTML report of every bundled example: one page, no network, one SVG node group per plan node.
#[test]
fn html_of_every_bundled_example() {
    for (name, manifest, world) in bundled_examples() {
        let sb = Sandbox::new();
        let plan = plan_example(&sb, &manifest, world.as_deref());
        let (plans, nodes) = count_plans_and_nodes(&sb, &plan);
        let html = sb.run_raw(&["show", &plan, "--output", "html"]).code(0).stdout;
        assert!(html.starts_with("<!DOCTYPE html>\n"), "{name}");
        assert!(html.contains("<meta name=\"viewport\""), "{name}");
        assert_eq!(html.matches("<g class=\"node ").count(), nodes, "{name}: one graph node per plan node");
        assert_eq!(html.matches("<svg ").count(), plans, "{name}: one graph per shoot");
        assert_eq!(html.matches("<section>").count(), plans, "{name}");
        assert_self_contained(&html, name);
        assert_eq!(sb.run_raw(&["show", &plan, "--output", "html"]).code(0).stdout, html, "{name}: deterministic");
    }
}

/// Nothing in the page is fetched: no scripts, stylesheets, images, fonts or frames, no `url(…)` but
/// references within the page.
#[track_caller]
pub fn assert_self_contained(html: &str, name: &str) {
    for needle in ["<script", "<link", "<img", "<iframe", "<object", "<embed", "@import", " src=", " href=\"http"] {
        assert!(!html.contains(needle), "{name}: the page holds {needle:?}");
    }
    // The SVG's arrow markers are referenced within the page (`url(#…)`), nothing else.
    assert_eq!(html.matches("url(").count(), html.matches("url(#").count(), "{name}: a url() outside the page");
}

/// (plans, nodes) in a plan file.
fn count_plans_and_nodes(sb: &Sandbox, plan: &str) -> (usize, usize) {
    let json = sb.run_raw(&["show", plan, "--output", "json"]).code(0).json();
    let plans = match json["plans"].as_array() {
        Some(plans) => plans.clone(),
        None => vec![json.clone()],
    };
    (plans.len(), plans.iter().map(|p| p["nodes"].as_array().expect("nodes").len()).sum())
}

/// The browser to test the HTML report in: `$CHROMIUM`, or `chromium` on the PATH.
fn chromium() -> PathBuf {
    let found = match std::env::var_os("CHROMIUM") {
        Some(path) => Some(PathBuf::from(path)).filter(|p| p.is_file()),
        None => std::env::var_os("PATH")
            .and_then(|paths| std::env::split_paths(&paths).map(|p| p.join("chromium")).find(|p| p.is_file())),
    };
    found.unwrap_or_else(|| {
        panic!("headless Chromium is missing: install it with `apt-get install -y chromium` (.ci/run does) or set CHROMIUM=/path/to/chromium")
    })
}

/// The HTML report in a real browser (headless Chromium): the page loads without console messages or
/// errors, and its DOM after load holds one graph node per plan node — for a single shoot with
/// user-owned (verified) resources, a GCP shoot and the fleet.
#[test]
fn html_report_loads_in_headless_chromium() {
    let browser = chromium();
    for (name, manifest, world) in
        bundled_examples().into_iter().filter(|e| matches!(e.0, "azure-byo-nat" | "gcp-byo-ipv4" | "fleet"))
    {
        let sb = Sandbox::new();
        let plan = plan_example(&sb, &manifest, world.as_deref());
        let (plans, nodes) = count_plans_and_nodes(&sb, &plan);
        let html = sb.run_raw(&["show", &plan, "--output", "html"]).code(0).stdout;
        let page = sb.file("plan.html");
        std::fs::write(&page, &html).expect("write the page");
        let profile = sb.file("chromium-profile");
        let out = std::process::Command::new(&browser)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--enable-logging=stderr",
                "--v=0",
                &format!("--user-data-dir={profile}"),
                "--dump-dom",
                &format!("file://{page}"),
            ])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", browser.display()));
        let dom = String::from_utf8_lossy(&out.stdout);
        let log = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{name}: chromium failed ({}):\n{log}", out.status);
        let console: Vec<&str> = log.lines().filter(|l| l.contains("CONSOLE") || l.contains("Uncaught")).collect();
        assert!(console.is_empty(), "{name}: console output while loading the page: {console:?}");
        assert!(dom.contains("</html>"), "{name}: no DOM dumped:\n{log}");
        assert_eq!(dom.matches("<svg ").count(), plans, "{name}: one graph per shoot in the loaded page");
        assert_eq!(
            dom.matches("<g class=\"node ").count(),
            nodes,
            "{name}: one graph node per plan node in the loaded page"
        );
        assert_eq!(dom.matches("<details>").count(), nodes + plans, "{name}: a section per node and the artifacts");
    }
}
