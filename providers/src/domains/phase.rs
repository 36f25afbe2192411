//! The CA-rotation phase machine a domain migration rides on (upstream's
//! `CredentialsRotationPhase`, `pkg/apis/core/v1beta1/types_shoot.go`; transitions of
//! `pkg/gardenlet/controller/shoot/shoot/reconciler.go`; refusals of `pkg/api/core/validation/shoot.go`).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::field::{ErrorList, FieldError};

/// `status.credentials.rotation.certificateAuthorities.phase`. `None` (never rotated) behaves like
/// [`Phase::Completed`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Phase {
    Preparing,
    PreparingWithoutWorkersRollout,
    WaitingForWorkersRollout,
    Prepared,
    Completing,
    Completed,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Preparing => "Preparing",
            Phase::PreparingWithoutWorkersRollout => "PreparingWithoutWorkersRollout",
            Phase::WaitingForWorkersRollout => "WaitingForWorkersRollout",
            Phase::Prepared => "Prepared",
            Phase::Completing => "Completing",
            Phase::Completed => "Completed",
        }
    }

    /// The phases in which old and new names are both valid (prior records kept, old issuer accepted):
    /// Preparing, PreparingWithoutWorkersRollout, WaitingForWorkersRollout, Prepared.
    pub fn keeps_prior(self) -> bool {
        !matches!(self, Phase::Completing | Phase::Completed)
    }

    /// The phase an applied plan of this phase leaves (upstream's end of a successful reconcile):
    /// Preparing → Prepared, PreparingWithoutWorkersRollout → WaitingForWorkersRollout,
    /// WaitingForWorkersRollout → Prepared (trellis rolls no workers: the apply after the user rolled
    /// them ends the wait), Completing → Completed.
    pub fn after_apply(self) -> Phase {
        match self {
            Phase::Preparing | Phase::WaitingForWorkersRollout => Phase::Prepared,
            Phase::PreparingWithoutWorkersRollout => Phase::WaitingForWorkersRollout,
            Phase::Completing => Phase::Completed,
            p => p,
        }
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The `gardener.cloud/operation` values that drive a CA rotation.
pub const ROTATE_CA_START: &str = "rotate-ca-start";
pub const ROTATE_CA_START_WITHOUT_WORKERS_ROLLOUT: &str = "rotate-ca-start-without-workers-rollout";
pub const ROTATE_CA_COMPLETE: &str = "rotate-ca-complete";
pub const ROTATE_CREDENTIALS_START: &str = "rotate-credentials-start";
pub const ROTATE_CREDENTIALS_START_WITHOUT_WORKERS_ROLLOUT: &str = "rotate-credentials-start-without-workers-rollout";
pub const ROTATE_CREDENTIALS_COMPLETE: &str = "rotate-credentials-complete";

/// The start triggers, in upstream's order (for messages).
pub const START_TRIGGERS: &[&str] = &[
    ROTATE_CA_START,
    ROTATE_CA_START_WITHOUT_WORKERS_ROLLOUT,
    ROTATE_CREDENTIALS_START,
    ROTATE_CREDENTIALS_START_WITHOUT_WORKERS_ROLLOUT,
];

/// What a shoot's `gardener.cloud/operation` asks of the CA rotation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// No CA-rotation operation.
    None,
    /// Start a rotation; `workers_rollout: false` for the `-without-workers-rollout` variants.
    Start { workers_rollout: bool, credentials: bool },
    /// Complete it (`rotate-ca-complete`, `rotate-credentials-complete`).
    Complete { credentials: bool },
}

/// The operations of `gardener.cloud/operation` (`;`-separated, upstream's
/// `GardenerOperationsSeparator`), trimmed, empty entries dropped.
pub fn operations(annotation: Option<&str>) -> Vec<&str> {
    annotation.map(|a| a.split(';').map(str::trim).filter(|o| !o.is_empty()).collect()).unwrap_or_default()
}

/// The CA-rotation trigger `ops` ask for, whether or not the phase allows it (the last one wins).
pub fn requested(ops: &[&str]) -> Trigger {
    ops.iter().fold(Trigger::None, |found, op| match *op {
        ROTATE_CA_START | ROTATE_CA_START_WITHOUT_WORKERS_ROLLOUT => {
            Trigger::Start { workers_rollout: *op == ROTATE_CA_START, credentials: false }
        }
        ROTATE_CREDENTIALS_START | ROTATE_CREDENTIALS_START_WITHOUT_WORKERS_ROLLOUT => {
            Trigger::Start { workers_rollout: *op == ROTATE_CREDENTIALS_START, credentials: true }
        }
        ROTATE_CA_COMPLETE => Trigger::Complete { credentials: false },
        ROTATE_CREDENTIALS_COMPLETE => Trigger::Complete { credentials: true },
        _ => found,
    })
}

/// The field path of the operation annotation.
pub fn operation_path() -> String {
    format!("metadata.annotations[{}]", super::api::ANNOTATION_OPERATION)
}

/// The CA-rotation trigger among `ops`, with upstream's refusals against `phase` (the phase the
/// shoot is in) and its incompatibility rules; every error at once.
pub fn trigger(ops: &[&str], phase: Option<Phase>) -> Result<Trigger, ErrorList> {
    let path = operation_path();
    let mut errs = ErrorList::new();
    let has = |o: &str| ops.contains(&o);
    let incompatible: &[(&str, &[&str])] = &[
        (
            ROTATE_CREDENTIALS_START,
            &[
                ROTATE_CA_START_WITHOUT_WORKERS_ROLLOUT,
                "rotate-serviceaccount-key-start-without-workers-rollout",
                ROTATE_CREDENTIALS_START_WITHOUT_WORKERS_ROLLOUT,
            ],
        ),
        (ROTATE_CREDENTIALS_START_WITHOUT_WORKERS_ROLLOUT, &[ROTATE_CA_START, "rotate-serviceaccount-key-start"]),
        (ROTATE_CA_START, &[ROTATE_CA_START_WITHOUT_WORKERS_ROLLOUT]),
    ];
    for op in ops {
        if let Some((_, forbidden)) = incompatible.iter().find(|(o, _)| o == op) {
            if forbidden.iter().any(|f| has(f)) {
                errs.push(FieldError::forbidden(
                    &path,
                    format!(
                        "operation '{op}' is not permitted to be run together with {} operations",
                        forbidden.join(", ")
                    ),
                ));
            }
        }
    }
    let completed = matches!(phase, None | Some(Phase::Completed));
    let prepared = phase == Some(Phase::Prepared);
    for op in ops {
        let refusal = match *op {
            ROTATE_CA_START | ROTATE_CA_START_WITHOUT_WORKERS_ROLLOUT if !completed => {
                "cannot start CA rotation if .status.credentials.rotation.certificateAuthorities.phase is not 'Completed'"
            }
            ROTATE_CREDENTIALS_START | ROTATE_CREDENTIALS_START_WITHOUT_WORKERS_ROLLOUT if !completed => {
                "cannot start rotation of all credentials if .status.credentials.rotation.certificateAuthorities.phase is not 'Completed'"
            }
            ROTATE_CA_COMPLETE if !prepared => {
                "cannot complete CA rotation if .status.credentials.rotation.certificateAuthorities.phase is not 'Prepared'"
            }
            ROTATE_CREDENTIALS_COMPLETE if !prepared => {
                "cannot complete rotation of all credentials if .status.credentials.rotation.certificateAuthorities.phase is not 'Prepared'"
            }
            _ => continue,
        };
        errs.push(FieldError::forbidden(&path, refusal));
    }
    if errs.is_empty() {
        Ok(requested(ops))
    } else {
        Err(errs)
    }
}

/// The phase a plan executes: a start trigger plans `Preparing` (or
/// `PreparingWithoutWorkersRollout`), a complete trigger `Completing`; without a trigger the plan
/// keeps `current` (`None`: never rotated).
pub fn planned(trigger: Trigger, current: Option<Phase>) -> Option<Phase> {
    match trigger {
        Trigger::Start { workers_rollout: true, .. } => Some(Phase::Preparing),
        Trigger::Start { workers_rollout: false, .. } => Some(Phase::PreparingWithoutWorkersRollout),
        Trigger::Complete { .. } => Some(Phase::Completing),
        Trigger::None => current,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starting_is_refused_unless_completed_and_completing_unless_prepared_with_upstreams_messages() {
        for p in [None, Some(Phase::Completed)] {
            assert_eq!(
                trigger(&[ROTATE_CA_START], p).unwrap(),
                Trigger::Start { workers_rollout: true, credentials: false }
            );
        }
        let e = trigger(&[ROTATE_CA_START], Some(Phase::Prepared)).unwrap_err();
        assert_eq!(
            e[0].to_string(),
            "metadata.annotations[gardener.cloud/operation]: Forbidden: cannot start CA rotation if .status.credentials.rotation.certificateAuthorities.phase is not 'Completed'"
        );
        let e = trigger(&[ROTATE_CA_COMPLETE], Some(Phase::Preparing)).unwrap_err();
        assert!(e[0].to_string().ends_with("cannot complete CA rotation if .status.credentials.rotation.certificateAuthorities.phase is not 'Prepared'"));
        assert_eq!(
            trigger(&[ROTATE_CA_COMPLETE], Some(Phase::Prepared)).unwrap(),
            Trigger::Complete { credentials: false }
        );
        let e = trigger(&[ROTATE_CREDENTIALS_START], Some(Phase::Completing)).unwrap_err();
        assert!(e[0].to_string().contains("cannot start rotation of all credentials"), "{e:?}");
    }

    #[test]
    fn operations_are_semicolon_separated_and_incompatible_ones_are_refused() {
        assert_eq!(operations(Some("reconcile; rotate-ca-start")), vec!["reconcile", "rotate-ca-start"]);
        assert_eq!(trigger(&operations(Some("reconcile")), None).unwrap(), Trigger::None);
        let e = trigger(&[ROTATE_CA_START, ROTATE_CA_START_WITHOUT_WORKERS_ROLLOUT], None).unwrap_err();
        assert!(e.iter().any(|e| e.to_string().contains(
            "operation 'rotate-ca-start' is not permitted to be run together with rotate-ca-start-without-workers-rollout operations"
        )));
    }

    #[test]
    fn phases_advance_as_upstreams_reconcile_ends() {
        let start = Trigger::Start { workers_rollout: true, credentials: false };
        assert_eq!(planned(start, None), Some(Phase::Preparing));
        assert_eq!(Phase::Preparing.after_apply(), Phase::Prepared);
        let no_roll = Trigger::Start { workers_rollout: false, credentials: true };
        assert_eq!(planned(no_roll, Some(Phase::Completed)), Some(Phase::PreparingWithoutWorkersRollout));
        assert_eq!(Phase::PreparingWithoutWorkersRollout.after_apply(), Phase::WaitingForWorkersRollout);
        assert_eq!(Phase::WaitingForWorkersRollout.after_apply(), Phase::Prepared);
        assert_eq!(planned(Trigger::Complete { credentials: false }, Some(Phase::Prepared)), Some(Phase::Completing));
        assert_eq!(Phase::Completing.after_apply(), Phase::Completed);
        assert_eq!(planned(Trigger::None, Some(Phase::Prepared)), Some(Phase::Prepared));
        assert!(Phase::WaitingForWorkersRollout.keeps_prior() && !Phase::Completing.keeps_prior());
    }
}
