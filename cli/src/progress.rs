//! Progress display for apply/destroy: indicatif bars on a TTY, one line per finished write otherwise.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::Write;
use trellis_engine::ops::Progress;
use trellis_planner::exec::{NodeResult, Outcome};
use trellis_plans::{escape, Action, Node};

/// Bars on stderr when it is a terminal; plain lines otherwise; nothing with `--output json`.
pub struct Display {
    bar: Option<ProgressBar>,
    lines: bool,
}

impl Display {
    pub fn new(total: u64, tty: bool, quiet: bool) -> Display {
        if quiet {
            return Display { bar: None, lines: false };
        }
        if tty {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}")
                    .expect("static template"),
            );
            return Display { bar: Some(bar), lines: false };
        }
        Display { bar: None, lines: true }
    }

    pub fn done(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

fn verb(action: Action) -> &'static str {
    match action {
        Action::Create => "created",
        Action::Update => "updated",
        Action::Replace => "replaced",
        Action::Delete => "deleted",
        Action::Verify => "verified",
        Action::Read => "read",
        Action::Noop | Action::Skip => "unchanged",
    }
}

impl Progress for Display {
    fn start(&mut self, shoot: &str, node: &Node) {
        if let Some(bar) = &self.bar {
            bar.set_message(escape::text(&format!("{shoot}: {}", node.address)).into_owned());
        }
    }

    fn finish(&mut self, _shoot: &str, node: &Node, result: &NodeResult) {
        let line = match &result.outcome {
            Outcome::Done if node.action().is_write() || node.action() == Action::Verify => {
                Some(format!("{}: {}", node.address, verb(node.action())))
            }
            Outcome::Failed { error } => Some(format!("{}: FAILED: {error}", node.address)),
            Outcome::Skipped { because } => Some(format!("{}: not applied: {because}", node.address)),
            _ => None,
        };
        // Addresses and cloud errors carry user-provided names: no raw control characters.
        let line = line.map(|l| escape::text(&l).into_owned());
        if let Some(bar) = &self.bar {
            bar.inc(1);
            if let Some(line) = line {
                bar.println(line);
            }
        } else if self.lines {
            if let Some(line) = line {
                let _ = writeln!(std::io::stderr(), "{line}");
            }
        }
    }

    fn message(&mut self, line: &str) {
        let line = escape::text(line);
        let line = line.as_ref();
        match &self.bar {
            Some(bar) => bar.println(line),
            None if self.lines => eprintln!("{line}"),
            None => {}
        }
    }
}
