//! The resource kinds domains plans name, as the plan JSON spells them (see [`trellis_plans::Kind`]).

use serde_json::Value;
use trellis_plans::terraform::{TerraformKind, TerraformType};
use trellis_plans::Kind;

/// A Gardener `DNSRecord` object in the seed (`/seeds/{seed}/namespaces/{ns}/dnsrecords/{name}`).
pub const DNS_RECORD: Kind = Kind::new("dns_record");

/// The record set the DNS provider extension writes for a `DNSRecord`
/// (`/dns/zones/{zone}/records/{fqdn}/{TYPE}`, body `{name, type, ttl, values}`).
pub const DNS_RECORD_SET: Kind = Kind::new("dns_record_set");

/// The Terraform providers of the DNS services a `DNSRecord` can name (their source addresses).
const AZURERM: &str = "registry.terraform.io/hashicorp/azurerm";
const GOOGLE: &str = "registry.terraform.io/hashicorp/google";
/// A `DNSRecord` is a Kubernetes object: HashiCorp's kubernetes provider holds any as `kubernetes_manifest`.
const KUBERNETES: &str = "registry.terraform.io/hashicorp/kubernetes";

/// What Terraform's readers are told about a domains node.
///
/// - A `DNSRecord` (`dns_record`) is a Kubernetes object of the seed, not a DNS resource: Terraform
///   has it as `kubernetes_manifest` (HashiCorp's kubernetes provider; the object is the manifest).
///   Unknown after a create what the API server assigns; unknown after any write its version.
/// - A record set (`dns_record_set`, `body` its `{name, type, ttl, values}`) is the DNS provider's
///   record: `azure-dns` → `azurerm_dns_<a|aaaa|cname|txt>_record`, `google-clouddns` →
///   `google_dns_record_set`, any other provider (or none known) `domains_dns_record_set`. The DNS
///   provider is the `spec.type` of the `DNSRecord` the set is written for: the node it is linked to in
///   the plan (`related`: a create or update depends on its `DNSRecord`'s node, a `DNSRecord`'s delete
///   depends on the set's), the one whose `spec.name` and `spec.recordType` are the set's. The record
///   set's body carries no provider (its id and body are the same for every cloud). `etag` and `zone`
///   are read only: unknown after a create, the etag after any write.
pub fn terraform_kind(kind: Kind, id: Option<&str>, body: Option<&Value>, related: &[&Value]) -> TerraformKind {
    match kind {
        DNS_RECORD => TerraformKind {
            resource_type: Some(TerraformType { name: "kubernetes_manifest", source: KUBERNETES }),
            computed: &[
                "/metadata/uid",
                "/metadata/resourceVersion",
                "/metadata/creationTimestamp",
                "/metadata/generation",
            ],
            rewritten: &["/metadata/resourceVersion", "/metadata/generation"],
            known_on_create: Vec::new(),
        },
        DNS_RECORD_SET => {
            let field = |v: &Value, pointer: &str| v.pointer(pointer).and_then(Value::as_str).map(normal_name);
            let name = body.and_then(|b| field(b, "/name"));
            let rtype = body.and_then(|b| b.get("type")).and_then(Value::as_str).map(str::to_ascii_uppercase);
            let provider = related
                .iter()
                .find(|r| {
                    name.is_some()
                        && field(r, "/spec/name") == name
                        && r.pointer("/spec/recordType").and_then(Value::as_str).map(str::to_ascii_uppercase) == rtype
                })
                .and_then(|r| r.pointer("/spec/type"))
                .and_then(Value::as_str);
            // The zone a set goes into is in its id (`/dns/zones/{zone}/records/…`): known before the
            // create, as a Terraform record's `zone_name` is.
            let zone = id.and_then(|id| id.strip_prefix("/dns/zones/")).and_then(|rest| rest.split('/').next());
            TerraformKind {
                resource_type: rtype.as_deref().and_then(|t| terraform_type(provider?, t)),
                computed: &["/etag"],
                rewritten: &["/etag"],
                known_on_create: zone.map(|z| vec![("/zone", Value::String(z.to_string()))]).unwrap_or_default(),
            }
        }
        _ => TerraformKind::default(),
    }
}

/// The Terraform type of a record set of type `rtype` (upper case) written by the DNS provider `provider`.
fn terraform_type(provider: &str, rtype: &str) -> Option<TerraformType> {
    match provider {
        "azure-dns" => match rtype {
            "A" => Some("azurerm_dns_a_record"),
            "AAAA" => Some("azurerm_dns_aaaa_record"),
            "CNAME" => Some("azurerm_dns_cname_record"),
            "TXT" => Some("azurerm_dns_txt_record"),
            _ => None,
        }
        .map(|name| TerraformType { name, source: AZURERM }),
        "google-clouddns" => Some(TerraformType { name: "google_dns_record_set", source: GOOGLE }),
        _ => None,
    }
}

/// A DNS name as record sets are named: lowercase, without a trailing dot.
pub fn normal_name(name: &str) -> String {
    let name = name.trim();
    name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase()
}
