//! Id schemes: how a provider's resource ids compare, what contains what, and which writes the cloud
//! serialises.
//!
//! The engine never compares ids as strings: it asks the provider's [`IdScheme`] for a [`IdScheme::key`]
//! (map keys, equality). ARM ids are case-insensitive ([`ArmIds`]: `…/resourceGroups/RG/…` and
//! `…/resourcegroups/rg/…` are one resource); GCE selfLinks are not ([`GceIds`]: `…/networks/Net` and
//! `…/networks/net` are two). Ids keep the spelling they were written with everywhere else (plan
//! node ids, messages); only keys are normalised.
//!
//! [`ArmId`] is the one parser of ARM ids in the workspace.

use crate::cloud::Precondition;
use std::fmt;

/// How a provider's ids behave. Object-safe, so the executor can hold a `&dyn IdScheme`.
pub trait IdScheme: Send + Sync {
    /// The key under which two ids are the same resource (map keys, equality).
    fn key(&self, id: &str) -> String;

    /// Whether `a` and `b` name the same resource.
    fn same(&self, a: &str, b: &str) -> bool {
        self.key(a) == self.key(b)
    }

    /// The id of the containing resource (ARM: a subnet's VNet, a VNet's resource group), `None` at
    /// the top or for an id the scheme cannot read.
    fn parent(&self, id: &str) -> Option<String>;

    /// The key of the resource whose writes the cloud serialises with writes to `id`: the executor
    /// writes one resource of a scope at a time. ARM serialises the writes to the children of one
    /// resource (two subnets of one VNet at once: 409 `AnotherOperationInProgress`), so a nested
    /// resource's scope is its parent, and a top-level resource is a scope of its own.
    fn write_scope(&self, id: &str) -> String;

    /// The id as shown to users: as written.
    fn display<'a>(&self, id: &'a str) -> &'a str {
        id
    }

    /// The id of an item a list returned: ARM's `id`. (GCE's `id` is a number; its id is `selfLink`.)
    fn item_id<'a>(&self, item: &'a serde_json::Value) -> Option<&'a str> {
        item.get("id").and_then(serde_json::Value::as_str)
    }

    /// The condition a write of a resource read as `read` is made under: its version as the cloud
    /// keeps it ([`Precondition::of`]: ARM's `etag`, GCE's `fingerprint`). [`GceIds`] gives the GCE
    /// kinds that have no fingerprint a version of their content ([`GceIds::content_version`]).
    fn precondition(&self, read: &serde_json::Value) -> Precondition {
        Precondition::of(read)
    }

    /// The wider list `(parent, rtype)` whose items include the resource `id` when it exists, so that
    /// one run of it answers a GET of `id` for many shoots at once ([`crate::wide::FleetReads`]):
    /// present if listed, absent if not. `None` (the default): no such list, the resource is read by
    /// its own GET.
    fn listed_in(&self, _id: &str) -> Option<(String, String)> {
        None
    }

    /// A resource that is an entry of another resource's body, read with it: `(the parent's id, the
    /// JSON pointer of the array holding it, its name)` — the entry whose `name` it is. GCE: a Cloud
    /// NAT is an entry of its router's `nats[]` (a GET of the NAT is a GET of the router). `None`
    /// (the default): a resource of its own.
    fn entry_of(&self, _id: &str) -> Option<(String, &'static str, String)> {
        None
    }

    /// The parent of the wider list whose items include every item of `list(parent, rtype)` (those
    /// under `parent`: [`IdScheme::key`] `parent/…`), shared by the shoots of a fleet
    /// ([`crate::wide::FleetReads`]); the same `parent` when the list is already as wide as the
    /// cloud lists it. `None` (the default): the list is run as asked.
    fn list_within(&self, _parent: &str, _rtype: &str) -> Option<String> {
        None
    }
}

/// ARM ids: case-insensitive; nested resources' writes are serialised per parent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ArmIds;

impl IdScheme for ArmIds {
    /// The id in lowercase, without surrounding spaces and a trailing `/` (what [`ArmId::key`] gives
    /// for a valid id; anything else — a list target, a placeholder — is compared the same way).
    fn key(&self, id: &str) -> String {
        let id = id.trim();
        id.strip_suffix('/').unwrap_or(id).to_ascii_lowercase()
    }

    fn parent(&self, id: &str) -> Option<String> {
        Some(ArmId::parse(id).ok()?.parent()?.as_str().to_string())
    }

    fn write_scope(&self, id: &str) -> String {
        match ArmId::parse(id) {
            Ok(parsed) if parsed.is_child() => parsed.parent().map_or_else(|| parsed.key(), |p| p.key()),
            _ => self.key(id),
        }
    }

    /// A resource group is among its subscription's resource groups
    /// (`GET /subscriptions/{s}/resourcegroups`), a top-level resource among its subscription's
    /// resources of its type (List All: `GET /subscriptions/{s}/providers/{Namespace}/{type}`, which
    /// answers each as its GET does — a virtual network with its subnets inline). Nested resources
    /// (a subnet) have no such list: their parent's GET or list carries them.
    fn listed_in(&self, id: &str) -> Option<(String, String)> {
        let parsed = ArmId::parse(id).ok()?;
        let subscription = format!("/subscriptions/{}", parsed.subscription());
        match parsed.depth() {
            4 => Some((subscription, RESOURCE_GROUP_TYPE.to_string())),
            8 => Some((subscription, parsed.rtype())),
            _ => None,
        }
    }

    /// A resource group's top-level resources of a type are among the subscription's (List All).
    fn list_within(&self, parent: &str, rtype: &str) -> Option<String> {
        let parsed = ArmId::parse(parent).ok()?;
        let top_level = rtype.split('/').count() == 2 && !rtype.eq_ignore_ascii_case(RESOURCE_GROUP_TYPE);
        (parsed.depth() == 4 && top_level).then(|| format!("/subscriptions/{}", parsed.subscription()))
    }
}

/// GCE selfLinks (`https://www.googleapis.com/compute/v1/projects/{p}/global/networks/{n}`, or the
/// same path without the origin): case-sensitive, as GCE compares them; no write serialisation
/// beyond the resource itself.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GceIds;

impl GceIds {
    /// The path from `projects/` on, without a trailing `/`: the same resource whatever the API
    /// origin and version prefix.
    fn path(id: &str) -> &str {
        let id = id.trim().trim_end_matches('/');
        // A path already (the common case), else after the origin and version prefix (`memmem`: this
        // runs for every id a plan reads or compares, ~45 times a shoot).
        if id.starts_with("projects/") {
            return id;
        }
        match memchr::memmem::find(id.as_bytes(), b"/projects/") {
            Some(i) => &id[i + 1..],
            None => id.strip_prefix('/').unwrap_or(id),
        }
    }
}

impl GceIds {
    /// The project of a GCE id (`projects/{project}/…`, with or without the API's origin and version).
    pub fn project(id: &str) -> Option<&str> {
        GceIds::path(id).strip_prefix("projects/")?.split('/').next().filter(|p| !p.is_empty())
    }
}

impl IdScheme for GceIds {
    fn key(&self, id: &str) -> String {
        GceIds::path(id).to_string()
    }

    fn parent(&self, id: &str) -> Option<String> {
        // projects/{p}/{global | regions/{r} | zones/{z}}/{collection}/{name}: the scope above the
        // collection (`projects/p/regions/r`), then the project.
        let path = GceIds::path(id);
        let segments: Vec<&str> = path.split('/').collect();
        if segments.len() < 4 || segments[0] != "projects" {
            return None;
        }
        Some(segments[..segments.len() - 2].join("/"))
    }

    /// A global resource (network, firewall rule, route) is among its project's of its collection
    /// (`projects/P/global/{collection}`), a regional one (subnetwork, router, address) among its
    /// region's (`projects/P/regions/R/{collection}`): GCE's list answers each as its GET does. A
    /// Cloud NAT is an entry of its router and a service account IAM's: read on their own.
    fn listed_in(&self, id: &str) -> Option<(String, String)> {
        let segments: Vec<&str> = GceIds::path(id).split('/').collect();
        match segments.as_slice() {
            ["projects", p, "global", c @ ("networks" | "firewalls" | "routes"), name]
                if !p.is_empty() && !name.is_empty() =>
            {
                Some((format!("projects/{p}/global"), c.to_string()))
            }
            ["projects", p, "regions", r, c @ ("subnetworks" | "routers" | "addresses"), name]
                if !p.is_empty() && !r.is_empty() && !name.is_empty() =>
            {
                Some((format!("projects/{p}/regions/{r}"), c.to_string()))
            }
            _ => None,
        }
    }

    /// A Cloud NAT (`<router>/nats/<name>`) is the entry `name` of its router's `nats[]`.
    fn entry_of(&self, id: &str) -> Option<(String, &'static str, String)> {
        let key = self.key(id);
        let (router, name) = key.rsplit_once("/nats/")?;
        (router.contains("/routers/") && !name.is_empty() && !name.contains('/'))
            .then(|| (router.to_string(), "/nats", name.to_string()))
    }

    /// GCE lists a collection whole (`projects/P/global/firewalls`): the list is already the widest,
    /// and shared as it is.
    fn list_within(&self, parent: &str, rtype: &str) -> Option<String> {
        let path = GceIds::path(parent);
        self.listed_in(&format!("{path}/{rtype}/x")).map(|(parent, _)| parent)
    }

    /// A Cloud NAT (`<router>/nats/<name>`) is written as a PATCH of its router: its scope is the
    /// router's, so the NATs of one router are written one at a time.
    fn write_scope(&self, id: &str) -> String {
        let key = self.key(id);
        match key.rsplit_once("/nats/") {
            Some((router, _)) if router.contains("/routers/") => router.to_string(),
            _ => key,
        }
    }

    /// A GCE resource's `id` is a number (`"5012345678901234567"`); the id resources are addressed
    /// and compared by is its `selfLink`.
    fn item_id<'a>(&self, item: &'a serde_json::Value) -> Option<&'a str> {
        item.get("selfLink").and_then(serde_json::Value::as_str)
    }

    /// A subnetwork (or an IAM account) is written under its `fingerprint` (`etag`), which GCE checks
    /// on the PATCH. Networks, routers (and so their NATs), firewalls, routes and addresses have none
    /// in compute v1: they are written under their [`GceIds::content_version`], which the client
    /// compares with a GET of the resource right before its PATCH or DELETE.
    fn precondition(&self, read: &serde_json::Value) -> Precondition {
        match Precondition::of(read) {
            Precondition::None => Precondition::IfMatch(GceIds::content_version(read)),
            pre => pre,
        }
    }
}

/// GCE's output-only fields a client cannot write: left out of [`GceIds::content_version`], so a
/// change only GCE makes (a network's `subnetworks` and `peerings` lists, an address's `users`)
/// does not count as a change of the resource.
pub const GCE_OUTPUT_ONLY: [&str; 13] = [
    "kind",
    "id",
    "creationTimestamp",
    "selfLink",
    "selfLinkWithId",
    "region",
    "zone",
    "subnetworks",
    "peerings",
    "status",
    "users",
    "fingerprint",
    "etag",
];

/// The prefix of a [`GceIds::content_version`].
pub const CONTENT_VERSION_PREFIX: &str = "content:";

impl GceIds {
    /// The version of a GCE resource that carries no `fingerprint` (compute v1 gives none to
    /// networks, routers, firewalls, routes and addresses): `content:` and 16 hex digits, a 64-bit
    /// FNV-1a hash of its writable fields ([`GCE_OUTPUT_ONLY`] left out) as canonical JSON (object
    /// keys sorted). Two reads of an unchanged resource have the same version; any change of what a
    /// PATCH could write gives another.
    pub fn content_version(resource: &serde_json::Value) -> String {
        fn canonical(v: &serde_json::Value, top: bool, out: &mut String) {
            match v {
                serde_json::Value::Object(map) => {
                    let mut keys: Vec<&String> =
                        map.keys().filter(|k| !(top && GCE_OUTPUT_ONLY.contains(&k.as_str()))).collect();
                    keys.sort();
                    out.push('{');
                    for (i, k) in keys.into_iter().enumerate() {
                        if i > 0 {
                            out.push(',');
                        }
                        out.push_str(&serde_json::Value::String(k.clone()).to_string());
                        out.push(':');
                        canonical(&map[k], false, out);
                    }
                    out.push('}');
                }
                serde_json::Value::Array(items) => {
                    out.push('[');
                    for (i, item) in items.iter().enumerate() {
                        if i > 0 {
                            out.push(',');
                        }
                        canonical(item, false, out);
                    }
                    out.push(']');
                }
                other => out.push_str(&other.to_string()),
            }
        }
        let mut text = String::new();
        canonical(resource, true, &mut text);
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for b in text.bytes() {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
        format!("{CONTENT_VERSION_PREFIX}{hash:016x}")
    }
}

/// Ids of the domains provider (GEP-0066), path-like and compared case-insensitively (DNS names are
/// case-insensitive; Kubernetes object names are lowercase anyway):
/// - a seed's `DNSRecord` object (`extensions.gardener.cloud/v1alpha1`), what trellis writes:
///   `/seeds/{seed}/namespaces/{namespace}/dnsrecords/{name}` (namespace: the shoot's technical id);
/// - a record in a DNS zone, what the DNS extension makes of it (read only for trellis):
///   `/dns/zones/{zone}/records/{fqdn}/{type}`.
///
/// Each record is its own write scope (DNS providers do not serialise writes within a zone).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DnsIds;

impl IdScheme for DnsIds {
    /// Lowercase, without surrounding spaces and a trailing `/`.
    fn key(&self, id: &str) -> String {
        let id = id.trim();
        id.strip_suffix('/').unwrap_or(id).to_ascii_lowercase()
    }

    /// A `DNSRecord`'s namespace (`/seeds/{seed}/namespaces/{ns}`), a zone record's zone
    /// (`/dns/zones/{zone}`), a zone's or namespace's container; `None` for anything else.
    fn parent(&self, id: &str) -> Option<String> {
        let key = self.key(id);
        let segments: Vec<&str> = key.split('/').collect();
        // ["", "seeds", s, "namespaces", ns, "dnsrecords", name] | ["", "dns", "zones", z, "records", fqdn, type]
        let keep = match segments.as_slice() {
            ["", "seeds", _, "namespaces", _, "dnsrecords", _] => 5,
            ["", "seeds", _, "namespaces", _] => 3,
            ["", "dns", "zones", _, "records", _, _] => 4,
            ["", "dns", "zones", _] => 2,
            _ => return None,
        };
        Some(segments[..keep].join("/"))
    }

    fn write_scope(&self, id: &str) -> String {
        self.key(id)
    }
}

/// A parsed ARM id.
///
/// An ARM id is `/subscriptions/{s}` (a subscription), `/subscriptions/{s}/resourceGroups/{rg}` (a
/// resource group) or `/subscriptions/{s}/resourceGroups/{rg}/providers/{Namespace}/{type}/{name}`
/// followed by any number of `/{childType}/{childName}` pairs. ARM compares ids case-insensitively;
/// an [`ArmId`] keeps the casing it was written with and offers a lowercased [`ArmId::key`] for lookups.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArmId {
    /// The id as written, without surrounding spaces and a trailing `/`.
    raw: String,
    /// The `/`-separated segments of `raw` (without the leading empty one).
    segments: Vec<String>,
}

/// The REST types of the ids that name no resource provider's resource.
const SUBSCRIPTION_TYPE: &str = "Microsoft.Resources/subscriptions";
const RESOURCE_GROUP_TYPE: &str = "Microsoft.Resources/resourceGroups";

/// What an ARM id looks like, for error messages.
pub const ARM_ID_SHAPE: &str = "expected /subscriptions/{subscription}[/resourceGroups/{group}[/providers/{Namespace}/{type}/{name}[/{childType}/{childName}]…]]";

impl ArmId {
    /// Parses an ARM id; the error says what is wrong and what shape is expected.
    pub fn parse(id: &str) -> Result<ArmId, String> {
        let trimmed = id.trim();
        let trimmed = trimmed.strip_suffix('/').unwrap_or(trimmed);
        let Some(rest) = trimmed.strip_prefix('/') else {
            return Err(format!("'{id}' is not an ARM id: it does not start with '/'; {ARM_ID_SHAPE}"));
        };
        let segments: Vec<String> = rest.split('/').map(str::to_string).collect();
        if segments.iter().any(String::is_empty) {
            return Err(format!("'{id}' is not an ARM id: it has an empty segment ('//'); {ARM_ID_SHAPE}"));
        }
        let keyword = |i: usize, word: &str| segments.get(i).is_some_and(|s| s.eq_ignore_ascii_case(word));
        let ok = match segments.len() {
            2 => keyword(0, "subscriptions"),
            4 => keyword(0, "subscriptions") && keyword(2, "resourceGroups"),
            n if n >= 8 && n % 2 == 0 => {
                keyword(0, "subscriptions") && keyword(2, "resourceGroups") && keyword(4, "providers")
            }
            _ => false,
        };
        if !ok {
            return Err(format!("'{id}' is not an ARM id; {ARM_ID_SHAPE}"));
        }
        Ok(ArmId { raw: trimmed.to_string(), segments })
    }

    /// The id as written (casing preserved).
    pub fn as_str(&self) -> &str {
        &self.raw
    }

    /// The lookup key: the id in lowercase.
    pub fn key(&self) -> String {
        self.raw.to_ascii_lowercase()
    }

    pub fn subscription(&self) -> &str {
        &self.segments[1]
    }

    /// The resource group name, unless this is a subscription id.
    pub fn resource_group(&self) -> Option<&str> {
        self.segments.get(3).map(String::as_str)
    }

    /// The last name in the id (the subscription id for a subscription).
    pub fn name(&self) -> &str {
        self.segments.last().expect("an ARM id has at least two segments")
    }

    /// The REST type as written in the id (`Microsoft.Network/virtualNetworks/subnets` for a subnet,
    /// `Microsoft.Resources/resourceGroups` for a resource group).
    pub fn rtype(&self) -> String {
        match self.segments.len() {
            2 => SUBSCRIPTION_TYPE.to_string(),
            4 => RESOURCE_GROUP_TYPE.to_string(),
            _ => {
                let mut t = String::new();
                for name in self.type_names() {
                    if !t.is_empty() {
                        t.push('/');
                    }
                    t.push_str(name);
                }
                t
            }
        }
    }

    /// Whether [`ArmId::rtype`] is `rtype`, ignoring case, without building it (the simulator's reads
    /// ask this of every descendant of a resource).
    pub fn rtype_is(&self, rtype: &str) -> bool {
        match self.segments.len() {
            2 => rtype.eq_ignore_ascii_case(SUBSCRIPTION_TYPE),
            4 => rtype.eq_ignore_ascii_case(RESOURCE_GROUP_TYPE),
            n => {
                rtype.split('/').count() == (n - 6) / 2 + 1
                    && self.type_names().zip(rtype.split('/')).all(|(a, b)| a.eq_ignore_ascii_case(b))
            }
        }
    }

    /// The parts of a resource's REST type: the namespace, then the type before each name
    /// (`Microsoft.Network`, `virtualNetworks`, `subnets`).
    fn type_names(&self) -> impl Iterator<Item = &str> {
        self.segments[5..6].iter().chain(self.segments[6..].iter().step_by(2)).map(String::as_str)
    }

    /// Whether this is a nested resource (a subnet, a rule, …) rather than a top-level one.
    pub fn is_child(&self) -> bool {
        self.segments.len() > 8
    }

    /// The containing resource: the parent resource for a child, the resource group for a
    /// top-level resource, the subscription for a resource group; `None` for a subscription.
    pub fn parent(&self) -> Option<ArmId> {
        self.parent_depth().map(|n| self.prefix(n))
    }

    /// Whether [`ArmId::parent`] is the resource with the key `parent_key` ([`ArmId::key`]), told
    /// from the id's text without building the parent (the simulator's reads ask this of every
    /// descendant of a resource).
    pub fn is_child_of(&self, parent_key: &str) -> bool {
        let Some(n) = self.parent_depth() else { return false };
        let len: usize = self.segments[..n].iter().map(|s| s.len() + 1).sum();
        len == parent_key.len() && self.raw[..len].eq_ignore_ascii_case(parent_key)
    }

    /// The segment count of [`ArmId::parent`]: a resource group's parent is its subscription (2), a
    /// top-level resource's its resource group (4), a child's its parent resource (two fewer).
    fn parent_depth(&self) -> Option<usize> {
        match self.segments.len() {
            2 => None,
            8 => Some(4),
            n => Some(n - 2),
        }
    }

    /// The id of the resource group this id lies in (itself for a resource group).
    pub fn resource_group_id(&self) -> Option<ArmId> {
        (self.segments.len() >= 4).then(|| self.prefix(4))
    }

    /// The segment count: 2 a subscription, 4 a resource group, 8 a top-level resource, 10 its
    /// direct child (a subnet), and so on.
    pub fn depth(&self) -> usize {
        self.segments.len()
    }

    /// The same id with its resource group spelled `group` (the rest as written); a subscription id
    /// is returned unchanged.
    pub fn with_resource_group(&self, group: &str) -> ArmId {
        let mut segments = self.segments.clone();
        if let Some(rg) = segments.get_mut(3) {
            *rg = group.to_string();
        }
        let raw = format!("/{}", segments.join("/"));
        ArmId { raw, segments }
    }

    /// The type segment before the name: `subnets` in `…/virtualNetworks/v/subnets/web`.
    pub fn type_segment(&self) -> &str {
        &self.segments[self.segments.len() - 2]
    }

    /// The id of a child of this resource: `<self>/<segment>/<name>`; the children of a resource group
    /// are resources, named by `Namespace/type` as `segment`.
    pub fn child(&self, segment: &str, name: &str) -> ArmId {
        let mut segments = self.segments.clone();
        if segments.len() == 4 {
            segments.push("providers".to_string());
        }
        segments.extend(segment.split('/').map(str::to_string));
        segments.push(name.to_string());
        ArmId { raw: format!("/{}", segments.join("/")), segments }
    }

    fn prefix(&self, n: usize) -> ArmId {
        let segments = self.segments[..n].to_vec();
        ArmId { raw: format!("/{}", segments.join("/")), segments }
    }
}

impl fmt::Display for ArmId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gce_id_names_its_project_with_or_without_the_api_prefix() {
        assert_eq!(GceIds::project("projects/acme-prod/global/firewalls/f"), Some("acme-prod"));
        assert_eq!(
            GceIds::project("https://www.googleapis.com/compute/v1/projects/acme-prod/regions/r/subnetworks/s"),
            Some("acme-prod")
        );
        assert_eq!(GceIds::project("global/firewalls/f"), None);
        assert_eq!(GceIds::project("projects//global/firewalls/f"), None);
    }

    #[test]
    fn dns_ids_are_case_insensitive_and_name_their_namespace_or_zone_as_parent() {
        let dns = DnsIds;
        let rec = "/seeds/aws-eu1/namespaces/shoot--dev--a/dnsrecords/a-external";
        assert!(dns.same(rec, "/Seeds/aws-eu1/namespaces/shoot--dev--a/dnsrecords/A-External/"));
        assert_eq!(dns.parent(rec).as_deref(), Some("/seeds/aws-eu1/namespaces/shoot--dev--a"));
        assert_eq!(dns.parent("/seeds/aws-eu1/namespaces/shoot--dev--a").as_deref(), Some("/seeds/aws-eu1"));
        let zrec = "/dns/zones/example.com/records/api.a.example.com/A";
        assert_eq!(dns.parent(zrec).as_deref(), Some("/dns/zones/example.com"));
        assert_eq!(dns.parent("/dns/zones/example.com").as_deref(), Some("/dns"));
        assert_eq!(dns.parent("/something/else"), None);
        assert_eq!(dns.write_scope(rec), dns.key(rec), "records are written independently");
    }

    const VNET: &str = "/subscriptions/s/resourceGroups/RG/providers/Microsoft.Network/virtualNetworks/hub";

    #[test]
    fn regression_ids_differing_only_in_case_are_one_resource_for_arm_two_for_gce() {
        let arm = ArmIds;
        let lower = "/subscriptions/s/resourcegroups/rg/providers/microsoft.network/virtualnetworks/hub";
        assert!(arm.same(VNET, lower));
        assert_eq!(arm.key(VNET), arm.key(lower));
        assert_eq!(arm.key(&format!("{VNET}/")), arm.key(lower), "a trailing / names the same resource");

        let gce = GceIds;
        let a = "https://www.googleapis.com/compute/v1/projects/p/global/networks/Net";
        let b = "https://www.googleapis.com/compute/v1/projects/p/global/networks/net";
        assert!(!gce.same(a, b));
        assert_ne!(gce.key(a), gce.key(b));
        assert!(gce.same(a, "projects/p/global/networks/Net"), "the origin and API version are not part of the id");
    }

    #[test]
    fn arm_parents_and_write_scopes() {
        let arm = ArmIds;
        let subnet = format!("{VNET}/subnets/web");
        assert_eq!(arm.parent(&subnet).as_deref(), Some(VNET));
        assert_eq!(arm.parent(VNET).as_deref(), Some("/subscriptions/s/resourceGroups/RG"));
        assert_eq!(arm.parent("/subscriptions/s"), None);
        // Two subnets of one VNet (in any spelling) share a write scope: the VNet, with the VNet itself.
        let other = format!("{}/SUBNETS/db", VNET.to_uppercase());
        assert_eq!(arm.write_scope(&subnet), arm.write_scope(&other));
        assert_eq!(arm.write_scope(&subnet), arm.write_scope(VNET));
        // Top-level resources of one resource group are written independently.
        let rt = "/subscriptions/s/resourceGroups/RG/providers/Microsoft.Network/routeTables/rt";
        assert_ne!(arm.write_scope(rt), arm.write_scope(VNET));
    }

    #[test]
    fn gce_content_versions_change_with_what_a_patch_writes_only() {
        use serde_json::json;
        let router = json!({"kind": "compute#router", "id": "1", "name": "r", "network": "n",
            "nats": [{"name": "a", "minPortsPerVm": 64}], "selfLink": "x", "creationTimestamp": "t"});
        let v = GceIds::content_version(&router);
        assert!(v.starts_with(CONTENT_VERSION_PREFIX) && v.len() == CONTENT_VERSION_PREFIX.len() + 16, "{v}");
        // Key order and output-only fields do not matter; a NAT's setting does.
        let reordered = json!({"nats": [{"minPortsPerVm": 64, "name": "a"}], "network": "n", "name": "r",
            "id": "2", "kind": "compute#router"});
        assert_eq!(GceIds::content_version(&reordered), v);
        let changed = json!({"kind": "compute#router", "id": "1", "name": "r", "network": "n",
            "nats": [{"name": "a", "minPortsPerVm": 128}], "selfLink": "x", "creationTimestamp": "t"});
        assert_ne!(GceIds::content_version(&changed), v);
        // A network's subnetworks are GCE's to list, not a change of the network.
        let net = json!({"name": "n", "mtu": 1460});
        let with_subnets = json!({"name": "n", "mtu": 1460, "subnetworks": ["s"]});
        assert_eq!(GceIds::content_version(&net), GceIds::content_version(&with_subnets));
        // The precondition: the fingerprint where there is one, the content version otherwise.
        assert_eq!(GceIds.precondition(&json!({"fingerprint": "abc="})), Precondition::IfMatch("abc=".into()));
        assert_eq!(GceIds.precondition(&router), Precondition::IfMatch(v));
        assert_eq!(ArmIds.precondition(&json!({"name": "rg"})), Precondition::None, "ARM: no etag, no condition");
    }

    #[test]
    fn gce_parents_and_write_scopes() {
        let gce = GceIds;
        let sub = "https://compute.googleapis.com/compute/v1/projects/p/regions/europe-west1/subnetworks/nodes";
        assert_eq!(gce.parent(sub).as_deref(), Some("projects/p/regions/europe-west1"));
        assert_eq!(gce.parent("projects/p"), None);
        let other = "projects/p/regions/europe-west1/subnetworks/internal";
        assert_ne!(gce.write_scope(sub), gce.write_scope(other));
    }

    /// A project or resource named `projects` (valid GCE names): a path was cut at its second
    /// `/projects/` and named another resource (`projects/global/networks/n`).
    #[test]
    fn regression_gce_ids_with_a_segment_named_projects() {
        let gce = GceIds;
        let path = "projects/projects/global/networks/n";
        assert_eq!(gce.key(path), path);
        assert!(gce.same(path, "https://compute.googleapis.com/compute/v1/projects/projects/global/networks/n"));
        let nat = "projects/p/regions/r/routers/projects/nats/n";
        assert_eq!(gce.key(nat), nat);
        assert_eq!(gce.write_scope(nat), "projects/p/regions/r/routers/projects");
        assert_eq!(gce.parent(path).as_deref(), Some("projects/projects/global"));
    }

    #[test]
    fn parses_resource_group_resource_and_child() {
        let rg = ArmId::parse("/subscriptions/s/resourcegroups/RG/").unwrap();
        assert_eq!(rg.as_str(), "/subscriptions/s/resourcegroups/RG");
        assert_eq!(rg.rtype(), "Microsoft.Resources/resourceGroups");
        assert_eq!(rg.parent().unwrap().as_str(), "/subscriptions/s");

        let vnet = ArmId::parse(VNET).unwrap();
        assert_eq!(vnet.parent().unwrap().as_str(), "/subscriptions/s/resourceGroups/RG");
        assert_eq!(vnet.resource_group(), Some("RG"));
        assert!(!vnet.is_child());

        let subnet = ArmId::parse(&format!("{VNET}/subnets/web")).unwrap();
        assert_eq!(subnet.rtype(), "Microsoft.Network/virtualNetworks/subnets");
        assert_eq!(subnet.parent().unwrap(), vnet);
        assert_eq!(subnet.name(), "web");
        assert_eq!(subnet.resource_group_id().unwrap().as_str(), "/subscriptions/s/resourceGroups/RG");
        assert!(subnet.is_child());
        assert_eq!(subnet.depth(), 10);
        assert_eq!(subnet.with_resource_group("rg").as_str(), format!("{VNET}/subnets/web").replace("/RG/", "/rg/"));
    }

    const IDS: &[&str] = &[
        "/subscriptions/s",
        "/subscriptions/s/resourceGroups/RG",
        "/subscriptions/s/resourceGroups/rg-2",
        "/subscriptions/s/resourceGroups/RG/providers/Microsoft.Network/virtualNetworks/VNet",
        "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/A",
        "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet-2/subnets/a",
        "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/natGateways/vnet",
        "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/routeTables/rt/routes/r",
        "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/routeTables/rt/routes/r/x/y",
        "/subscriptions/S/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/VNET/subnets/b",
        "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnetsX/c",
    ];

    /// The text-only checks (`is_child_of`, `rtype_is`) agree with the built `parent()` and `rtype()`.
    #[test]
    fn direct_child_and_type_checks_agree_with_the_built_parent_and_type() {
        let ids: Vec<ArmId> = IDS.iter().map(|id| ArmId::parse(id).unwrap()).collect();
        let types: Vec<String> = ids
            .iter()
            .map(ArmId::rtype)
            .chain(
                [
                    "microsoft.network/VIRTUALNETWORKS/subnets",
                    "Microsoft.Network",
                    "Microsoft.Network/virtualNetworks/",
                ]
                .map(String::from),
            )
            .collect();
        for id in &ids {
            for parent in &ids {
                let key = parent.key();
                let want = id.parent().is_some_and(|p| p.key() == key);
                assert_eq!(id.is_child_of(&key), want, "{id} under {key}");
            }
            for rtype in &types {
                assert_eq!(id.rtype_is(rtype), id.rtype().eq_ignore_ascii_case(rtype), "{id} of type {rtype}");
            }
        }
    }

    #[test]
    fn rejects_malformed_ids() {
        for bad in [
            "",
            "subscriptions/s",
            "/subscriptions",
            "/subscriptions/s/resourceGroups",
            "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network",
            "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks",
            "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets",
            "/subscriptions/s//resourceGroups/rg",
            "/tenants/t/resourceGroups/rg",
        ] {
            assert!(ArmId::parse(bad).is_err(), "{bad} should not parse");
        }
    }
}
