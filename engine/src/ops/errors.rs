//! Errors that are lists: a fleet's failures, one fact a line.

use std::path::PathBuf;
use trellis_plans::escape;
use trellis_providers::manifest::ManifestError;
use trellis_providers::provider::ProviderError;

/// Why some shoots of a fleet could not be planned: each shoot's errors, one per line.
#[derive(Debug)]
pub struct FleetError {
    pub failures: Vec<(String, PathBuf, ProviderError)>,
    /// A last line saying what to do that the caller knows and the shoots' errors cannot (a pre-flight
    /// "not found" against the simulated cloud without a world file: `--world`).
    pub hint: Option<String>,
}

impl FleetError {
    pub fn new(failures: Vec<(String, PathBuf, ProviderError)>) -> FleetError {
        FleetError { failures, hint: None }
    }

    /// Whether a shoot's pre-flight found a resource of the user's missing
    /// ([`ProviderError::missing_user_resource`]).
    pub fn has_missing_user_resource(&self) -> bool {
        self.failures.iter().any(|(_, _, e)| e.missing_user_resource())
    }
}

impl FleetError {
    /// One line per shoot (its file, the error), then its field errors one per line, as written
    /// (unescaped: [`Lines`] escapes each when displayed).
    fn lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for (shoot, file, err) in &self.failures {
            lines.push(format!("{shoot} ({}): {err}", file.display()));
            match err {
                ProviderError::Invalid(errs) => lines.extend(errs.iter().map(|e| e.to_string())),
                ProviderError::Preflight(errs) => lines.extend(errs.iter().map(|e| e.to_string())),
                _ => {}
            }
        }
        lines.extend(self.hint.iter().map(|h| format!("hint: {h}")));
        lines
    }
}

impl std::fmt::Display for FleetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        Lines(self.lines()).fmt(f)
    }
}

/// An error that is a list, one fact a line (a fleet's failures, a manifest's field errors). Each
/// line is escaped when displayed ([`escape::text`]: a newline inside it is shown as `\n`), so the
/// only line breaks are the list's own: a value quoted in a line cannot start a line of its own.
/// Every other error is printed as one line ([`list_lines`]).
#[derive(Debug)]
pub struct Lines(pub Vec<String>);

impl std::fmt::Display for Lines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, line) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            f.write_str(&escape::text(line))?;
        }
        Ok(())
    }
}

impl std::error::Error for Lines {}

/// The lines of `e` when it is a list, one fact a line ([`Lines`], [`FleetError`], a world file's
/// problems, a manifest error listing entries or field errors), unescaped, the contexts above the
/// list before its first line; `None` for every other error, which is printed as one line.
pub fn list_lines(e: &anyhow::Error) -> Option<Vec<String>> {
    let mut above: Vec<String> = Vec::new();
    for cause in e.chain() {
        let lines = if let Some(l) = cause.downcast_ref::<Lines>() {
            l.0.clone()
        } else if let Some(f) = cause.downcast_ref::<FleetError>() {
            f.lines()
        } else if let Some(trellis_sim::SimError::WorldInvalid { problems, .. }) = cause.downcast_ref() {
            problems.clone()
        } else if let Some(m) = cause.downcast_ref::<ManifestError>().filter(|m| m.is_list()) {
            m.to_string().split('\n').map(str::to_string).collect()
        } else {
            above.push(cause.to_string());
            continue;
        };
        let mut lines = lines;
        if let Some(first) = lines.first_mut() {
            let head: Vec<&String> = above.iter().filter(|a| !a.contains(first.as_str())).collect();
            if !head.is_empty() {
                *first = format!("{}: {first}", head.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(": "));
            }
        }
        return Some(lines);
    }
    None
}

impl std::error::Error for FleetError {}
