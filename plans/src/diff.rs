//! The semantic diff of two plan files (`trellis diff OLD NEW`).
//!
//! Two plans are compared as documents, not as text: shoots by technical id, nodes by address, artifacts
//! by name as the plans show them ([`crate::Artifacts::shown`]), with a unified line diff for the text
//! artifacts (the cloud-provider config, the InfrastructureStatus and every value as pretty JSON). The plan `digest` (of nodes and artifacts) follows the body, and
//! the `prior` state moves on every apply; neither is a difference of its own: they are reported on a
//! separate `state` line and never make a diff non-empty.
//!
//! The renderers escape every string of the plans through [`crate::escape`], as [`crate::render`] does.

use crate::escape::{self, Md};
use crate::render::{check_text, compact, counts_line, egress_text, md_inline, prior_text};
use crate::{Action, Change, Check, Mode, Ownership, Plan, PlanSet, Provider, ReasonCode, Shown, Summary};
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// What changed between two plan files.
#[derive(Clone, Debug, PartialEq, Default, Serialize)]
pub struct PlanDiff {
    /// Shoots only in the new plan file, by technical id.
    pub added: Vec<ShootRef>,
    /// Shoots only in the old plan file.
    pub removed: Vec<ShootRef>,
    /// Shoots in both that differ, semantically or only in state. Sorted by shoot.
    pub changed: Vec<ShootDiff>,
}

/// An attribute that differs: its value in the old and in the new plan.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Delta<T> {
    pub old: T,
    pub new: T,
}

/// A unified line diff of a text artifact.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TextDiff {
    /// The file name in the `--- old/NAME` / `+++ new/NAME` headers, e.g. `azure.json`.
    pub name: String,
    pub unified: String,
}

/// A shoot that is in only one of the two plan files.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ShootRef {
    pub shoot: String,
    pub provider: Provider,
    pub mode: Option<Mode>,
    pub summary: Summary,
}

/// The differences of one shoot's plan.
#[derive(Clone, Debug, PartialEq, Default, Serialize)]
pub struct ShootDiff {
    pub shoot: String,
    pub provider: Option<Delta<Provider>>,
    pub mode: Option<Delta<Option<Mode>>>,
    /// Nodes only in the new plan.
    pub nodes_added: Vec<NodeRef>,
    /// Nodes only in the old plan.
    pub nodes_removed: Vec<NodeRef>,
    pub nodes_changed: Vec<NodeDiff>,
    pub artifacts: ArtifactsDiff,
    pub warnings_added: Vec<String>,
    pub warnings_removed: Vec<String>,
    /// The plan's `--target`s (empty: the whole shoot), when they differ: a targeted plan carries out
    /// only part of the shoot, so it differs from the whole plan even where their nodes agree. Left out
    /// of the JSON when equal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub targets: Option<Delta<Vec<String>>>,
    /// Digest and prior: always move, never count as a difference.
    pub state: Option<StateDiff>,
}

/// A node that is in only one of the two plans.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NodeRef {
    pub address: String,
    pub action: Action,
    pub ownership: Ownership,
}

/// The differences of one node (same address in both plans). `None` / empty means unchanged.
#[derive(Clone, Debug, PartialEq, Default, Serialize)]
pub struct NodeDiff {
    pub address: String,
    pub action: Option<Delta<Action>>,
    pub ownership: Option<Delta<Ownership>>,
    /// The reason's words.
    pub reason: Option<Delta<String>>,
    /// The reason's code (`None` inside: a plan file written before reasons had codes).
    pub reason_code: Option<Delta<Option<ReasonCode>>>,
    pub id: Option<Delta<Option<String>>>,
    /// Per attribute path, the change as the old and the new plan have it (`None`: not changed there).
    pub changes: Vec<ChangeDiff>,
    pub depends_on_added: Vec<String>,
    pub depends_on_removed: Vec<String>,
    pub checks_added: Vec<Check>,
    pub checks_removed: Vec<Check>,
    /// The merge patch, when it differs.
    pub patch: Option<Delta<Option<Value>>>,
}

/// One attribute path whose planned change differs between the two plans.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ChangeDiff {
    pub path: String,
    pub old: Option<Change>,
    pub new: Option<Change>,
}

/// Artifact differences, by name: only the artifacts that differ, each as its kind diffs. In the JSON an
/// object, name → [`ArtifactDiff`].
#[derive(Clone, Debug, PartialEq, Default)]
pub struct ArtifactsDiff {
    entries: Vec<(String, ArtifactDiff)>,
}

/// How one artifact differs. In the JSON: a text artifact as its [`TextDiff`], egress CIDRs and
/// allow-egress as `{old, new}` (`null`: absent, or egress CIDRs Gardener cannot know), CCM flags as a
/// list of [`FlagDiff`].
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum ArtifactDiff {
    /// The InfrastructureStatus as pretty JSON, as `status.json`.
    InfrastructureStatus(TextDiff),
    /// The cloud-provider config's content, named as reviewers know the file (`azure.json`).
    CloudProviderConfig(TextDiff),
    /// A value, as pretty JSON, under its name.
    Value(TextDiff),
    /// `None`: the plan has no egress CIDRs; `Some(None)`: Gardener cannot know them.
    EgressCidrs(Delta<Option<Option<Vec<String>>>>),
    /// `None`: the plan does not deploy or remove the Services (not applicable).
    AllowEgress(Delta<Option<bool>>),
    /// Per flag that differs.
    CcmFlags(Vec<FlagDiff>),
}

impl ArtifactDiff {
    /// A unified text diff (rendered as a block), rather than a line.
    fn text(&self) -> Option<&TextDiff> {
        match self {
            ArtifactDiff::InfrastructureStatus(t) | ArtifactDiff::CloudProviderConfig(t) | ArtifactDiff::Value(t) => {
                Some(t)
            }
            _ => None,
        }
    }

    /// Where the diff renderers list it: the lines (egress CIDRs, allow-egress, CCM flags), then the
    /// text diffs (the config, the status, the values by name).
    fn rank(&self) -> u8 {
        match self {
            ArtifactDiff::EgressCidrs(_) => 0,
            ArtifactDiff::AllowEgress(_) => 1,
            ArtifactDiff::CcmFlags(_) => 2,
            ArtifactDiff::CloudProviderConfig(_) => 3,
            ArtifactDiff::InfrastructureStatus(_) => 4,
            ArtifactDiff::Value(_) => 5,
        }
    }
}

impl ArtifactsDiff {
    /// The difference of the artifact `name`, if it differs.
    pub fn get(&self, name: &str) -> Option<&ArtifactDiff> {
        self.entries.iter().find(|(n, _)| n == name).map(|(_, d)| d)
    }

    /// Every difference, by name, in the order the renderers list them.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &ArtifactDiff)> {
        self.entries.iter().map(|(n, d)| (n.as_str(), d))
    }
}

impl Serialize for ArtifactsDiff {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.entries.len()))?;
        for (name, d) in &self.entries {
            map.serialize_entry(name, d)?;
        }
        map.end()
    }
}

/// A CCM flag whose value differs (`None`: not set in that plan).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FlagDiff {
    pub flag: String,
    pub old: Option<bool>,
    pub new: Option<bool>,
}

/// The state a plan was made against, when it moved.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StateDiff {
    pub digest: Option<Delta<String>>,
    /// `prior` rendered as `lineage …, serial N` / `new workspace`.
    pub prior: Option<Delta<String>>,
}

impl PlanDiff {
    /// No semantic difference (state-only moves do not count).
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.iter().all(ShootDiff::is_empty)
    }
}

impl ShootDiff {
    /// No semantic difference; the `state` line may still have moved.
    pub fn is_empty(&self) -> bool {
        self.provider.is_none()
            && self.mode.is_none()
            && self.nodes_added.is_empty()
            && self.nodes_removed.is_empty()
            && self.nodes_changed.is_empty()
            && self.artifacts.is_empty()
            && self.warnings_added.is_empty()
            && self.warnings_removed.is_empty()
            && self.targets.is_none()
    }
}

impl ShootDiff {
    /// Whether the only differences are the unified text diffs (rendered as blocks, not list items).
    fn is_empty_but_text_artifacts(&self) -> bool {
        let mut rest = self.clone();
        rest.artifacts.entries.retain(|(_, d)| d.text().is_none());
        rest.is_empty()
    }
}

impl ArtifactsDiff {
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The diff as a JSON document for tools (`trellis diff --output json`): `equal` (no semantic
/// difference: what the exit code 0 says), the headline, and every difference as [`PlanDiff`] holds it.
pub fn diff_json(d: &PlanDiff) -> Value {
    serde_json::json!({
        "format": "trellis-plan-diff",
        "equal": d.is_empty(),
        "headline": headline(d),
        "added": d.added,
        "removed": d.removed,
        "changed": d.changed,
    })
}

/// Compares two plan files.
pub fn diff(old: &PlanSet, new: &PlanSet) -> PlanDiff {
    let old_by: BTreeMap<&str, &Plan> = old.plans.iter().map(|p| (p.shoot.as_str(), p)).collect();
    let new_by: BTreeMap<&str, &Plan> = new.plans.iter().map(|p| (p.shoot.as_str(), p)).collect();
    let mut d = PlanDiff::default();
    for (shoot, o) in &old_by {
        match new_by.get(shoot) {
            None => d.removed.push(shoot_ref(o)),
            Some(n) => {
                let sd = diff_plan(o, n);
                if !sd.is_empty() || sd.state.is_some() {
                    d.changed.push(sd);
                }
            }
        }
    }
    for (shoot, n) in &new_by {
        if !old_by.contains_key(shoot) {
            d.added.push(shoot_ref(n));
        }
    }
    d
}

fn shoot_ref(p: &Plan) -> ShootRef {
    ShootRef { shoot: p.shoot.clone(), provider: p.provider, mode: p.mode, summary: p.summary.clone() }
}

fn moved<T: PartialEq + Clone>(old: &T, new: &T) -> Option<Delta<T>> {
    (old != new).then(|| Delta { old: old.clone(), new: new.clone() })
}

fn diff_plan(o: &Plan, n: &Plan) -> ShootDiff {
    let mut d = ShootDiff {
        shoot: o.shoot.clone(),
        provider: moved(&o.provider, &n.provider),
        mode: moved(&o.mode, &n.mode),
        ..ShootDiff::default()
    };

    let old_nodes: BTreeMap<&str, &crate::Node> = o.nodes.iter().map(|x| (x.address.as_str(), x)).collect();
    let new_nodes: BTreeMap<&str, &crate::Node> = n.nodes.iter().map(|x| (x.address.as_str(), x)).collect();
    for (addr, on) in &old_nodes {
        match new_nodes.get(addr) {
            None => d.nodes_removed.push(node_ref(on)),
            Some(nn) => {
                let nd = diff_node(on, nn);
                if !nd.is_empty() {
                    d.nodes_changed.push(nd);
                }
            }
        }
    }
    for (addr, nn) in &new_nodes {
        if !old_nodes.contains_key(addr) {
            d.nodes_added.push(node_ref(nn));
        }
    }

    d.artifacts = diff_artifacts(o, n);
    (d.warnings_added, d.warnings_removed) = added_removed(&o.warnings, &n.warnings);
    d.targets = moved(&o.targets, &n.targets);

    let digest = moved(&o.digest, &n.digest);
    let prior = moved(&prior_text(o), &prior_text(n));
    if digest.is_some() || prior.is_some() {
        d.state = Some(StateDiff { digest, prior });
    }
    d
}

fn node_ref(n: &crate::Node) -> NodeRef {
    NodeRef { address: n.address.clone(), action: n.action(), ownership: n.ownership() }
}

impl NodeDiff {
    pub fn is_empty(&self) -> bool {
        self.action.is_none()
            && self.ownership.is_none()
            && self.reason.is_none()
            && self.reason_code.is_none()
            && self.id.is_none()
            && self.changes.is_empty()
            && self.depends_on_added.is_empty()
            && self.depends_on_removed.is_empty()
            && self.checks_added.is_empty()
            && self.checks_removed.is_empty()
            && self.patch.is_none()
    }
}

fn diff_node(o: &crate::Node, n: &crate::Node) -> NodeDiff {
    let mut d = NodeDiff {
        address: o.address.clone(),
        action: moved(&o.action(), &n.action()),
        ownership: moved(&o.ownership(), &n.ownership()),
        reason: (o.reason.detail() != n.reason.detail())
            .then(|| Delta { old: o.reason.detail().to_string(), new: n.reason.detail().to_string() }),
        reason_code: moved(&o.reason.code(), &n.reason.code()),
        id: moved(&o.id, &n.id),
        patch: moved(&o.patch().cloned(), &n.patch().cloned()),
        ..NodeDiff::default()
    };
    let old_changes: BTreeMap<&str, &Change> = o.changes().iter().map(|c| (c.path.as_str(), c)).collect();
    let new_changes: BTreeMap<&str, &Change> = n.changes().iter().map(|c| (c.path.as_str(), c)).collect();
    let paths: BTreeSet<&str> = old_changes.keys().chain(new_changes.keys()).copied().collect();
    for path in paths {
        let (oc, nc) = (old_changes.get(path), new_changes.get(path));
        if oc != nc {
            d.changes.push(ChangeDiff {
                path: path.to_string(),
                old: oc.map(|c| (*c).clone()),
                new: nc.map(|c| (*c).clone()),
            });
        }
    }
    (d.depends_on_added, d.depends_on_removed) = added_removed(&o.depends_on, &n.depends_on);
    d.checks_removed = o.checks().iter().filter(|c| !n.checks().contains(c)).cloned().collect();
    d.checks_added = n.checks().iter().filter(|c| !o.checks().contains(c)).cloned().collect();
    d
}

/// `(in new but not old, in old but not new)`, each in its list's order.
fn added_removed(old: &[String], new: &[String]) -> (Vec<String>, Vec<String>) {
    let added = new.iter().filter(|x| !old.contains(x)).cloned().collect();
    let removed = old.iter().filter(|x| !new.contains(x)).cloned().collect();
    (added, removed)
}

fn diff_artifacts(o: &Plan, n: &Plan) -> ArtifactsDiff {
    artifacts_diff(&o.artifacts, &n.artifacts)
}

/// How the artifacts `new` differ from `old` (a plan's from the last applied ones, or two plans').
pub fn artifacts_diff(old: &crate::Artifacts, new: &crate::Artifacts) -> ArtifactsDiff {
    let (oa, na) = (old.shown(), new.shown());
    let find = Shown::find;
    let mut names: Vec<&str> = oa.iter().map(Shown::name).collect();
    names.extend(na.iter().map(Shown::name).filter(|name| find(&oa, name).is_none()));
    let mut entries: Vec<(String, ArtifactDiff)> = names
        .into_iter()
        .filter_map(|name| {
            let (os, ns) = (find(&oa, name), find(&na, name));
            (os != ns).then(|| artifact_diff(os, ns)).flatten().map(|d| (name.to_string(), d))
        })
        .collect();
    // The values by name, after the typed artifacts (whose order is fixed by their rank).
    entries.sort_by(|(a, x), (b, y)| {
        let value = |d: &ArtifactDiff| matches!(d, ArtifactDiff::Value(_));
        x.rank().cmp(&y.rank()).then_with(|| if value(x) && value(y) { a.cmp(b) } else { std::cmp::Ordering::Equal })
    });
    ArtifactsDiff { entries }
}

/// How one artifact shown by the old plan as `o` and by the new as `n` (`None`: not in that plan) differs,
/// as the new plan's kind of it (the old side read as absent when it is of another kind); `None` when the
/// difference does not show (a config whose content is the same, flags of the same values).
fn artifact_diff(o: Option<Shown<'_>>, n: Option<Shown<'_>>) -> Option<ArtifactDiff> {
    use Shown as S;
    let text =
        |name: &str, old: String, new: String| TextDiff { name: name.to_string(), unified: unified(&old, &new, name) };
    let status = |s: Option<Shown<'_>>| match s {
        Some(S::InfrastructureStatus(v)) => pretty(v),
        _ => String::new(),
    };
    fn config<'a>(s: Option<Shown<'a>>) -> Option<&'a crate::CloudProviderConfig> {
        match s {
            Some(Shown::CloudProviderConfig(c)) => Some(c),
            _ => None,
        }
    }
    let cidrs = |s: Option<Shown<'_>>| match s {
        Some(S::EgressCidrs(c)) => Some(c.map(<[String]>::to_vec)),
        _ => None,
    };
    let allow = |s: Option<Shown<'_>>| match s {
        Some(S::AllowEgress(b)) => Some(b),
        _ => None,
    };
    let value = |s: Option<Shown<'_>>| match s {
        Some(S::Value(_, v)) => pretty(v),
        _ => String::new(),
    };
    Some(match n.or(o)? {
        S::InfrastructureStatus(_) => ArtifactDiff::InfrastructureStatus(text("status.json", status(o), status(n))),
        S::CloudProviderConfig(_) => {
            let (oc, nc) = (config(o), config(n));
            let content = |c: Option<&crate::CloudProviderConfig>| c.map_or(String::new(), |c| c.content.clone());
            if content(oc) == content(nc) {
                return None;
            }
            let name = nc.or(oc).map(|c| c.shown_name().into_owned()).unwrap_or_default();
            ArtifactDiff::CloudProviderConfig(text(&name, content(oc), content(nc)))
        }
        S::EgressCidrs(_) => ArtifactDiff::EgressCidrs(Delta { old: cidrs(o), new: cidrs(n) }),
        S::AllowEgress(_) => ArtifactDiff::AllowEgress(Delta { old: allow(o), new: allow(n) }),
        S::CcmFlags(_) => {
            let no_flags = BTreeMap::new();
            let flags = |s: Option<Shown<'_>>| match s {
                Some(S::CcmFlags(f)) => f.clone(),
                _ => no_flags.clone(),
            };
            let (of, nf) = (flags(o), flags(n));
            let names: BTreeSet<&String> = of.keys().chain(nf.keys()).collect();
            let diffs: Vec<FlagDiff> = names
                .into_iter()
                .filter_map(|flag| {
                    let (ov, nv) = (of.get(flag).copied(), nf.get(flag).copied());
                    (ov != nv).then(|| FlagDiff { flag: flag.clone(), old: ov, new: nv })
                })
                .collect();
            if diffs.is_empty() {
                return None;
            }
            ArtifactDiff::CcmFlags(diffs)
        }
        S::Value(name, _) => ArtifactDiff::Value(text(name, value(o), value(n))),
    })
}

fn pretty(v: &Value) -> String {
    let mut s = serde_json::to_string_pretty(v).expect("JSON values always serialise");
    s.push('\n');
    s
}

/// A unified line diff with three lines of context and `--- old/NAME` / `+++ new/NAME` headers.
pub fn unified(old: &str, new: &str, name: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("old/{name}"), &format!("new/{name}"))
        .to_string()
}

// ---------------------------------------------------------------------------------------------------
// Text

const RESET: &str = "\x1b[0m";
const GREEN: &str = "\x1b[32m";
const RED: &str = "\x1b[31m";
const YELLOW: &str = "\x1b[33m";
const CYAN: &str = "\x1b[36m";
const BOLD: &str = "\x1b[1m";
const DIM: &str = "\x1b[2m";

fn paint(color: bool, code: &str, s: &str) -> String {
    if color {
        format!("{code}{s}{RESET}")
    } else {
        s.to_string()
    }
}

/// The first line of a rendered diff.
pub fn headline(d: &PlanDiff) -> String {
    if d.is_empty() {
        return "No semantic differences between the plans.".to_string();
    }
    let changed = d.changed.iter().filter(|s| !s.is_empty()).count();
    format!(
        "Plan diff: {changed} shoot{} changed, {} added, {} removed.",
        if changed == 1 { "" } else { "s" },
        d.added.len(),
        d.removed.len()
    )
}

/// The diff for a terminal: `+` only in NEW, `-` only in OLD, `~` changed.
pub fn render_diff(d: &PlanDiff, color: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", paint(color, BOLD, &headline(d)));
    for s in &d.removed {
        let line = format!("- shoot {} (only in OLD): {}", escape::text(&s.shoot), counts_line(&s.summary));
        let _ = writeln!(out, "\n{}", paint(color, RED, &line));
    }
    for s in &d.added {
        let line = format!(
            "+ shoot {} (only in NEW, {}): {}",
            escape::text(&s.shoot),
            mode_or_provider(s),
            counts_line(&s.summary)
        );
        let _ = writeln!(out, "\n{}", paint(color, GREEN, &line));
    }
    for s in &d.changed {
        if s.is_empty() {
            continue;
        }
        out.push('\n');
        shoot_text(&mut out, s, color);
    }
    let state_only: Vec<&ShootDiff> = d.changed.iter().filter(|s| s.is_empty()).collect();
    if !state_only.is_empty() {
        out.push('\n');
        for s in state_only {
            let line = format!("  {}: state: {}", escape::text(&s.shoot), state_text(s.state.as_ref()));
            let _ = writeln!(out, "{}", paint(color, DIM, &line));
        }
    }
    out
}

fn state_text(s: Option<&StateDiff>) -> String {
    let Some(s) = s else { return "unchanged".to_string() };
    let mut parts = Vec::new();
    if let Some(Delta { old: a, new: b }) = &s.digest {
        parts.push(format!("digest {} -> {}", escape::text(short(a)), escape::text(short(b))));
    }
    // `prior_text` escaped the lineages already.
    if let Some(Delta { old: a, new: b }) = &s.prior {
        parts.push(format!("prior {a} -> {b}"));
    }
    format!("{} (not compared)", parts.join("; "))
}

fn short(d: &str) -> &str {
    d.get(..12).unwrap_or(d)
}

fn shoot_text(out: &mut String, s: &ShootDiff, color: bool) {
    let _ = writeln!(out, "{}", paint(color, YELLOW, &format!("~ shoot {}", escape::text(&s.shoot))));
    if let Some(Delta { old: a, new: b }) = s.provider {
        let _ = writeln!(out, "    provider: {} -> {}", a.as_str(), b.as_str());
    }
    if let Some(Delta { old: a, new: b }) = s.mode {
        let _ = writeln!(out, "    mode: {} -> {}", mode_text(a), mode_text(b));
    }
    for n in &s.nodes_removed {
        let line = format!("  - {} ({}, {})", escape::text(&n.address), n.action.as_str(), n.ownership.as_str());
        let _ = writeln!(out, "{}", paint(color, RED, &line));
    }
    for n in &s.nodes_added {
        let line = format!("  + {} ({}, {})", escape::text(&n.address), n.action.as_str(), n.ownership.as_str());
        let _ = writeln!(out, "{}", paint(color, GREEN, &line));
    }
    for n in &s.nodes_changed {
        let _ = writeln!(out, "{}", paint(color, YELLOW, &format!("  ~ {}", escape::text(&n.address))));
        for (depth, line) in node_lines(n) {
            let _ = writeln!(out, "      {}{line}", "  ".repeat(depth));
        }
    }
    let a = &s.artifacts;
    if !a.is_empty() {
        out.push_str("    artifacts:\n");
        artifacts_diff_text(out, a, color, "      ");
    }
    if !s.warnings_added.is_empty() || !s.warnings_removed.is_empty() {
        out.push_str("    warnings:\n");
        for w in &s.warnings_removed {
            let _ = writeln!(out, "{}", paint(color, RED, &format!("      - Warning: {}", escape::text(w))));
        }
        for w in &s.warnings_added {
            let _ = writeln!(out, "{}", paint(color, GREEN, &format!("      + Warning: {}", escape::text(w))));
        }
    }
    if let Some(Delta { old, new }) = &s.targets {
        let _ = writeln!(out, "    targets: {} -> {}", targets_text(old), targets_text(new));
    }
    if s.state.is_some() {
        let _ = writeln!(out, "{}", paint(color, DIM, &format!("    state: {}", state_text(s.state.as_ref()))));
    }
}

/// A plan's `--target`s for the diff's text: the addresses, escaped, or `the whole shoot`.
fn targets_text(targets: &[String]) -> String {
    match targets.is_empty() {
        true => "the whole shoot".to_string(),
        false => targets.iter().map(|t| escape::text(t)).collect::<Vec<_>>().join(", "),
    }
}

/// The lines describing one node's differences, each with its nesting depth; every string of the
/// plans in them escaped as [`escape::text`].
fn node_lines(n: &NodeDiff) -> Vec<(usize, String)> {
    let mut lines = Vec::new();
    if let Some(Delta { old: a, new: b }) = n.action {
        lines.push((0, format!("action: {} -> {}", a.as_str(), b.as_str())));
    }
    if let Some(Delta { old: a, new: b }) = n.ownership {
        lines.push((0, format!("ownership: {} -> {}", a.as_str(), b.as_str())));
    }
    if let Some(Delta { old: a, new: b }) = &n.reason {
        lines.push((0, "reason:".to_string()));
        lines.push((1, format!("old plan: {}", escape::text(a))));
        lines.push((1, format!("new plan: {}", escape::text(b))));
    }
    if let Some(Delta { old: a, new: b }) = n.reason_code {
        let code = |c: Option<ReasonCode>| c.map_or("(none)", ReasonCode::as_str);
        lines.push((0, format!("reason code: {} -> {}", code(a), code(b))));
    }
    if let Some(Delta { old: a, new: b }) = &n.id {
        lines.push((0, format!("id: {} -> {}", opt_str(a.as_deref()), opt_str(b.as_deref()))));
    }
    for dep in &n.depends_on_removed {
        lines.push((0, format!("depends_on: - {}", escape::text(dep))));
    }
    for dep in &n.depends_on_added {
        lines.push((0, format!("depends_on: + {}", escape::text(dep))));
    }
    for c in &n.changes {
        lines.push((0, format!("change {}:", escape::text(&c.path))));
        lines.push((1, format!("old plan: {}", planned_change(c.old.as_ref()))));
        lines.push((1, format!("new plan: {}", planned_change(c.new.as_ref()))));
    }
    for c in &n.checks_removed {
        lines.push((0, format!("check - {}", check_text(c))));
    }
    for c in &n.checks_added {
        lines.push((0, format!("check + {}", check_text(c))));
    }
    // The patch follows from the changes; it is worth a line only when it moved on its own.
    if let (Some(Delta { old: a, new: b }), true) = (&n.patch, n.changes.is_empty()) {
        lines.push((0, format!("patch: {} -> {}", opt_value(a.as_ref()), opt_value(b.as_ref()))));
    }
    lines
}

fn planned_change(c: Option<&Change>) -> String {
    match c {
        None => "(no change)".to_string(),
        Some(c) => format!("{} -> {}", opt_value(c.before.as_ref()), opt_value(c.after.as_ref())),
    }
}

fn opt_value(v: Option<&Value>) -> String {
    v.map(compact).unwrap_or_else(|| "(absent)".to_string())
}

fn opt_str(s: Option<&str>) -> std::borrow::Cow<'_, str> {
    escape::text(s.unwrap_or("(none)"))
}

fn opt_flag(v: Option<bool>) -> String {
    v.map(|b| b.to_string()).unwrap_or_else(|| "(unset)".to_string())
}

/// The one-line artifact differences (no indentation).
fn artifact_lines(a: &ArtifactsDiff) -> Vec<String> {
    let mut lines = Vec::new();
    for (_, d) in a.iter() {
        match d {
            ArtifactDiff::EgressCidrs(Delta { old: o, new: n }) => {
                lines.push(format!("egress CIDRs: {} -> {}", cidrs_text(o), cidrs_text(n)));
            }
            ArtifactDiff::AllowEgress(Delta { old: o, new: n }) => {
                lines.push(format!("allow-egress Services: {} -> {}", deployed(*o), deployed(*n)));
            }
            ArtifactDiff::CcmFlags(flags) => {
                for FlagDiff { flag, old: o, new: n } in flags {
                    lines.push(format!("CCM flag --{}: {} -> {}", escape::text(flag), opt_flag(*o), opt_flag(*n)));
                }
            }
            _ => {}
        }
    }
    lines
}

/// Egress CIDRs as [`egress_text`] has them; `(not applicable)` in a plan without them.
fn cidrs_text(c: &Option<Option<Vec<String>>>) -> String {
    match c {
        Some(c) => egress_text(c.as_deref()),
        None => "(not applicable)".to_string(),
    }
}

fn deployed(b: Option<bool>) -> &'static str {
    match b {
        Some(true) => "deployed",
        Some(false) => "not deployed",
        None => "(not applicable)",
    }
}

/// A plan's mode as the diff prints it; `(none)` for a provider without modes.
fn mode_text(mode: Option<Mode>) -> &'static str {
    mode.map_or("(none)", Mode::as_str)
}

/// What the diff says about a shoot only in one file: its mode, or its provider when it has none.
fn mode_or_provider(s: &ShootRef) -> &'static str {
    s.mode.map_or(s.provider.as_str(), Mode::as_str)
}

/// An artifacts diff as text lines, each after `indent`: the lines (egress CIDRs, allow-egress, CCM
/// flags), then each unified diff under its label.
pub fn artifacts_diff_text(out: &mut String, a: &ArtifactsDiff, color: bool, indent: &str) {
    for line in artifact_lines(a) {
        let _ = writeln!(out, "{indent}{line}");
    }
    for (label, text) in text_artifacts(a) {
        let _ = writeln!(out, "{indent}{label}:");
        for line in escape::lines(text).lines() {
            let code = if line.starts_with("+++") || line.starts_with("---") {
                BOLD
            } else if line.starts_with('+') {
                GREEN
            } else if line.starts_with('-') {
                RED
            } else if line.starts_with("@@") {
                CYAN
            } else {
                ""
            };
            let painted = if code.is_empty() { line.to_string() } else { paint(color, code, line) };
            let _ = writeln!(out, "{indent}  {painted}");
        }
    }
}

/// The unified diffs, labelled.
fn text_artifacts(a: &ArtifactsDiff) -> Vec<(String, &str)> {
    a.iter()
        .filter_map(|(_, d)| {
            let label = match d {
                ArtifactDiff::InfrastructureStatus(_) => "infrastructure status".to_string(),
                ArtifactDiff::CloudProviderConfig(t) => t.name.clone(),
                ArtifactDiff::Value(t) => escape::text(&t.name).into_owned(),
                _ => return None,
            };
            d.text().map(|t| (label, t.unified.as_str()))
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------------
// Markdown

/// The diff for a pull-request comment: headline, added/removed shoots, then per changed shoot a list of
/// node differences and the text artifacts in ```diff blocks.
pub fn diff_markdown(d: &PlanDiff) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "### {}", headline(d));
    if !d.removed.is_empty() || !d.added.is_empty() {
        out.push('\n');
    }
    for s in &d.removed {
        let shoot = escape::md_code(&s.shoot, Md::Inline);
        let _ = writeln!(out, "- removed shoot {shoot} (only in OLD): {}", counts_line(&s.summary));
    }
    for s in &d.added {
        let _ = writeln!(
            out,
            "- added shoot {} (only in NEW, `{}`): {}",
            escape::md_code(&s.shoot, Md::Inline),
            mode_or_provider(s),
            counts_line(&s.summary)
        );
    }
    for s in d.changed.iter().filter(|s| !s.is_empty()) {
        let _ = writeln!(out, "\n#### {}", escape::md_code(&s.shoot, Md::Inline));
        if !s.is_empty_but_text_artifacts() {
            out.push('\n');
        }
        if let Some(Delta { old: a, new: b }) = s.provider {
            let _ = writeln!(out, "- provider: `{}` → `{}`", a.as_str(), b.as_str());
        }
        if let Some(Delta { old: a, new: b }) = s.mode {
            let _ = writeln!(out, "- mode: `{}` → `{}`", mode_text(a), mode_text(b));
        }
        for n in &s.nodes_removed {
            let address = escape::md_code(&n.address, Md::Inline);
            let _ = writeln!(out, "- removed node {address} ({}, {})", n.action.as_str(), n.ownership.as_str());
        }
        for n in &s.nodes_added {
            let address = escape::md_code(&n.address, Md::Inline);
            let _ = writeln!(out, "- added node {address} ({}, {})", n.action.as_str(), n.ownership.as_str());
        }
        for n in &s.nodes_changed {
            let _ = writeln!(out, "- changed node {}", escape::md_code(&n.address, Md::Inline));
            for (depth, line) in node_lines(n) {
                let _ = writeln!(out, "{}  - {}", "  ".repeat(depth), md_inline(&line));
            }
        }
        for line in artifact_lines(&s.artifacts) {
            let _ = writeln!(out, "- {}", md_inline(&line));
        }
        for w in &s.warnings_removed {
            let _ = writeln!(out, "- warning removed: {}", md_inline(w));
        }
        for w in &s.warnings_added {
            let _ = writeln!(out, "- warning added: {}", md_inline(w));
        }
        if let Some(Delta { old, new }) = &s.targets {
            let md = |targets: &[String]| match targets.is_empty() {
                true => "the whole shoot".to_string(),
                false => targets.iter().map(|t| escape::md_code(t, Md::Inline)).collect::<Vec<_>>().join(", "),
            };
            let _ = writeln!(out, "- targets: {} → {}", md(old), md(new));
        }
        for (label, text) in text_artifacts(&s.artifacts) {
            let text = escape::lines(text);
            let fence = escape::fence_for(&text);
            let _ = write!(out, "\n{label}:\n\n{fence}diff\n{text}");
            if !text.ends_with('\n') {
                out.push('\n');
            }
            let _ = writeln!(out, "{fence}");
        }
        if s.state.is_some() {
            let _ = writeln!(out, "\n<sub>state: {}</sub>", md_inline(&state_text(s.state.as_ref())));
        }
    }
    let state_only: Vec<&ShootDiff> = d.changed.iter().filter(|s| s.is_empty()).collect();
    if !state_only.is_empty() {
        out.push('\n');
        for s in state_only {
            let _ = writeln!(
                out,
                "<sub>{} state: {}</sub><br>",
                escape::md_code(&s.shoot, Md::Inline),
                md_inline(&state_text(s.state.as_ref()))
            );
        }
    }
    out
}
