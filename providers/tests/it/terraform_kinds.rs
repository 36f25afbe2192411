//! Each provider's Terraform facts (`Stages::terraform_kind`, declared beside its kinds): the Terraform
//! provider's type for every kind that is the same resource, and what the cloud sets on a create.

use serde_json::json;
use trellis_plans::Kind;
use trellis_providers::{azure, domains, gcp};

fn type_of(t: trellis_plans::terraform::TerraformKind) -> Option<(&'static str, &'static str)> {
    t.resource_type.map(|t| (t.name, t.source))
}

#[test]
fn every_azure_kind_is_an_azurerm_type() {
    use azure::kind::*;
    let rm = "registry.terraform.io/hashicorp/azurerm";
    for (kind, name) in [
        (RESOURCE_GROUP, "azurerm_resource_group"),
        (VIRTUAL_NETWORK, "azurerm_virtual_network"),
        (SUBNET, "azurerm_subnet"),
        (ROUTE_TABLE, "azurerm_route_table"),
        (NETWORK_SECURITY_GROUP, "azurerm_network_security_group"),
        (NAT_GATEWAY, "azurerm_nat_gateway"),
        (PUBLIC_IP_ADDRESS, "azurerm_public_ip"),
        (MANAGED_IDENTITY, "azurerm_user_assigned_identity"),
        (LOAD_BALANCER, "azurerm_lb"),
        (SECURITY_RULE, "azurerm_network_security_rule"),
        (ROUTE, "azurerm_route"),
    ] {
        assert_eq!(type_of(terraform_kind(kind, None)), Some((name, rm)), "{kind:?}");
    }
    assert_eq!(type_of(terraform_kind(Kind::new("bucket"), None)), None);
    // A new public IP's address is ARM's to assign; its id, name and type follow from the id.
    let id = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/publicIPAddresses/ip";
    let ip = terraform_kind(PUBLIC_IP_ADDRESS, Some(id));
    assert!(ip.computed.contains(&"/properties/ipAddress") && ip.computed.contains(&"/etag"));
    assert_eq!(ip.rewritten, ["/etag"]);
    assert_eq!(
        ip.known_on_create,
        [("/id", json!(id)), ("/name", json!("ip")), ("/type", json!("Microsoft.Network/publicIPAddresses"))]
    );
    // A resource group has no etag.
    assert!(terraform_kind(RESOURCE_GROUP, None).rewritten.is_empty());
}

#[test]
fn every_gcp_kind_is_a_google_type() {
    use gcp::kind::*;
    let g = "registry.terraform.io/hashicorp/google";
    for (kind, name) in [
        (NETWORK, "google_compute_network"),
        (SUBNETWORK, "google_compute_subnetwork"),
        (ROUTER, "google_compute_router"),
        (CLOUD_NAT, "google_compute_router_nat"),
        (FIREWALL, "google_compute_firewall"),
        (ADDRESS, "google_compute_address"),
        (ROUTE, "google_compute_route"),
        (SERVICE_ACCOUNT, "google_service_account"),
    ] {
        assert_eq!(type_of(terraform_kind(kind, None)), Some((name, g)), "{kind:?}");
    }
    let address = terraform_kind(ADDRESS, Some("projects/p/regions/r/addresses/a"));
    assert!(["/id", "/creationTimestamp", "/address"].iter().all(|p| address.computed.contains(p)));
    assert_eq!(
        address.known_on_create,
        [("/selfLink", json!("https://www.googleapis.com/compute/v1/projects/p/regions/r/addresses/a"))]
    );
    // Only a subnetwork has a fingerprint in GCE's v1 API.
    assert_eq!(terraform_kind(SUBNETWORK, None).rewritten, ["/fingerprint"]);
    assert!(terraform_kind(FIREWALL, None).rewritten.is_empty());
}

/// A record set is its DNS provider's record type, the provider named by the `DNSRecord` it is
/// linked to in the plan (the one of its name and type); the `DNSRecord` itself is a Kubernetes
/// object no Terraform provider has.
#[test]
fn a_dns_record_set_is_its_dns_providers_record_type_and_a_dns_record_is_unmapped() {
    use domains::kind::{terraform_kind, DNS_RECORD, DNS_RECORD_SET};
    let record = |dns: &str, ty: &str| json!({"spec": {"type": dns, "recordType": ty, "name": "api.example.com"}});
    let set = |ty: &str| json!({"name": "api.example.com", "type": ty, "ttl": 120, "values": ["x"]});
    let of = |dns: &str, ty: &str| {
        let (r, s) = (record(dns, ty), set(ty));
        type_of(terraform_kind(DNS_RECORD_SET, None, Some(&s), &[&r])).map(|(name, _)| name)
    };
    assert_eq!(of("azure-dns", "A"), Some("azurerm_dns_a_record"));
    assert_eq!(of("azure-dns", "AAAA"), Some("azurerm_dns_aaaa_record"));
    assert_eq!(of("azure-dns", "CNAME"), Some("azurerm_dns_cname_record"));
    assert_eq!(of("azure-dns", "TXT"), Some("azurerm_dns_txt_record"));
    assert_eq!(of("google-clouddns", "A"), Some("google_dns_record_set"));
    // A DNS provider Terraform has no type of here: `domains_dns_record_set`.
    assert_eq!(of("aws-route53", "A"), None);
    // Only the DNSRecord of the set's name and type counts; without one, unmapped.
    let (a, other) = (set("A"), json!({"spec": {"type": "azure-dns", "recordType": "A", "name": "www.example.com"}}));
    assert_eq!(type_of(terraform_kind(DNS_RECORD_SET, None, Some(&a), &[&other])), None);
    let aaaa = record("azure-dns", "AAAA");
    assert_eq!(type_of(terraform_kind(DNS_RECORD_SET, None, Some(&a), &[&aaaa])), None);
    assert_eq!(type_of(terraform_kind(DNS_RECORD_SET, None, Some(&a), &[])), None);
    // Only the etag is the cloud's; the zone is in the set's id, known before the create.
    let placed = terraform_kind(DNS_RECORD_SET, Some("/dns/zones/example.com/records/api.example.com/A"), None, &[]);
    assert_eq!(placed.computed, ["/etag"]);
    assert_eq!(placed.known_on_create, vec![("/zone", json!("example.com"))]);
    // The DNSRecord object: a Kubernetes manifest, whatever its DNS provider.
    let r = record("azure-dns", "A");
    assert_eq!(
        type_of(terraform_kind(DNS_RECORD, None, Some(&r), &[&a])),
        Some(("kubernetes_manifest", "registry.terraform.io/hashicorp/kubernetes"))
    );
}
