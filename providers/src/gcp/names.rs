//! Resource names as upstream's `infraflow` names them (`ensure_utils.go`, `firewall.go`,
//! `kubernetes.go`), GCE selfLink paths, and plan addresses.
//!
//! Ids are selfLink paths from `projects/` on (`projects/P/global/networks/N`,
//! `projects/P/regions/R/subnetworks/S`), the form [`trellis_planner::ids::GceIds`] keys; a value
//! written into a resource (a subnet's `network`, a NAT's subnetworks, a firewall's `network`) is the
//! full URL GCE answers with ([`url`]), so a written reference reads back unchanged.
//!
//! There is no `-allow-external-access` rule: upstream removed it (provider-gcp #876).

use super::api::InfrastructureConfig;
use trellis_plans::Kind;

/// The origin and version GCE spells selfLinks with.
pub const COMPUTE_V1: &str = "https://www.googleapis.com/compute/v1/";
/// Upstream's `DefaultSecondarySubnetName`: the managed nodes subnet's pod range (dual-stack).
pub const SECONDARY_RANGE_PODS: &str = "ipv4-pod-cidr";
/// Upstream's `KubernetesFirewallNamePrefix`.
pub const KUBERNETES_FIREWALL_PREFIX: &str = "k8s";
/// Upstream's `ShootPrefix`: CCM routes are named `shoot--…`.
pub const SHOOT_ROUTE_PREFIX: &str = "shoot--";

/// The list collections discovery runs ([`trellis_planner::discover::ListReq`] `rtype`).
pub mod collection {
    /// `projects/P/global` → firewall rules of the project.
    pub const FIREWALLS: &str = "firewalls";
    /// `projects/P/global` → routes of the project.
    pub const ROUTES: &str = "routes";
}

pub fn service_account_name(tn: &str) -> String {
    tn.to_string()
}
pub fn nodes_subnet(tn: &str) -> String {
    format!("{tn}-nodes")
}
pub fn internal_subnet(tn: &str) -> String {
    format!("{tn}-internal")
}
pub fn services_subnet(tn: &str) -> String {
    format!("{tn}-services")
}
pub fn cloud_router(tn: &str) -> String {
    format!("{tn}-cloud-router")
}
pub fn cloud_nat(tn: &str) -> String {
    format!("{tn}-cloud-nat")
}
pub fn fw_allow_internal(tn: &str) -> String {
    format!("{tn}-allow-internal-access")
}
pub fn fw_allow_internal_ipv6(tn: &str) -> String {
    format!("{tn}-allow-internal-access-ipv6")
}
pub fn fw_allow_health_checks(tn: &str) -> String {
    format!("{tn}-allow-health-checks")
}
pub fn fw_allow_health_checks_ipv6(tn: &str) -> String {
    format!("{tn}-allow-health-checks-ipv6")
}

/// The VPC: the user's (`networks.vpc.name`) or `<tn>` (upstream `vpcNameFromConfig`).
pub fn vpc_name(cfg: &InfrastructureConfig, tn: &str) -> String {
    match &cfg.networks.vpc {
        Some(v) if !v.name.is_empty() => v.name.clone(),
        _ => tn.to_string(),
    }
}

/// Whether the VPC is the user's (upstream `isUserVPC`).
pub fn is_user_vpc(cfg: &InfrastructureConfig) -> bool {
    cfg.networks.vpc.as_ref().is_some_and(|v| !v.name.is_empty())
}

/// The user's Cloud Router (`networks.vpc.cloudRouter.name`, upstream `isUserRouter`).
pub fn user_router(cfg: &InfrastructureConfig) -> Option<&str> {
    cfg.networks.vpc.as_ref()?.cloud_router.as_ref().map(|r| r.name.as_str()).filter(|n| !n.is_empty())
}

/// The Cloud Router: the user's or `<tn>-cloud-router` (upstream `cloudRouterNameFromConfig`).
pub fn router_name(cfg: &InfrastructureConfig, tn: &str) -> String {
    user_router(cfg).map(str::to_string).unwrap_or_else(|| cloud_router(tn))
}

pub fn global(project: &str) -> String {
    format!("projects/{project}/global")
}
pub fn regional(project: &str, region: &str) -> String {
    format!("projects/{project}/regions/{region}")
}
pub fn network_link(project: &str, name: &str) -> String {
    format!("{}/networks/{name}", global(project))
}
pub fn subnet_link(project: &str, region: &str, name: &str) -> String {
    format!("{}/subnetworks/{name}", regional(project, region))
}
pub fn router_link(project: &str, region: &str, name: &str) -> String {
    format!("{}/routers/{name}", regional(project, region))
}
/// A Cloud NAT: an entry of its router's `nats[]`, addressed as `<router>/nats/<name>` (GET answers
/// the entry; a write is a write of the router with that entry, see the module docs of `desired`).
pub fn nat_link(project: &str, region: &str, router: &str, name: &str) -> String {
    format!("{}/nats/{name}", router_link(project, region, router))
}
pub fn address_link(project: &str, region: &str, name: &str) -> String {
    format!("{}/addresses/{name}", regional(project, region))
}
pub fn firewall_link(project: &str, name: &str) -> String {
    format!("{}/firewalls/{name}", global(project))
}
pub fn route_link(project: &str, name: &str) -> String {
    format!("{}/routes/{name}", global(project))
}
/// The IAM service account `<tn>@<project>.iam.gserviceaccount.com`.
pub fn service_account_email(project: &str, tn: &str) -> String {
    format!("{}@{project}.iam.gserviceaccount.com", service_account_name(tn))
}
pub fn service_account_link(project: &str, tn: &str) -> String {
    format!("projects/{project}/serviceAccounts/{}", service_account_email(project, tn))
}

/// The full URL of a selfLink path, as GCE writes references.
pub fn url(link: &str) -> String {
    format!("{COMPUTE_V1}{link}")
}

/// The last segment of a selfLink or URL (a resource's name).
pub fn last_segment(link: &str) -> &str {
    link.trim_end_matches('/').rsplit('/').next().unwrap_or(link)
}

/// `gcp.<kind>.<scope>.<name>`: the plan address. GCE names are lower case by rule and compared
/// case-sensitively, so the address keeps them as they are.
pub fn address(kind: Kind, scope: &str, name: &str) -> String {
    format!("gcp.{}.{scope}.{name}", kind.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_upstreams() {
        let tn = "shoot--p--n";
        assert_eq!(nodes_subnet(tn), "shoot--p--n-nodes");
        assert_eq!(internal_subnet(tn), "shoot--p--n-internal");
        assert_eq!(services_subnet(tn), "shoot--p--n-services");
        assert_eq!(cloud_router(tn), "shoot--p--n-cloud-router");
        assert_eq!(cloud_nat(tn), "shoot--p--n-cloud-nat");
        assert_eq!(fw_allow_internal(tn), "shoot--p--n-allow-internal-access");
        assert_eq!(fw_allow_internal_ipv6(tn), "shoot--p--n-allow-internal-access-ipv6");
        assert_eq!(fw_allow_health_checks(tn), "shoot--p--n-allow-health-checks");
        assert_eq!(fw_allow_health_checks_ipv6(tn), "shoot--p--n-allow-health-checks-ipv6");
        assert_eq!(subnet_link("pr", "europe-west1", "s"), "projects/pr/regions/europe-west1/subnetworks/s");
        assert_eq!(nat_link("pr", "r", "rt", "n"), "projects/pr/regions/r/routers/rt/nats/n");
        assert_eq!(
            url(&network_link("pr", "v")),
            "https://www.googleapis.com/compute/v1/projects/pr/global/networks/v"
        );
        assert_eq!(last_segment("https://x/projects/p/zones/z/instances/shoot--p--n-w-1"), "shoot--p--n-w-1");
        assert_eq!(service_account_email("pr", tn), "shoot--p--n@pr.iam.gserviceaccount.com");
    }

    #[test]
    fn vpc_and_router_follow_the_config() {
        let cfg: InfrastructureConfig =
            serde_json::from_str(r#"{"networks":{"vpc":{"name":"v","cloudRouter":{"name":"r"}}}}"#).unwrap();
        assert_eq!((vpc_name(&cfg, "t"), router_name(&cfg, "t")), ("v".to_string(), "r".to_string()));
        let cfg = InfrastructureConfig::default();
        assert_eq!((vpc_name(&cfg, "t"), router_name(&cfg, "t")), ("t".to_string(), "t-cloud-router".to_string()));
        assert!(!is_user_vpc(&cfg));
    }
}
