//! Gardener feature gates that change what trellis plans (`--feature-gates`), parsed as Kubernetes
//! components parse theirs: `Name=true|false`, comma-separated.
//!
//! Only gates trellis knows are accepted; an unknown gate or value is an error naming it (a typo would
//! otherwise silently plan with the default).

use std::fmt;
use std::str::FromStr;

/// The feature gates a plan is made under. `Default` is every gate at upstream's default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Features {
    /// `MutableShootDomains` (GEP-0066; gardener-apiserver and gardenlet, alpha, default false):
    /// `spec.dns.domain` may change together with a CA rotation, and the Seed's `internalDomains` /
    /// `internalDomainEnabled` take effect.
    pub mutable_shoot_domains: bool,
}

/// The gates trellis knows, as upstream names them.
pub const KNOWN_GATES: &[&str] = &["MutableShootDomains"];

/// A `--feature-gates` value trellis cannot take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FeatureGateError {
    #[error("unknown feature gate {0:?}: trellis knows {known}", known = KNOWN_GATES.join(", "))]
    Unknown(String),
    #[error("feature gate {gate}: invalid value {value:?}: use true or false")]
    BadValue { gate: String, value: String },
    #[error("feature gate entry {0:?} is not of the form Name=true|false")]
    Malformed(String),
}

impl FromStr for Features {
    type Err = FeatureGateError;

    /// `MutableShootDomains=true` or `A=true,B=false`; spaces around names and values are ignored, an
    /// empty string is every gate at its default. A gate given twice takes the last value, as
    /// Kubernetes' `--feature-gates` does.
    fn from_str(s: &str) -> Result<Features, FeatureGateError> {
        let mut features = Features::default();
        for entry in s.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (name, value) = entry.split_once('=').ok_or_else(|| FeatureGateError::Malformed(entry.to_string()))?;
            let (name, value) = (name.trim(), value.trim());
            let on = match value {
                "true" => true,
                "false" => false,
                _ => return Err(FeatureGateError::BadValue { gate: name.to_string(), value: value.to_string() }),
            };
            match name {
                "MutableShootDomains" => features.mutable_shoot_domains = on,
                _ => return Err(FeatureGateError::Unknown(name.to_string())),
            }
        }
        Ok(features)
    }
}

impl fmt::Display for Features {
    /// The gates in `--feature-gates` form, every known gate written out.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MutableShootDomains={}", self.mutable_shoot_domains)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_every_gate_off() {
        assert_eq!("".parse::<Features>().unwrap(), Features::default());
        assert!(!Features::default().mutable_shoot_domains);
    }

    #[test]
    fn a_gate_is_set_by_name_and_the_last_value_wins() {
        let f: Features = " MutableShootDomains = true ".parse().unwrap();
        assert!(f.mutable_shoot_domains);
        let f: Features = "MutableShootDomains=true,MutableShootDomains=false".parse().unwrap();
        assert!(!f.mutable_shoot_domains);
        assert_eq!(f.to_string().parse::<Features>().unwrap(), f);
    }

    #[test]
    fn unknown_gates_bad_values_and_malformed_entries_are_refused_by_name() {
        let e = "MutableShootDomain=true".parse::<Features>().unwrap_err();
        assert_eq!(e.to_string(), "unknown feature gate \"MutableShootDomain\": trellis knows MutableShootDomains");
        let e = "MutableShootDomains=yes".parse::<Features>().unwrap_err();
        assert_eq!(e.to_string(), "feature gate MutableShootDomains: invalid value \"yes\": use true or false");
        let e = "MutableShootDomains".parse::<Features>().unwrap_err();
        assert!(e.to_string().contains("not of the form Name=true|false"), "{e}");
    }
}
