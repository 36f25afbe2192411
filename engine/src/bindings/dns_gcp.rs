//! The domains provider's binding with `--cloud gcp`: record sets (`/dns`, `/dns/zones/…` ids) go
//! to Cloud DNS through the Cloud DNS adaptor ([`trellis_gcp_client::dns::CloudDns`], Google's
//! `google-cloud-dns-v1`), the seeds' `DNSRecord` objects stay in the simulated DNS
//! ([`Chosen::Beside`]). Credentials, `--project` and `--endpoint` are the GCE client's: the
//! service-account key file named by `GOOGLE_APPLICATION_CREDENTIALS`, the project of the shoots
//! (`GOOGLE_CLOUD_PROJECT`), an emulator such as `trellis sim serve` at `--endpoint`.
//!
//! Zones in another project: `--dns-project P` (repeatable, `TRELLIS_DNS_PROJECT` comma-separated)
//! names the projects whose managed zones the record sets go into, instead of `--project` — a
//! landscape keeps its DNS zones in a project of their own. A zone's DNS name held in two of them
//! is refused, naming both.
//!
//! `trellis sim serve` serves the simulated DNS's zones and record sets as Cloud DNS v1
//! ([`with_cloud_dns`], the paths [`claims_path`] accepts) for the adaptor.

use crate::binding::{Chosen, CloudChoice};
use anyhow::{Context as _, Result};
use std::sync::Arc;
use trellis_gcp_client::dns::{CloudDns, DnsOptions};
use trellis_gcp_client::{Credentials, Url};
use trellis_sim::DnsSim;

/// The id of the `--dns-project` flag.
pub const DNS_PROJECT: &str = "dns_project";

/// The flags of the Cloud DNS arm.
pub fn args() -> Vec<clap::Arg> {
    vec![clap::Arg::new(DNS_PROJECT)
        .long("dns-project")
        .value_name("ID")
        .env("TRELLIS_DNS_PROJECT")
        .value_delimiter(',')
        .action(clap::ArgAction::Append)
        .global(true)
        .help("With --cloud gcp: the GCP project(s) whose Cloud DNS managed zones hold the domains' record sets (repeatable; default: --project)")]
}

/// Whether a neutral id is Cloud DNS's with `--cloud gcp`: the zones and their record sets.
pub fn claims(id: &str) -> bool {
    id == "/dns" || id.starts_with("/dns/")
}

/// `--cloud gcp`: the Cloud DNS adaptor beside the simulated DNS.
pub async fn choose(choice: &CloudChoice<'_>) -> Result<Chosen> {
    let project = choice.flag("project").map(str::trim).unwrap_or_default();
    if project.is_empty() {
        anyhow::bail!("--cloud gcp needs a project: pass --project ID or set GOOGLE_CLOUD_PROJECT");
    }
    let project = super::gcp::project_id(project)?;
    let mut zone_projects = Vec::new();
    for p in dns_projects(choice.flags) {
        let p = p.trim();
        if p.is_empty() {
            continue;
        }
        let p = super::gcp::project_id(p).map_err(|_| {
            anyhow::anyhow!("--dns-project '{p}' is not a GCP project id (6 to 30 lowercase letters, digits and hyphens, starting with a letter, not ending with a hyphen), e.g. acme-dns")
        })?;
        if !zone_projects.contains(&p) {
            zone_projects.push(p);
        }
    }
    let endpoint = match choice.endpoint {
        Some(url) => Some(Url::parse(url.trim()).map_err(|e| {
            anyhow::anyhow!("--endpoint '{url}' is not a URL ({e}); pass e.g. https://dns.googleapis.com or http://127.0.0.1:PORT of an emulator")
        })?),
        None => None,
    };
    let dns = CloudDns::new(&project, &zone_projects, endpoint, Credentials::FromEnv, DnsOptions::default())
        .await
        .context("--cloud gcp cannot sign in to Cloud DNS")?;
    Ok(Chosen::Beside { real: Arc::new(dns), account: project, claims })
}

/// `--dns-project`'s values (none when the command has no such flag).
fn dns_projects(flags: &clap::ArgMatches) -> Vec<String> {
    flags.try_get_many::<String>(DNS_PROJECT).ok().flatten().map(|v| v.cloned().collect()).unwrap_or_default()
}

/// Whether a request path is Cloud DNS v1's (`trellis sim serve`).
pub fn claims_path(path: &str) -> bool {
    trellis_sim_http::clouddns::is_clouddns_path(path)
}

/// `other` (the simulated DNS's other served API) with the Cloud DNS v1 paths ([`claims_path`])
/// answered by the simulated DNS served as Cloud DNS.
pub fn with_cloud_dns(other: axum::Router, sim: &DnsSim) -> axum::Router {
    use tower::ServiceExt as _;
    let cloud_dns = trellis_sim_http::clouddns::CloudDnsServer::new(Arc::new(sim.clone())).router();
    axum::Router::new().fallback(move |req: axum::extract::Request| {
        let router = if claims_path(req.uri().path()) { cloud_dns.clone() } else { other.clone() };
        async move {
            match router.oneshot(req).await {
                Ok(response) => response,
                Err(never) => match never {},
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_sets_and_zones_are_claimed_dnsrecord_objects_are_not() {
        assert!(claims("/dns"));
        assert!(claims("/dns/zones/example.com"));
        assert!(claims("/dns/zones/example.com/records/api.example.com/A"));
        assert!(!claims("/seeds/s/namespaces/shoot--dev--a/dnsrecords/a-external"));
        assert!(!claims("/dnsx"));
    }
}
