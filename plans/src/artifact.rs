//! A plan's artifacts: what the reconcile produces besides cloud resources, exactly those its provider
//! renders, by name, in the provider's order.
//!
//! In the JSON, `artifacts` is an object: one key per artifact, in the order the provider put them, each
//! with its value as it is (no wrapper). How an artifact renders follows from its [`Artifact`] variant, and
//! the variant from its name: the Gardener artifacts every infrastructure provider has (the
//! InfrastructureStatus, egress CIDRs, the cloud-provider config, CCM flags, allow-egress) have fixed names
//! and typed values; any other name holds a value shown on one line. So a plan file says all a renderer
//! needs, and reading it back gives the same artifacts, in the same order, written back byte for byte.
//!
//! Plan files written before artifacts were top level (a domains plan with `infrastructure_status: null`,
//! `egress_cidrs: null` and its artifacts under `named`) read as they were written — `named` is an
//! artifact of its own ([`Artifact::Named`]) — so their digests verify; what they show
//! ([`Artifacts::shown`]), and what `apply` and `diff` compare, is the same as for the top-level shape.

use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;

/// The cloud-provider config the CCM receives (Azure `azure.json`, GCP `cloudprovider.conf`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct CloudProviderConfig {
    /// The name reviewers know the file by (`azure.json`), as its provider names it. Empty in plan files
    /// written before plans recorded it: shown as [`CloudProviderConfig::shown_name`] says.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub file_name: String,
    pub format: ConfigFormat,
    /// Key → value, in the order upstream renders them.
    pub values: serde_json::Map<String, Value>,
    /// The rendered file, byte for byte.
    pub content: String,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum ConfigFormat {
    #[default]
    Yaml,
    Ini,
}

impl CloudProviderConfig {
    /// The name the file is shown under: its [`CloudProviderConfig::file_name`], or, for a plan file that
    /// does not record one, `cloud-provider config (<format>)`.
    pub fn shown_name(&self) -> std::borrow::Cow<'_, str> {
        if self.file_name.is_empty() {
            format!("cloud-provider config ({})", self.format.as_str()).into()
        } else {
            self.file_name.as_str().into()
        }
    }
}

impl ConfigFormat {
    /// The language of a markdown code block holding the file.
    pub fn as_str(self) -> &'static str {
        match self {
            ConfigFormat::Yaml => "yaml",
            ConfigFormat::Ini => "ini",
        }
    }
}

/// The name of an artifact that is a plain value: any name but the fixed names of the typed artifacts
/// ([`Artifact::NAMES`]), so that reading a plan file back gives the artifact it was written from.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ArtifactName(String);

/// A value artifact was given the fixed name of a typed one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("artifact name `{0}` is reserved for the typed artifact of that name")]
pub struct ReservedArtifactName(pub String);

impl ArtifactName {
    pub fn new(name: impl Into<String>) -> Result<ArtifactName, ReservedArtifactName> {
        let name = name.into();
        if Artifact::NAMES.contains(&name.as_str()) {
            return Err(ReservedArtifactName(name));
        }
        Ok(ArtifactName(name))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// One artifact: its name and its value, typed by how it renders.
#[derive(Clone, Debug, PartialEq)]
pub enum Artifact {
    /// `infrastructure_status`: the provider's InfrastructureStatus, with upstream JSON field names; shown
    /// as the keys a reviewer scans, diffed as `status.json`. `null`: the plan produced no infrastructure
    /// artifacts (a destroy plan, whose JSON keeps the empty ones earlier versions wrote): then the plan
    /// shows only its [`Artifact::Value`]s.
    InfrastructureStatus(Value),
    /// `egress_cidrs`: `shoot.status.provider.egressCIDRs`; `None` (`null`) when Gardener cannot know
    /// them (user-managed egress). Addresses of public IPs that do not exist yet read `(known after apply)`.
    EgressCidrs(Option<Vec<String>>),
    /// `cloud_provider_config`: the file the CCM reads, shown under the name reviewers know it by
    /// ([`CloudProviderConfig::file_name`]).
    CloudProviderConfig(CloudProviderConfig),
    /// `ccm_flags`: CCM command-line flags that depend on the configuration.
    CcmFlags(BTreeMap<String, bool>),
    /// `allow_egress`: whether the `allow-{tcp,udp}-egress` Services are deployed.
    AllowEgress(bool),
    /// `named`: values by name, each shown as a [`Artifact::Value`] of that name would be (GCP keeps its
    /// `status_networking` here; plan files written before artifacts were top level hold a domains plan's).
    Named(BTreeMap<String, Value>),
    /// Any other name: a value shown on one line (a string as it is, anything else as compact JSON) and
    /// diffed as pretty JSON.
    Value { name: ArtifactName, value: Value },
}

impl Artifact {
    /// The fixed names of the typed artifacts.
    pub const NAMES: [&'static str; 6] =
        ["infrastructure_status", "egress_cidrs", "cloud_provider_config", "ccm_flags", "allow_egress", "named"];

    /// A value artifact named `name`.
    pub fn value(name: impl Into<String>, value: Value) -> Result<Artifact, ReservedArtifactName> {
        Ok(Artifact::Value { name: ArtifactName::new(name)?, value })
    }

    /// The artifact's key in the JSON.
    pub fn name(&self) -> &str {
        match self {
            Artifact::InfrastructureStatus(_) => Artifact::NAMES[0],
            Artifact::EgressCidrs(_) => Artifact::NAMES[1],
            Artifact::CloudProviderConfig(_) => Artifact::NAMES[2],
            Artifact::CcmFlags(_) => Artifact::NAMES[3],
            Artifact::AllowEgress(_) => Artifact::NAMES[4],
            Artifact::Named(_) => Artifact::NAMES[5],
            Artifact::Value { name, .. } => name.as_str(),
        }
    }

    /// Reads the artifact `name` from its JSON value.
    fn read<'de, A: MapAccess<'de>>(name: String, map: &mut A) -> Result<Artifact, A::Error> {
        Ok(match name.as_str() {
            "infrastructure_status" => Artifact::InfrastructureStatus(map.next_value()?),
            "egress_cidrs" => Artifact::EgressCidrs(map.next_value()?),
            "cloud_provider_config" => Artifact::CloudProviderConfig(map.next_value()?),
            "ccm_flags" => Artifact::CcmFlags(map.next_value()?),
            "allow_egress" => Artifact::AllowEgress(map.next_value()?),
            "named" => Artifact::Named(map.next_value()?),
            _ => Artifact::Value { name: ArtifactName(name), value: map.next_value()? },
        })
    }
}

/// An artifact as a plan shows it (and as `apply` and `diff` compare it): the members of
/// [`Artifact::Named`] as values of their own.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Shown<'a> {
    InfrastructureStatus(&'a Value),
    EgressCidrs(Option<&'a [String]>),
    CloudProviderConfig(&'a CloudProviderConfig),
    CcmFlags(&'a BTreeMap<String, bool>),
    AllowEgress(bool),
    Value(&'a str, &'a Value),
}

impl<'a> Shown<'a> {
    /// The artifact named `name` in `list`.
    pub fn find(list: &[Shown<'a>], name: &str) -> Option<Shown<'a>> {
        list.iter().find(|s| s.name() == name).copied()
    }

    /// The name it is shown and compared by.
    pub fn name(&self) -> &str {
        match self {
            Shown::InfrastructureStatus(_) => Artifact::NAMES[0],
            Shown::EgressCidrs(_) => Artifact::NAMES[1],
            Shown::CloudProviderConfig(_) => Artifact::NAMES[2],
            Shown::CcmFlags(_) => Artifact::NAMES[3],
            Shown::AllowEgress(_) => Artifact::NAMES[4],
            Shown::Value(name, _) => name,
        }
    }
}

/// A plan's artifacts, in the provider's order, at most one per name.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Artifacts {
    items: Vec<Artifact>,
}

impl Artifacts {
    pub fn new() -> Artifacts {
        Artifacts::default()
    }

    /// Sets `artifact`: one of the same name is replaced in its place, otherwise it goes last.
    pub fn set(&mut self, artifact: Artifact) {
        match self.items.iter_mut().find(|a| a.name() == artifact.name()) {
            Some(slot) => *slot = artifact,
            None => self.items.push(artifact),
        }
    }

    /// [`Artifacts::set`], for building.
    pub fn with(mut self, artifact: Artifact) -> Artifacts {
        self.set(artifact);
        self
    }

    /// Sets the value artifact `name`.
    pub fn set_value(&mut self, name: impl Into<String>, value: Value) -> Result<(), ReservedArtifactName> {
        self.set(Artifact::value(name, value)?);
        Ok(())
    }

    /// Every artifact, in order.
    pub fn iter(&self) -> std::slice::Iter<'_, Artifact> {
        self.items.iter()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn get(&self, name: &str) -> Option<&Artifact> {
        self.items.iter().find(|a| a.name() == name)
    }

    /// The InfrastructureStatus, when the plan has one (`null` in a destroy plan).
    pub fn infrastructure_status(&self) -> Option<&Value> {
        self.items.iter().find_map(|a| match a {
            Artifact::InfrastructureStatus(v) => Some(v),
            _ => None,
        })
    }

    /// The egress CIDRs, when the plan has them (`Some(None)`: Gardener cannot know them).
    pub fn egress_cidrs(&self) -> Option<Option<&[String]>> {
        self.items.iter().find_map(|a| match a {
            Artifact::EgressCidrs(v) => Some(v.as_deref()),
            _ => None,
        })
    }

    pub fn cloud_provider_config(&self) -> Option<&CloudProviderConfig> {
        self.items.iter().find_map(|a| match a {
            Artifact::CloudProviderConfig(c) => Some(c),
            _ => None,
        })
    }

    pub fn ccm_flags(&self) -> Option<&BTreeMap<String, bool>> {
        self.items.iter().find_map(|a| match a {
            Artifact::CcmFlags(f) => Some(f),
            _ => None,
        })
    }

    pub fn allow_egress(&self) -> Option<bool> {
        self.items.iter().find_map(|a| match a {
            Artifact::AllowEgress(b) => Some(*b),
            _ => None,
        })
    }

    /// The value artifact `name` (or the member `name` of [`Artifact::Named`]), as [`Artifacts::shown`]
    /// has it.
    pub fn value(&self, name: &str) -> Option<&Value> {
        self.shown().into_iter().find_map(|s| match s {
            Shown::Value(n, v) if n == name => Some(v),
            _ => None,
        })
    }

    /// What the plan shows, in order: every artifact, the members of [`Artifact::Named`] as values of
    /// their own; when the InfrastructureStatus is `null` (the plan produced no infrastructure artifacts)
    /// only the values. The renderers, `apply`'s comparison of a saved plan with a fresh one and `diff`
    /// read the artifacts through this, so a plan file written with its artifacts under `named` and the
    /// same artifacts at the top level show and compare the same.
    pub fn shown(&self) -> Vec<Shown<'_>> {
        let none = self.infrastructure_status().is_some_and(Value::is_null);
        let mut out = Vec::with_capacity(self.items.len());
        for a in &self.items {
            match a {
                Artifact::Named(values) => out.extend(values.iter().map(|(n, v)| Shown::Value(n, v))),
                Artifact::Value { name, value } => out.push(Shown::Value(name.as_str(), value)),
                _ if none => {}
                Artifact::InfrastructureStatus(v) => out.push(Shown::InfrastructureStatus(v)),
                Artifact::EgressCidrs(c) => out.push(Shown::EgressCidrs(c.as_deref())),
                Artifact::CloudProviderConfig(c) => out.push(Shown::CloudProviderConfig(c)),
                Artifact::CcmFlags(f) => out.push(Shown::CcmFlags(f)),
                Artifact::AllowEgress(b) => out.push(Shown::AllowEgress(*b)),
            }
        }
        out
    }
}

impl FromIterator<Artifact> for Artifacts {
    fn from_iter<I: IntoIterator<Item = Artifact>>(iter: I) -> Artifacts {
        let mut out = Artifacts::new();
        for a in iter {
            out.set(a);
        }
        out
    }
}

impl Serialize for Artifacts {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.items.len()))?;
        for a in &self.items {
            match a {
                Artifact::InfrastructureStatus(v) => map.serialize_entry(a.name(), v)?,
                Artifact::EgressCidrs(v) => map.serialize_entry(a.name(), v)?,
                Artifact::CloudProviderConfig(v) => map.serialize_entry(a.name(), v)?,
                Artifact::CcmFlags(v) => map.serialize_entry(a.name(), v)?,
                Artifact::AllowEgress(v) => map.serialize_entry(a.name(), v)?,
                Artifact::Named(v) => map.serialize_entry(a.name(), v)?,
                Artifact::Value { value, .. } => map.serialize_entry(a.name(), value)?,
            }
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Artifacts {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Artifacts, D::Error> {
        struct ArtifactsVisitor;
        impl<'de> Visitor<'de> for ArtifactsVisitor {
            type Value = Artifacts;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object of artifacts by name")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Artifacts, A::Error> {
                let mut out = Artifacts::new();
                while let Some(name) = map.next_key::<String>()? {
                    if out.get(&name).is_some() {
                        return Err(de::Error::custom(format!("artifact `{name}` twice")));
                    }
                    out.items.push(Artifact::read(name, &mut map)?);
                }
                Ok(out)
            }
        }
        deserializer.deserialize_map(ArtifactsVisitor)
    }
}
