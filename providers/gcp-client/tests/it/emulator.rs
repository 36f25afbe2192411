//! The real GCP client end to end against the simulated GCE cloud served over REST
//! (`trellis-sim-http`'s GCE server on 127.0.0.1, a free port).

use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Duration;
use trellis_gcp_client::{Credentials, GcpClient, GcpClientError, GcpOptions, Url};
use trellis_planner::cloud::{CloudError, CloudRead, CloudWrite, ListFilter, Precondition};
use trellis_planner::ids::{GceIds, IdScheme};
use trellis_planner::retry::RetryPolicy;
use trellis_sim::{Fault, FaultRule, Faults, GceSim, Matcher, Quotas};
use trellis_sim_http::gce::{GceOptions, GceRunning, GceServer};

const NET: &str = "projects/p/global/networks/vpc-a";
const SUBNET: &str = "projects/p/regions/europe-west1/subnetworks/workers";
const ROUTER: &str = "projects/p/regions/europe-west1/routers/rtr";
const ADDRESS: &str = "projects/p/regions/europe-west1/addresses/nat-ip";
const FIREWALL: &str = "projects/p/global/firewalls/fw-ssh";
const ROUTE: &str = "projects/p/global/routes/egress";

fn fast() -> GcpOptions {
    GcpOptions {
        request_timeout: Duration::from_secs(10),
        operation_timeout: Duration::from_secs(20),
        // The floor (MIN_POLL_WAIT) applies.
        poll_interval: Duration::ZERO,
        ..GcpOptions::default()
    }
}

/// The engine's retries around each client call (the client itself retries no request).
fn engine() -> RetryPolicy {
    RetryPolicy::immediate(6)
}

/// The emulator, also answering requests without a token: most tests here sign in anonymously.
async fn serve(sim: GceSim, opts: GceOptions) -> GceRunning {
    GceServer::with_options(sim, GceOptions { accept_anonymous: true, ..opts })
        .spawn_local()
        .await
        .expect("bind 127.0.0.1")
}

async fn client(srv: &GceRunning, creds: Credentials, opts: GcpOptions) -> GcpClient {
    let url = Url::parse(&srv.url()).unwrap();
    GcpClient::with_options("p", Some(url), creds, opts).await.expect("client")
}

fn key_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/throwaway-service-account.json")
}

async fn with_vpc(c: &GcpClient) {
    c.create(NET, json!({"autoCreateSubnetworks": false})).await.unwrap();
}

#[tokio::test]
async fn each_kind_is_created_read_patched_and_deleted() {
    let srv = serve(GceSim::in_memory(), GceOptions::default()).await;
    let c = client(&srv, Credentials::Anonymous, fast()).await;

    let net = c.create(NET, json!({"autoCreateSubnetworks": false})).await.unwrap();
    assert_eq!(net["kind"], "compute#network");
    let subnet =
        c.create(SUBNET, json!({"network": "global/networks/vpc-a", "ipCidrRange": "10.250.0.0/16"})).await.unwrap();
    assert_eq!(subnet["gatewayAddress"], "10.250.0.1");
    c.create(ADDRESS, json!({})).await.unwrap();
    c.create(ROUTER, json!({"network": "global/networks/vpc-a"})).await.unwrap();
    c.create(
        FIREWALL,
        json!({"network": "global/networks/vpc-a", "allowed": [{"IPProtocol": "tcp", "ports": ["22"]}]}),
    )
    .await
    .unwrap();
    let route = c
        .create(
            ROUTE,
            json!({"network": "global/networks/vpc-a", "destRange": "10.9.0.0/24", "nextHopIp": "10.250.0.5"}),
        )
        .await
        .unwrap();
    assert_eq!(route["destRange"], "10.9.0.0/24");
    for id in [NET, SUBNET, ADDRESS, ROUTER, FIREWALL, ROUTE] {
        let got = c.get(id).await.unwrap().unwrap_or_else(|| panic!("{id} is readable"));
        assert_eq!(srv.server.sim().get_now(id), Some(got), "{id}: the client reads what the cloud holds");
    }

    // Patch under the version read (a firewall has no fingerprint: its content version).
    let fw = c.get(FIREWALL).await.unwrap().unwrap();
    assert!(fw.get("fingerprint").is_none(), "no fingerprint on a firewall in compute v1: {fw}");
    let patched = c.update(FIREWALL, json!({"sourceRanges": ["10.0.0.0/8"]}), &GceIds.precondition(&fw)).await.unwrap();
    assert_eq!(patched["sourceRanges"], json!(["10.0.0.0/8"]));
    let sub = c.update(SUBNET, json!({"description": "workers"}), &Precondition::None).await.unwrap();
    assert_eq!(sub["description"], "workers");
    let net = c.update(NET, json!({"description": "vpc"}), &Precondition::None).await.unwrap();
    assert_eq!(net["description"], "vpc");
    let rtr = c.update(ROUTER, json!({"description": "egress"}), &Precondition::None).await.unwrap();
    assert_eq!(rtr["description"], "egress");
    let e = c.update(ROUTE, json!({"destRange": "10.8.0.0/24"}), &Precondition::None).await.unwrap_err();
    assert!(matches!(&e, CloudError::Rejected { status: 400, code, .. } if code == "immutable"), "{e}");

    for id in [ROUTE, FIREWALL, ROUTER, ADDRESS, SUBNET, NET] {
        c.delete(id).await.unwrap();
        assert_eq!(c.get(id).await.unwrap(), None, "{id} is gone");
        c.delete(id).await.unwrap_or_else(|e| panic!("{id}: deleting what is gone is done: {e}"));
    }
    assert!(srv.server.sim().snapshot().is_empty());
    // Every write was a polled operation carrying its own requestId.
    let ids = srv.server.request_ids();
    assert!(ids.len() >= 16 && ids.iter().all(|i| !i.is_empty()), "{ids:?}");
    assert_eq!(ids.iter().collect::<std::collections::BTreeSet<_>>().len(), ids.len(), "one requestId per write");
    let polls = srv.server.requests().iter().filter(|r| r.path.contains("/operations/")).count();
    assert!(polls >= 16, "operations were polled: {polls}");
}

#[tokio::test]
async fn a_service_account_is_created_read_patched_listed_and_deleted_through_iam() {
    let sim = GceSim::in_memory();
    let srv = serve(sim.clone(), GceOptions::default()).await;
    let c = client(&srv, Credentials::Anonymous, fast()).await;
    let sa = "projects/p/serviceAccounts/shoot--p--s@p.iam.gserviceaccount.com";
    let made = c.create(sa, json!({"displayName": "shoot--p--s"})).await.unwrap();
    assert_eq!(made["email"], "shoot--p--s@p.iam.gserviceaccount.com");
    // IAM's fields at their default (`disabled: false`) are left out by the typed model; the rest
    // is what the cloud holds.
    let mut held = sim.get_now(sa).unwrap();
    held.as_object_mut().unwrap().remove("disabled");
    assert_eq!(c.get(sa).await.unwrap(), Some(held));
    assert_eq!(c.create(sa, json!({"displayName": "shoot--p--s"})).await.unwrap(), made, "ours");
    let e = c.create(sa, json!({"displayName": "someone else"})).await.unwrap_err();
    assert!(matches!(e, CloudError::AlreadyExists { .. }), "{e:?}");

    let patched = c.update(sa, json!({"description": "workers"}), &Precondition::of(&made)).await.unwrap();
    assert_eq!(
        (patched["description"].as_str(), patched["displayName"].as_str()),
        (Some("workers"), Some("shoot--p--s"))
    );
    let e = c.update(sa, json!({"description": "again"}), &Precondition::of(&made)).await.unwrap_err();
    assert!(matches!(e, CloudError::PreconditionFailed { .. }), "a stale etag: {e:?}");
    let listed = c.list("projects/p", "serviceAccounts").await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["email"], made["email"]);

    c.delete(sa).await.unwrap();
    assert_eq!(c.get(sa).await.unwrap(), None);
    c.delete(sa).await.expect("deleting an account that is gone is done");
    let e = c.create("projects/p/serviceAccounts/x@other.iam.gserviceaccount.com", json!({})).await.unwrap_err();
    assert!(matches!(e, CloudError::Rejected { status: 400, .. }), "{e:?}");
}

#[tokio::test]
async fn a_retried_create_of_ours_is_success_and_of_a_strangers_is_already_exists() {
    let sim = GceSim::in_memory();
    let srv = serve(sim.clone(), GceOptions::default()).await;
    let c = client(&srv, Credentials::Anonymous, fast()).await;
    with_vpc(&c).await;
    let body = json!({"network": "global/networks/vpc-a", "ipCidrRange": "10.250.0.0/16"});
    // Our first create was applied but its answer lost: the retry meets a 409 on our own subnet.
    let first = c.create(SUBNET, body.clone()).await.unwrap();
    let retried = c.create(SUBNET, body).await.expect("a 409 on what we asked for is success");
    assert_eq!(retried, first);
    // Someone else's subnet of that name, with another range, is not ours.
    let e = c
        .create(SUBNET, json!({"network": "global/networks/vpc-a", "ipCidrRange": "10.251.0.0/16"}))
        .await
        .unwrap_err();
    assert!(matches!(e, CloudError::AlreadyExists { status: 409, .. }), "{e:?}");
    assert_eq!(sim.get_now(SUBNET).unwrap()["ipCidrRange"], "10.250.0.0/16", "the stranger's resource is untouched");

    // An insert applied whose answer was lost (504): the engine's retry meets our own resource.
    sim.set_faults(Faults::none().with_rule(FaultRule::once_at(Matcher::method("POST"), 1, Fault::TimeoutAfterApply)));
    let fw = engine()
        .run(|| c.create(FIREWALL, json!({"network": "global/networks/vpc-a", "allowed": [{"IPProtocol": "tcp"}]})))
        .await
        .expect("the engine's retried insert finds its own rule");
    assert_eq!(fw["name"], "fw-ssh");
    assert_eq!(sim.faults_fired(), 1);
}

/// A firewall has no fingerprint in compute v1: the client re-reads it right before the PATCH (or
/// DELETE) and refuses when it is not the version read (its content version), so a change someone
/// made since is never overwritten.
#[tokio::test]
async fn a_change_since_the_read_refuses_the_update_and_the_delete() {
    let srv = serve(GceSim::in_memory(), GceOptions::default()).await;
    let c = client(&srv, Credentials::Anonymous, fast()).await;
    with_vpc(&c).await;
    let read = c
        .create(FIREWALL, json!({"network": "global/networks/vpc-a", "allowed": [{"IPProtocol": "tcp"}]}))
        .await
        .unwrap();
    let stale = GceIds.precondition(&read);
    c.update(FIREWALL, json!({"description": "someone else"}), &Precondition::None).await.unwrap();
    let e = c.update(FIREWALL, json!({"description": "ours"}), &stale).await.unwrap_err();
    assert!(matches!(&e, CloudError::PreconditionFailed { .. }), "{e:?}");
    assert!(e.to_string().contains(FIREWALL), "{e}");
    let e = c.remove(FIREWALL, &stale).await.unwrap_err();
    assert!(matches!(&e, CloudError::PreconditionFailed { .. }), "{e:?}");
    assert!(c.get(FIREWALL).await.unwrap().is_some(), "a refused delete deletes nothing");
    assert_eq!(c.get(FIREWALL).await.unwrap().unwrap()["description"], "someone else", "their change stays");
}

/// A NAT is an entry of its router: the write is a router PATCH carrying the whole `nats` list. A
/// change of our NAT between the read and the write refuses it; another NAT added meanwhile is kept.
#[tokio::test]
async fn a_nat_changed_since_the_read_refuses_the_write_and_other_nats_survive() {
    let sim = GceSim::in_memory();
    let srv = serve(sim.clone(), GceOptions::default()).await;
    let c = client(&srv, Credentials::Anonymous, fast()).await;
    with_vpc(&c).await;
    c.create(ROUTER, json!({"network": "global/networks/vpc-a"})).await.unwrap();
    let nat_id = format!("{ROUTER}/nats/ours");
    let nat = |ports: u32| json!({"natIpAllocateOption": "AUTO_ONLY", "sourceSubnetworkIpRangesToNat": "ALL_SUBNETWORKS_ALL_IP_RANGES", "minPortsPerVm": ports});
    let read = c.create(&nat_id, nat(64)).await.unwrap();
    // Someone else changes our NAT (a router PATCH of their own): our write under the read is refused.
    let mut router = c.get(ROUTER).await.unwrap().unwrap();
    router["nats"][0]["minPortsPerVm"] = json!(256);
    c.update(ROUTER, router, &Precondition::None).await.unwrap();
    let e = c.update(&nat_id, nat(128), &GceIds.precondition(&read)).await.unwrap_err();
    assert!(matches!(&e, CloudError::PreconditionFailed { target, .. } if *target == nat_id), "{e:?}");
    assert_eq!(c.get(&nat_id).await.unwrap().unwrap()["minPortsPerVm"], 256, "their change stays");
    // Someone adds another NAT: our write under a fresh read keeps it.
    let fresh = c.get(&nat_id).await.unwrap().unwrap();
    let mut router = c.get(ROUTER).await.unwrap().unwrap();
    router["nats"].as_array_mut().unwrap().push(json!({"name": "theirs", "natIpAllocateOption": "AUTO_ONLY", "sourceSubnetworkIpRangesToNat": "ALL_SUBNETWORKS_ALL_IP_RANGES"}));
    c.update(ROUTER, router, &Precondition::None).await.unwrap();
    c.update(&nat_id, nat(128), &GceIds.precondition(&fresh)).await.unwrap();
    let names: Vec<String> = sim.get_now(ROUTER).unwrap()["nats"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["ours", "theirs"]);
    // What reached the cloud for the NAT: router GETs and PATCHes only, never a `…/nats/…` path.
    assert!(srv.server.requests().iter().all(|r| !r.path.contains("/nats")), "{:?}", srv.server.requests());
}

#[tokio::test]
async fn regression_an_update_under_a_precondition_of_a_deleted_resource_is_a_precondition_failure() {
    let srv = serve(GceSim::in_memory(), GceOptions::default()).await;
    let c = client(&srv, Credentials::Anonymous, fast()).await;
    with_vpc(&c).await;
    let read = c
        .create(FIREWALL, json!({"network": "global/networks/vpc-a", "allowed": [{"IPProtocol": "tcp"}]}))
        .await
        .unwrap();
    c.delete(FIREWALL).await.unwrap();
    let e = c.update(FIREWALL, json!({"description": "ours"}), &GceIds.precondition(&read)).await.unwrap_err();
    assert!(matches!(&e, CloudError::PreconditionFailed { .. }), "the plan's resource is gone: {e:?}");
    assert!(c.get(FIREWALL).await.unwrap().is_none(), "nothing is re-created");
}

#[tokio::test]
async fn throttled_and_unavailable_calls_converge() {
    let sim = GceSim::in_memory().with_faults(
        Faults::none()
            .with_rule(
                FaultRule::once_at(
                    Matcher::method("POST"),
                    1,
                    Fault::Throttle { retry_after: Duration::from_millis(5) },
                )
                .times(2),
            )
            .with_rule(FaultRule::once_at(Matcher::method("GET"), 1, Fault::ServerError)),
    );
    let srv = serve(sim.clone(), GceOptions::default()).await;
    let c = client(&srv, Credentials::Anonymous, fast()).await;
    engine().run(|| c.create(NET, json!({"autoCreateSubnetworks": false}))).await.expect("retries converge");
    assert_eq!(sim.faults_fired(), 3);
    let statuses: Vec<u16> = sim.calls().iter().map(|c| c.status).collect();
    // insert: throttled twice (each answer back to the engine, which retries), then applied; the
    // operation poll: unavailable once (polled again by the client: the write was accepted), then
    // DONE; then the read back.
    assert_eq!(statuses, [429, 429, 200, 503, 200, 200], "{statuses:?}");

    // The client itself reports the throttle as such, after one request.
    sim.set_faults(Faults::none().with_rule(FaultRule::always(
        Matcher::method("POST"),
        Fault::Throttle { retry_after: Duration::from_millis(5) },
    )));
    let e = c.create(FIREWALL, json!({"network": "global/networks/vpc-a"})).await.unwrap_err();
    assert!(matches!(e, CloudError::Throttled { .. }) && e.is_transient(), "{e:?}");
}

#[tokio::test]
async fn a_failed_operation_is_reported_with_its_message() {
    let sim = GceSim::in_memory();
    sim.set_quotas(Quotas { routes_per_network: 400, firewalls_per_project: 0 }).expect("set quotas");
    let srv = serve(sim.clone(), GceOptions::default()).await;
    let c = client(&srv, Credentials::Anonymous, fast()).await;
    with_vpc(&c).await;
    let e = c
        .create(FIREWALL, json!({"network": "global/networks/vpc-a", "allowed": [{"IPProtocol": "tcp"}]}))
        .await
        .unwrap_err();
    let CloudError::Rejected { status, code, message, .. } = &e else { panic!("{e:?}") };
    assert_eq!((*status, code.as_str()), (403, "QUOTA_EXCEEDED"), "{e}");
    assert!(message.contains("FIREWALLS") || message.to_lowercase().contains("quota"), "{e}");
    assert!(sim.get_now(FIREWALL).is_none());
}

#[tokio::test]
async fn lists_follow_every_page_and_filters_are_one_call() {
    let sim = GceSim::in_memory();
    let srv = serve(sim.clone(), GceOptions { page_size: Some(2), ..GceOptions::default() }).await;
    let c = client(&srv, Credentials::Anonymous, fast()).await;
    with_vpc(&c).await;
    for n in ["fw-a1", "fw-a2", "fw-a3", "fw-b1", "fw-b2"] {
        c.create(
            &format!("projects/p/global/firewalls/{n}"),
            json!({"network": "global/networks/vpc-a", "allowed": [{"IPProtocol": "tcp"}]}),
        )
        .await
        .unwrap();
    }
    let before = sim.calls().len();
    let all = c.list("projects/p/global", "firewalls").await.unwrap();
    let names: Vec<&str> = all.iter().filter_map(|f| f["name"].as_str()).collect();
    assert_eq!(names, ["fw-a1", "fw-a2", "fw-a3", "fw-b1", "fw-b2"]);
    let lists: Vec<_> = sim.calls()[before..].iter().map(|c| c.method.clone()).collect();
    assert_eq!(lists, ["LIST", "LIST", "LIST"], "three pages of two, no GET per rule");

    let before = sim.calls().len();
    let some = c.list_filtered("projects/p/global", "firewalls", Some(r#"name eq "fw-a.*""#)).await.unwrap();
    assert_eq!(some.iter().filter_map(|f| f["name"].as_str()).collect::<Vec<_>>(), ["fw-a1", "fw-a2", "fw-a3"]);
    assert_eq!(sim.calls().len() - before, 2, "two pages");

    let e = c.list("projects/p/global", "subnetworks").await.unwrap_err();
    assert!(matches!(e, CloudError::Rejected { status: 400, .. }), "{e:?}");
}

/// Issue #27: a shoot reads the firewall rules of its own VPC, not the project's — GCE's list
/// `filter` selects them on the server (`network eq ".*/<vpc>"`, the name's dashes escaped), so the
/// pages read are the VPC's rules only; the simulated cloud in process answers the same filter.
#[tokio::test]
async fn regression_a_narrowed_list_reads_only_its_network_s_rules_on_the_server() {
    let sim = GceSim::in_memory();
    let srv = serve(sim.clone(), GceOptions { page_size: Some(2), ..GceOptions::default() }).await;
    let c = client(&srv, Credentials::Anonymous, fast()).await;
    for vpc in ["shoot--p--a", "shoot--p--a-2"] {
        c.create(&format!("projects/p/global/networks/{vpc}"), json!({"autoCreateSubnetworks": false})).await.unwrap();
        for n in 1..=3 {
            c.create(
                &format!("projects/p/global/firewalls/{vpc}-fw-{n}"),
                json!({"network": format!("global/networks/{vpc}"), "allowed": [{"IPProtocol": "tcp"}]}),
            )
            .await
            .unwrap();
        }
    }
    let in_a = ListFilter::new("network", "shoot--p--a");
    let before = sim.calls().len();
    let listed = c.list_where("projects/p/global", "firewalls", &in_a).await.unwrap();
    let names: Vec<&str> = listed.iter().filter_map(|f| f["name"].as_str()).collect();
    assert_eq!(names, ["shoot--p--a-fw-1", "shoot--p--a-fw-2", "shoot--p--a-fw-3"], "not the other VPC's");
    assert_eq!(sim.calls().len() - before, 2, "two pages of the VPC's three rules, not three of the project's six");
    let in_process = sim.list_where("projects/p/global", "firewalls", &in_a).await.unwrap();
    assert_eq!(in_process, listed, "the simulated cloud in process answers the same filter");
}

#[tokio::test]
async fn regression_collection_lists_page_and_answer_each_resource_as_its_get() {
    // A fleet's discovery (`trellis_planner::wide::FleetReads`) takes GETs' answers from the
    // collections' lists: each item must be what a GET of it answers.
    let sim = GceSim::in_memory();
    let srv = serve(sim.clone(), GceOptions { page_size: Some(2), ..GceOptions::default() }).await;
    let c = client(&srv, Credentials::Anonymous, fast()).await;
    with_vpc(&c).await;
    for n in ["a", "b", "c"] {
        let cidr = format!("10.0.{}.0/24", n.as_bytes()[0] - b'a');
        c.create(
            &format!("projects/p/regions/europe-west1/subnetworks/{n}"),
            json!({"network": "global/networks/vpc-a", "ipCidrRange": cidr}),
        )
        .await
        .unwrap();
        c.create(
            &format!("projects/p/regions/europe-west1/routers/r-{n}"),
            json!({"network": "global/networks/vpc-a"}),
        )
        .await
        .unwrap();
    }
    for (parent, rtype, count) in [
        ("projects/p/regions/europe-west1", "subnetworks", 3),
        ("projects/p/regions/europe-west1", "routers", 3),
        ("projects/p/global", "networks", 1),
    ] {
        let before = sim.calls().len();
        let items = c.list(parent, rtype).await.unwrap();
        assert_eq!(items.len(), count, "{rtype}");
        assert_eq!(sim.calls().len() - before, count.div_ceil(2), "{rtype}: pages of two");
        for item in &items {
            let id = item["selfLink"].as_str().unwrap();
            assert_eq!(Some(item), c.get(id).await.unwrap().as_ref(), "{id}: listed as its GET answers it");
        }
    }
}

#[tokio::test]
async fn a_nat_is_written_through_its_router_leaving_other_nats_alone() {
    let sim = GceSim::in_memory();
    let srv = serve(sim.clone(), GceOptions::default()).await;
    let c = client(&srv, Credentials::Anonymous, fast()).await;
    with_vpc(&c).await;
    let theirs = json!({"name": "theirs", "natIpAllocateOption": "AUTO_ONLY",
        "sourceSubnetworkIpRangesToNat": "ALL_SUBNETWORKS_ALL_IP_RANGES"});
    c.create(ROUTER, json!({"network": "global/networks/vpc-a", "nats": [theirs]})).await.unwrap();
    let nat_id = format!("{ROUTER}/nats/ours");
    assert_eq!(c.get(&nat_id).await.unwrap(), None);

    let ours =
        json!({"natIpAllocateOption": "AUTO_ONLY", "sourceSubnetworkIpRangesToNat": "ALL_SUBNETWORKS_ALL_IP_RANGES"});
    let entry = c.create(&nat_id, ours.clone()).await.unwrap();
    assert_eq!(entry["name"], "ours");
    let router = sim.get_now(ROUTER).unwrap();
    let names: Vec<&str> = router["nats"].as_array().unwrap().iter().filter_map(|n| n["name"].as_str()).collect();
    assert_eq!(names, ["theirs", "ours"]);
    assert_eq!(c.create(&nat_id, ours).await.unwrap(), entry, "a retried create of our NAT is success");

    // An update under a stale version of the entry is refused.
    let stale = Precondition::IfMatch("content:0000000000000000".into());
    let e =
        c.update(&nat_id, json!({"natIpAllocateOption": "AUTO_ONLY", "minPortsPerVm": 128}), &stale).await.unwrap_err();
    assert!(matches!(e, CloudError::PreconditionFailed { .. }), "{e:?}");
    let fp = GceIds.precondition(&c.get(&nat_id).await.unwrap().unwrap());
    let entry = c
        .update(&nat_id, json!({"natIpAllocateOption": "AUTO_ONLY", "sourceSubnetworkIpRangesToNat": "ALL_SUBNETWORKS_ALL_IP_RANGES", "minPortsPerVm": 128}), &fp)
        .await
        .unwrap();
    assert_eq!(entry["minPortsPerVm"], 128);

    c.delete(&nat_id).await.unwrap();
    assert_eq!(c.get(&nat_id).await.unwrap(), None);
    let router = sim.get_now(ROUTER).unwrap();
    assert_eq!(router["nats"].as_array().unwrap().len(), 1);
    assert_eq!(router["nats"][0]["name"], "theirs");
    c.delete(&nat_id).await.expect("deleting a NAT that is gone is done");
}

fn key_secrets() -> Vec<String> {
    let key: Value = serde_json::from_slice(&std::fs::read(key_path()).unwrap()).unwrap();
    let pem = key["private_key"].as_str().unwrap();
    // Every line of the key body is a secret on its own.
    pem.lines().filter(|l| !l.starts_with("-----") && l.len() > 16).map(str::to_string).collect()
}

#[tokio::test]
async fn a_service_account_key_signs_every_request_and_never_shows_in_errors() {
    let sim = GceSim::in_memory();
    let srv = serve(sim.clone(), GceOptions::default()).await;
    let c = client(&srv, Credentials::KeyFile(key_path()), fast()).await;
    with_vpc(&c).await;
    let auths = srv.server.authorizations();
    assert!(!auths.is_empty());
    let jwt = auths[0].strip_prefix("Bearer ").expect("a bearer token").to_string();
    assert_eq!(jwt.split('.').count(), 3, "a signed JWT: {jwt}");
    assert!(auths.iter().all(|a| a.starts_with("Bearer ")), "every request is signed");

    let mut messages = Vec::new();
    sim.set_faults(Faults::none().with_rule(FaultRule::once_at(Matcher::any(), 1, Fault::Forbidden)));
    messages.push(c.get(NET).await.unwrap_err().to_string());
    sim.set_faults(Faults::none());
    messages
        .push(c.update(NET, json!({}), &Precondition::IfMatch("AAAAAAAAAAA=".into())).await.unwrap_err().to_string());
    messages.push(c.create(FIREWALL, json!({"network": "global/networks/nope"})).await.unwrap_err().to_string());
    messages.push(c.get("projects/p/zones/z/instances/i").await.unwrap_err().to_string());
    // A client whose endpoint does not answer.
    let dead = Url::parse("http://127.0.0.1:9").unwrap();
    let gone = GcpClient::with_options("p", Some(dead), Credentials::KeyFile(key_path()), fast()).await.unwrap();
    messages.push(gone.get(NET).await.unwrap_err().to_string());
    for m in &messages {
        assert!(!m.contains(&jwt), "the token leaks: {m}");
        for secret in key_secrets() {
            assert!(!m.contains(&secret), "the key leaks: {m}");
        }
        assert!(!m.contains('\n'), "one line: {m}");
    }
    assert!(format!("{c:?}").len() < 100_000);
    for secret in key_secrets() {
        assert!(!format!("{c:?}").contains(&secret), "Debug shows no key");
    }
}

#[tokio::test]
async fn unusable_credentials_are_one_line_errors_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.json");
    let url = || Some(Url::parse("http://127.0.0.1:9").unwrap());
    let e = GcpClient::new("p", url(), Credentials::KeyFile(missing.clone())).await.unwrap_err();
    assert!(matches!(e, GcpClientError::KeyUnreadable { .. }) && e.to_string().contains("missing.json"), "{e}");
    let user = dir.path().join("user.json");
    std::fs::write(&user, r#"{"type": "authorized_user", "refresh_token": "secret-refresh"}"#).unwrap();
    let e = GcpClient::new("p", url(), Credentials::KeyFile(user)).await.unwrap_err();
    assert!(matches!(e, GcpClientError::KeyInvalid { .. }) && !e.to_string().contains("secret-refresh"), "{e}");
    // A path that never ends is read up to its limit, not until memory runs out.
    let e = GcpClient::new("p", url(), Credentials::KeyFile("/dev/zero".into())).await.unwrap_err();
    assert!(matches!(e, GcpClientError::KeyInvalid { .. }) && e.to_string().contains("larger than 1 MiB"), "{e}");
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"type": "service_account", "client_email": "a@p.iam.gserviceaccount.com", "private_key": "not-a-pem-secret"}"#)
        .unwrap();
    let e = GcpClient::new("p", url(), Credentials::KeyFile(bad)).await.unwrap_err();
    assert!(matches!(e, GcpClientError::KeyInvalid { .. }) && !e.to_string().contains("not-a-pem-secret"), "{e}");
    let remote = Url::parse("http://compute.example.com").unwrap();
    let e = GcpClient::new("p", Some(remote), Credentials::KeyFile(key_path())).await.unwrap_err();
    assert!(
        matches!(e, GcpClientError::PlainHttp(_)),
        "signed requests never go over plain http to a remote host: {e}"
    );
    let e = GcpClient::new("Bad Project", url(), Credentials::Anonymous).await.unwrap_err();
    assert!(matches!(e, GcpClientError::Project(_)), "{e}");
}
