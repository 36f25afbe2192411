//! The providers trellis knows, by `spec.provider.type`.
//!
//! [`Registry::builtin`] is the providers built into trellis; the loader dispatches Shoots through a
//! [`Registry`] (the builtin one, or one its caller built: [`crate::manifest::load_with`]). The engine
//! builds the registry it plans with from its own (`trellis_engine::registry`), which pairs each
//! provider with its cloud binding; a provider added there at run time is dispatched like a builtin one.

use crate::provider::Provider;
use std::sync::LazyLock;

/// The providers built into trellis, by `spec.provider.type`.
static BUILTIN: LazyLock<Registry> =
    LazyLock::new(|| Registry::new(vec![&crate::azure::provider::AZURE, &crate::gcp::provider::GCP]));

/// A set of providers, by `spec.provider.type`.
#[derive(Clone)]
pub struct Registry {
    providers: Vec<&'static dyn Provider>,
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
    pub fn new(providers: Vec<&'static dyn Provider>) -> Registry {
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

    /// Every registered provider, in registration order.
    pub fn providers(&self) -> &[&'static dyn Provider] {
        &self.providers
    }
}
