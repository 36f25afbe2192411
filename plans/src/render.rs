//! Human renderers of a plan: terminal text, markdown for pull-request comments, graphviz.
//!
//! All three are pure functions of the document: same plan, same bytes. Nothing here reads the
//! environment; the caller decides whether the text has colour.
//!
//! Symbols (Terraform's where Terraform has one, see [`Action::symbol`]):
//!
//! | symbol | action | meaning |
//! |---|---|---|
//! | `+` | create | the resource is created |
//! | `~` | update | managed attributes are written in place |
//! | `-/+` | replace | deleted, then created again (a ForceNew attribute changed) |
//! | `-` | delete | the resource is deleted |
//! | `?` | verify | read and checked; apply fails if a check breaks; never written |
//! | `<=` | read | read for its values; never written |
//! | `#` | skip | gated out by the configuration; never touched |
//!
//! No-op nodes have no symbol; the text renderer folds them into one `N unchanged` line unless verbose.
//!
//! Every string of the document goes through [`crate::escape`] on its way out: [`text`] never emits a
//! raw control character, [`markdown`] never lets a string end a table cell, a code span or an HTML
//! element it was put in.

use crate::escape::{self, Md};
use crate::{Action, Artifacts, Change, Check, Node, Ownership, Plan, PlanSet, Shown, Summary};
use serde_json::Value;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::Write;

/// How [`text`] renders.
#[derive(Clone, Copy, Debug)]
pub struct TextOptions {
    /// Emit ANSI colour codes. The CLI decides (TTY, `NO_COLOR`); the renderer never looks.
    pub color: bool,
    /// List no-op nodes one by one instead of folding them into `N unchanged`.
    pub verbose: bool,
}

/// The order in which node groups are listed: what apply does first, and what a reviewer must see first.
pub const DISPLAY_ORDER: [Action; 8] = [
    Action::Delete,
    Action::Replace,
    Action::Create,
    Action::Update,
    Action::Verify,
    Action::Read,
    Action::Skip,
    Action::Noop,
];

/// The terminal rendering of a plan file: one block per shoot, then (for a fleet) a total line.
/// The same bytes as [`TextWriter`] given the set's plans one by one.
pub fn text(set: &PlanSet, opts: &TextOptions) -> String {
    let mut w = TextWriter::new(Vec::new(), opts);
    for plan in &set.plans {
        w.push(&RenderedText::of(plan, opts)).expect("writing to memory cannot fail");
    }
    let out = w.finish(std::iter::empty::<(&str, &str)>()).expect("writing to memory cannot fail");
    String::from_utf8(out).expect("the renderer writes UTF-8")
}

/// One plan's text block (what [`text`] prints for it), rendered on its own: rendering needs only
/// the plan, so it runs on any thread, and a fleet's text is written as its plans come
/// ([`TextWriter`]) instead of being held whole.
#[derive(Clone, Debug)]
pub struct RenderedText {
    block: String,
    /// For a plan without changes: its one line in a fleet (with its warnings), unless verbose.
    line: Option<String>,
    shoot: String,
    summary: Summary,
}

impl RenderedText {
    pub fn of(plan: &Plan, opts: &TextOptions) -> RenderedText {
        let style = Style { color: opts.color };
        let mut block = String::with_capacity(4 << 10);
        plan_text(&mut block, plan, opts, style);
        let line = (!plan.has_changes() && !opts.verbose).then(|| unchanged_line(plan, style));
        RenderedText { block, line, shoot: plan.shoot.clone(), summary: plan.summary.clone() }
    }
}

/// A plan without changes in a fleet: `shoot--a--b (azure, managed): no changes; 5 unchanged, 2 to
/// verify.`, then its warnings.
fn unchanged_line(plan: &Plan, style: Style) -> String {
    let mut counts = Vec::new();
    if plan.summary.noop > 0 {
        counts.push(format!("{} unchanged", plan.summary.noop));
    }
    counts.extend(non_write_counts(&plan.summary));
    let mut line = format!("{} ({}): no changes", escape::text(&plan.shoot), plan.provider_and_mode());
    if !counts.is_empty() {
        let _ = write!(line, "; {}", counts.join(", "));
    }
    line.push_str(".\n");
    for w in &plan.warnings {
        let _ = writeln!(line, "  {} {}", style.paint(WARN, "Warning:"), escape::text(w));
    }
    line
}

/// Writes a fleet's text plan by plan, in the order pushed: the blocks, then the fleet-wide warnings
/// (known only once every plan is out), then, for more than one shoot, the fleet's totals. In a fleet
/// (a second shoot came) a plan without changes is one line ([`RenderedText`]); the plans of the first
/// shoot are held until it is known whether a second comes.
pub struct TextWriter<W: std::io::Write> {
    out: W,
    style: Style,
    /// The plans of the first shoot, until a second shoot makes this a fleet.
    pending: Vec<RenderedText>,
    fleet: bool,
    written: usize,
    last_was_line: bool,
    shoots: usize,
    with_changes: usize,
    /// The shoot of the last plan pushed, and whether one of its plans has changes.
    last: Option<(String, bool)>,
    total: Summary,
}

impl<W: std::io::Write> TextWriter<W> {
    pub fn new(out: W, opts: &TextOptions) -> TextWriter<W> {
        TextWriter {
            out,
            style: Style { color: opts.color },
            pending: Vec::new(),
            fleet: false,
            written: 0,
            last_was_line: false,
            shoots: 0,
            with_changes: 0,
            last: None,
            total: Summary::default(),
        }
    }

    pub fn push(&mut self, plan: &RenderedText) -> std::io::Result<()> {
        let changes = plan.summary.has_changes();
        match &mut self.last {
            Some((shoot, with)) if *shoot == plan.shoot => {
                if changes && !*with {
                    *with = true;
                    self.with_changes += 1;
                }
            }
            _ => {
                self.shoots += 1;
                self.with_changes += usize::from(changes);
                self.last = Some((plan.shoot.clone(), changes));
            }
        }
        self.total.add(&plan.summary);
        if !self.fleet {
            if self.shoots < 2 {
                self.pending.push(plan.clone());
                return Ok(());
            }
            self.fleet = true;
            for held in std::mem::take(&mut self.pending) {
                self.write(&held)?;
            }
        }
        self.write(plan)
    }

    /// One plan as it is written: in a fleet, a plan without changes as its line.
    fn write(&mut self, plan: &RenderedText) -> std::io::Result<()> {
        let (text, line) = match (&plan.line, self.fleet) {
            (Some(line), true) => (line.as_str(), true),
            _ => (plan.block.as_str(), false),
        };
        // A blank line between blocks, none between consecutive one-line shoots.
        if self.written > 0 && !(line && self.last_was_line) {
            self.out.write_all(b"\n")?;
        }
        self.out.write_all(text.as_bytes())?;
        self.written += 1;
        self.last_was_line = line;
        Ok(())
    }

    /// Ends the text: `warnings` as `(shoot, message)` (the fleet checks' warnings, each naming the
    /// shoot it is for), then the totals; returns the writer, flushed.
    pub fn finish<'a>(mut self, warnings: impl IntoIterator<Item = (&'a str, &'a str)>) -> std::io::Result<W> {
        let style = self.style;
        for held in std::mem::take(&mut self.pending) {
            self.write(&held)?;
        }
        if self.written == 0 {
            self.out.write_all(b"No shoots in this plan.\n")?;
        }
        let mut first = true;
        for (shoot, message) in warnings {
            if first {
                self.out.write_all(b"\n")?;
                first = false;
            }
            let text = format!("{}: {}", escape::text(shoot), escape::text(message));
            writeln!(self.out, "{} {text}", style.paint(WARN, "Warning:"))?;
        }
        if self.shoots > 1 {
            let head = format!("Fleet: {} shoots, {} with changes.", self.shoots, self.with_changes);
            writeln!(self.out, "\n{}", style.paint(BOLD, &head))?;
            writeln!(self.out, "{}", style.paint(BOLD, &fleet_totals(&self.total)))?;
        }
        self.out.flush()?;
        Ok(self.out)
    }
}

/// The first line of a plan: the write counts, then verify/read/skip counts (non-zero only).
///
/// `Plan: 6 to create, 0 to update, 0 to replace, 0 to delete, 2 to verify, 3 skipped.` or
/// `No changes. Infrastructure matches the configuration.` (followed by the verify/read/skip counts).
pub fn counts_line(summary: &Summary) -> String {
    if summary.has_changes() {
        return format!("Plan: {}", counts_sentence(summary));
    }
    let mut line = String::from("No changes. Infrastructure matches the configuration.");
    let rest = non_write_counts(summary);
    if !rest.is_empty() {
        let _ = write!(line, " {}.", rest.join(", "));
    }
    line
}

fn counts_sentence(s: &Summary) -> String {
    let mut parts = vec![
        format!("{} to create", s.create),
        format!("{} to update", s.update),
        format!("{} to replace", s.replace),
        format!("{} to delete", s.delete),
    ];
    parts.extend(record_count(s));
    parts.extend(non_write_counts(s));
    format!("{}.", parts.join(", "))
}

/// `1 workspace to record` / `3 workspaces to record`; nothing when none is.
fn record_count(s: &Summary) -> Option<String> {
    match s.record {
        0 => None,
        1 => Some("1 workspace to record".to_string()),
        n => Some(format!("{n} workspaces to record")),
    }
}

/// A fleet's totals in Terraform's words (a replace is one to add and one to destroy), then what
/// is recorded, verified, read and skipped: `Plan: 3 to add, 1 to change, 0 to destroy; 12 to verify.`
pub fn fleet_totals(s: &Summary) -> String {
    let mut line =
        format!("Plan: {} to add, {} to change, {} to destroy", s.create + s.replace, s.update, s.delete + s.replace);
    if let Some(record) = record_count(s) {
        let _ = write!(line, "; {record}");
    }
    let rest = non_write_counts(s);
    if !rest.is_empty() {
        let _ = write!(line, "; {}", rest.join(", "));
    }
    line.push('.');
    line
}

fn non_write_counts(s: &Summary) -> Vec<String> {
    let mut parts = Vec::new();
    if s.verify > 0 {
        parts.push(format!("{} to verify", s.verify));
    }
    if s.read > 0 {
        parts.push(format!("{} to read", s.read));
    }
    if s.skip > 0 {
        parts.push(format!("{} skipped", s.skip));
    }
    parts
}

/// What a partial plan ([`Plan::restrict`]) holds, its targets written by `shown`: `--target A, --target
/// B and what they depend on` (a destroy plan: `… and what must be deleted before them`).
fn partial_text(plan: &Plan, shown: impl Fn(&str) -> String) -> String {
    let targets: Vec<String> = plan.targets.iter().map(|t| format!("--target {}", shown(t))).collect();
    let one = plan.targets.len() == 1;
    let what = match (plan.destroy, one) {
        (false, true) => "what it depends on",
        (false, false) => "what they depend on",
        (true, true) => "what must be deleted before it",
        (true, false) => "what must be deleted before them",
    };
    format!("{} and {what}", targets.join(", "))
}

/// `lineage …, serial N` or `new workspace`.
pub fn prior_text(plan: &Plan) -> String {
    match &plan.prior.lineage {
        Some(lineage) => format!("lineage {}, serial {}", escape::text(lineage), plan.prior.serial),
        None => "new workspace".to_string(),
    }
}

fn plan_text(out: &mut String, plan: &Plan, opts: &TextOptions, style: Style) {
    let _ = writeln!(out, "{}", style.paint(BOLD, &counts_line(&plan.summary)));
    let _ = writeln!(
        out,
        "Shoot: {}  provider: {}{}  prior: {}\nDigest: {}",
        escape::text(&plan.shoot),
        plan.provider.as_str(),
        plan.mode.map(|m| format!("  mode: {}", m.as_str())).unwrap_or_default(),
        prior_text(plan),
        escape::text(&plan.digest)
    );
    if plan.destroy {
        let _ = writeln!(
            out,
            "Destroy plan: applying it deletes what trellis manages for the shoot and empties its workspace."
        );
    }
    if plan.is_partial() {
        let _ = writeln!(out, "Partial plan: {}.", partial_text(plan, |t| escape::text(t).into_owned()));
    }
    if !plan.record.is_empty() {
        let why: Vec<&str> = plan.record.iter().map(|r| r.as_str()).collect();
        let _ = writeln!(out, "Workspace to record: {}.", why.join("; "));
    }
    let legend: Vec<String> = DISPLAY_ORDER
        .iter()
        .filter(|a| **a != Action::Noop && plan.nodes.iter().any(|n| n.action() == **a))
        .map(|a| format!("{} {}", style.paint(action_color(*a), a.symbol()), a.as_str()))
        .collect();
    if !legend.is_empty() {
        let _ = writeln!(out, "Symbols: {}", legend.join(", "));
    }

    for action in DISPLAY_ORDER {
        let nodes: Vec<&Node> = plan.nodes.iter().filter(|n| n.action() == action).collect();
        if nodes.is_empty() {
            continue;
        }
        if action == Action::Noop && !opts.verbose {
            let _ = writeln!(out, "\n    {} unchanged", nodes.len());
            continue;
        }
        for node in nodes {
            out.push('\n');
            node_text(out, node, style);
        }
    }

    out.push('\n');
    artifacts_text(out, &plan.artifacts);
    applied_artifacts_text(out, plan, style);

    if !plan.warnings.is_empty() {
        out.push('\n');
        for w in &plan.warnings {
            let _ = writeln!(out, "{} {}", style.paint(WARN, "Warning:"), escape::text(w));
        }
    }
}

/// Each artifact that differs from the last applied one, before → after.
fn applied_artifacts_text(out: &mut String, plan: &Plan, style: Style) {
    if let Some(applied) = &plan.applied_artifacts {
        let diff = crate::diff::artifacts_diff(applied, &plan.artifacts);
        if !diff.is_empty() {
            out.push_str("Artifacts changed since the last apply:\n");
            crate::diff::artifacts_diff_text(out, &diff, style.color, "  ");
        }
    }
}

fn node_text(out: &mut String, node: &Node, style: Style) {
    let mut head = format!("{:>3} {}", node.action().symbol(), escape::text(&node.address));
    if node.ownership() != Ownership::Managed {
        let _ = write!(head, " ({})", node.ownership().as_str());
    }
    let _ = writeln!(out, "{}", style.paint(action_color(node.action()), &head));
    match node.reason.code() {
        Some(code) => {
            let _ = writeln!(out, "      # [{code}] {}", escape::text(&one_line(node.reason.detail())));
        }
        None => {
            let _ = writeln!(out, "      # {}", escape::text(&one_line(node.reason.detail())));
        }
    }
    match node.action() {
        Action::Delete => {
            if let Some(id) = &node.id {
                let _ = writeln!(out, "      id: {}", escape::text(id));
            }
        }
        Action::Create => {
            for c in node.changes() {
                let _ = writeln!(out, "      {}: {}", escape::text(&c.path), value_or_absent(c.after.as_ref()));
            }
        }
        Action::Update | Action::Replace => {
            for c in node.changes() {
                let _ = writeln!(out, "      {}", change_text(c));
            }
        }
        Action::Verify => {
            for c in node.checks() {
                let _ = writeln!(out, "      check {}", check_text(c));
            }
        }
        Action::Read | Action::Noop | Action::Skip => {}
    }
}

/// `path: before -> after`, values as compact JSON, a missing side as `(absent)`; escaped as [`escape::text`].
pub fn change_text(c: &Change) -> String {
    format!(
        "{}: {} -> {}",
        escape::text(&c.path),
        value_or_absent(c.before.as_ref()),
        value_or_absent(c.after.as_ref())
    )
}

/// `path == value`, or `path is absent` for a `null` expectation; escaped as [`escape::text`].
pub fn check_text(c: &Check) -> String {
    match &c.expect {
        Value::Null => format!("{} is absent", escape::text(&c.path)),
        v => format!("{} == {}", escape::text(&c.path), compact(v)),
    }
}

fn value_or_absent(v: Option<&Value>) -> String {
    v.map(compact).unwrap_or_else(|| "(absent)".to_string())
}

/// A JSON value on one line, escaped as [`escape::text`] (JSON escapes C0 controls itself, but not
/// DEL, C1 controls or bidi overrides).
pub fn compact(v: &Value) -> String {
    escape::text(&serde_json::to_string(v).expect("JSON values always serialise")).into_owned()
}

/// `s` on one line: runs of white space (newlines included) as one space, none at either end.
fn one_line(s: &str) -> Cow<'_, str> {
    // Most reasons are one line already: no copy then.
    let mut prev_space = true;
    let plain = s.chars().all(|c| {
        let ok = if c == ' ' { !prev_space } else { !c.is_whitespace() };
        prev_space = c == ' ';
        ok
    }) && !prev_space;
    if plain {
        return Cow::Borrowed(s);
    }
    Cow::Owned(s.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// The InfrastructureStatus keys a reviewer scans, as `(label, JSON pointers tried in order)`.
const STATUS_KEYS: [(&str, &[&str]); 5] = [
    ("outboundAccessType", &["/networks/outboundAccessType", "/outboundAccessType"]),
    ("vnet", &["/networks/vnet"]),
    ("subnets", &["/networks/subnets", "/subnets"]),
    ("routeTables", &["/routeTables"]),
    ("securityGroups", &["/securityGroups"]),
];

/// The InfrastructureStatus as `key: value` lines (only keys that are present), values escaped as
/// [`escape::text`]. When none of the known keys is present but the status is not null, one line with
/// the whole status as compact JSON.
pub fn status_lines(status: &Value) -> Vec<(String, String)> {
    let mut lines = Vec::new();
    for (label, pointers) in STATUS_KEYS {
        if let Some(v) = pointers.iter().find_map(|p| status.pointer(p)) {
            lines.push((label.to_string(), escape::text(&status_value(v)).into_owned()));
        }
    }
    if lines.is_empty() && !status.is_null() {
        lines.push(("status".to_string(), compact(status)));
    }
    lines
}

fn status_value(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(items) if items.is_empty() => "none".to_string(),
        Value::Array(items) => items.iter().map(status_entry).collect::<Vec<_>>().join(", "),
        other => status_entry(other),
    }
}

/// `rg/name (purpose, zone z)` for an entry with a name; compact JSON otherwise.
fn status_entry(v: &Value) -> String {
    let Some(name) = v.get("name").and_then(Value::as_str) else {
        return compact(v);
    };
    let mut s = match v.get("resourceGroup").and_then(Value::as_str) {
        Some(rg) => format!("{rg}/{name}"),
        None => name.to_string(),
    };
    let mut notes = Vec::new();
    if let Some(p) = v.get("purpose").and_then(Value::as_str) {
        notes.push(p.to_string());
    }
    if let Some(z) = v.get("zone").filter(|z| !z.is_null()) {
        notes.push(format!("zone {}", z.as_str().map(str::to_string).unwrap_or_else(|| compact(z))));
    }
    if !notes.is_empty() {
        let _ = write!(s, " ({})", notes.join(", "));
    }
    s
}

/// `a, b`, `none`, or the user-managed-egress explanation for `null`; escaped as [`escape::text`].
pub fn egress_text(egress: Option<&[String]>) -> String {
    match egress {
        None => "none (user-managed egress: Gardener cannot know them)".to_string(),
        Some([]) => "none".to_string(),
        Some(cidrs) => escape::text(&cidrs.join(", ")).into_owned(),
    }
}

fn allow_egress_text(deployed: bool) -> &'static str {
    if deployed {
        "deployed"
    } else {
        "not deployed"
    }
}

/// `--flag=value …`, escaped as [`escape::text`].
fn flags_text(flags: &BTreeMap<String, bool>) -> String {
    flags.iter().map(|(k, v)| format!("--{}={v}", escape::text(k))).collect::<Vec<_>>().join(" ")
}

/// A provider-specific artifact's value on one line: a string as it is, anything else as compact JSON.
fn named_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Where the human renderers list an artifact: the status first, then the one-line artifacts, the files
/// (blocks) last; artifacts of one place in the provider's order.
fn shown_rank(s: &Shown<'_>) -> u8 {
    match s {
        Shown::InfrastructureStatus(_) => 0,
        Shown::EgressCidrs(_) => 1,
        Shown::AllowEgress(_) => 2,
        Shown::CcmFlags(_) => 3,
        Shown::Value(..) => 4,
        Shown::CloudProviderConfig(_) => 5,
    }
}

/// The artifacts a plan shows ([`Artifacts::shown`]), in the order the human renderers list them.
fn listed(a: &Artifacts) -> Vec<Shown<'_>> {
    let mut shown = a.shown();
    shown.sort_by_key(shown_rank);
    shown
}

fn artifacts_text(out: &mut String, a: &Artifacts) {
    let shown = listed(a);
    if shown.is_empty() {
        return;
    }
    out.push_str("Artifacts:\n");
    for artifact in shown {
        match artifact {
            Shown::InfrastructureStatus(status) => {
                let status = status_lines(status);
                if !status.is_empty() {
                    out.push_str("  infrastructure status:\n");
                    for (k, v) in status {
                        let _ = writeln!(out, "    {k}: {v}");
                    }
                }
            }
            Shown::EgressCidrs(cidrs) => {
                let _ = writeln!(out, "  egress CIDRs: {}", egress_text(cidrs));
            }
            Shown::AllowEgress(deployed) => {
                let _ = writeln!(out, "  allow-egress Services: {}", allow_egress_text(deployed));
            }
            Shown::CcmFlags(flags) if !flags.is_empty() => {
                let _ = writeln!(out, "  CCM flags: {}", flags_text(flags));
            }
            Shown::CcmFlags(_) => {}
            Shown::Value(name, value) => {
                let _ = writeln!(out, "  {}: {}", escape::text(name), escape::text(&named_text(value)));
            }
            Shown::CloudProviderConfig(cfg) if !cfg.content.is_empty() => {
                let _ = writeln!(out, "  {}:", escape::text(&cfg.shown_name()));
                for line in escape::lines(&cfg.content).lines() {
                    if line.is_empty() {
                        out.push('\n');
                    } else {
                        let _ = writeln!(out, "    {line}");
                    }
                }
            }
            Shown::CloudProviderConfig(_) => {}
        }
    }
}

// ---------------------------------------------------------------------------------------------------
// Colour

const RESET: &str = "\x1b[0m";
const BOLD: &str = "\x1b[1m";
const WARN: &str = "\x1b[1;33m";

fn action_color(a: Action) -> &'static str {
    match a {
        Action::Create => "\x1b[32m",
        Action::Update => "\x1b[33m",
        Action::Replace | Action::Delete => "\x1b[31m",
        Action::Verify | Action::Read => "\x1b[36m",
        Action::Skip => "\x1b[2m",
        Action::Noop => "",
    }
}

#[derive(Clone, Copy)]
struct Style {
    color: bool,
}

impl Style {
    fn paint<'a>(self, code: &str, s: &'a str) -> Cow<'a, str> {
        if self.color && !code.is_empty() {
            Cow::Owned(format!("{code}{s}{RESET}"))
        } else {
            Cow::Borrowed(s)
        }
    }
}

// ---------------------------------------------------------------------------------------------------
// Markdown

/// The markdown rendering for a pull-request comment: the verdict (`Plan: …` counts of the whole
/// file), a bold warning when something is deleted or replaced, a counts table, then one collapsed
/// section per shoot with changes (one line per shoot without). At most [`MARKDOWN_BUDGET`] bytes:
/// detail that does not fit is left out with a notice, the summary never is.
pub fn markdown(set: &PlanSet) -> String {
    markdown_within(set, MARKDOWN_BUDGET)
}

/// [`markdown`] of borrowed plans, in the order given: for a caller that holds its plans elsewhere (an
/// apply prints the plans it is about to apply without copying them).
pub fn markdown_of(plans: &[&Plan]) -> String {
    markdown_plans(plans, MARKDOWN_BUDGET)
}

/// The most bytes [`markdown`] writes: under GitHub's 65,536-character limit for a comment (a byte
/// count is never below the character count), with room for a CI tool's own header.
pub const MARKDOWN_BUDGET: usize = 65_000;

/// The most deleted or replaced addresses the warning names; the rest are counted.
const WARNING_ADDRESSES: usize = 20;

/// [`markdown`] with at most `budget` bytes: the summary (heading, verdict, the deletion warning) is
/// always written; the table rows and the shoots' sections follow while they fit, then a notice says
/// how many were left out.
pub fn markdown_within(set: &PlanSet, budget: usize) -> String {
    markdown_plans(&set.plans.iter().collect::<Vec<_>>(), budget)
}

fn markdown_plans(plans: &[&Plan], budget: usize) -> String {
    let mut out = String::new();
    let with_changes = plans.iter().filter(|p| p.has_changes()).count();
    // A shoot with a derived plan (its domains plan beside its infrastructure plan) has two: count plans
    // then, not shoots.
    let noun = if plans.iter().any(|p| p.is_derived()) { "plan" } else { "shoot" };
    let _ = writeln!(
        out,
        "### trellis plan: {} of {} {noun}{} with changes\n",
        with_changes,
        plans.len(),
        if plans.len() == 1 { "" } else { "s" }
    );
    let total = Summary::total(plans.iter().copied());
    let _ = writeln!(out, "**{}**", counts_line(&total));

    let destructive: Vec<&Node> = plans
        .iter()
        .flat_map(|p| &p.nodes)
        .filter(|n| matches!(n.action(), Action::Delete | Action::Replace))
        .collect();
    if !destructive.is_empty() {
        let mut named: Vec<String> = destructive
            .iter()
            .take(WARNING_ADDRESSES)
            .map(|n| format!("{} ({})", escape::md_code(&n.address, Md::Inline), n.action().as_str()))
            .collect();
        if destructive.len() > WARNING_ADDRESSES {
            named.push(format!("and {} more", destructive.len() - WARNING_ADDRESSES));
        }
        out.push_str("\n> [!WARNING]\n");
        let _ = writeln!(out, "> **This plan deletes or replaces resources:** {}.", named.join(", "));
    }

    // The detail, in order; each part is written whole or not at all.
    let mut parts: Vec<String> = Vec::new();
    parts.push(
        "\n| shoot | create | update | replace | delete | verify | skip |\n|:--|--:|--:|--:|--:|--:|--:|\n".to_string(),
    );
    for &plan in plans {
        parts.push(format!(
            "| {}{} | {} |\n",
            escape::md_code(&plan.shoot, Md::Cell),
            derived_suffix(plan),
            table_counts(&plan.summary)
        ));
    }
    if plans.len() > 1 {
        parts.push(format!("| **total** | {} |\n", table_counts(&total)));
    }
    for &plan in plans {
        let mut section = String::from("\n");
        if plan.has_changes() {
            plan_markdown(&mut section, plan);
        } else {
            let _ = writeln!(
                section,
                "{}{}: {}",
                escape::md_code(&plan.shoot, Md::Inline),
                derived_suffix(plan),
                counts_line(&plan.summary)
            );
        }
        parts.push(section);
    }

    let total = parts.len();
    for (i, part) in parts.into_iter().enumerate() {
        if out.len() + part.len() + TRUNCATED_NOTICE_MAX > budget {
            let _ = writeln!(
                out,
                "\n---\n**Truncated:** {} of {total} parts of the detail (table rows, shoot sections) left out to stay under {budget} characters (GitHub's comment limit is 65,536). `trellis show PLAN` renders the whole plan.",
                total - i
            );
            return out;
        }
        out.push_str(&part);
    }
    out
}

/// ` (domains)` after a derived plan's shoot ([`Plan::is_derived`]: its provider's name), so a shoot's two
/// plans are told apart; nothing otherwise.
fn derived_suffix(plan: &Plan) -> String {
    if plan.is_derived() {
        format!(" ({})", plan.provider)
    } else {
        String::new()
    }
}

/// Room kept for the truncation notice.
const TRUNCATED_NOTICE_MAX: usize = 300;

/// The ownership column: a user-owned resource trellis checks says that it is never written.
fn ownership_cell(n: &Node) -> &'static str {
    match (n.ownership(), n.action()) {
        (Ownership::User, Action::Verify) => "user: verified, never written",
        (ownership, _) => ownership.as_str(),
    }
}

fn table_counts(s: &Summary) -> String {
    [s.create, s.update, s.replace, s.delete, s.verify, s.skip].map(|n| n.to_string()).join(" | ")
}

fn plan_markdown(out: &mut String, plan: &Plan) {
    let _ = writeln!(
        out,
        "<details><summary><code>{}</code>{}: {}</summary>\n",
        escape::html(&plan.shoot),
        derived_suffix(plan),
        counts_line(&plan.summary)
    );
    let _ = writeln!(
        out,
        "Provider `{}`{}, {}, plan digest {}.\n",
        plan.provider.as_str(),
        plan.mode.map(|m| format!(", mode `{}`", m.as_str())).unwrap_or_default(),
        md_inline(&prior_text(plan)),
        escape::md_code(&plan.digest, Md::Inline)
    );
    if plan.is_partial() {
        let _ = writeln!(out, "**Partial plan:** {}.\n", partial_text(plan, |t| escape::md_code(t, Md::Inline)));
    }
    if !plan.record.is_empty() {
        let why: Vec<&str> = plan.record.iter().map(|r| r.as_str()).collect();
        let _ = writeln!(out, "Workspace to record: {}.\n", why.join("; "));
        if let Some(applied) = &plan.applied_artifacts {
            let diff = crate::diff::artifacts_diff(applied, &plan.artifacts);
            if !diff.is_empty() {
                let mut text = String::new();
                crate::diff::artifacts_diff_text(&mut text, &diff, false, "");
                let fence = escape::fence_for(&text);
                let _ = writeln!(out, "Artifacts changed since the last apply:\n\n{fence}diff\n{text}{fence}\n");
            }
        }
    }

    let listed: Vec<&Node> = DISPLAY_ORDER
        .iter()
        .filter(|a| **a != Action::Noop)
        .flat_map(|a| plan.nodes.iter().filter(move |n| n.action() == *a))
        .collect();
    if !listed.is_empty() {
        out.push_str("| action | address | ownership | reason |\n|:--|:--|:--|:--|\n");
        for n in &listed {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                n.action().as_str(),
                escape::md_code(&n.address, Md::Cell),
                ownership_cell(n),
                reason_cell(&n.reason)
            );
        }
    }
    if plan.summary.noop > 0 {
        let _ = writeln!(out, "\n{} unchanged.", plan.summary.noop);
    }

    // The DAG of the nodes that write (GitHub renders a ```mermaid block as a graph).
    if listed.iter().any(|n| n.action().is_write()) {
        let graph = crate::graphs::mermaid(plan, true);
        let fence = escape::fence_for(&graph);
        let _ = write!(out, "\n{fence}mermaid\n{graph}{fence}\n");
    }

    let mut diff = String::new();
    for n in listed.iter().filter(|n| n.action().is_write()) {
        diff_block_node(&mut diff, n);
    }
    if !diff.is_empty() {
        let _ = write!(out, "\n```diff\n{diff}```\n");
    }

    let verify: Vec<&&Node> =
        listed.iter().filter(|n| n.action() == Action::Verify && !n.checks().is_empty()).collect();
    if !verify.is_empty() {
        out.push_str("\n**Checks** (re-read at apply; apply fails if one breaks)\n\n");
        for n in verify {
            for c in n.checks() {
                let _ = writeln!(
                    out,
                    "- {}: {} — {}",
                    escape::md_code(&n.address, Md::Inline),
                    escape::md_code(&check_text(c), Md::Inline),
                    md_inline(&c.message)
                );
            }
        }
    }

    artifacts_markdown(out, &plan.artifacts);

    if !plan.warnings.is_empty() {
        out.push_str("\n**Warnings**\n\n");
        for w in &plan.warnings {
            let _ = writeln!(out, "- {}", md_inline(w));
        }
    }
    out.push_str("\n</details>\n");
}

/// A node in a ```diff block: GitHub colours `+` lines green, `-` red and `!` orange. Every line
/// starts with its marker and no string carries a line break ([`escape::text`]), so nothing a plan
/// holds can close the fence.
fn diff_block_node(out: &mut String, n: &Node) {
    let address = escape::text(&n.address);
    match n.action() {
        Action::Create => {
            let _ = writeln!(out, "+ {address}");
            for c in n.changes() {
                let _ = writeln!(out, "+     {}: {}", escape::text(&c.path), value_or_absent(c.after.as_ref()));
            }
        }
        Action::Delete => {
            let _ = writeln!(out, "- {address}");
            if let Some(id) = &n.id {
                let _ = writeln!(out, "-     id: {}", escape::text(id));
            }
        }
        Action::Update | Action::Replace => {
            let sym = if n.action() == Action::Replace { "-/+" } else { "~" };
            let _ = writeln!(out, "! {sym} {address}");
            for c in n.changes() {
                let path = escape::text(&c.path);
                if c.before.is_some() {
                    let _ = writeln!(out, "-     {path}: {}", value_or_absent(c.before.as_ref()));
                }
                if c.after.is_some() {
                    let _ = writeln!(out, "+     {path}: {}", value_or_absent(c.after.as_ref()));
                }
            }
        }
        _ => {}
    }
}

fn artifacts_markdown(out: &mut String, a: &Artifacts) {
    let shown = listed(a);
    if shown.is_empty() {
        return;
    }
    out.push_str("\n**Artifacts**\n\n");
    for artifact in shown {
        match artifact {
            Shown::InfrastructureStatus(status) => {
                for (k, v) in status_lines(status) {
                    let _ = writeln!(out, "- {k}: {}", escape::md_code(&v, Md::Inline));
                }
            }
            Shown::EgressCidrs(cidrs) => {
                let _ = writeln!(out, "- egress CIDRs: {}", md_inline(&egress_text(cidrs)));
            }
            Shown::AllowEgress(deployed) => {
                let _ = writeln!(out, "- allow-egress Services: {}", allow_egress_text(deployed));
            }
            Shown::CcmFlags(flags) if !flags.is_empty() => {
                let _ = writeln!(out, "- CCM flags: {}", escape::md_code(&flags_text(flags), Md::Inline));
            }
            Shown::CcmFlags(_) => {}
            Shown::Value(name, value) => {
                let _ = writeln!(out, "- {}: {}", md_inline(name), escape::md_code(&named_text(value), Md::Inline));
            }
            Shown::CloudProviderConfig(cfg) if !cfg.content.is_empty() => {
                let content = escape::lines(&cfg.content);
                let fence = escape::fence_for(&content);
                let name = md_inline(&cfg.shown_name());
                let _ = write!(out, "\n{name}:\n\n{fence}{}\n{content}", cfg.format.as_str());
                if !content.ends_with('\n') {
                    out.push('\n');
                }
                let _ = writeln!(out, "{fence}");
            }
            Shown::CloudProviderConfig(_) => {}
        }
    }
}

/// Text safe inside a markdown table cell: [`escape::md_inline`] for a cell.
pub fn md_cell(s: &str) -> String {
    escape::md_inline(s, Md::Cell)
}

/// A node's reason in a markdown table cell: the code as a code span, then the words.
fn reason_cell(reason: &crate::Reason) -> String {
    match reason.code() {
        Some(code) => format!("`{code}` {}", md_cell(reason.detail())),
        None => md_cell(reason.detail()),
    }
}

/// Text safe in a markdown list item or paragraph: [`escape::md_inline`].
pub fn md_inline(s: &str) -> String {
    escape::md_inline(s, Md::Inline)
}

// ---------------------------------------------------------------------------------------------------
// Graphviz

/// The DAG as DOT; it lives in [`crate::graphs`] with the other graph renderers.
pub use crate::graphs::dot;

#[cfg(test)]
mod tests {
    use super::*;

    /// `one_line` borrows a string that is one line already and otherwise joins its words with one
    /// space, as `split_whitespace` sees them (tabs, newlines, non-breaking spaces, runs, ends).
    #[test]
    fn one_line_is_the_words_joined_by_one_space() {
        for s in ["", " ", "a", "a b", " a", "a ", "a  b", "a\tb", "a\nb", "a\u{a0}b", "  a \n\n b\t", "é ü"] {
            let expected = s.split_whitespace().collect::<Vec<_>>().join(" ");
            assert_eq!(one_line(s), expected, "{s:?}");
        }
        assert!(matches!(one_line("one line already"), Cow::Borrowed(_)));
    }
}
