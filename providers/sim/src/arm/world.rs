//! The `azure:` section of a world file (see `core::world` for the file): its resources, their
//! checks, and the sync into the store.
//!
//! Resources may nest their children as ARM shows them (a VNet's `subnets`, an NSG's
//! `securityRules`, a route table's `routes`); each nested child is declared as if it were listed on
//! its own. A child listed on its own wins over the same child nested in its parent.
//! A world file holds what exists, as a GET or a list returns it: back-references (`subnets` on a
//! route table, say) and read-only fields (`etag`, `provisioningState`, an NSG's
//! `defaultSecurityRules`, nested or listed on their own) are accepted and ignored (computed on GET);
//! the rest (`resourceGuid`, a subnet's `ipConfigurations`, …) is kept as declared. ARM's refusals of a
//! write (security-rule priorities, address formats, …) do not apply to loading what exists.
//!
//! Subscriptions are checked, because examples copied with their placeholders would otherwise pass
//! silently (`/subscriptions/subid/…` in Microsoft's documented responses) and end up in `azure.json`:
//! `subscriptionId` is required as soon as resources are declared and must be a UUID; every resource
//! must be in that subscription, or in one listed under `otherSubscriptions` (a hub network in another
//! subscription, which pre-flight rule C12 then reports); each problem names the resource and its line.

use crate::arm::rules::{self, check_link, links, normalize, without_etag, LinkProblem};
use crate::arm::store::{descendants, Entry, Store};
use crate::arm::{ArmId, Kind};
use crate::core::world::{SyncReport, WorldFile, WorldSection};
use crate::core::Origin;
use crate::SimError;
use serde::Deserialize;
use serde_json::Value;
use serde_saphyr::Spanned;
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The `azure:` section.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AzureWorld {
    pub subscription_id: Option<String>,
    /// Other subscriptions resources of the file may be in (`otherSubscriptions`).
    pub other_subscriptions: Vec<String>,
    pub resources: Vec<WorldResource>,
}

/// One declared resource and where it starts in the file.
#[derive(Clone, Debug, PartialEq)]
pub struct WorldResource {
    pub value: Value,
    pub line: u64,
    pub column: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawAzure {
    pub subscription_id: Option<String>,
    #[serde(default)]
    pub other_subscriptions: Vec<String>,
    #[serde(default)]
    pub resources: Vec<Spanned<Value>>,
}

/// The `azure:` section of world files ([`WorldSection`]).
pub struct Section;

/// The `azure:` section of world files.
pub static SECTION: Section = Section;

impl WorldSection for Section {
    fn key(&self) -> &'static str {
        "azure"
    }

    fn check(&self, world: &WorldFile) -> Result<(), SimError> {
        if let Some(azure) = AzureWorld::of(world)? {
            azure.declared(&world.path)?;
        }
        Ok(())
    }
}

impl AzureWorld {
    /// The `azure:` section of `world` (`None`: it has none).
    pub fn of(world: &WorldFile) -> Result<Option<AzureWorld>, SimError> {
        #[derive(Deserialize)]
        struct File {
            azure: Option<RawAzure>,
        }
        Ok(world.read::<File>()?.azure.map(AzureWorld::from_raw))
    }

    fn from_raw(a: RawAzure) -> AzureWorld {
        AzureWorld {
            subscription_id: a.subscription_id,
            other_subscriptions: a.other_subscriptions,
            resources: a
                .resources
                .into_iter()
                .map(|s| WorldResource { value: s.value, line: s.referenced.line(), column: s.referenced.column() })
                .collect(),
        }
    }

    /// The Azure resources the section declares, normalized, nested children split out, in file order.
    pub(crate) fn declared(&self, path: &str) -> Result<Vec<Declared>, SimError> {
        let mut problems = Vec::new();
        let mut out: Vec<Declared> = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        let resources = self.resources.as_slice();
        let others = self.other_subscriptions.as_slice();
        let sub = self.subscription_id.as_deref();
        // The file's subscription, when it is one: resources are checked against it.
        let file_sub = sub.filter(|s| is_subscription_id(s));
        if let Some(sub) = sub.filter(|s| !is_subscription_id(s)) {
            problems.push(format!(
                "world file {}: azure.subscriptionId \"{sub}\" is not a subscription id: give the id of the subscription your resources are in, a UUID such as {EXAMPLE_SUBSCRIPTION} (az account show --query id -o tsv)",
                path
            ));
        }
        for (i, other) in others.iter().enumerate() {
            if !is_subscription_id(other) {
                problems.push(format!(
                    "world file {}: azure.otherSubscriptions[{i}] \"{other}\" is not a subscription id: give the id of the other subscription your resources are in, a UUID such as {EXAMPLE_SUBSCRIPTION}",
                    path
                ));
            } else if sub.is_some_and(|s| s.eq_ignore_ascii_case(other)) {
                problems.push(format!(
                    "world file {}: azure.otherSubscriptions[{i}] \"{other}\" is the file's own subscription (azure.subscriptionId); remove it",
                    path
                ));
            }
        }
        if sub.is_none() && !resources.is_empty() {
            let first = resources.iter().find_map(|r| {
                let id = ArmId::parse(r.value.get("id")?.as_str()?).ok()?;
                Some(format!(" ({}, the subscription of the first resource, line {})", id.subscription(), r.line))
            });
            problems.push(format!(
                "world file {}: azure.subscriptionId is not set; give the id of the subscription your resources are in{}",
                path,
                first.unwrap_or_default()
            ));
        }
        for r in resources {
            let at = format!("line {}, column {}", r.line, r.column);
            let Some(text) = r.value.get("id").and_then(Value::as_str) else {
                problems.push(format!(
                    "world file {}: the resource at {at} has no `id`; give its ARM id (/subscriptions/<id>/resourceGroups/<group>/…)",
                    path
                ));
                continue;
            };
            let id = match ArmId::parse(text) {
                Ok(id) if id.kind() != Kind::Subscription => id,
                Ok(_) => {
                    problems.push(format!(
                        "world file {}: {text} ({at}) is a subscription, not a resource; set azure.subscriptionId instead",
                        path
                    ));
                    continue;
                }
                Err(e) => {
                    problems.push(format!("world file {}: resource at {at}: {e}", path));
                    continue;
                }
            };
            if let Some(problem) = subscription_problem(&id, file_sub, others) {
                problems.push(format!("world file {}: resource {id} ({at}) {problem}", path));
                continue;
            }
            if let Some(key) = flattened_property(&r.value) {
                problems.push(format!(
                    "world file {}: resource {id} ({at}) has `{key}` at the top level: this looks like `az … show -o json` output, which flattens `properties`; export the ARM shape with `az rest --method get --url '{id}?api-version=2024-03-01'` (or examples/export-world.sh)",
                    path
                ));
                continue;
            }
            if id.kind() == Kind::DefaultSecurityRule {
                // One of the rules Azure shows in every NSG, exported on its own: accepted, and
                // computed from its NSG as on every GET (see `arm::default_rules`).
                continue;
            }
            let mut found = Vec::new();
            if let Err(e) = split(&id, r.value.clone(), &mut found) {
                problems.push(format!("world file {}: resource {id} ({at}): {}", path, e.message));
                continue;
            }
            for (i, (id, value, etag)) in found.into_iter().enumerate() {
                let nested = i > 0;
                let d = Declared { id, value, etag, line: r.line, column: r.column, nested };
                match index.get(&d.id.key()).copied() {
                    None => {
                        index.insert(d.id.key(), out.len());
                        out.push(d);
                    }
                    Some(j) if out[j].nested && !nested => out[j] = d,
                    Some(_) if nested => {}
                    Some(j) => problems.push(format!(
                        "world file {}: resource {} is declared twice (line {} and line {}); keep one",
                        path, d.id, out[j].line, d.line
                    )),
                }
            }
        }
        if problems.is_empty() {
            Ok(out)
        } else {
            Err(SimError::WorldInvalid { path: path.to_string(), problems })
        }
    }
}

/// An example subscription id for messages.
const EXAMPLE_SUBSCRIPTION: &str = "6d3a9c1e-2b4f-4e8a-9c71-5f0e2d8b4a17";

/// A subscription id as ARM writes it: a UUID, `8-4-4-4-12` hex digits (either case).
fn is_subscription_id(s: &str) -> bool {
    s.len() == 36 && uuid::Uuid::try_parse(s).is_ok()
}

/// Why a declared resource may not be in the subscription its id names: not a subscription id at all
/// (a placeholder), or neither the file's subscription nor one of `others`. `file_sub` is `None` when
/// the file's own subscription is missing or invalid (reported on its own).
fn subscription_problem(id: &ArmId, file_sub: Option<&str>, others: &[String]) -> Option<String> {
    let sub = id.subscription();
    if !is_subscription_id(sub) {
        let file =
            file_sub.map(|f| format!(": the file's subscription is {f} (azure.subscriptionId)")).unwrap_or_default();
        return Some(format!(
            "is in subscription \"{sub}\", which is not a subscription id (a placeholder copied from an example?); give the id of the subscription it is in{file}"
        ));
    }
    let file_sub = file_sub?;
    if sub.eq_ignore_ascii_case(file_sub) || others.iter().any(|o| o.eq_ignore_ascii_case(sub)) {
        return None;
    }
    Some(format!(
        "is in subscription {sub}, not the file's subscription {file_sub} (azure.subscriptionId); correct its id, or list {sub} under azure.otherSubscriptions if it really lives in another subscription"
    ))
}

/// A declared resource in stored form (no etag yet).
pub(crate) struct Declared {
    id: ArmId,
    value: Value,
    /// The etag the file gives it (an export's, as Azure answered): kept instead of a new one.
    etag: Option<String>,
    line: u64,
    column: u64,
    /// Found nested in its parent rather than listed on its own.
    nested: bool,
}

/// Normalizes `body` and, recursively, the children nested in it; the resource comes first.
/// The `etag` the body was read with, if any, is kept beside it: a world file holds what exists, so an
/// exported resource keeps the etag Azure answered (see [`sync`]).
fn split(id: &ArmId, body: Value, out: &mut Vec<(ArmId, Value, Option<String>)>) -> Result<(), rules::ArmError> {
    let etag = body.get("etag").and_then(Value::as_str).map(str::to_string);
    let n = normalize(id, body)?;
    out.push((id.clone(), n.value, etag));
    for (child, body) in n.children.unwrap_or_default() {
        split(&child, body, out)?;
    }
    Ok(())
}

/// Makes the store hold exactly what `world` declares (origin World): adds and updates the declared
/// resources, removes World resources no longer declared (with what is nested in them), leaves API
/// resources alone. Nothing changes when the result would break containment or a reference.
pub(crate) fn sync(store: &mut Store, world: &WorldFile) -> Result<SyncReport, SimError> {
    let azure = AzureWorld::of(world)?;
    let declared = match &azure {
        Some(azure) => azure.declared(&world.path)?,
        None => Vec::new(),
    };
    let declared_keys: BTreeSet<String> = declared.iter().map(|d| d.id.key()).collect();

    // The world after the sync, without etags and creation order yet.
    let now = store.all();
    let mut next: BTreeMap<String, Entry> = now.clone();
    for (key, e) in &now {
        if e.origin == Origin::World && !declared_keys.contains(key) {
            let below: Vec<String> = descendants(&next, key).map(|e| e.id.key()).collect();
            next.remove(key);
            for k in below {
                next.remove(&k);
            }
        }
    }
    let mut upserts: Vec<usize> = Vec::new();
    for (i, d) in declared.iter().enumerate() {
        let unchanged = next
            .get(&d.id.key())
            .is_some_and(|e| e.origin == Origin::World && e.id == d.id && without_etag(&e.value) == d.value);
        if !unchanged {
            upserts.push(i);
            next.insert(d.id.key(), Entry::new(d.id.clone(), d.value.clone(), Origin::World, 0));
        }
    }

    let problems = check_world(&next, &declared, &world.path);
    if !problems.is_empty() {
        return Err(SimError::WorldInvalid { path: world.path.clone(), problems });
    }

    let mut report = SyncReport::default();
    let gone: Vec<String> = now.keys().filter(|k| !next.contains_key(*k)).cloned().collect();
    for key in gone {
        if let Some(e) = store.remove(&key) {
            report.removed.push(e.id.to_string());
        }
    }
    for i in upserts {
        let d = &declared[i];
        let tick = store.tick();
        let (seq, list) = match store.get(&d.id.key()) {
            Some(old) => (old.seq, &mut report.updated),
            None => (tick, &mut report.added),
        };
        list.push(d.id.to_string());
        let mut value = rules::with_etag(d.id.kind(), d.value.clone(), tick);
        if let (Some(etag), Some(slot)) = (&d.etag, value.get_mut("etag")) {
            *slot = Value::String(etag.clone());
        }
        store.insert(Entry::new(d.id.clone(), value, Origin::World, seq));
    }
    if let Some(sub) = azure.as_ref().and_then(|a| a.subscription_id.as_deref()) {
        store.set_subscription(sub);
    }
    store.commit()?;
    for ids in [&mut report.added, &mut report.updated, &mut report.removed] {
        ids.sort_by_key(|id| id.to_ascii_lowercase());
    }
    Ok(report)
}

/// Containment and references of the world after a sync; one message per problem.
fn check_world(next: &BTreeMap<String, Entry>, declared: &[Declared], path: &str) -> Vec<String> {
    let by_key: HashMap<String, &Declared> = declared.iter().map(|d| (d.id.key(), d)).collect();
    let mut problems = Vec::new();
    for (key, e) in next {
        let decl = by_key.get(key);
        if let Some(d) = decl {
            let parent = match e.kind {
                Kind::ResourceGroup => None,
                _ if e.id.is_child() => e.id.parent(),
                _ => e.id.resource_group_id(),
            };
            if let Some(parent) = parent.filter(|p| !next.contains_key(&p.key())) {
                problems.push(format!(
                    "world file {path}: resource {} (line {}, column {}) references missing parent {parent}; add the parent to the file",
                    e.id, d.line, d.column
                ));
                continue;
            }
        }
        for link in links(e.kind, &e.value).unwrap_or_default() {
            let problem = match check_link(&|key: &str| next.contains_key(key), &link) {
                Ok(()) => continue,
                Err(LinkProblem::Malformed(detail)) => format!("has an invalid {}: {detail}", link.path()),
                Err(LinkProblem::WrongType(found)) => format!(
                    "has a {found} in {}; it must be the id of a {}",
                    link.path(),
                    link.spec.to_type
                ),
                Err(LinkProblem::Missing) => match decl {
                    Some(_) => format!(
                        "references missing {} {} ({}); add it to the file",
                        link.spec.to_type,
                        link.target,
                        link.path()
                    ),
                    None => format!(
                        "references {} ({}), which the file no longer declares; declare it again, or remove the reference first",
                        link.target,
                        link.path()
                    ),
                },
            };
            problems.push(match decl {
                Some(d) => {
                    format!("world file {path}: resource {} (line {}, column {}) {problem}", e.id, d.line, d.column)
                }
                None => format!("world file {path}: {} (created through the API) {problem}", e.id),
            });
        }
    }
    problems
}

/// A property that belongs under `properties` but sits at the top level (flattened `az` CLI output).
fn flattened_property(value: &Value) -> Option<&'static str> {
    const PROPERTY_KEYS: [&str; 10] = [
        "addressPrefix",
        "addressPrefixes",
        "addressSpace",
        "routeTable",
        "networkSecurityGroup",
        "natGateway",
        "routes",
        "securityRules",
        "publicIpAddresses",
        "provisioningState",
    ];
    PROPERTY_KEYS.into_iter().find(|k| value.get(k).is_some())
}
