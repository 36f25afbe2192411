//! The providers trellis knows, by `spec.provider.type`.
//!
//! [`Registry::builtin`] is the one list: the loader dispatches every Shoot through it and the CLI
//! plans, applies and checks fleets through the [`Provider`] it returns. Adding a provider is one
//! module implementing [`Provider`] and one line in [`BUILTIN`].

use crate::provider::Provider;

/// The providers built into trellis.
static BUILTIN: Registry = Registry::new(&[&crate::azure::provider::AZURE, &crate::gcp::provider::GCP]);

/// A set of providers, by `spec.provider.type`.
pub struct Registry {
    providers: &'static [&'static dyn Provider],
}

/// A `spec.provider.type` no registered provider handles.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "{}; trellis supports: {}",
    if provider_type.is_empty() { "not set".to_string() } else { format!("unsupported provider type {provider_type:?}") },
    supported.join(", ")
)]
pub struct UnknownProvider {
    /// The type asked for (empty: not set).
    pub provider_type: String,
    /// The registered types, in registration order.
    pub supported: Vec<&'static str>,
}

impl Registry {
    /// A registry of `providers` (their types must differ; the first of a type wins).
    pub const fn new(providers: &'static [&'static dyn Provider]) -> Registry {
        Registry { providers }
    }

    /// The providers built into trellis.
    pub fn builtin() -> &'static Registry {
        &BUILTIN
    }

    /// The provider of `spec.provider.type` `provider_type`.
    pub fn get(&self, provider_type: &str) -> Result<&'static dyn Provider, UnknownProvider> {
        self.providers
            .iter()
            .copied()
            .find(|p| p.type_name() == provider_type)
            .ok_or_else(|| UnknownProvider { provider_type: provider_type.to_string(), supported: self.types() })
    }

    /// The registered `spec.provider.type` values, in registration order.
    pub fn types(&self) -> Vec<&'static str> {
        self.providers.iter().map(|p| p.type_name()).collect()
    }

    /// The GEP-0066 `domains` provider. Not among the providers by `spec.provider.type`: any Shoot
    /// whose Seed is among the inputs gets a domains plan beside its infrastructure plan
    /// ([`crate::domains::pair`]).
    pub fn domains(&self) -> &'static dyn Provider {
        &crate::domains::DOMAINS
    }

    /// Every registered provider, in registration order.
    pub fn providers(&self) -> &'static [&'static dyn Provider] {
        self.providers
    }
}
