//! The resource kinds domains plans name, as the plan JSON spells them (see [`trellis_plans::Kind`]).

use serde_json::Value;
use trellis_plans::terraform::{TerraformKind, TerraformType};
use trellis_plans::Kind;

pub const DNS_RECORD: Kind = Kind::new("dns_record");

/// The Terraform providers of the DNS services a `DNSRecord` can name (their source addresses).
const AZURERM: &str = "registry.terraform.io/hashicorp/azurerm";
const GOOGLE: &str = "registry.terraform.io/hashicorp/google";

/// What Terraform's readers are told about a DNS record: the DNS provider's record type when the
/// record (`body`, a Gardener `DNSRecord`) names a provider Terraform has one for — `azure-dns`:
/// `azurerm_dns_<a|aaaa|cname|txt>_record`, `google-clouddns`: `google_dns_record_set` —, otherwise
/// nothing (`domains_dns_record`). The object stays the `DNSRecord` (`spec.name`, `spec.values`, …):
/// the record the DNS provider's controller writes from it. Unknown after a create what the API
/// server assigns; unknown after any write its version.
pub fn terraform_kind(kind: Kind, body: Option<&Value>) -> TerraformKind {
    if kind != DNS_RECORD {
        return TerraformKind::default();
    }
    let spec = |field: &str| body.and_then(|b| b.pointer(&format!("/spec/{field}"))).and_then(Value::as_str);
    let resource_type = match (spec("type"), spec("recordType")) {
        (Some("azure-dns"), Some(record)) => match record.to_ascii_uppercase().as_str() {
            "A" => Some("azurerm_dns_a_record"),
            "AAAA" => Some("azurerm_dns_aaaa_record"),
            "CNAME" => Some("azurerm_dns_cname_record"),
            "TXT" => Some("azurerm_dns_txt_record"),
            _ => None,
        }
        .map(|name| TerraformType { name, source: AZURERM }),
        (Some("google-clouddns"), Some(_)) => Some(TerraformType { name: "google_dns_record_set", source: GOOGLE }),
        _ => None,
    };
    TerraformKind {
        resource_type,
        computed: &[
            "/metadata/uid",
            "/metadata/resourceVersion",
            "/metadata/creationTimestamp",
            "/metadata/generation",
        ],
        rewritten: &["/metadata/resourceVersion", "/metadata/generation"],
        known_on_create: Vec::new(),
    }
}
