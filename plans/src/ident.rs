//! Names that identify a provider ([`Provider`]) and a resource kind ([`Kind`]) in a plan: data, not a
//! closed list. Each provider defines its own as constants (`Kind::new("subnet")`); this crate knows none
//! of them, so a new provider adds its kinds without editing it.
//!
//! Both are a `&'static str` underneath: `Copy`, compared by value, usable in `match` patterns. A name
//! read from JSON (a plan file, a state record) is checked — lowercase ASCII letters, digits and `_`,
//! starting with a letter, at most [`MAX_LEN`] bytes — and interned: each distinct name is allocated once
//! per process and kept, so reading a name costs one lookup and a process never holds more names than the
//! distinct ones it has read.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeSet;
use std::fmt;
use std::sync::Mutex;

/// The longest name a plan file may hold.
pub const MAX_LEN: usize = 64;

/// The names read so far, each leaked once (see the module doc).
static INTERNED: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());

/// `name` as a `&'static str`: a name read before, or this one, kept for the life of the process.
fn intern(name: &str) -> &'static str {
    // A poisoned lock only means another thread panicked while inserting; the set itself is whole.
    let mut set = INTERNED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&known) = set.get(name) {
        return known;
    }
    let kept: &'static str = Box::leak(name.to_owned().into_boxed_str());
    set.insert(kept);
    kept
}

/// Why a name read from JSON is not one.
fn check(what: &str, name: &str) -> Result<(), String> {
    let well_formed = !name.is_empty()
        && name.len() <= MAX_LEN
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if well_formed {
        Ok(())
    } else {
        let shown: String = name.chars().take(MAX_LEN).collect();
        Err(format!(
            "{what} {shown:?} is not a name: lowercase letters, digits and '_', starting with a letter, at most {MAX_LEN} bytes"
        ))
    }
}

macro_rules! name_type {
    ($(#[$doc:meta])* $name:ident, $what:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(&'static str);

        impl $name {
            /// The name `name`, as its owner defines it (a constant).
            pub const fn new(name: &'static str) -> $name {
                $name(name)
            }

            /// A name read at run time (from JSON): checked, then interned (see the module doc).
            pub fn parse(name: &str) -> Result<$name, String> {
                check($what, name)?;
                Ok($name(intern(name)))
            }

            pub fn as_str(self) -> &'static str {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({:?})", stringify!($name), self.0)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<$name, D::Error> {
                let name = std::borrow::Cow::<'de, str>::deserialize(deserializer)?;
                $name::parse(&name).map_err(serde::de::Error::custom)
            }
        }
    };
}

name_type!(
    /// A provider, as plans name it (`"azure"`, `"gcp"`, `"domains"`): its `spec.provider.type`, or the
    /// name of a provider whose plans are derived from a Shoot of another type (domains).
    Provider,
    "provider"
);

name_type!(
    /// A resource kind, as the provider that plans it names it (`"subnet"`, `"dns_record"`). Terraform's
    /// JSON plan names the type `<provider>_<kind>` (`azure_subnet`).
    Kind,
    "kind"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_read_back_is_the_constant_it_was_written_from() {
        const SUBNET: Kind = Kind::new("subnet");
        let read: Kind = serde_json::from_str("\"subnet\"").unwrap();
        assert_eq!(read, SUBNET);
        assert!(matches!(read, SUBNET));
        assert_eq!(serde_json::to_string(&read).unwrap(), "\"subnet\"");
    }

    #[test]
    fn a_name_read_twice_is_kept_once() {
        let a = Kind::parse("twice_read_kind").unwrap();
        let b = Kind::parse("twice_read_kind").unwrap();
        assert!(std::ptr::eq(a.as_str(), b.as_str()));
    }

    #[test]
    fn what_is_not_a_name_is_refused_with_the_rule() {
        for bad in ["", "Subnet", "1subnet", "sub-net", "sub net", &"a".repeat(MAX_LEN + 1)] {
            let err = serde_json::from_str::<Kind>(&serde_json::to_string(bad).unwrap()).unwrap_err().to_string();
            assert!(err.contains("is not a name: lowercase letters, digits and '_'"), "{bad:?}: {err}");
        }
        let err = serde_json::from_str::<Provider>("\"AWS\"").unwrap_err().to_string();
        assert!(err.starts_with("provider \"AWS\" is not a name"), "{err}");
    }
}
