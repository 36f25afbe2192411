//! Cloud DNS through Google's official client (`google-cloud-dns-v1`: its
//! [`ManagedZones`], [`ResourceRecordSets`] and [`Changes`] clients, their own HTTP transport):
//! trellis' [`CloudRead`] / [`CloudWrite`] over the NEUTRAL DNS ids of the domains plan, so a plan
//! against Cloud DNS names its record sets exactly as one against the simulated DNS does.
//!
//! | neutral | Cloud DNS v1 |
//! |---|---|
//! | LIST `/dns`, type `zones` | `managedZones.list` of every zone project (paged): `{"id": "/dns/zones/{dnsName}", "name": dnsName without the trailing dot, "gcp": {"project", "managedZone"}}` |
//! | GET `/dns/zones/{zone}` | `managedZones.list` with `dnsName` = `{zone}.`: the zone object, `None` when no project has it |
//! | LIST `/dns/zones/{zone}`, type `records` | `resourceRecordSets.list` of its managed zone (paged), types A, AAAA, CNAME and TXT only |
//! | GET `/dns/zones/{zone}/records/{fqdn}/{TYPE}` | `resourceRecordSets.get(project, managedZone, "{fqdn}.", TYPE)`; 404 = `None` |
//! | `create` | `changes.create` with `additions` only: Cloud DNS refuses a set that exists (409 `alreadyExists` = [`CloudError::AlreadyExists`]) |
//! | `update` under an etag | GET, then `changes.create` with `deletions` = the set as read and `additions` = the new set (Cloud DNS refuses the change when the deletion no longer matches: 412 `conditionNotMet`) |
//! | `remove` under an etag | GET, then `changes.create` with `deletions` = the set as read; a missing set is done |
//!
//! A record set's neutral body is `{"name": fqdn, "type", "ttl", "values"}` (a CNAME's value and
//! the name without the trailing dot, a TXT value without its quotes when it is one quoted string);
//! a GET adds `"zone"` (the zone's DNS name) and `"etag"`. Cloud DNS record sets carry no version,
//! so the etag is derived from the set as read ([`etag_of`]: a hash of name, type, TTL and values
//! in the order Cloud DNS holds them): an update or remove under an etag reads the set first and
//! refuses ([`CloudError::PreconditionFailed`], "changed since it was read … re-run `trellis plan`")
//! when the set read has another etag, and the change's deletion carries exactly the set read, so a
//! write between that read and the change is refused by Cloud DNS itself.
//!
//! Every write waits for its change to be `done`: `changes.get` is polled at most
//! [`DnsOptions::change_timeout`], waiting [`DnsOptions::poll_interval`] (doubling, at least
//! [`crate::MIN_POLL_WAIT`], at most [`crate::MAX_POLL_WAIT`]) between polls.
//!
//! # Zones and projects
//! Zones are looked up by DNS name in the zone projects: `--project` unless the binding names
//! others (`--dns-project`, repeatable: a DNS project shared by many shoot projects). A zone whose
//! DNS name is held by managed zones in two places (two projects, or a public and a private zone) is
//! refused, naming both; a record set's zone that no zone project holds is a one-line error naming
//! the zone and the projects looked in.
//!
//! # Time bounds and retries
//! Each HTTP request ends within [`DnsOptions::request_timeout`] (the crate's attempt timeout). The
//! crate's own retry loop is off ([`NeverRetry`]): a 429, a 5xx or a timeout is returned as its
//! transient [`CloudError`] and the engine's `RetryPolicy` decides, as for compute. Redirects are not
//! followed.

use crate::{credentials, Credentials, GcpClientError, Url, MAX_POLL_WAIT, MIN_POLL_WAIT};
use async_trait::async_trait;
use google_cloud_dns_v1::client::{Changes, ManagedZones, ResourceRecordSets};
use google_cloud_dns_v1::model::{change, Change, ManagedZone, ResourceRecordSet};
use google_cloud_gax::error::rpc::StatusDetails;
use google_cloud_gax::retry_policy::NeverRetry;
use serde_json::{json, Value};
use sha2::{Digest as _, Sha256};
use std::sync::Arc;
use std::time::{Duration, Instant};
use trellis_planner::cloud::{CloudError, CloudRead, CloudWrite, Precondition};

/// Where Cloud DNS requests go without `--endpoint`.
pub const DEFAULT_DNS_ENDPOINT: &str = "https://dns.googleapis.com";

/// The longest TTL Cloud DNS (and Azure DNS) take: a signed 32-bit count of seconds.
pub const MAX_TTL: i64 = 2_147_483_647;

/// The record types a domains plan writes.
pub const RECORD_TYPES: [&str; 4] = ["A", "AAAA", "CNAME", "TXT"];

/// A guard against a `nextPageToken` that never ends.
const MAX_PAGES: usize = 10_000;

/// Tunables; the defaults suit Cloud DNS.
#[derive(Clone, Debug)]
pub struct DnsOptions {
    /// The timeout of each HTTP request.
    pub request_timeout: Duration,
    /// How long to wait for one change to be `done`.
    pub change_timeout: Duration,
    /// The wait before the first poll of a change (doubling; never below [`MIN_POLL_WAIT`]).
    pub poll_interval: Duration,
    /// `maxResults` of list pages; `None`: the server's default.
    pub page_size: Option<i32>,
}

impl Default for DnsOptions {
    fn default() -> Self {
        DnsOptions {
            request_timeout: Duration::from_secs(60),
            change_timeout: Duration::from_secs(600),
            poll_interval: Duration::from_secs(1),
            page_size: None,
        }
    }
}

/// Cloud DNS of one project (and the zone projects beside it), over neutral DNS ids.
#[derive(Clone)]
pub struct CloudDns {
    project: String,
    /// Where zones are looked up: `project` unless told otherwise.
    zone_projects: Vec<String>,
    zones: ManagedZones,
    rrsets: ResourceRecordSets,
    changes: Changes,
    opts: DnsOptions,
    /// The key's `private_key_id` and private-key lines: redacted from every error.
    secrets: Arc<Vec<String>>,
}

impl std::fmt::Debug for CloudDns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CloudDns")
            .field("project", &self.project)
            .field("zone_projects", &self.zone_projects)
            .field("opts", &self.opts)
            .finish_non_exhaustive()
    }
}

/// A managed zone found for a DNS name.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Found {
    project: String,
    managed_zone: String,
    /// The DNS name, neutral form.
    name: String,
}

/// A neutral id this adaptor takes.
#[derive(Clone, Debug, PartialEq, Eq)]
enum DnsRef {
    /// `/dns`.
    Root,
    /// `/dns/zones/{zone}`.
    Zone(String),
    /// `/dns/zones/{zone}/records/{fqdn}/{TYPE}`.
    Record { zone: String, fqdn: String, rtype: String },
}

fn invalid(target: &str, message: impl Into<String>) -> CloudError {
    CloudError::Rejected { target: target.to_string(), status: 400, code: "invalid".into(), message: message.into() }
}

/// A DNS name in neutral form: lowercase, no trailing dot.
fn neutral(name: &str) -> String {
    let name = name.trim();
    name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase()
}

/// Whether `name` is `zone` or inside it at a label boundary (both neutral).
fn within(name: &str, zone: &str) -> bool {
    name == zone || name.strip_suffix(zone).is_some_and(|head| head.ends_with('.'))
}

fn parse(id: &str) -> Result<DnsRef, CloudError> {
    let segs: Vec<&str> = id.trim_end_matches('/').split('/').collect();
    let bad = || {
        invalid(
            id,
            "not a DNS id of Cloud DNS: expected /dns, /dns/zones/{zone} or /dns/zones/{zone}/records/{fqdn}/{A|AAAA|CNAME|TXT}",
        )
    };
    match segs.as_slice() {
        ["", "dns"] => Ok(DnsRef::Root),
        ["", "dns", "zones", zone] if !zone.is_empty() => Ok(DnsRef::Zone(neutral(zone))),
        ["", "dns", "zones", zone, "records", fqdn, rtype] if !zone.is_empty() && !fqdn.is_empty() => {
            let rtype = rtype.to_ascii_uppercase();
            if !RECORD_TYPES.contains(&rtype.as_str()) {
                return Err(invalid(id, format!("record type {rtype:?} is not one of {}", RECORD_TYPES.join(", "))));
            }
            let (zone, fqdn) = (neutral(zone), neutral(fqdn));
            if !within(&fqdn, &zone) {
                return Err(invalid(id, format!("the record {fqdn} is not inside the zone {zone}")));
            }
            Ok(DnsRef::Record { zone, fqdn, rtype })
        }
        _ => Err(bad()),
    }
}

/// The neutral id of a record set.
pub fn record_id(zone: &str, fqdn: &str, rtype: &str) -> String {
    format!("/dns/zones/{zone}/records/{fqdn}/{rtype}")
}

/// The content version of a record set as Cloud DNS holds it (name, type, TTL, values in order):
/// the `etag` its neutral body carries. Deterministic: the same set always has the same etag.
pub fn etag_of(set: &ResourceRecordSet) -> String {
    let canonical = json!([
        set.name.as_deref().map(neutral).unwrap_or_default(),
        set.r#type.as_deref().unwrap_or_default(),
        set.ttl.unwrap_or_default(),
        set.rrdatas,
    ]);
    let digest = Sha256::digest(canonical.to_string().as_bytes());
    format!("cd-{}", digest.iter().take(12).map(|b| format!("{b:02x}")).collect::<String>())
}

/// A TXT value as the neutral body holds it: one quoted string without its quotes.
fn txt_neutral(v: &str) -> String {
    match v.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
        Some(inner) if !inner.contains('"') => inner.to_string(),
        _ => v.to_string(),
    }
}

/// A set as read, in neutral form (with `zone` and `etag`).
fn to_neutral(zone: &str, set: &ResourceRecordSet) -> Value {
    let rtype = set.r#type.clone().unwrap_or_default();
    let values: Vec<String> = set
        .rrdatas
        .iter()
        .map(|v| match rtype.as_str() {
            "CNAME" => neutral(v),
            "TXT" => txt_neutral(v),
            _ => v.clone(),
        })
        .collect();
    json!({
        "name": set.name.as_deref().map(neutral).unwrap_or_default(),
        "type": rtype,
        "ttl": set.ttl.unwrap_or_default(),
        "values": values,
        "zone": zone,
        "etag": etag_of(set),
    })
}

/// The set a neutral body asks for, as Cloud DNS takes it; checks the body against the id.
fn from_neutral(target: &str, fqdn: &str, rtype: &str, body: &Value) -> Result<ResourceRecordSet, CloudError> {
    if let Some(name) = body.get("name").and_then(Value::as_str) {
        if neutral(name) != fqdn {
            return Err(invalid(target, format!("the body's name {name:?} is not the id's record {fqdn}")));
        }
    }
    if let Some(t) = body.get("type").and_then(Value::as_str) {
        if !t.eq_ignore_ascii_case(rtype) {
            return Err(invalid(target, format!("the body's type {t:?} is not the id's type {rtype}")));
        }
    }
    let ttl = match body.get("ttl") {
        Some(v) => v.as_i64().filter(|t| (0..=MAX_TTL).contains(t)).ok_or_else(|| {
            invalid(
                target,
                format!("ttl {v} is not a whole number of seconds in 0..={MAX_TTL}; set spec.ttl within it"),
            )
        })?,
        None => return Err(invalid(target, "the body has no ttl; give ttl in seconds")),
    };
    let values = body
        .get("values")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
        .ok_or_else(|| invalid(target, "the body has no values; give values as a non-empty list of strings"))?;
    let mut rrdatas = Vec::with_capacity(values.len());
    for v in values {
        let v = v.as_str().ok_or_else(|| invalid(target, format!("value {v} is not a string")))?;
        rrdatas.push(match rtype {
            "CNAME" => format!("{}.", neutral(v)),
            "TXT" if !(v.starts_with('"') && v.ends_with('"') && v.len() >= 2) => format!("\"{v}\""),
            _ => v.to_string(),
        });
    }
    let ttl = i32::try_from(ttl).map_err(|_| invalid(target, format!("ttl {ttl} is out of range 0..={MAX_TTL}")))?;
    Ok(ResourceRecordSet::new()
        .set_kind("dns#resourceRecordSet")
        .set_name(format!("{fqdn}."))
        .set_type(rtype)
        .set_ttl(ttl)
        .set_rrdatas(rrdatas))
}

/// One line of text (errors are one line).
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl CloudDns {
    /// Cloud DNS of `project` at `endpoint` (`None`: Cloud DNS itself; an emulator's
    /// `http://host:port` otherwise), signed in with `creds`, its zones in `zone_projects` (empty:
    /// `project`).
    pub async fn new(
        project: &str,
        zone_projects: &[String],
        endpoint: Option<Url>,
        creds: Credentials,
        opts: DnsOptions,
    ) -> Result<CloudDns, GcpClientError> {
        for p in std::iter::once(project).chain(zone_projects.iter().map(String::as_str)) {
            if !crate::valid_project(p) {
                return Err(GcpClientError::Project(p.to_string()));
            }
        }
        let _ = rustls::crypto::ring::default_provider().install_default();
        let signed = !matches!(creds, Credentials::Anonymous);
        let shown =
            endpoint.as_ref().map_or(DEFAULT_DNS_ENDPOINT.to_string(), |u| trellis_http::redact(u.as_str(), &[]));
        let build_err = |message: String| GcpClientError::Build { endpoint: shown.clone(), message };
        let endpoint = match endpoint {
            Some(url) => {
                if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
                    return Err(build_err("expected http(s)://host[:port]".into()));
                }
                if url.scheme() != "https" && !crate::is_loopback(&url) && signed {
                    return Err(GcpClientError::PlainHttp(shown.clone()));
                }
                url.as_str().trim_end_matches('/').to_string()
            }
            None => DEFAULT_DNS_ENDPOINT.to_string(),
        };
        let (creds, secrets) = credentials(&creds)?;
        macro_rules! build {
            ($client:ty) => {{
                let builder = <$client>::builder()
                    .with_endpoint(endpoint.clone())
                    .with_credentials(creds.clone())
                    .with_retry_policy(NeverRetry)
                    .with_attempt_timeout(opts.request_timeout);
                google_cloud_gax::client_builder::internal::with_follow_redirects(builder, false)
                    .build()
                    .await
                    .map_err(|e| build_err(trellis_http::redact(&one_line(&e.to_string()), &[])))?
            }};
        }
        let zones = build!(ManagedZones);
        let rrsets = build!(ResourceRecordSets);
        let changes = build!(Changes);
        let zone_projects = if zone_projects.is_empty() { vec![project.to_string()] } else { zone_projects.to_vec() };
        Ok(CloudDns {
            project: project.to_string(),
            zone_projects,
            zones,
            rrsets,
            changes,
            opts,
            secrets: Arc::new(secrets),
        })
    }

    /// The project of the client (the account of its calls).
    pub fn project(&self) -> &str {
        &self.project
    }

    /// The projects zones are looked up in.
    pub fn zone_projects(&self) -> &[String] {
        &self.zone_projects
    }

    /// A crate error as trellis' class, redacted.
    fn error(&self, target: &str, e: &google_cloud_gax::error::Error) -> CloudError {
        let known: Vec<&str> = self.secrets.iter().map(String::as_str).collect();
        let target = target.to_string();
        let message = match e.status() {
            Some(s) if !s.message.is_empty() => one_line(&s.message),
            _ => match e.http_payload() {
                Some(p) => one_line(&trellis_http::snippet(&String::from_utf8_lossy(p), &known)),
                None => one_line(&e.to_string()),
            },
        };
        let message = trellis_http::redact(&message, &known);
        // Google's `errors[].reason` (the crate keeps it as an ErrorInfo detail), else the status.
        let reason = e
            .status()
            .and_then(|s| {
                s.details.iter().find_map(|d| match d {
                    StatusDetails::ErrorInfo(info) if !info.reason.is_empty() => Some(info.reason.clone()),
                    _ => None,
                })
            })
            .or_else(|| {
                e.http_payload()
                    .and_then(|p| serde_json::from_slice::<Value>(p).ok())
                    .and_then(|v| v["error"]["errors"][0]["reason"].as_str().map(str::to_string))
            })
            .or_else(|| e.status().map(|s| s.code.name().to_string()))
            .unwrap_or_else(|| "error".to_string());
        let Some(status) = e.http_status_code() else {
            if e.is_timeout() {
                return CloudError::Timeout { target };
            }
            if e.is_connect() || e.is_io() || e.is_transport() {
                return CloudError::Unreachable { target, message };
            }
            if e.is_authentication() {
                return CloudError::Rejected { target, status: 401, code: "UNAUTHENTICATED".into(), message };
            }
            return CloudError::Server {
                target,
                status: 502,
                message: format!("{message}; check that --endpoint is Cloud DNS"),
            };
        };
        let retry_after = e.http_headers().and_then(|h| {
            h.get("retry-after").and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse::<u64>().ok())
        });
        match status {
            409 if reason == "alreadyExists" || message.contains("already exists") => {
                CloudError::AlreadyExists { target, status }
            }
            409 => CloudError::Conflict { target, code: reason, message },
            412 => CloudError::PreconditionFailed { target, expected: "the set as read".into() },
            429 => CloudError::Throttled { target, retry_after: retry_after.map(Duration::from_secs) },
            408 => CloudError::Timeout { target },
            s if s >= 500 => CloudError::Server { target, status: s, message },
            s => CloudError::Rejected { target, status: s, code: reason, message },
        }
    }

    /// Every managed zone of `project` (whose DNS name is `dns_name`, when given).
    async fn zones_of(
        &self,
        target: &str,
        project: &str,
        dns_name: Option<&str>,
    ) -> Result<Vec<ManagedZone>, CloudError> {
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let page = self
                .zones
                .list()
                .set_project(project)
                .set_or_clear_dns_name(dns_name.map(|n| format!("{n}.")))
                .set_or_clear_max_results(self.opts.page_size)
                .set_or_clear_page_token(token.take())
                .send()
                .await
                .map_err(|e| self.error(target, &e))?;
            out.extend(page.managed_zones);
            match page.next_page_token.filter(|t| !t.is_empty()) {
                Some(t) => token = Some(t),
                None => return Ok(out),
            }
        }
        Err(CloudError::Server {
            target: target.to_string(),
            status: 502,
            message: format!(
                "Cloud DNS kept answering more pages after {MAX_PAGES}; check that --endpoint is Cloud DNS"
            ),
        })
    }

    /// The managed zone whose DNS name is `zone` in the zone projects: `None` when none holds it;
    /// an error naming both when two do.
    async fn find_zone(&self, target: &str, zone: &str) -> Result<Option<Found>, CloudError> {
        let mut found: Vec<Found> = Vec::new();
        for project in &self.zone_projects {
            for z in self.zones_of(target, project, Some(zone)).await? {
                let name = z.dns_name.as_deref().map(neutral).unwrap_or_default();
                // The filter is the server's; a zone of another name is not taken.
                if name == zone {
                    found.push(Found { project: project.clone(), managed_zone: z.name.unwrap_or_default(), name });
                }
            }
        }
        match found.len() {
            0 => Ok(None),
            1 => Ok(found.pop()),
            _ => Err(CloudError::Rejected {
                target: target.to_string(),
                status: 409,
                code: "ambiguousZone".into(),
                message: format!(
                    "the DNS name {zone} is held by {}: trellis cannot tell which one is meant; keep one of these projects in --dns-project",
                    found.iter().map(|f| format!("managed zone {} in project {}", f.managed_zone, f.project)).collect::<Vec<_>>().join(" and ")
                ),
            }),
        }
    }

    /// [`CloudDns::find_zone`], a missing zone being an error naming it and the projects.
    async fn zone(&self, target: &str, zone: &str) -> Result<Found, CloudError> {
        self.find_zone(target, zone).await?.ok_or_else(|| CloudError::Rejected {
            target: target.to_string(),
            status: 404,
            code: "notFound".into(),
            message: format!(
                "no managed zone for the DNS name {zone}. in project {}; create the zone or name the project that holds it with --dns-project",
                self.zone_projects.join(", ")
            ),
        })
    }

    fn zone_object(f: &Found) -> Value {
        json!({
            "id": format!("/dns/zones/{}", f.name),
            "name": f.name,
            "gcp": {"project": f.project, "managedZone": f.managed_zone},
        })
    }

    /// The record set as Cloud DNS holds it; `None` when absent.
    async fn read_set(
        &self,
        target: &str,
        z: &Found,
        fqdn: &str,
        rtype: &str,
    ) -> Result<Option<ResourceRecordSet>, CloudError> {
        match self
            .rrsets
            .get()
            .set_project(&z.project)
            .set_managed_zone(&z.managed_zone)
            .set_name(format!("{fqdn}."))
            .set_type(rtype)
            .send()
            .await
        {
            Ok(set) => {
                if set.name.as_deref().map(neutral).as_deref() != Some(fqdn) || set.r#type.as_deref() != Some(rtype) {
                    return Err(CloudError::Rejected {
                        target: target.to_string(),
                        status: 502,
                        code: "WrongResource".into(),
                        message: format!(
                            "Cloud DNS answered the record set {:?} {:?} instead; check that --endpoint is Cloud DNS itself",
                            set.name.unwrap_or_default(),
                            set.r#type.unwrap_or_default()
                        ),
                    });
                }
                Ok(Some(set))
            }
            Err(e) if e.http_status_code() == Some(404) => Ok(None),
            Err(e) => Err(self.error(target, &e)),
        }
    }

    /// Sends `change` to the zone and waits for it to be `done`.
    async fn apply(&self, target: &str, z: &Found, change: Change) -> Result<(), CloudError> {
        let sent = self
            .changes
            .create()
            .set_project(&z.project)
            .set_managed_zone(&z.managed_zone)
            .set_body(change)
            .send()
            .await
            .map_err(|e| self.error(target, &e))?;
        if sent.status == Some(change::Status::Done) {
            return Ok(());
        }
        let Some(change_id) = sent.id.filter(|i| !i.is_empty()) else {
            return Err(CloudError::Server {
                target: target.to_string(),
                status: 502,
                message: "Cloud DNS answered a pending change without an id; check that --endpoint is Cloud DNS".into(),
            });
        };
        let deadline = Instant::now() + self.opts.change_timeout;
        let mut wait = self.opts.poll_interval.max(MIN_POLL_WAIT);
        let mut failures = 0;
        loop {
            if Instant::now() + wait > deadline {
                return Err(CloudError::Timeout { target: target.to_string() });
            }
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(MAX_POLL_WAIT);
            match self
                .changes
                .get()
                .set_project(&z.project)
                .set_managed_zone(&z.managed_zone)
                .set_change_id(&change_id)
                .send()
                .await
            {
                Ok(c) if c.status == Some(change::Status::Done) => return Ok(()),
                Ok(_) => failures = 0,
                Err(e) => {
                    let err = self.error(target, &e);
                    failures += 1;
                    if !err.is_transient() || failures > crate::POLL_RETRIES {
                        return Err(err);
                    }
                }
            }
        }
    }

    /// The set now under `pre`: `Ok(None)` when absent (and `pre` allows it), an error when it moved.
    async fn read_under(
        &self,
        target: &str,
        z: &Found,
        fqdn: &str,
        rtype: &str,
        pre: &Precondition,
        missing_ok: bool,
    ) -> Result<Option<ResourceRecordSet>, CloudError> {
        let have = self.read_set(target, z, fqdn, rtype).await?;
        if let Precondition::IfMatch(etag) = pre {
            let moved = match &have {
                Some(set) => etag_of(set) != *etag,
                None => !missing_ok,
            };
            if moved {
                return Err(CloudError::PreconditionFailed { target: target.to_string(), expected: etag.clone() });
            }
        }
        Ok(have)
    }

    async fn get_record(&self, id: &str, zone: &str, fqdn: &str, rtype: &str) -> Result<Option<Value>, CloudError> {
        let z = self.zone(id, zone).await?;
        Ok(self.read_set(id, &z, fqdn, rtype).await?.map(|s| to_neutral(&z.name, &s)))
    }
}

#[async_trait]
impl CloudRead for CloudDns {
    async fn get(&self, id: &str) -> Result<Option<Value>, CloudError> {
        match parse(id)? {
            DnsRef::Root => Err(invalid(id, "/dns is listed (type zones), not read")),
            DnsRef::Zone(zone) => Ok(self.find_zone(id, &zone).await?.as_ref().map(CloudDns::zone_object)),
            DnsRef::Record { zone, fqdn, rtype } => self.get_record(id, &zone, &fqdn, &rtype).await,
        }
    }

    async fn list(&self, parent: &str, rtype: &str) -> Result<Vec<Value>, CloudError> {
        let target = format!("{}/{rtype}", parent.trim_end_matches('/'));
        match (parse(parent)?, rtype) {
            (DnsRef::Root, "zones") => {
                let mut out = Vec::new();
                for project in &self.zone_projects {
                    for z in self.zones_of(&target, project, None).await? {
                        let f = Found {
                            project: project.clone(),
                            managed_zone: z.name.unwrap_or_default(),
                            name: z.dns_name.as_deref().map(neutral).unwrap_or_default(),
                        };
                        out.push(CloudDns::zone_object(&f));
                    }
                }
                Ok(out)
            }
            (DnsRef::Zone(zone), "records") => {
                let z = self.zone(&target, &zone).await?;
                let mut out = Vec::new();
                let mut token: Option<String> = None;
                for _ in 0..MAX_PAGES {
                    let page = self
                        .rrsets
                        .list()
                        .set_project(&z.project)
                        .set_managed_zone(&z.managed_zone)
                        .set_or_clear_max_results(self.opts.page_size)
                        .set_or_clear_page_token(token.take())
                        .send()
                        .await
                        .map_err(|e| self.error(&target, &e))?;
                    out.extend(
                        page.rrsets
                            .iter()
                            .filter(|s| RECORD_TYPES.contains(&s.r#type.as_deref().unwrap_or_default()))
                            .map(|s| to_neutral(&z.name, s)),
                    );
                    match page.next_page_token.filter(|t| !t.is_empty()) {
                        Some(t) => token = Some(t),
                        None => return Ok(out),
                    }
                }
                Err(CloudError::Server {
                    target,
                    status: 502,
                    message: format!(
                        "Cloud DNS kept answering more pages after {MAX_PAGES}; check that --endpoint is Cloud DNS"
                    ),
                })
            }
            _ => Err(invalid(&target, "Cloud DNS lists zones of /dns and records of /dns/zones/{zone}")),
        }
    }
}

/// The record-set parts of a write's id (zones and `/dns` are not written).
fn record_parts(id: &str) -> Result<(String, String, String), CloudError> {
    match parse(id)? {
        DnsRef::Record { zone, fqdn, rtype } => Ok((zone, fqdn, rtype)),
        _ => Err(CloudError::Rejected {
            target: id.to_string(),
            status: 405,
            code: "methodNotAllowed".into(),
            message: "trellis writes record sets (/dns/zones/{zone}/records/{fqdn}/{TYPE}), not zones".into(),
        }),
    }
}

#[async_trait]
impl CloudWrite for CloudDns {
    async fn create(&self, id: &str, body: Value) -> Result<Value, CloudError> {
        let (zone, fqdn, rtype) = record_parts(id)?;
        let set = from_neutral(id, &fqdn, &rtype, &body)?;
        let z = self.zone(id, &zone).await?;
        self.apply(id, &z, Change::new().set_kind("dns#change").set_additions([set.clone()])).await?;
        match self.read_set(id, &z, &fqdn, &rtype).await? {
            Some(have) => Ok(to_neutral(&z.name, &have)),
            None => Ok(to_neutral(&z.name, &set)),
        }
    }

    async fn update(&self, id: &str, body: Value, pre: &Precondition) -> Result<Value, CloudError> {
        let (zone, fqdn, rtype) = record_parts(id)?;
        let set = from_neutral(id, &fqdn, &rtype, &body)?;
        let z = self.zone(id, &zone).await?;
        let have = self.read_under(id, &z, &fqdn, &rtype, pre, false).await?;
        // Already as asked (same name, type, TTL and data): no change (Cloud DNS has no no-op change).
        if let Some(have) = have.as_ref().filter(|h| etag_of(h) == etag_of(&set)) {
            return Ok(to_neutral(&z.name, have));
        }
        let mut change = Change::new().set_kind("dns#change").set_additions([set.clone()]);
        if let Some(have) = have {
            change = change.set_deletions([have]);
        }
        self.apply(id, &z, change).await?;
        match self.read_set(id, &z, &fqdn, &rtype).await? {
            Some(now) => Ok(to_neutral(&z.name, &now)),
            None => Ok(to_neutral(&z.name, &set)),
        }
    }

    async fn remove(&self, id: &str, pre: &Precondition) -> Result<(), CloudError> {
        let (zone, fqdn, rtype) = record_parts(id)?;
        let Some(z) = self.find_zone(id, &zone).await? else {
            // The zone is gone, and the set with it.
            return Ok(());
        };
        match self.read_under(id, &z, &fqdn, &rtype, pre, true).await? {
            None => Ok(()),
            Some(have) => match self.apply(id, &z, Change::new().set_kind("dns#change").set_deletions([have])).await {
                Err(CloudError::Rejected { status: 404, .. }) => Ok(()),
                other => other,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_parse_to_zone_and_record() {
        assert_eq!(parse("/dns").unwrap(), DnsRef::Root);
        assert_eq!(parse("/dns/zones/Example.com.").unwrap(), DnsRef::Zone("example.com".into()));
        assert_eq!(
            parse("/dns/zones/example.com/records/API.example.com/a").unwrap(),
            DnsRef::Record { zone: "example.com".into(), fqdn: "api.example.com".into(), rtype: "A".into() }
        );
        assert!(parse("/dns/zones/example.com/records/api.other.org/A").is_err());
        assert!(parse("/dns/zones/example.com/records/api.example.com/MX").is_err());
        assert!(parse("/seeds/s/namespaces/n/dnsrecords/r").is_err());
    }

    #[test]
    fn a_body_goes_to_cloud_dns_and_back_unchanged() {
        let id = "/dns/zones/example.com/records/www.example.com/CNAME";
        let body = json!({"name": "www.example.com", "type": "CNAME", "ttl": 300, "values": ["lb.example.net"]});
        let set = from_neutral(id, "www.example.com", "CNAME", &body).unwrap();
        assert_eq!(set.name.as_deref(), Some("www.example.com."));
        assert_eq!(set.rrdatas, vec!["lb.example.net.".to_string()]);
        let back = to_neutral("example.com", &set);
        assert_eq!(back["values"], json!(["lb.example.net"]));
        assert_eq!(back["name"], "www.example.com");
        assert_eq!(back["zone"], "example.com");
        let txt = from_neutral(
            "/dns/zones/example.com/records/t.example.com/TXT",
            "t.example.com",
            "TXT",
            &json!({"ttl": 60, "values": ["v=1"]}),
        )
        .unwrap();
        assert_eq!(txt.rrdatas, vec!["\"v=1\"".to_string()]);
        assert_eq!(to_neutral("example.com", &txt)["values"], json!(["v=1"]));
    }

    #[test]
    fn the_etag_follows_the_content_only() {
        let a =
            ResourceRecordSet::new().set_name("a.example.com.").set_type("A").set_ttl(60).set_rrdatas(["192.0.2.1"]);
        let same = a.clone().set_kind("dns#resourceRecordSet");
        assert_eq!(etag_of(&a), etag_of(&same));
        assert_ne!(etag_of(&a), etag_of(&a.clone().set_ttl(61)));
        assert_ne!(etag_of(&a), etag_of(&a.clone().set_rrdatas(["192.0.2.2"])));
    }

    #[test]
    fn bodies_out_of_range_are_refused_before_sending() {
        let id = "/dns/zones/example.com/records/a.example.com/A";
        for body in [
            json!({"ttl": -1, "values": ["192.0.2.1"]}),
            json!({"ttl": MAX_TTL + 1, "values": ["192.0.2.1"]}),
            json!({"ttl": 60, "values": []}),
            json!({"ttl": 60}),
            json!({"name": "b.example.com", "ttl": 60, "values": ["192.0.2.1"]}),
            json!({"type": "AAAA", "ttl": 60, "values": ["192.0.2.1"]}),
        ] {
            let e = from_neutral(id, "a.example.com", "A", &body).unwrap_err();
            assert!(matches!(e, CloudError::Rejected { status: 400, .. }), "{body}: {e}");
        }
    }
}
