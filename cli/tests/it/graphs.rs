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
        // The page's title, and each node's tooltip (its address and cloud id) in its group.
        assert_eq!(html.matches("<title>").count(), 1 + nodes, "{name}: a tooltip per graph node");
        assert_eq!(html.matches("\"><title>").count(), nodes, "{name}: each tooltip in its node's group");
        assert_eq!(html.matches("<section>").count(), plans, "{name}");
        assert_self_contained(&html, name);
        assert_natural_size(&html, name);
        assert_contents(&html, plans, name);
        assert_eq!(sb.run_raw(&["show", &plan, "--output", "html"]).code(0).stdout, html, "{name}: deterministic");
    }
}

/// Every graph is drawn at its natural size: its width and height attributes (CSS px) are those of
/// its viewBox, and the page's CSS neither stretches nor shrinks it (`max-width:none`, no width);
/// every label's font is at least 11 px.
#[track_caller]
pub fn assert_natural_size(html: &str, name: &str) {
    assert!(html.contains(".graph svg{display:block;max-width:none}"), "{name}: the graph's CSS changed");
    for tag in html.split("<svg ").skip(1).map(|rest| &rest[..rest.find('>').expect("svg tag ends")]) {
        let attr = |key: &str| -> String {
            let start = tag.find(&format!("{key}=\"")).unwrap_or_else(|| panic!("{name}: no {key} in <svg {tag}>"));
            let rest = &tag[start + key.len() + 2..];
            rest[..rest.find('"').expect("attribute ends")].to_string()
        };
        let view_box: Vec<f64> = attr("viewBox").split(' ').map(|n| n.parse().expect("viewBox number")).collect();
        let (width, height): (f64, f64) =
            (attr("width").parse().expect("width"), attr("height").parse().expect("height"));
        assert_eq!((width, height), (view_box[2], view_box[3]), "{name}: <svg {tag}> is not drawn 1:1");
    }
    // The labels' font classes (`.a15 { font-size: 15px; … }`, written by layout-rs).
    let sizes: Vec<f64> = html
        .split("font-size: ")
        .skip(1)
        .map(|rest| rest[..rest.find("px").expect("px")].parse().expect("font size"))
        .collect();
    assert!(!sizes.is_empty() || !html.contains("<text"), "{name}: no font size for the labels");
    assert!(sizes.iter().all(|s| *s >= 11.0), "{name}: a label font below 11 px: {sizes:?}");
}

/// A fleet's page opens with a summary table, one row per shoot, whose links are its table of
/// contents: each `href="#…"` names an `id` in the page, and no two elements share an id. A single
/// plan's page has no table.
#[track_caller]
pub fn assert_contents(html: &str, plans: usize, name: &str) {
    let mut ids: Vec<&str> =
        html.split(" id=\"").skip(1).map(|rest| &rest[..rest.find('"').expect("id ends")]).collect();
    ids.sort_unstable();
    let count = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), count, "{name}: an id is repeated in the page");
    // Links within the page (the summary's, the edge paths' and the arrow markers').
    for link in html.split("href=\"#").skip(1).map(|rest| &rest[..rest.find('"').expect("href ends")]) {
        assert!(ids.binary_search(&link).is_ok(), "{name}: the link #{link} names no id in the page");
    }
    for marker in html.split("url(#").skip(1).map(|rest| &rest[..rest.find(')').expect("url ends")]) {
        assert!(ids.binary_search(&marker).is_ok(), "{name}: url(#{marker}) names no id in the page");
    }
    let table = html.find("<table class=\"shoots\">");
    if plans == 1 {
        assert!(table.is_none(), "{name}: a summary table for one plan");
        return;
    }
    let table = &html[table.unwrap_or_else(|| panic!("{name}: no summary table"))..];
    let body = &table[table.find("<tbody>").expect("tbody")..table.find("</tbody>").expect("/tbody")];
    assert_eq!(body.matches("<tr>").count(), plans, "{name}: one summary row per shoot");
    assert_eq!(body.matches("href=\"#").count(), plans, "{name}: each row links to its shoot's section");
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
        let dom = dump_dom(&browser, &sb, &page, name);
        assert_eq!(dom.matches("<svg ").count(), plans, "{name}: one graph per shoot in the loaded page");
        assert_eq!(
            dom.matches("<g class=\"node ").count(),
            nodes,
            "{name}: one graph node per plan node in the loaded page"
        );
        assert_eq!(dom.matches("<details>").count(), nodes + plans, "{name}: a section per node and the artifacts");
    }
}

/// Runs headless Chromium on `page` with `args`; its stdout. Fails on a console message or error.
fn headless(browser: &Path, sb: &Sandbox, page: &str, args: &[&str], name: &str) -> String {
    let profile = sb.file("chromium-profile");
    let out = std::process::Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
            &format!("--user-data-dir={profile}"),
        ])
        .args(args)
        .arg(format!("file://{page}"))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", browser.display()));
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{name}: chromium failed ({}):\n{log}", out.status);
    let console: Vec<&str> = log.lines().filter(|l| l.contains("CONSOLE") || l.contains("Uncaught")).collect();
    assert!(console.is_empty(), "{name}: console output while loading the page: {console:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The page's DOM after load.
fn dump_dom(browser: &Path, sb: &Sandbox, page: &str, name: &str) -> String {
    let dom = headless(browser, sb, page, &["--dump-dom"], name);
    assert!(dom.contains("</html>"), "{name}: no DOM dumped");
    dom
}

/// Measures the laid-out page in the browser (a copy of the page with this script; the report itself
/// has none): per graph its rendered and its viewBox width, each label's font size as rendered
/// (computed size × the graph's scale), whether the label lies inside its box, and the boxes.
const MEASURE: &str = r#"<script>
const out = [];
document.querySelectorAll('.graph svg').forEach((svg) => {
  const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
  const graph = { rendered: svg.getBoundingClientRect().width, viewbox: svg.viewBox.baseVal.width, labels: [], boxes: [] };
  svg.querySelectorAll('g.node').forEach((g) => {
    const box = g.querySelector('rect').getBBox();
    const text = g.nextElementSibling;
    const t = text.getBBox();
    graph.boxes.push([box.x, box.y, box.width, box.height]);
    graph.labels.push({
      text: text.textContent,
      px: parseFloat(getComputedStyle(text).fontSize) * scale,
      inside: t.x >= box.x && t.x + t.width <= box.x + box.width && t.y >= box.y && t.y + t.height <= box.y + box.height,
    });
  });
  out.push(graph);
});
const pre = document.createElement('pre');
pre.id = 'measured';
pre.textContent = JSON.stringify(out);
document.body.appendChild(pre);
</script>"#;

/// The width and height a PNG's header gives (IHDR: bytes 16..24, big-endian).
fn png_size(png: &[u8]) -> (u32, u32) {
    assert!(png.len() > 24 && png.starts_with(b"\x89PNG\r\n\x1a\n") && &png[12..16] == b"IHDR", "not a PNG");
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    (be(&png[16..20]), be(&png[20..24]))
}

/// The HTML report is readable as it is opened, at 100 % zoom in a 1280 px wide window: a BYO
/// shoot's graph (many verified and skipped resources) and the fleet's are drawn at their natural
/// size (scrolling, never shrunk), every label at least 11 px and inside its box, no two boxes
/// overlapping; the fleet's summary table links every shoot's section. A screenshot of each page is
/// taken at the requested size.
#[test]
fn html_report_is_legible_in_headless_chromium() {
    let browser = chromium();
    for (name, manifest, world) in
        bundled_examples().into_iter().filter(|e| matches!(e.0, "azure-byo-firewall" | "gcp-byo-dual-stack" | "fleet"))
    {
        let sb = Sandbox::new();
        let plan = plan_example(&sb, &manifest, world.as_deref());
        let (plans, nodes) = count_plans_and_nodes(&sb, &plan);
        let html = sb.run_raw(&["show", &plan, "--output", "html"]).code(0).stdout;
        let page = sb.file("plan.html");
        std::fs::write(&page, &html).expect("write the page");

        let shot = sb.file("plan.png");
        headless(&browser, &sb, &page, &[&format!("--screenshot={shot}"), "--window-size=1280,2000"], name);
        let png = std::fs::read(&shot).unwrap_or_else(|e| panic!("{name}: no screenshot {shot}: {e}"));
        assert_eq!(png_size(&png), (1280, 2000), "{name}: the screenshot's size");

        let dom = dump_dom(&browser, &sb, &page, name);
        assert_natural_size(&dom, name);
        assert_contents(&dom, plans, name);

        let measuring = sb.file("measure.html");
        std::fs::write(&measuring, html.replace("</body>", &format!("{MEASURE}\n</body>"))).expect("write the page");
        let dom = dump_dom(&browser, &sb, &measuring, name);
        let open = "<pre id=\"measured\">";
        let start = dom.find(open).unwrap_or_else(|| panic!("{name}: nothing measured")) + open.len();
        let json = dom[start..start + dom[start..].find("</pre>").expect("pre ends")]
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&");
        let graphs: serde_json::Value = serde_json::from_str(&json).expect("measurements");
        let graphs = graphs.as_array().expect("one measurement per graph");
        assert_eq!(graphs.len(), plans, "{name}");
        let mut labels = 0;
        for g in graphs {
            let (rendered, view_box) =
                (g["rendered"].as_f64().expect("width"), g["viewbox"].as_f64().expect("viewBox"));
            assert!(rendered >= view_box - 0.5, "{name}: a graph {view_box} px wide is shrunk to {rendered} px");
            for label in g["labels"].as_array().expect("labels") {
                labels += 1;
                assert!(label["px"].as_f64().expect("px") >= 11.0, "{name}: label {label} is drawn below 11 px");
                assert_eq!(label["inside"], true, "{name}: label {label} overflows its box");
            }
            let boxes: Vec<[f64; 4]> =
                serde_json::from_value(g["boxes"].clone()).expect("boxes are x, y, width, height");
            for (i, a) in boxes.iter().enumerate() {
                for b in &boxes[i + 1..] {
                    let apart =
                        a[0] + a[2] <= b[0] || b[0] + b[2] <= a[0] || a[1] + a[3] <= b[1] || b[1] + b[3] <= a[1];
                    assert!(apart, "{name}: boxes {a:?} and {b:?} overlap");
                }
            }
        }
        assert_eq!(labels, nodes, "{name}: one measured label per plan node");
    }
}
