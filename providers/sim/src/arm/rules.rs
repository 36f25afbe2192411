//! The ARM rules: what GET, PUT, DELETE and list do to the store, and the errors ARM answers.
//!
//! Two tables drive the kind-specific behaviour:
//! - [`COLLECTIONS`]: children that ARM also shows as an array in their parent (a VNet's `subnets`,
//!   a route table's `routes`, an NSG's `securityRules`). They are stored as resources of their own
//!   and the array is computed on GET. A PUT of the parent replaces them with the body's array (as
//!   in ARM): children missing from it are deleted (refused while in use), new ones created, changed
//!   ones rewritten, unchanged ones left as they are (same etag). Without the array a route table or
//!   NSG loses its routes or rules, while a VNet keeps its subnets (ARM since api-version 2023-09-01).
//! - [`LINKS`]: references from one resource to another (a subnet's `routeTable`,
//!   `networkSecurityGroup`, `natGateway`; a NAT gateway's `publicIpAddresses`). A PUT must point at
//!   resources that exist; a DELETE of a referenced resource is refused; the referenced resource shows
//!   the back-reference (`subnets`, `natGateway`) on GET, computed, never stored.
//!
//! A third kind of reference only blocks deletion ([`usages`]): a NIC's or load balancer's IP
//! configurations in a subnet or with a public IP, and a VM's NICs.
//!
//! A subnet PUT is also checked against its VNet, as ARM does: every address prefix (`addressPrefix`
//! or each of `addressPrefixes`) must be a CIDR inside the VNet's address space and must not overlap
//! a sibling subnet, and the route table, NSG and NAT gateway it references must be in the VNet's
//! region.

use crate::arm::defaults::arm_defaults;
use crate::arm::sim::Arm;
use crate::arm::store::{Entry, Store};
use crate::arm::{default_rules, validate};
use crate::arm::{ArmId, Kind};
use crate::core::precondition::{self, Precondition};
use crate::core::sim::{Accepted, Refusal, Step};
use crate::core::Origin;
use ipnet::IpNet;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// An ARM error answer: HTTP status, ARM error code, message.
pub(crate) use crate::core::ApiError as ArmError;

fn bad_format(message: impl Into<String>) -> ArmError {
    ArmError::new(400, "InvalidRequestFormat", message)
}

/// Children that ARM also shows as an array property of their parent.
pub(crate) struct Collection {
    pub parent: Kind,
    pub property: &'static str,
    /// The id segment of the children (`…/subnets/{name}`).
    pub segment: &'static str,
    pub child: Kind,
    /// Whether a PUT of the parent whose body has no such array removes the children. A body with
    /// the array (`null` counts as empty) always makes the children exactly those of the array.
    pub absent_removes_children: bool,
}

pub(crate) const COLLECTIONS: &[Collection] = &[
    Collection {
        parent: Kind::VirtualNetwork,
        property: "subnets",
        segment: "subnets",
        child: Kind::Subnet,
        absent_removes_children: false,
    },
    Collection {
        parent: Kind::RouteTable,
        property: "routes",
        segment: "routes",
        child: Kind::Route,
        absent_removes_children: true,
    },
    Collection {
        parent: Kind::NetworkSecurityGroup,
        property: "securityRules",
        segment: "securityRules",
        child: Kind::SecurityRule,
        absent_removes_children: true,
    },
];

fn collection_of(parent: Kind) -> Option<&'static Collection> {
    COLLECTIONS.iter().find(|c| c.parent == parent)
}

/// A reference property: `properties.<property>` of a `from` resource holds `{id}` (or `[{id}]` when
/// `many`) of a `to` resource.
pub(crate) struct LinkSpec {
    pub from: Kind,
    pub property: &'static str,
    pub many: bool,
    pub to: Kind,
    /// The REST type of `to`, for messages.
    pub to_type: &'static str,
    /// The computed back-reference on `to`: `properties.<back_property>`.
    pub back_property: &'static str,
    pub back_many: bool,
    /// The ARM error code when `to` is deleted while referenced.
    pub in_use_code: &'static str,
}

pub(crate) const LINKS: &[LinkSpec] = &[
    LinkSpec {
        from: Kind::Subnet,
        property: "routeTable",
        many: false,
        to: Kind::RouteTable,
        to_type: "Microsoft.Network/routeTables",
        back_property: "subnets",
        back_many: true,
        in_use_code: "InUseRouteTableCannotBeDeleted",
    },
    LinkSpec {
        from: Kind::Subnet,
        property: "networkSecurityGroup",
        many: false,
        to: Kind::NetworkSecurityGroup,
        to_type: "Microsoft.Network/networkSecurityGroups",
        back_property: "subnets",
        back_many: true,
        in_use_code: "InUseNetworkSecurityGroupCannotBeDeleted",
    },
    LinkSpec {
        from: Kind::Subnet,
        property: "natGateway",
        many: false,
        to: Kind::NatGateway,
        to_type: "Microsoft.Network/natGateways",
        back_property: "subnets",
        back_many: true,
        in_use_code: "InUseNatGatewayCannotBeDeleted",
    },
    LinkSpec {
        from: Kind::NatGateway,
        property: "publicIpAddresses",
        many: true,
        to: Kind::PublicIpAddress,
        to_type: "Microsoft.Network/publicIPAddresses",
        back_property: "natGateway",
        back_many: false,
        in_use_code: "PublicIPAddressCannotBeDeleted",
    },
];

/// One reference a resource holds.
pub(crate) struct Link {
    pub spec: &'static LinkSpec,
    /// The referenced id as written.
    pub target: String,
}

impl Link {
    /// Where the reference sits, for messages: `properties.routeTable.id`.
    pub fn path(&self) -> String {
        if self.spec.many {
            format!("properties.{}[].id", self.spec.property)
        } else {
            format!("properties.{}.id", self.spec.property)
        }
    }
}

/// The references in a resource of kind `kind`. A reference of the wrong JSON shape (an array where
/// ARM has one `{id}`, say) is an `InvalidRequestFormat` error.
pub(crate) fn links(kind: Kind, value: &Value) -> Result<Vec<Link>, ArmError> {
    let mut out = Vec::new();
    let props = value.get("properties");
    for spec in LINKS.iter().filter(|s| s.from == kind) {
        let Some(v) = props.and_then(|p| p.get(spec.property)) else { continue };
        let one = |item: &Value, path: String| -> Result<Link, ArmError> {
            match item.get("id").and_then(Value::as_str) {
                Some(id) if item.is_object() => Ok(Link { spec, target: id.to_string() }),
                _ => Err(bad_format(format!("{path} must be an object {{\"id\": \"<{} id>\"}}", spec.to_type))),
            }
        };
        match (spec.many, v) {
            (_, Value::Null) => {}
            (false, Value::Array(_)) => {
                return Err(bad_format(format!(
                    "properties.{} must be one object {{\"id\": …}}, not an array: a subnet has at most one {}",
                    spec.property, spec.to_type
                )))
            }
            (false, item) => out.push(one(item, format!("properties.{}", spec.property))?),
            (true, Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    out.push(one(item, format!("properties.{}[{i}]", spec.property))?);
                }
            }
            (true, _) => {
                return Err(bad_format(format!(
                    "properties.{} must be an array of {{\"id\": …}} objects",
                    spec.property
                )))
            }
        }
    }
    Ok(out)
}

/// What a NIC, load balancer or VM uses: a NIC's and a load balancer's IP configurations sit in a
/// subnet and may carry a public IP; a VM uses its NICs. Used only to refuse deleting what is still
/// in use, as ARM does (these resources are not checked on PUT, and no back-reference is computed:
/// a world file declares a subnet's `ipConfigurations` as it is).
pub(crate) struct Usage {
    /// The referenced id as written.
    pub target: String,
    pub to: Kind,
    /// Who uses it, as ARM names it: the IP configuration (`<nic>/ipConfigurations/<name>`), or the VM.
    pub user: String,
}

pub(crate) fn usages(kind: Kind, value: &Value) -> Vec<Usage> {
    let own_id = value.get("id").and_then(Value::as_str).unwrap_or_default();
    let id_at = |v: &Value, pointer: &str| v.pointer(pointer).and_then(Value::as_str).map(str::to_string);
    let mut out = Vec::new();
    let configurations = match kind {
        Kind::NetworkInterface => "ipConfigurations",
        Kind::LoadBalancer => "frontendIPConfigurations",
        Kind::VirtualMachine => {
            let nics = value.pointer("/properties/networkProfile/networkInterfaces").and_then(Value::as_array);
            for nic in nics.into_iter().flatten() {
                if let Some(target) = id_at(nic, "/id") {
                    out.push(Usage { target, to: Kind::NetworkInterface, user: own_id.to_string() });
                }
            }
            return out;
        }
        _ => return out,
    };
    let items = value.get("properties").and_then(|p| p.get(configurations)).and_then(Value::as_array);
    for item in items.into_iter().flatten() {
        let name = item.get("name").and_then(Value::as_str).unwrap_or_default();
        let user = format!("{own_id}/{configurations}/{name}");
        for (pointer, to) in
            [("/properties/subnet/id", Kind::Subnet), ("/properties/publicIPAddress/id", Kind::PublicIpAddress)]
        {
            if let Some(target) = id_at(item, pointer) {
                out.push(Usage { target, to, user: user.clone() });
            }
        }
    }
    out
}

/// ARM's refusal to delete `target` (a subnet, public IP or NIC) while `users` use it.
fn in_use_by(target: &ArmId, users: &[String]) -> ArmError {
    let users = users.join(", ");
    match target.kind() {
        Kind::Subnet => ArmError::new(
            400,
            "InUseSubnetCannotBeDeleted",
            format!(
                "Subnet {} is in use by {users} and cannot be deleted. In order to delete the subnet, delete all the resources within the subnet. See aka.ms/deletesubnet.",
                target.name()
            ),
        ),
        Kind::PublicIpAddress => ArmError::new(
            400,
            "PublicIPAddressCannotBeDeleted",
            format!(
                "Public IP address {target} can not be deleted since it is still allocated to resource {users}. In order to delete the public IP, disassociate/detach the Public IP address from the resource. To learn how to do this, see aka.ms/deletepublicip."
            ),
        ),
        _ => ArmError::new(
            400,
            "NicInUse",
            format!(
                "Network Interface {target} is used by existing resource {users}. In order to delete the network interface, it must be dissociated from the resource. To learn more, see aka.ms/deletenic."
            ),
        ),
    }
}

/// Why a reference does not resolve.
pub(crate) enum LinkProblem {
    Malformed(String),
    WrongType(String),
    Missing,
}

/// Whether `link` points at an existing resource of the right type (`exists` answers by key).
pub(crate) fn check_link(exists: &dyn Fn(&str) -> bool, link: &Link) -> Result<(), LinkProblem> {
    let target = ArmId::parse(&link.target).map_err(LinkProblem::Malformed)?;
    if target.kind() != link.spec.to {
        return Err(LinkProblem::WrongType(target.rtype()));
    }
    match exists(&target.key()) {
        true => Ok(()),
        false => Err(LinkProblem::Missing),
    }
}

fn check_links(store: &Store, id: &ArmId, kind: Kind, value: &Value) -> Result<(), ArmError> {
    let exists = |key: &str| store.get(key).is_some();
    for link in links(kind, value)? {
        match check_link(&exists, &link) {
            Ok(()) => {}
            Err(LinkProblem::Malformed(detail)) => {
                return Err(ArmError::new(
                    400,
                    "LinkedInvalidPropertyId",
                    format!("Property id '{}' at path '{}' is invalid: {detail}", link.target, link.path()),
                ))
            }
            Err(LinkProblem::WrongType(found)) => {
                return Err(ArmError::new(
                    400,
                    "LinkedInvalidPropertyId",
                    format!(
                        "Property id '{}' at path '{}' is a {found}; expected the id of a {}",
                        link.target,
                        link.path(),
                        link.spec.to_type
                    ),
                ))
            }
            Err(LinkProblem::Missing) => return Err(invalid_reference(&link.target, id)),
        }
    }
    Ok(())
}

pub(crate) fn parse_id(id: &str) -> Result<ArmId, ArmError> {
    ArmId::parse(id).map_err(|e| ArmError::new(400, "InvalidResourceId", e))
}

/// A PUT body in the form the store keeps, plus the children split out of its collection array.
pub(crate) struct Normalized {
    /// Read-only and computed fields dropped; `id`, `name`, `type`, `properties.provisioningState`
    /// filled. No `etag` yet: see [`with_etag`].
    pub value: Value,
    /// The raw bodies of the collection array (`subnets`, `routes`, `securityRules`) with their
    /// ids; `None` when the body has no such array.
    pub children: Option<Vec<(ArmId, Value)>>,
}

/// Brings a PUT body (or a world-file resource) into stored form.
pub(crate) fn normalize(id: &ArmId, body: Value) -> Result<Normalized, ArmError> {
    let Value::Object(mut body) = body else {
        return Err(ArmError::new(400, "InvalidRequestContent", format!("the body for {id} must be a JSON object")));
    };
    let kind = id.kind();
    let mut props = match body.remove("properties") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(p)) => p,
        Some(_) => return Err(bad_format(format!("properties of {id} must be an object"))),
    };
    props.remove("provisioningState");
    if kind == Kind::NetworkSecurityGroup {
        // Read-only: Azure's own rules, computed on GET (a client may send back what it read).
        props.remove(default_rules::SEGMENT);
    }
    for spec in LINKS.iter().filter(|s| s.to == kind) {
        props.remove(spec.back_property);
    }
    for spec in LINKS.iter().filter(|s| s.from == kind) {
        if props.get(spec.property).is_some_and(Value::is_null) {
            props.remove(spec.property);
        }
    }
    let children = match collection_of(kind) {
        None => None,
        Some(c) => match props.remove(c.property) {
            None => None,
            Some(Value::Null) => Some(Vec::new()),
            Some(Value::Array(items)) => Some(split_children(id, c, items)?),
            Some(_) => return Err(bad_format(format!("properties.{} of {id} must be an array", c.property))),
        },
    };

    let mut out = Map::new();
    out.insert("id".into(), Value::String(id.as_str().to_string()));
    out.insert("name".into(), Value::String(id.name().to_string()));
    out.insert("type".into(), Value::String(id.rtype()));
    for (k, v) in body {
        if !matches!(k.as_str(), "id" | "name" | "type" | "etag") {
            out.insert(k, v);
        }
    }
    let mut properties = Map::new();
    properties.insert("provisioningState".into(), Value::String("Succeeded".into()));
    properties.extend(props);
    out.insert("properties".into(), Value::Object(properties));
    let value = Value::Object(out);
    links(kind, &value)?;
    Ok(Normalized { value, children })
}

fn split_children(parent: &ArmId, c: &Collection, items: Vec<Value>) -> Result<Vec<(ArmId, Value)>, ArmError> {
    let mut out: Vec<(ArmId, Value)> = Vec::new();
    for (i, item) in items.into_iter().enumerate() {
        let name = item.get("name").and_then(Value::as_str).map(str::to_string).or_else(|| {
            item.get("id").and_then(Value::as_str).and_then(|s| ArmId::parse(s).ok()).map(|id| id.name().to_string())
        });
        let Some(name) = name.filter(|n| !n.is_empty() && !n.contains('/')) else {
            return Err(bad_format(format!("properties.{}[{i}] of {parent} needs a name", c.property)));
        };
        let child = parent.child(c.segment, &name);
        if out.iter().any(|(o, _)| o.key() == child.key()) {
            return Err(bad_format(format!("properties.{} of {parent} has two entries named '{name}'", c.property)));
        }
        out.push((child, item));
    }
    Ok(out)
}

fn etag(tick: u64) -> String {
    format!("W/\"{tick}\"")
}

/// `value` with `etag` right after `type` (resource groups have no etag in ARM).
pub(crate) fn with_etag(kind: Kind, value: Value, tick: u64) -> Value {
    let Value::Object(map) = value else { return value };
    let mut out = Map::new();
    for (k, v) in map {
        if k == "etag" {
            continue;
        }
        let after_type = k == "type";
        out.insert(k, v);
        if after_type && kind != Kind::ResourceGroup {
            out.insert("etag".into(), Value::String(etag(tick)));
        }
    }
    Value::Object(out)
}

/// `value` without its etag, for comparing contents.
pub(crate) fn without_etag(value: &Value) -> Value {
    let mut v = value.clone();
    if let Some(m) = v.as_object_mut() {
        m.remove("etag");
    }
    v
}

pub(crate) fn location(value: &Value) -> Option<String> {
    value.get("location").and_then(Value::as_str).map(|l| l.replace(' ', "").to_ascii_lowercase())
}

/// ARM checks the resource group first, then the parent of a nested resource.
fn check_parent(store: &Store, id: &ArmId) -> Result<(), ArmError> {
    match id.kind() {
        Kind::Subscription => Err(ArmError::new(
            400,
            "InvalidResourceType",
            format!("{id} is a subscription; the simulated cloud only writes resource groups and resources"),
        )),
        Kind::ResourceGroup => match store.get(&id.key()) {
            Some(e) if being_deleted(e) => Err(resource_group_being_deleted(&e.id)),
            _ => Ok(()),
        },
        _ => {
            let rg = id.resource_group_id().expect("a resource lies in a resource group");
            match store.get(&rg.key()) {
                None => return Err(rg_not_found(&rg)),
                Some(e) if being_deleted(e) => return Err(resource_group_being_deleted(&e.id)),
                Some(_) => {}
            }
            if id.is_child() {
                let parent = id.parent().expect("a nested resource has a parent");
                if store.get(&parent.key()).is_none() {
                    return Err(ArmError::new(
                        404,
                        "ParentResourceNotFound",
                        format!(
                            "Can not perform requested operation on nested resource. Parent resource '{parent}' not found (writing {id})."
                        ),
                    ));
                }
            }
            Ok(())
        }
    }
}

fn rg_not_found(rg: &ArmId) -> ArmError {
    ArmError::new(404, "ResourceGroupNotFound", format!("Resource group '{}' could not be found.", rg.name()))
}

/// GET: the resource as ARM returns it, `None` when it does not exist.
pub(crate) fn get(store: &Store, id: &str) -> Result<Option<Value>, ArmError> {
    let id = parse_id(id)?;
    if id.kind() == Kind::DefaultSecurityRule {
        let nsg = id.parent().expect("a default rule has its NSG");
        let rules = store.get(&nsg.key()).map(|e| default_rules::of(&e.id, e.value.get("etag"))).unwrap_or_default();
        return Ok(rules.into_iter().find(|r| r["name"].as_str().is_some_and(|n| n.eq_ignore_ascii_case(id.name()))));
    }
    Ok(store.get(&id.key()).map(|e| render(store, e)))
}

/// PUT: creates or replaces the resource; answers the resource as a GET would, with 201 (created)
/// or 200 (replaced).
pub(crate) fn put(store: &mut Store, id: &str, body: Value) -> Result<(Value, u16), ArmError> {
    let asked = parse_id(id)?;
    if asked.kind() == Kind::DefaultSecurityRule {
        return Err(default_rules_are_read_only(&asked));
    }
    check_parent(store, &asked)?;
    let existing = store.get(&asked.key()).cloned();
    // Keep the casing the resource was created with; a nested resource takes its parent's. A new id
    // is ARM's canonical form (`/resourceGroups/`, the type's casing), whatever the request's casing.
    let id = match (&existing, asked.is_child()) {
        (Some(e), _) => e.id.clone(),
        (None, true) => {
            let parent = store.get(&asked.parent().expect("nested").key()).expect("checked above");
            parent.id.child(asked.canonical().type_segment(), asked.name())
        }
        (None, false) => asked.canonical(),
    };
    let kind = id.kind();
    let Normalized { mut value, children } = normalize(&id, body)?;
    arm_defaults(kind, &mut value);
    if kind.requires_location() {
        let Some(new) = location(&value) else {
            return Err(ArmError::new(400, "LocationRequired", format!("The location property is required for {id}.")));
        };
        if let Some(old) = existing.as_ref().and_then(|e| location(&e.value)).filter(|old| *old != new) {
            return Err(if kind == Kind::ResourceGroup {
                ArmError::new(
                    409,
                    "InvalidResourceGroupLocation",
                    format!("Invalid resource group location '{new}'. The Resource group already exists in location '{old}'."),
                )
            } else {
                ArmError::new(
                    409,
                    "InvalidResourceLocation",
                    format!("The resource '{id}' already exists in location '{old}'. A resource with the same name cannot be created in location '{new}'. Delete it first or choose another name."),
                )
            });
        }
    }
    check_own(store, &id, kind, &value)?;
    if kind == Kind::Subnet {
        check_subnet_range(store, &id, &value)?;
    }
    check_links(store, &id, kind, &value)?;
    if kind == Kind::Subnet {
        check_subnet_region(store, &id, &value)?;
    }
    let key = id.key();
    let replaced = match collection_of(kind) {
        Some(c) if c.absent_removes_children => Some((c, children.unwrap_or_default())),
        Some(c) => children.map(|kids| (c, kids)),
        None => None,
    };
    let mut new_children = Vec::new();
    let mut removed_children = Vec::new();
    if let Some((c, kids)) = replaced {
        for (child, body) in kids {
            // A child keeps the casing it was created with.
            let child = store.get(&child.key()).map(|e| e.id.clone()).unwrap_or(child);
            let n = normalize(&child, body)?;
            let mut child_value = n.value;
            arm_defaults(c.child, &mut child_value);
            check_child(&child, c.child, &child_value)?;
            check_links(store, &child, c.child, &child_value)?;
            new_children.push((child, child_value));
        }
        if c.child == Kind::Subnet {
            check_subnets_of_vnet(store, &id, &value, &new_children)?;
        }
        if c.child == Kind::SecurityRule {
            validate::no_conflicts(new_children.iter().map(|(child, v)| (child.name(), v)))?;
        }
        let new_keys: BTreeSet<String> = new_children.iter().map(|(child, _)| child.key()).collect();
        for old in direct_children(store, &key, c.child).filter(|e| !new_keys.contains(&e.id.key())) {
            let doomed: BTreeSet<String> =
                std::iter::once(old.id.key()).chain(store.descendants(&old.id.key()).map(|e| e.id.key())).collect();
            if let Some(e) = in_use(store, &old.id, &doomed) {
                return Err(e);
            }
            removed_children.push(old.id.key());
        }
    }

    // Every check passed: write.
    let mut value = value;
    if kind == Kind::PublicIpAddress {
        // ARM allocates the address: a new public IP gets a fresh one, an existing one keeps its own
        // (an `ipAddress` in the body is not the caller's to choose).
        let address = match existing.as_ref().and_then(|e| e.value.pointer("/properties/ipAddress")) {
            Some(kept) => kept.clone(),
            None => Value::String(store.allocate_address()),
        };
        value["properties"]["ipAddress"] = address;
    }
    let tick = store.tick();
    let (origin, seq) = existing.as_ref().map(|e| (e.origin, e.seq)).unwrap_or((Origin::Api, tick));
    store.insert(Entry::new(id.clone(), with_etag(kind, value, tick), origin, seq));
    for k in &removed_children {
        remove_with_descendants(store, k);
    }
    for (child, child_value) in new_children {
        let old = store.get(&child.key()).cloned();
        if old.as_ref().is_some_and(|o| without_etag(&o.value) == child_value) {
            continue;
        }
        let t = store.tick();
        let (origin, seq) = old.map(|o| (o.origin, o.seq)).unwrap_or((Origin::Api, t));
        let child_kind = child.kind();
        store.insert(Entry::new(child, with_etag(child_kind, child_value, t), origin, seq));
    }
    if id.is_child() {
        touch_parent(store, &id, tick);
    }
    let status = if existing.is_some() { 200 } else { 201 };
    let entry = store.get(&key).expect("inserted above");
    Ok((render(store, entry), status))
}

/// The network resource provider's checks of one resource being written ([`validate`]); a security
/// rule written on its own is also checked against the other rules of its NSG.
fn check_own(store: &Store, id: &ArmId, kind: Kind, value: &Value) -> Result<(), ArmError> {
    check_child(id, kind, value)?;
    if kind == Kind::VirtualNetwork {
        validate::vnet(id, value)?;
    }
    if kind == Kind::SecurityRule {
        let nsg = id.parent().expect("a rule has its NSG").key();
        let key = id.key();
        let others: Vec<&Entry> =
            direct_children(store, &nsg, Kind::SecurityRule).filter(|e| e.id.key() != key).collect();
        let others = others.iter().map(|e| (e.id.name(), &e.value));
        validate::no_conflicts(others.chain(std::iter::once((id.name(), value))))?;
    }
    Ok(())
}

/// The checks of a resource that may also come in its parent's array (a rule, a route).
fn check_child(id: &ArmId, kind: Kind, value: &Value) -> Result<(), ArmError> {
    match kind {
        Kind::SecurityRule => validate::security_rule(id, value),
        Kind::Route => validate::route(id, value),
        _ => Ok(()),
    }
}

/// ARM's answer to a write of one of an NSG's default rules.
fn default_rules_are_read_only(id: &ArmId) -> ArmError {
    ArmError::new(
        405,
        "MethodNotAllowed",
        format!("{id} is one of the default security rules Azure puts in every network security group; they are read-only (write a rule of your own under securityRules with a priority of 100-4096 to override one)."),
    )
}

/// A subnet's address prefixes as ARM shows them: the entries of a non-empty `addressPrefixes`, else
/// `addressPrefix` (raw JSON values, for the format check).
fn subnet_prefixes(value: &Value) -> Vec<Value> {
    let props = value.get("properties");
    match props.and_then(|p| p.get("addressPrefixes")).and_then(Value::as_array) {
        Some(list) if !list.is_empty() => list.clone(),
        _ => props.and_then(|p| p.get("addressPrefix")).cloned().into_iter().collect(),
    }
}

/// The parsed prefixes of a stored subnet (those that parse; stored subnets passed the check).
fn subnet_nets(value: &Value) -> Vec<IpNet> {
    subnet_prefixes(value).iter().filter_map(Value::as_str).filter_map(|p| p.parse().ok()).collect()
}

fn overlap(a: &IpNet, b: &IpNet) -> bool {
    a.contains(&b.network()) || b.contains(&a.network())
}

/// ARM's checks of a subnet's range: CIDR format (`InvalidAddressPrefixFormat`), inside the VNet's
/// address space (`NetcfgSubnetRangeOutsideVnet`), no overlap with a sibling subnet
/// (`NetcfgSubnetRangesOverlap`). A VNet declared without an address space accepts any range.
fn check_subnet_range(store: &Store, id: &ArmId, value: &Value) -> Result<(), ArmError> {
    let vnet = id.parent().expect("a subnet has a VNet");
    let Some(parent) = store.get(&vnet.key()) else { return subnet_nets_checked(id, value).map(|_| ()) };
    let key = id.key();
    let siblings = direct_children(store, &vnet.key(), Kind::Subnet).filter(|e| e.id.key() != key);
    check_subnet_in_vnet(id, value, parent.id.name(), &parent.value, siblings.map(|e| &e.value))
}

/// The subnets of a VNet PUT's body, checked as ARM checks them: each one's range (inside the VNet's
/// address space, no overlap with another subnet of the body) and region.
fn check_subnets_of_vnet(
    store: &Store,
    vnet: &ArmId,
    vnet_value: &Value,
    subnets: &[(ArmId, Value)],
) -> Result<(), ArmError> {
    for (i, (id, value)) in subnets.iter().enumerate() {
        let siblings = subnets.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, (_, v))| v);
        check_subnet_in_vnet(id, value, vnet.name(), vnet_value, siblings)?;
        check_subnet_region_in(store, id, value, location(vnet_value))?;
    }
    Ok(())
}

/// A subnet's prefixes, each a CIDR (`InvalidAddressPrefixFormat` otherwise).
fn subnet_nets_checked(id: &ArmId, value: &Value) -> Result<Vec<IpNet>, ArmError> {
    let mut nets = Vec::new();
    for prefix in subnet_prefixes(value) {
        match prefix.as_str().and_then(|p| p.parse::<IpNet>().ok()) {
            Some(net) => nets.push(net),
            None => return Err(validate::invalid_prefix_format(id, &prefix)),
        }
    }
    Ok(nets)
}

/// ARM's range checks of a subnet in a VNet (`vnet_value`, named `vnet_name`) beside `siblings`.
fn check_subnet_in_vnet<'a>(
    id: &ArmId,
    value: &Value,
    vnet_name: &str,
    vnet_value: &Value,
    siblings: impl Iterator<Item = &'a Value>,
) -> Result<(), ArmError> {
    let nets = subnet_nets_checked(id, value)?;
    let space: Vec<IpNet> = vnet_value
        .pointer("/properties/addressSpace/addressPrefixes")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).filter_map(|p| p.parse().ok()).collect())
        .unwrap_or_default();
    if !space.is_empty() && !nets.iter().all(|n| space.iter().any(|s| s.contains(n))) {
        return Err(ArmError::new(
            400,
            "NetcfgSubnetRangeOutsideVnet",
            format!(
                "Subnet '{}' is not valid because its IP address range is outside the IP address range of virtual network '{vnet_name}'.",
                id.name()
            ),
        ));
    }
    for sibling in siblings {
        if subnet_nets(sibling).iter().any(|s| nets.iter().any(|n| overlap(s, n))) {
            return Err(ArmError::new(
                400,
                "NetcfgSubnetRangesOverlap",
                format!(
                    "Subnet '{}' is not valid because its IP address range overlaps with that of an existing subnet in virtual network '{vnet_name}'.",
                    id.name()
                ),
            ));
        }
    }
    Ok(())
}

/// A subnet lives in its VNet's region; ARM refuses a reference to a route table, NSG or NAT gateway
/// in another region with the same answer as for a missing one.
fn check_subnet_region(store: &Store, id: &ArmId, value: &Value) -> Result<(), ArmError> {
    let vnet = id.parent().expect("a subnet has a VNet");
    check_subnet_region_in(store, id, value, store.get(&vnet.key()).and_then(|e| location(&e.value)))
}

/// [`check_subnet_region`] with the VNet's region given (`None`: the VNet has none, nothing to check).
fn check_subnet_region_in(store: &Store, id: &ArmId, value: &Value, region: Option<String>) -> Result<(), ArmError> {
    let Some(region) = region else { return Ok(()) };
    for link in links(Kind::Subnet, value)? {
        let Ok(target) = ArmId::parse(&link.target) else { continue };
        let Some(other) = store.get(&target.key()).and_then(|e| location(&e.value)) else { continue };
        if other != region {
            return Err(invalid_reference(&link.target, id));
        }
    }
    Ok(())
}

/// The scope a write to `id` holds while in flight: ARM serialises the writes within a VNet (the
/// VNet itself, its subnets); a second one meanwhile is refused with [`another_operation_in_progress`].
pub(crate) fn write_scope(id: &str) -> Option<(String, Refusal<Arm>)> {
    let mut top = ArmId::parse(id).ok()?;
    while top.is_child() {
        top = top.parent()?;
    }
    (top.kind() == Kind::VirtualNetwork).then(|| (top.key(), another_operation_in_progress as Refusal<Arm>))
}

/// ARM's answer to a write into a VNet while operation `operation` is in flight there (409).
pub(crate) fn another_operation_in_progress(store: &Store, vnet_key: &str, operation: u64) -> ArmError {
    let vnet = store.get(vnet_key);
    let region = vnet.and_then(|e| location(&e.value)).unwrap_or_else(|| "westeurope".to_string());
    let subscription =
        vnet.map(|e| e.id.subscription().to_string()).unwrap_or_else(|| store.subscription().to_string());
    ArmError::new(
        409,
        "AnotherOperationInProgress",
        format!(
            "Another operation on this or dependent resource is in progress. To retrieve status of the operation use uri: https://management.azure.com/subscriptions/{subscription}/providers/Microsoft.Network/locations/{region}/operations/00000000-0000-4000-8000-{operation:012x}?api-version=2024-03-01."
        ),
    )
}

/// PATCH (Update Tags, and a resource group's Update): the body's `tags` replace the resource's
/// (`{}` or `null` removes them; without `tags` they stay); nothing else changes but the etag. Only
/// a resource group or a top-level resource has tags (a nested one is 405); a missing one is 404.
pub(crate) fn patch_tags(store: &mut Store, id: &str, body: &Value) -> Result<(Value, u16), ArmError> {
    let id = parse_id(id)?;
    if id.kind() == Kind::Subscription || id.is_child() {
        return Err(ArmError::new(
            405,
            "MethodNotAllowed",
            format!("{id} has no tags of its own to update (PATCH updates the tags of a resource group or a top-level resource)"),
        ));
    }
    check_parent(store, &id)?;
    let Some(entry) = store.get(&id.key()).cloned() else {
        return Err(match id.kind() {
            Kind::ResourceGroup => rg_not_found(&id),
            _ => ArmError::new(
                404,
                "ResourceNotFound",
                format!(
                    "The Resource '{}/{}' under resource group '{}' was not found.",
                    id.rtype(),
                    id.name(),
                    id.resource_group().unwrap_or_default()
                ),
            ),
        });
    };
    let Some(body) = body.as_object() else {
        return Err(ArmError::new(400, "InvalidRequestContent", format!("the body for {id} must be a JSON object")));
    };
    let mut value = entry.value.clone();
    match body.get("tags") {
        None => {}
        Some(Value::Null) => {
            value.as_object_mut().map(|m| m.remove("tags"));
        }
        Some(Value::Object(tags)) => {
            if let Some((key, _)) = tags.iter().find(|(_, v)| !v.is_string()) {
                return Err(ArmError::new(
                    400,
                    "InvalidRequestContent",
                    format!("The value of tag '{key}' of {id} must be a string."),
                ));
            }
            if tags.is_empty() {
                value.as_object_mut().map(|m| m.remove("tags"));
            } else {
                value["tags"] = Value::Object(tags.clone());
            }
        }
        Some(_) => {
            return Err(ArmError::new(
                400,
                "InvalidRequestContent",
                format!("tags of {id} must be an object of string values"),
            ))
        }
    }
    let tick = store.tick();
    store.insert(Entry { value: with_etag(entry.kind, value, tick), ..entry });
    let stored = store.get(&id.key()).expect("inserted above");
    Ok((render(store, stored), 200))
}

/// The resources of a resource group or a subscription as ARM's generic list shows them
/// (`GET …/resources`: `GenericResourceExpanded` — id, name, type and, where the resource has them,
/// sku, kind, location, managedBy, identity, tags), top-level resources only, sorted by id.
pub(crate) fn resources(store: &Store, scope: &str) -> Result<Vec<Value>, ArmError> {
    let scope = parse_id(scope)?;
    let prefix = match scope.kind() {
        Kind::Subscription => format!("{}/resourcegroups/", scope.key()),
        Kind::ResourceGroup => {
            if store.get(&scope.key()).is_none() {
                return Err(rg_not_found(&scope));
            }
            format!("{}/", scope.key())
        }
        _ => {
            return Err(ArmError::new(
                400,
                "InvalidResourceType",
                format!(
                    "cannot list the resources of {scope}: only a subscription or a resource group has a resource list"
                ),
            ))
        }
    };
    let generic = |e: &Entry| {
        let mut out = Map::new();
        out.insert("id".into(), Value::String(e.id.as_str().to_string()));
        out.insert("name".into(), Value::String(e.id.name().to_string()));
        out.insert("type".into(), Value::String(e.id.rtype()));
        for key in ["sku", "kind", "location", "managedBy", "identity", "tags"] {
            if let Some(v) = e.value.get(key).filter(|v| !v.is_null()) {
                out.insert(key.into(), v.clone());
            }
        }
        Value::Object(out)
    };
    Ok(store.entries().filter(|e| e.id.key().starts_with(&prefix) && e.id.depth() == 8).map(generic).collect())
}

/// The precondition of a write to `id`, against the stored resource's etag (see
/// [`crate::core::precondition::check`]).
pub(crate) fn check_precondition(store: &Store, id: &str, p: &Precondition) -> Result<(), ArmError> {
    if *p == Precondition::none() {
        return Ok(());
    }
    let parsed = parse_id(id)?;
    let current = store.get(&parsed.key()).map(|e| e.value.get("etag").and_then(Value::as_str));
    precondition::check(parsed.as_str(), current, p)
}

/// DELETE: removes the resource and everything nested in it; 200, or 204 when it did not exist.
/// Refused while a resource that stays refers to one that would go.
pub(crate) fn delete(store: &mut Store, id: &str) -> Result<u16, ArmError> {
    let id = parse_id(id)?;
    if id.kind() == Kind::Subscription {
        return Err(ArmError::new(
            400,
            "InvalidResourceType",
            format!("{id} is a subscription; it cannot be deleted here"),
        ));
    }
    if id.kind() == Kind::DefaultSecurityRule {
        return Err(default_rules_are_read_only(&id));
    }
    let key = id.key();
    let Some(entry) = store.get(&key) else { return Ok(204) };
    let stored_id = entry.id.clone();
    let doomed: BTreeSet<String> =
        std::iter::once(key.clone()).chain(store.descendants(&key).map(|e| e.id.key())).collect();
    if let Some(e) = in_use(store, &stored_id, &doomed) {
        return Err(e);
    }
    for k in &doomed {
        store.remove(k);
    }
    if stored_id.is_child() {
        let tick = store.tick();
        touch_parent(store, &stored_id, tick);
    }
    Ok(200)
}

/// DELETE of a resource group, a long-running operation ([`crate::core::sim::Sim::call_lro`]) as in
/// ARM: accepted when nothing outside the group uses what is in it (else refused at once, nothing
/// deleted); the group shows `provisioningState: Deleting` (writes into it are refused with
/// `ResourceGroupBeingDeleted`), then [`resource_group_delete_step`] removes its resources one by one,
/// then the group. A group already `Deleting` (an interrupted delete) is resumed.
pub(crate) fn resource_group_delete_accept(store: &mut Store, rg: &ArmId) -> Result<Accepted, ArmError> {
    let key = rg.key();
    let Some(entry) = store.get(&key).cloned() else { return Ok(Accepted::Done(204)) };
    let doomed: BTreeSet<String> =
        std::iter::once(key.clone()).chain(store.descendants(&key).map(|e| e.id.key())).collect();
    if let Some(e) = in_use(store, &entry.id, &doomed) {
        return Err(e);
    }
    set_provisioning_state(store, &entry, "Deleting");
    Ok(Accepted::Started(top_level_resources(store, &key).count() + 1))
}

/// One step of a resource-group delete: the next resource nothing left uses (with what is nested in
/// it), or, when none is left, the group itself (200).
pub(crate) fn resource_group_delete_step(store: &mut Store, rg: &ArmId) -> Result<Step, ArmError> {
    let key = rg.key();
    let mut first = None;
    let mut next = None;
    for e in top_level_resources(store, &key) {
        first.get_or_insert_with(|| e.id.clone());
        let doomed: BTreeSet<String> =
            std::iter::once(e.id.key()).chain(store.descendants(&e.id.key()).map(|d| d.id.key())).collect();
        if in_use(store, &e.id, &doomed).is_none() {
            next = Some(e.id.clone());
            break;
        }
    }
    match next.or(first) {
        Some(resource) => {
            // Still in use by a resource outside the group (written since the delete began): ARM's
            // delete fails with the same refusal.
            let doomed: BTreeSet<String> =
                std::iter::once(resource.key()).chain(store.descendants(&resource.key()).map(|d| d.id.key())).collect();
            if let Some(e) = in_use(store, rg, &doomed) {
                return Err(e);
            }
            remove_with_descendants(store, &resource.key());
            Ok(Step::Progress)
        }
        None => {
            store.remove(&key);
            Ok(Step::Done(200))
        }
    }
}

/// A failed resource-group delete: the group is no longer `Deleting`; what was removed stays removed.
pub(crate) fn resource_group_delete_abort(store: &mut Store, rg: &ArmId) {
    if let Some(entry) = store.get(&rg.key()).cloned() {
        set_provisioning_state(store, &entry, "Succeeded");
    }
}

/// The resources directly in the resource group with key `rg` (not nested ones), in key order.
fn top_level_resources<'a>(store: &'a Store, rg: &str) -> impl Iterator<Item = &'a Entry> + 'a {
    store.descendants(rg).filter(|e| !e.id.is_child())
}

fn set_provisioning_state(store: &mut Store, entry: &Entry, state: &str) {
    let mut value = entry.value.clone();
    if let Some(props) = value.get_mut("properties").and_then(Value::as_object_mut) {
        props.insert("provisioningState".into(), Value::String(state.into()));
    }
    store.insert(Entry { value, ..entry.clone() });
}

/// Whether the stored resource group is being deleted.
fn being_deleted(entry: &Entry) -> bool {
    entry.value.pointer("/properties/provisioningState").and_then(Value::as_str) == Some("Deleting")
}

/// ARM's refusal of a write into (or of) a resource group being deleted.
fn resource_group_being_deleted(rg: &ArmId) -> ArmError {
    ArmError::new(
        409,
        "ResourceGroupBeingDeleted",
        format!(
            "The resource group '{}' is in deprovisioning state and cannot perform this operation; wait for its deletion to finish (delete it again to resume an interrupted deletion).",
            rg.name()
        ),
    )
}

/// The refusal when a resource outside `doomed` refers to one inside it.
fn in_use(store: &Store, deleting: &ArmId, doomed: &BTreeSet<String>) -> Option<ArmError> {
    // target key → (target id, spec, referrers)
    let mut blocked: BTreeMap<String, (String, &'static LinkSpec, Vec<String>)> = BTreeMap::new();
    for tk in doomed {
        let Some(stored) = store.get(tk) else { continue };
        for e in store.referrers(tk).filter(|e| !doomed.contains(&e.id.key())) {
            let Some(spec) = LINKS.iter().find(|s| s.from == e.kind && s.to == stored.kind) else { continue };
            let slot = blocked.entry(tk.clone()).or_insert_with(|| (stored.id.to_string(), spec, Vec::new()));
            slot.2.push(e.id.to_string());
        }
    }
    if blocked.is_empty() {
        return in_use_by_ip_configurations(store, deleting, doomed);
    }
    let (_, (target, spec, referrers)) = blocked.into_iter().next()?;
    let mut message = format!(
        "{} {target} is in use by {} and cannot be deleted. Remove the association (properties.{}) first and try again.",
        spec.to_type,
        referrers.join(", "),
        spec.property
    );
    if !target.eq_ignore_ascii_case(deleting.as_str()) {
        message = format!("Cannot delete {deleting}: {message}");
    }
    Some(ArmError::new(400, spec.in_use_code, message))
}

/// The refusal when a NIC, load balancer or VM outside `doomed` uses a subnet, public IP or NIC inside it.
fn in_use_by_ip_configurations(store: &Store, deleting: &ArmId, doomed: &BTreeSet<String>) -> Option<ArmError> {
    for tk in doomed {
        let Some(stored) = store.get(tk) else { continue };
        let users: Vec<String> = store
            .referrers(tk)
            .filter(|e| !doomed.contains(&e.id.key()))
            .flat_map(|e| usages(e.kind, &e.value))
            .filter(|u| u.to == stored.kind && ArmId::parse(&u.target).is_ok_and(|t| t.key() == *tk))
            .map(|u| u.user)
            .collect();
        if users.is_empty() {
            continue;
        }
        let error = in_use_by(&stored.id, &users);
        return Some(if stored.id.key() == deleting.key() {
            error
        } else {
            ArmError { message: format!("Cannot delete {deleting}: {}", error.message), ..error }
        });
    }
    None
}

/// The children of kind `kind` directly below the resource with key `key`.
fn direct_children<'a>(store: &'a Store, key: &str, kind: Kind) -> impl Iterator<Item = &'a Entry> + 'a {
    let key = key.to_string();
    store.descendants(&key.clone()).filter(move |e| e.kind == kind && e.id.is_child_of(&key))
}

fn remove_with_descendants(store: &mut Store, key: &str) {
    let doomed: Vec<String> =
        std::iter::once(key.to_string()).chain(store.descendants(key).map(|e| e.id.key())).collect();
    for k in doomed {
        store.remove(&k);
    }
}

/// A write to a nested resource changes its parent's etag, as in ARM.
fn touch_parent(store: &mut Store, child: &ArmId, tick: u64) {
    let Some(parent) = child.parent().and_then(|p| store.get(&p.key()).cloned()) else { return };
    let value = with_etag(parent.kind, parent.value, tick);
    store.insert(Entry { value, ..parent });
}

/// LIST: the direct children of `parent` of REST type `rtype`, sorted by id.
/// `parent` is a subscription (type `Microsoft.Resources/resourceGroups`), a resource group (a
/// top-level type such as `Microsoft.Network/natGateways`) or a resource (a child type such as
/// `Microsoft.Network/virtualNetworks/subnets`).
pub(crate) fn list(store: &Store, parent: &str, rtype: &str) -> Result<Vec<Value>, ArmError> {
    let parent = parse_id(parent)?;
    let invalid_type =
        |why: &str| ArmError::new(400, "InvalidResourceType", format!("cannot list '{rtype}' under {parent}: {why}"));
    let depth = rtype.split('/').count();
    match parent.kind() {
        Kind::Subscription => {
            let prefix = format!("{}/resourcegroups/", parent.key());
            // Keys are lowercase ids: `{prefix}{group}` for a group, `{prefix}{group}/providers/{ns}/{type}/{name}`
            // for a top-level resource. Only what is listed is read.
            let start = prefix.len();
            let segments = move |key: &str| key.get(start..).map_or(0, |k| k.split('/').count());
            if rtype.eq_ignore_ascii_case("Microsoft.Resources/resourceGroups") {
                return Ok(store
                    .entries_keyed(&prefix, move |k| segments(k) == 1)
                    .filter(|e| e.kind == Kind::ResourceGroup)
                    .map(|e| render(store, e))
                    .collect());
            }
            if depth != 2 {
                return Err(invalid_type(
                    "a subscription lists its resource groups, or the resources of a top-level type such as Microsoft.Network/virtualNetworks in all its resource groups",
                ));
            }
            // List All: the resources of that type in every resource group of the subscription.
            let typed = format!("/providers/{}/", rtype.to_ascii_lowercase());
            let of_type = move |k: &str| segments(k) == 5 && k.get(start..).is_some_and(|k| k.contains(&typed));
            Ok(store
                .entries_keyed(&prefix, of_type)
                .filter(|e| !e.id.is_child() && e.id.rtype_is(rtype))
                .filter(|e| e.kind != Kind::ResourceGroup)
                .map(|e| render(store, e))
                .collect())
        }
        Kind::ResourceGroup => {
            if store.get(&parent.key()).is_none() {
                return Err(rg_not_found(&parent));
            }
            if depth != 2 {
                return Err(invalid_type(
                    "a resource group holds top-level types such as Microsoft.Network/natGateways",
                ));
            }
            Ok(children_of(store, &parent, rtype))
        }
        _ => {
            let rg = parent.resource_group_id().expect("a resource lies in a resource group");
            if store.get(&rg.key()).is_none() {
                return Err(rg_not_found(&rg));
            }
            let own = parent.rtype();
            let is_child_type = rtype.len() > own.len()
                && rtype[..own.len()].eq_ignore_ascii_case(&own)
                && rtype.as_bytes()[own.len()] == b'/'
                && depth == own.split('/').count() + 1;
            if !is_child_type {
                return Err(invalid_type(&format!("the children of a {own} have types {own}/<child>")));
            }
            let Some(parent_entry) = store.get(&parent.key()) else {
                return Err(ArmError::new(
                    404,
                    "ResourceNotFound",
                    format!(
                        "The Resource '{own}/{}' under resource group '{}' was not found.",
                        parent.name(),
                        rg.name()
                    ),
                ));
            };
            if rtype.eq_ignore_ascii_case(default_rules::TYPE) {
                return Ok(default_rules::of(&parent_entry.id, parent_entry.value.get("etag")));
            }
            Ok(children_of(store, &parent, rtype))
        }
    }
}

fn children_of(store: &Store, parent: &ArmId, rtype: &str) -> Vec<Value> {
    let key = parent.key();
    store
        .descendants(&key)
        .filter(|e| e.id.is_child_of(&key) && e.id.rtype_is(rtype))
        .map(|e| render(store, e))
        .collect()
}

/// The resource as GET returns it: the stored value plus the collection array (children in creation
/// order) and the back-references (sorted by id).
pub(crate) fn render(store: &Store, entry: &Entry) -> Value {
    let mut value = entry.value.clone();
    let Some(props) = value.get_mut("properties").and_then(Value::as_object_mut) else { return value };
    let key = entry.id.key();
    if let Some(c) = collection_of(entry.kind) {
        let mut kids: Vec<&Entry> =
            store.descendants(&key).filter(|e| e.kind == c.child && e.id.is_child_of(&key)).collect();
        kids.sort_by_key(|e| e.seq);
        props.insert(c.property.into(), Value::Array(kids.into_iter().map(|e| render(store, e)).collect()));
    }
    if entry.kind == Kind::NetworkSecurityGroup {
        let rules = default_rules::of(&entry.id, entry.value.get("etag"));
        props.insert(default_rules::SEGMENT.into(), Value::Array(rules));
    }
    for spec in LINKS.iter().filter(|s| s.to == entry.kind) {
        let referrers: Vec<Value> =
            store.referrers(&key).filter(|e| e.kind == spec.from).map(|e| json!({ "id": e.id.as_str() })).collect();
        if referrers.is_empty() {
            continue;
        }
        let back = if spec.back_many { Value::Array(referrers) } else { referrers[0].clone() };
        props.insert(spec.back_property.into(), back);
    }
    value
}

/// ARM's answer to a reference it cannot resolve: the target is missing, or in another region.
fn invalid_reference(target: &str, id: &ArmId) -> ArmError {
    ArmError::new(
        400,
        "InvalidResourceReference",
        format!(
            "Resource {target} referenced by resource {id} was not found. Please make sure that the referenced resource exists, and that both resources are in the same region."
        ),
    )
}
