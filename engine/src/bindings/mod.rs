//! The cloud bindings built into trellis ([`crate::binding::CloudBinding`]), one module per cloud:
//! [`azure`] (simulated ARM, the ARM client), [`gcp`] (simulated GCE, the GCE client) and [`dns`] (the
//! simulated DNS of the domains provider).

pub mod azure;
pub mod dns;
pub mod dns_gcp;
pub mod gcp;
