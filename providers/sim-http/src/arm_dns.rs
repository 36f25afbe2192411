//! The simulated DNS ([`DnsSim`]) served as Azure DNS (ARM `Microsoft.Network/dnsZones`, REST
//! api-version 2018-05-01), so the real ARM client and its DNS adaptor are tested against the same
//! store the engine uses in process. Every request is translated to the simulated DNS's neutral calls
//! (`/dns/zones/{zone}`, `/dns/zones/{zone}/records/{fqdn}/{TYPE}`), so the store's rules (zone must
//! exist, name inside the zone, CNAME exclusive at its name, TTL range, values valid for the type,
//! versions) are the one set of rules for both.
//!
//! # Which zones are Azure's
//! A zone of the simulated DNS is served under `/subscriptions/{s}/resourceGroups/{rg}` when its
//! `azure` block (the world file's, else resource group `dns`) names `{rg}` (case-insensitively) and
//! `{s}` or no subscription (then it is served under every subscription).
//!
//! # Routes
//! | request | answer |
//! |---|---|
//! | `GET /subscriptions/{s}/providers/Microsoft.Network/dnszones` | 200 the subscription's zones, paged |
//! | `GET /subscriptions/{s}/resourceGroups/{rg}/providers/Microsoft.Network/dnszones` | 200 the group's zones, paged |
//! | `GET …/dnszones/{zone}` | 200 the zone; 404 `ResourceNotFound` |
//! | `GET …/dnszones/{zone}/recordsets`, `…/dnszones/{zone}/{TYPE}` | 200 its record sets (of that type), paged; 404 `ParentResourceNotFound` |
//! | `GET …/dnszones/{zone}/{TYPE}/{name}` | 200 the record set; 404 `NotFound` |
//! | `PUT …/dnszones/{zone}/{TYPE}/{name}` | 201 created / 200 replaced, synchronous, the record set; `If-None-Match: *` of an existing set, `If-Match` of another etag and `If-Match: *` of a missing set are 412 `PreconditionFailed` |
//! | `DELETE …/dnszones/{zone}/{TYPE}/{name}` | 200 deleted, 204 absent; `If-Match` of another etag (or of a missing set) 412 |
//!
//! `{TYPE}` is `A`, `AAAA`, `CNAME` or `TXT` (the types the simulated DNS holds; any other is 400
//! `BadRequest`), `{name}` the name relative to the zone, `@` at the apex. Refusals of the store are
//! Azure DNS's: a missing zone 404 `ParentResourceNotFound`, a CNAME beside another record set 409
//! `Conflict`, an invalid body or value 400 `BadRequest`. Zones are declared by the world file's `dns:`
//! section: PUT or DELETE of a zone is 405. Not modelled: SOA and NS record sets, the other record
//! types, `metadata`, PATCH (Update), alias record sets (`targetResource`), private zones.
//!
//! Authentication, the `Host` check (421), `api-version` (400), paging (`nextLink`, `$skiptoken`)
//! and the answer to injected faults (429 with `Retry-After`, 500, 504) are the ARM server's; an
//! api-version Azure DNS does not offer is 400 `NoRegisteredProviderFound`.

use super::{
    api_version_refusal, arm_error, bearer_refusal, cloud_error_stalling, page_of, parse_request, skip_token,
    with_headers, Req, ServerOptions,
};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use axum::Router;
use serde_json::{json, Map, Value};
use trellis_planner::cloud::{CloudError, CloudRead, CloudWrite, Precondition};
use trellis_sim::dns::store::record_id;
use trellis_sim::dns::RecordType;
use trellis_sim::DnsSim;

/// The api-versions of Azure DNS (`Microsoft.Network/dnsZones`).
pub const API_VERSIONS: [&str; 6] =
    ["2016-04-01", "2017-09-01", "2017-10-01", "2018-03-01-preview", "2018-05-01", "2023-07-01-preview"];

/// Whether a request path is Azure DNS's: `…/providers/Microsoft.Network/dnszones[/…]` under a
/// subscription or a resource group (keywords compared case-insensitively, as ARM does).
pub fn is_arm_dns_path(path: &str) -> bool {
    let lower: Vec<String> = path.split('/').filter(|s| !s.is_empty()).map(str::to_ascii_lowercase).collect();
    let at = |i: usize, w: &str| lower.get(i).is_some_and(|s| s == w);
    if !at(0, "subscriptions") {
        return false;
    }
    let dns_at = |p: usize| at(p, "providers") && at(p + 1, "microsoft.network") && at(p + 2, "dnszones");
    (lower.len() == 5 && dns_at(2)) || (at(2, "resourcegroups") && lower.len() >= 7 && dns_at(4))
}

/// The simulated DNS behind an HTTP server in Azure DNS's shapes.
#[derive(Clone)]
pub struct ArmDnsServer {
    dns: DnsSim,
    opts: std::sync::Arc<ServerOptions>,
}

impl ArmDnsServer {
    /// Serves `dns` with `opts` (page size, required token, timeout stall).
    pub fn new(dns: DnsSim, opts: ServerOptions) -> ArmDnsServer {
        ArmDnsServer { dns, opts: std::sync::Arc::new(opts) }
    }

    /// The axum router: one fallback handler (ARM paths are case-insensitive).
    pub fn router(&self) -> Router {
        Router::new().fallback(handle).with_state(self.clone())
    }
}

async fn handle(
    State(srv): State<ArmDnsServer>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let req = match parse_request(method, &uri, headers, body).0 {
        Ok(req) => req,
        Err((_, refused)) => return refused,
    };
    if let Some(refused) = bearer_refusal(&srv.opts, &req).or_else(|| api_version_refusal(&req)) {
        return refused;
    }
    let version = req.param("api-version").unwrap_or("");
    if !API_VERSIONS.contains(&version) {
        return arm_error(
            StatusCode::BAD_REQUEST,
            "NoRegisteredProviderFound",
            format!(
                "No registered resource provider found for location 'global' and API version '{version}' for type 'dnszones'. The supported api-versions are '{}'.",
                API_VERSIONS.join(", ")
            ),
        );
    }
    route(&srv, &req).await
}

/// Where a request points: the subscription, the resource group (if any), and below.
async fn route(srv: &ArmDnsServer, req: &Req) -> Response {
    let n = req.segs.len();
    let subscription = req.segs[1].as_str();
    if n == 5 {
        return match req.method {
            Method::GET => list_zones(srv, req, subscription, None).await,
            _ => method_not_allowed(req),
        };
    }
    let group = req.segs[3].as_str();
    match n {
        7 if req.method == Method::GET => list_zones(srv, req, subscription, Some(group)).await,
        8 => match req.method {
            Method::GET => get_zone(srv, req, subscription, group).await,
            _ => arm_error(
                StatusCode::METHOD_NOT_ALLOWED,
                "MethodNotAllowed",
                format!(
                    "The simulated Azure DNS does not support {} on zone '{}': zones are declared in the world file's dns: section.",
                    req.method, req.segs[7]
                ),
            ),
        },
        9 if req.method == Method::GET => list_record_sets(srv, req, subscription, group).await,
        10 => record_set(srv, req, subscription, group).await,
        _ => method_not_allowed(req),
    }
}

fn method_not_allowed(req: &Req) -> Response {
    arm_error(
        StatusCode::METHOD_NOT_ALLOWED,
        "MethodNotAllowed",
        format!("The simulated Azure DNS does not support {} on '/{}'.", req.method, req.segs.join("/")),
    )
}

/// Whether the neutral zone `zone` is served under `subscription` (and `group`, when given).
fn served_in(zone: &Value, subscription: &str, group: Option<&str>) -> bool {
    let Some(azure) = zone.get("azure") else { return false };
    let sub_ok = azure
        .get("subscription")
        .and_then(Value::as_str)
        .is_none_or(|s| s.is_empty() || s.eq_ignore_ascii_case(subscription));
    let group_ok = match group {
        Some(g) => azure.get("resourceGroup").and_then(Value::as_str).is_some_and(|rg| rg.eq_ignore_ascii_case(g)),
        None => azure.get("resourceGroup").and_then(Value::as_str).is_some_and(|rg| !rg.is_empty()),
    };
    sub_ok && group_ok
}

/// `/subscriptions/{s}/resourceGroups/{rg}/providers/Microsoft.Network/dnszones/{zone}`.
fn zone_arm_id(subscription: &str, zone: &Value) -> String {
    let rg = zone.pointer("/azure/resourceGroup").and_then(Value::as_str).unwrap_or("");
    let name = zone.get("name").and_then(Value::as_str).unwrap_or("");
    format!("/subscriptions/{subscription}/resourceGroups/{rg}/providers/Microsoft.Network/dnszones/{name}")
}

/// A neutral zone as Azure DNS answers it.
fn arm_zone(subscription: &str, zone: &Value) -> Value {
    json!({
        "id": zone_arm_id(subscription, zone),
        "name": zone.get("name").cloned().unwrap_or(Value::Null),
        "type": "Microsoft.Network/dnszones",
        "location": "global",
        "tags": {},
        "properties": { "zoneType": "Public" },
    })
}

async fn list_zones(srv: &ArmDnsServer, req: &Req, subscription: &str, group: Option<&str>) -> Response {
    let skip = match skip_token(req) {
        Ok(skip) => skip,
        Err(refused) => return refused.answer(),
    };
    let zones = match srv.dns.list("/dns", "zones").await {
        Ok(zones) => zones,
        Err(e) => return cloud_error_stalling(srv.opts.timeout_stall, e).await,
    };
    let items: Vec<Value> =
        zones.iter().filter(|z| served_in(z, subscription, group)).map(|z| arm_zone(subscription, z)).collect();
    page_of(srv.opts.page_size, req, skip, &items)
}

fn zone_not_found(group: &str, zone: &str) -> Response {
    arm_error(
        StatusCode::NOT_FOUND,
        "ResourceNotFound",
        format!("The Resource 'Microsoft.Network/dnszones/{zone}' under resource group '{group}' was not found."),
    )
}

fn parent_not_found(zone: &str) -> Response {
    arm_error(
        StatusCode::NOT_FOUND,
        "ParentResourceNotFound",
        format!("Can not perform requested operation on nested resource. Parent resource '{zone}' not found."),
    )
}

async fn get_zone(srv: &ArmDnsServer, req: &Req, subscription: &str, group: &str) -> Response {
    let name = normal_name(&req.segs[7]);
    match srv.dns.get(&format!("/dns/zones/{name}")).await {
        Ok(Some(zone)) if served_in(&zone, subscription, Some(group)) => {
            with_headers(StatusCode::OK, Some(arm_zone(subscription, &zone)), &[])
        }
        Ok(_) => zone_not_found(group, &req.segs[7]),
        Err(e) => cloud_error_stalling(srv.opts.timeout_stall, e).await,
    }
}

/// The zone of a request below one (`…/dnszones/{zone}/…`), looked up without a call of its own
/// (the server's routing, not a call of the client's): `None` when it is not served there.
fn zone_of(srv: &ArmDnsServer, req: &Req, subscription: &str, group: &str) -> Option<(String, Value)> {
    let zone = srv.dns.azure_zone(subscription, group, &req.segs[7])?;
    let name = zone.get("name").and_then(Value::as_str).map(normal_name)?;
    Some((name, zone))
}

fn normal_name(name: &str) -> String {
    let name = name.trim();
    name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase()
}

/// The record type of a path segment; the message of Azure DNS's 400 `BadRequest` otherwise.
fn record_type(segment: &str) -> Result<RecordType, String> {
    RecordType::parse(&segment.to_ascii_uppercase()).ok_or_else(|| {
        format!("The record type '{segment}' is not supported by the simulated Azure DNS: it holds A, AAAA, CNAME and TXT record sets.")
    })
}

fn bad_request(message: String) -> Response {
    arm_error(StatusCode::BAD_REQUEST, "BadRequest", message)
}

async fn list_record_sets(srv: &ArmDnsServer, req: &Req, subscription: &str, group: &str) -> Response {
    let skip = match skip_token(req) {
        Ok(skip) => skip,
        Err(refused) => return refused.answer(),
    };
    let only = match req.lower[8].as_str() {
        "recordsets" => None,
        other => match record_type(other) {
            Ok(t) => Some(t),
            Err(message) => return bad_request(message),
        },
    };
    let Some((name, zone)) = zone_of(srv, req, subscription, group) else { return parent_not_found(&req.segs[7]) };
    let records = match srv.dns.list(&format!("/dns/zones/{name}"), "records").await {
        Ok(records) => records,
        Err(e) => return refused(srv, e, &req.segs[7]).await,
    };
    let zone_id = zone_arm_id(subscription, &zone);
    let items: Vec<Value> = records
        .iter()
        .filter(|r| only.is_none_or(|t| r.get("type").and_then(Value::as_str) == Some(t.as_str())))
        .filter_map(|r| arm_record_set(&zone_id, &name, r))
        .collect();
    page_of(srv.opts.page_size, req, skip, &items)
}

/// A neutral record set of `zone` as Azure DNS answers it (`None`: not a record set).
fn arm_record_set(zone_id: &str, zone: &str, record: &Value) -> Option<Value> {
    let rtype = RecordType::parse(record.get("type")?.as_str()?)?;
    let fqdn = normal_name(record.get("name")?.as_str()?);
    let relative = if fqdn == zone { "@".to_string() } else { fqdn.strip_suffix(&format!(".{zone}"))?.to_string() };
    let values: Vec<&str> = record
        .get("values")
        .and_then(Value::as_array)
        .map(|v| v.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut props = Map::new();
    props.insert("fqdn".into(), json!(format!("{fqdn}.")));
    props.insert("TTL".into(), record.get("ttl").cloned().unwrap_or(json!(0)));
    props.insert("provisioningState".into(), json!("Succeeded"));
    props.insert("targetResource".into(), json!({}));
    match rtype {
        RecordType::A => props.insert("ARecords".into(), values.iter().map(|v| json!({ "ipv4Address": v })).collect()),
        RecordType::Aaaa => {
            props.insert("AAAARecords".into(), values.iter().map(|v| json!({ "ipv6Address": v })).collect())
        }
        RecordType::Cname => {
            props.insert("CNAMERecord".into(), json!({ "cname": values.first().copied().unwrap_or("") }))
        }
        RecordType::Txt => props.insert("TXTRecords".into(), values.iter().map(|v| json!({ "value": [v] })).collect()),
    };
    let mut out = json!({
        "id": format!("{zone_id}/{rtype}/{relative}"),
        "name": relative,
        "type": format!("Microsoft.Network/dnszones/{rtype}"),
        "properties": props,
    });
    if let Some(etag) = record.get("etag").and_then(Value::as_str) {
        out["etag"] = json!(etag);
    }
    Some(out)
}

/// A PUT's ARM body as the neutral record set `{name, type, ttl, values}` of `fqdn`/`rtype`; every
/// problem is the message of Azure DNS's 400 `BadRequest`.
fn neutral_body(body: &[u8], fqdn: &str, rtype: RecordType) -> Result<Value, String> {
    let bad = |message: String| message;
    let doc: Value = serde_json::from_slice(body)
        .map_err(|e| bad(format!("The request content was invalid and could not be deserialized: {e}")))?;
    let Some(props) = doc.get("properties").and_then(Value::as_object) else {
        return Err(bad("The record set must have properties.".to_string()));
    };
    let ttl = match props.get("TTL") {
        Some(t) => t.as_u64().ok_or_else(|| bad(format!("The value {t} of TTL is not valid: expected seconds.")))?,
        None => return Err(bad("The TTL of the record set is missing.".to_string())),
    };
    const ARRAYS: [(&str, RecordType); 4] = [
        ("ARecords", RecordType::A),
        ("AAAARecords", RecordType::Aaaa),
        ("CNAMERecord", RecordType::Cname),
        ("TXTRecords", RecordType::Txt),
    ];
    for (key, of) in ARRAYS {
        if of != rtype && props.get(key).is_some_and(|v| !v.is_null() && v.as_array().is_none_or(|a| !a.is_empty())) {
            return Err(bad(format!("A record set of type {rtype} cannot hold {key}.")));
        }
    }
    let strings = |key: &str, field: &str| -> Result<Vec<Value>, String> {
        let Some(records) = props.get(key) else { return Ok(Vec::new()) };
        let records = records.as_array().ok_or_else(|| bad(format!("{key} must be an array.")))?;
        records
            .iter()
            .map(|r| {
                r.get(field)
                    .and_then(Value::as_str)
                    .map(|v| json!(v))
                    .ok_or_else(|| bad(format!("Each of {key} must have the string {field}.")))
            })
            .collect()
    };
    let values = match rtype {
        RecordType::A => strings("ARecords", "ipv4Address")?,
        RecordType::Aaaa => strings("AAAARecords", "ipv6Address")?,
        RecordType::Cname => match props.get("CNAMERecord") {
            None | Some(Value::Null) => Vec::new(),
            Some(r) => vec![r
                .get("cname")
                .and_then(Value::as_str)
                .map(|v| json!(v))
                .ok_or_else(|| bad("CNAMERecord must have the string cname.".to_string()))?],
        },
        RecordType::Txt => {
            let Some(records) = props.get("TXTRecords") else { return Ok(neutral(fqdn, rtype, ttl, Vec::new())) };
            let records = records.as_array().ok_or_else(|| bad("TXTRecords must be an array.".to_string()))?;
            records
                .iter()
                .map(|r| {
                    let parts = r.get("value").and_then(Value::as_array);
                    let parts = parts
                        .filter(|p| p.iter().all(Value::is_string))
                        .ok_or_else(|| bad("Each of TXTRecords must have value, an array of strings.".to_string()))?;
                    Ok(json!(parts.iter().filter_map(Value::as_str).collect::<String>()))
                })
                .collect::<Result<_, String>>()?
        }
    };
    Ok(neutral(fqdn, rtype, ttl, values))
}

fn neutral(fqdn: &str, rtype: RecordType, ttl: u64, values: Vec<Value>) -> Value {
    json!({ "name": fqdn, "type": rtype.as_str(), "ttl": ttl, "values": values })
}

/// A refusal of the simulated DNS as Azure DNS answers it.
async fn refused(srv: &ArmDnsServer, e: CloudError, name: &str) -> Response {
    match e {
        CloudError::AlreadyExists { .. } => arm_error(
            StatusCode::PRECONDITION_FAILED,
            "PreconditionFailed",
            format!("The Record set {name} exists already and hence cannot be created again."),
        ),
        CloudError::PreconditionFailed { .. } => arm_error(
            StatusCode::PRECONDITION_FAILED,
            "PreconditionFailed",
            format!("The Record set {name} has been modified (etag mismatch)."),
        ),
        CloudError::Rejected { status: 404, .. } => parent_not_found(name),
        CloudError::Rejected { status: 409, message, .. } => arm_error(StatusCode::CONFLICT, "Conflict", message),
        CloudError::Rejected { status, message, .. } if (400..500).contains(&status) && status != 429 => {
            arm_error(StatusCode::BAD_REQUEST, "BadRequest", message)
        }
        other => cloud_error_stalling(srv.opts.timeout_stall, other).await,
    }
}

/// GET, PUT or DELETE of one record set: `…/dnszones/{zone}/{TYPE}/{name}`.
async fn record_set(srv: &ArmDnsServer, req: &Req, subscription: &str, group: &str) -> Response {
    let rtype = match record_type(&req.segs[8]) {
        Ok(t) => t,
        Err(message) => return bad_request(message),
    };
    let Some((zone_name, zone)) = zone_of(srv, req, subscription, group) else {
        return parent_not_found(&req.segs[7]);
    };
    let relative = normal_name(&req.segs[9]);
    let fqdn = if relative == "@" { zone_name.clone() } else { format!("{relative}.{zone_name}") };
    let id = record_id(&zone_name, &fqdn, rtype);
    let zone_id = zone_arm_id(subscription, &zone);
    let shown = &req.segs[9];
    let answer = |status: StatusCode, record: &Value| match arm_record_set(&zone_id, &zone_name, record) {
        Some(doc) => with_headers(status, Some(doc), &[]),
        None => arm_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalServerError",
            format!("the simulated DNS answered a record set that Azure DNS cannot show: {record}"),
        ),
    };
    match req.method {
        Method::GET => match srv.dns.get(&id).await {
            Ok(Some(record)) => answer(StatusCode::OK, &record),
            Ok(None) => arm_error(
                StatusCode::NOT_FOUND,
                "NotFound",
                format!("The resource record '{shown}' does not exist in resource group '{group}' of subscription '{subscription}'."),
            ),
            Err(e) => refused(srv, e, shown).await,
        },
        Method::PUT => {
            let body = match neutral_body(&req.body, &fqdn, rtype) {
                Ok(body) => body,
                Err(message) => return bad_request(message),
            };
            let existed = srv.dns.get_now(&id).is_some();
            let written = match condition(req) {
                Some(Condition::IfNoneMatch) => srv.dns.create(&id, body).await,
                Some(Condition::IfMatch(etag)) => srv.dns.update(&id, body, &Precondition::IfMatch(etag)).await,
                // Without a condition a PUT is an upsert, as Azure DNS's.
                None if existed => srv.dns.update(&id, body, &Precondition::None).await,
                None => srv.dns.create(&id, body).await,
            };
            match written {
                Ok(record) => answer(if existed { StatusCode::OK } else { StatusCode::CREATED }, &record),
                Err(e) => refused(srv, e, shown).await,
            }
        }
        Method::DELETE => {
            let pre = match condition(req) {
                Some(Condition::IfMatch(etag)) => Precondition::IfMatch(etag),
                _ => Precondition::None,
            };
            let existed = srv.dns.get_now(&id).is_some();
            match srv.dns.remove(&id, &pre).await {
                Ok(()) if existed => with_headers(StatusCode::OK, None, &[]),
                Ok(()) => with_headers(StatusCode::NO_CONTENT, None, &[]),
                Err(e) => refused(srv, e, shown).await,
            }
        }
        _ => method_not_allowed(req),
    }
}

enum Condition {
    IfNoneMatch,
    IfMatch(String),
}

fn condition(req: &Req) -> Option<Condition> {
    let value = |name: header::HeaderName| req.headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    if value(header::IF_NONE_MATCH) == Some("*") {
        return Some(Condition::IfNoneMatch);
    }
    // `If-Match: *`: any etag, but the record set must exist (the simulated DNS's `IfMatch("*")`).
    value(header::IF_MATCH).filter(|e| !e.is_empty()).map(|e| Condition::IfMatch(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_paths_are_told_from_other_arm_paths() {
        for p in [
            "/subscriptions/s/providers/Microsoft.Network/dnszones",
            "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/dnsZones",
            "/SUBSCRIPTIONS/s/resourcegroups/rg/providers/microsoft.network/DNSZONES/example.com/A/@",
        ] {
            assert!(is_arm_dns_path(p), "{p}");
        }
        for p in [
            "/subscriptions/s/providers/Microsoft.Network/virtualNetworks",
            "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/privateDnsZones/z",
            "/subscriptions/s/resourceGroups/rg",
            "/dns/v1/projects/p/managedZones",
        ] {
            assert!(!is_arm_dns_path(p), "{p}");
        }
    }

    #[test]
    fn record_sets_translate_both_ways() {
        let zone_id = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/dnszones/example.com";
        let record = json!({"name": "example.com", "type": "TXT", "ttl": 60, "values": ["v=1"], "etag": "7", "zone": "example.com"});
        let arm = arm_record_set(zone_id, "example.com", &record).unwrap();
        assert_eq!(arm["id"], json!(format!("{zone_id}/TXT/@")));
        assert_eq!(arm["name"], json!("@"));
        assert_eq!(arm["etag"], json!("7"));
        assert_eq!(arm.pointer("/properties/TXTRecords/0/value/0"), Some(&json!("v=1")));
        assert_eq!(arm.pointer("/properties/fqdn"), Some(&json!("example.com.")));
        let back = neutral_body(arm.to_string().as_bytes(), "example.com", RecordType::Txt).unwrap();
        assert_eq!(back, json!({"name": "example.com", "type": "TXT", "ttl": 60, "values": ["v=1"]}));

        let put = br#"{"properties": {"TTL": 300, "ARecords": [{"ipv4Address": "203.0.113.7"}]}}"#;
        assert_eq!(
            neutral_body(put, "api.example.com", RecordType::A).unwrap(),
            json!({"name": "api.example.com", "type": "A", "ttl": 300, "values": ["203.0.113.7"]})
        );
    }

    #[test]
    fn bad_bodies_are_refused() {
        for body in [
            &b"nope"[..],
            br#"{}"#,
            br#"{"properties": {"ARecords": []}}"#,
            br#"{"properties": {"TTL": -1}}"#,
            br#"{"properties": {"TTL": 1, "CNAMERecord": {"cname": "x"}}}"#,
            br#"{"properties": {"TTL": 1, "ARecords": [{"ip": "x"}]}}"#,
        ] {
            let refused = neutral_body(body, "a.example.com", RecordType::A);
            assert!(refused.is_err(), "{}", String::from_utf8_lossy(body));
        }
    }
}
