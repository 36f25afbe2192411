//! The simulated GCE cloud's rules: shapes, insert/patch/delete, references, quotas, names, lists.

use serde_json::{json, Value};
use trellis_planner::cloud::{CloudError, CloudRead, CloudWrite, Precondition};
use trellis_planner::exec::NodeError;
use trellis_planner::ids::{GceIds, IdScheme};
use trellis_planner::retry::RetryPolicy;
use trellis_planner::write::{WriteLocks, Writer};
use trellis_sim::gce::COMPUTE_URL;
use trellis_sim::{GceSim, ListQuery, Quotas};

const P: &str = "projects/p";
const NETWORKS: &str = "projects/p/global/networks";
const FIREWALLS: &str = "projects/p/global/firewalls";
const ROUTES: &str = "projects/p/global/routes";
const SUBNETS: &str = "projects/p/regions/europe-west1/subnetworks";
const ROUTERS: &str = "projects/p/regions/europe-west1/routers";
const ADDRESSES: &str = "projects/p/regions/europe-west1/addresses";

fn url(path: &str) -> String {
    format!("{COMPUTE_URL}{path}")
}

fn code(e: &CloudError) -> (u16, String) {
    match e {
        CloudError::Rejected { status, code, .. } => (*status, code.clone()),
        other => panic!("expected a rejection, got {other:?}"),
    }
}

async fn with_vpc() -> GceSim {
    let sim = GceSim::in_memory();
    sim.insert(NETWORKS, json!({"name": "vpc-a", "autoCreateSubnetworks": false})).await.unwrap();
    sim
}

async fn subnet(sim: &GceSim, name: &str, cidr: &str) -> Value {
    sim.insert(SUBNETS, json!({"name": name, "network": "global/networks/vpc-a", "ipCidrRange": cidr})).await.unwrap()
}

#[tokio::test]
async fn insert_answers_a_done_operation_and_get_the_gce_shape() {
    let sim = GceSim::in_memory();
    let op = sim.insert(NETWORKS, json!({"name": "vpc-a", "autoCreateSubnetworks": false})).await.unwrap();
    assert_eq!(op["kind"], "compute#operation");
    assert_eq!(op["status"], "DONE");
    assert_eq!(op["operationType"], "insert");
    assert_eq!(op["targetLink"], json!(url("projects/p/global/networks/vpc-a")));
    assert!(op["selfLink"].as_str().unwrap().starts_with(&url("projects/p/global/operations/operation-")), "{op}");
    assert!(op.get("error").is_none());
    assert_eq!(
        sim.get(op["selfLink"].as_str().unwrap()).await.unwrap().as_ref(),
        Some(&op),
        "a global operation can be read back"
    );

    let net = sim.get("projects/p/global/networks/vpc-a").await.unwrap().unwrap();
    assert_eq!(net["kind"], "compute#network");
    assert_eq!(net["selfLink"], json!(url("projects/p/global/networks/vpc-a")));
    assert_eq!(net["id"], op["targetId"]);
    assert!(net["id"].as_str().unwrap().chars().all(|c| c.is_ascii_digit()), "id is a decimal string: {net}");
    let ts = net["creationTimestamp"].as_str().unwrap();
    assert!(ts.len() == 24 && &ts[4..5] == "-" && &ts[10..11] == "T" && ts.ends_with('Z'), "RFC 3339: {ts}");
    assert!(net.get("fingerprint").is_none(), "a network has no fingerprint in compute v1: {net}");
    assert_eq!(net["mtu"], 1460);
    assert_eq!(net["routingConfig"], json!({"routingMode": "REGIONAL"}));

    // A regional resource's operation is regional; its references are full URLs.
    let op = subnet(&sim, "workers", "10.250.0.0/16").await;
    assert!(op["selfLink"].as_str().unwrap().starts_with(&url("projects/p/regions/europe-west1/operations/")), "{op}");
    let s = sim.get_now("projects/p/regions/europe-west1/subnetworks/workers").unwrap();
    assert_eq!(s["network"], json!(url("projects/p/global/networks/vpc-a")));
    assert_eq!(s["region"], json!(url("projects/p/regions/europe-west1")));
    assert_eq!(s["gatewayAddress"], "10.250.0.1");
    assert_eq!(s["stackType"], "IPV4_ONLY");
    assert_eq!(
        sim.get_now("projects/p/global/networks/vpc-a").unwrap()["subnetworks"],
        json!([url("projects/p/regions/europe-west1/subnetworks/workers")])
    );
    // The origin and version prefix are not part of the id; case is.
    assert!(sim.get_now(&url("projects/p/global/networks/vpc-a")).is_some());
    assert!(sim.get("projects/p/global/networks/VPC-A").await.unwrap().is_none());
}

#[tokio::test]
async fn insert_of_an_existing_name_is_409_already_exists() {
    let sim = with_vpc().await;
    let e = sim.insert(NETWORKS, json!({"name": "vpc-a"})).await.unwrap_err();
    assert_eq!(e, CloudError::AlreadyExists { target: "projects/p/global/networks/vpc-a".into(), status: 409 });
    let e = sim.create("projects/p/global/networks/vpc-a", json!({})).await.unwrap_err();
    assert!(matches!(e, CloudError::AlreadyExists { status: 409, .. }), "{e:?}");
    assert_eq!(sim.calls().last().unwrap().status, 409);
}

#[tokio::test]
async fn a_subnetwork_patch_must_carry_its_current_fingerprint_else_400_required_or_412_condition_not_met() {
    let sim = with_vpc().await;
    subnet(&sim, "workers", "10.250.0.0/16").await;
    let id = "projects/p/regions/europe-west1/subnetworks/workers";
    let fp = sim.get_now(id).unwrap()["fingerprint"].as_str().unwrap().to_string();

    let fp_len = fp.len();
    assert_eq!(fp_len, 12, "8 bytes in base64: {fp}");
    let e = sim.patch(id, json!({"privateIpGoogleAccess": true})).await.unwrap_err();
    assert_eq!(code(&e), (400, "required".into()), "no fingerprint: {e:?}");
    let e = sim.patch(id, json!({"privateIpGoogleAccess": true, "fingerprint": "AAAAAAAAAAA="})).await.unwrap_err();
    assert_eq!(e, CloudError::PreconditionFailed { target: id.into(), expected: "AAAAAAAAAAA=".into() });
    assert_eq!(sim.calls().last().unwrap().status, 412);
    assert_eq!(sim.get_now(id).unwrap()["privateIpGoogleAccess"], false, "a refused patch changes nothing");

    let op = sim.patch(id, json!({"privateIpGoogleAccess": true, "fingerprint": fp})).await.unwrap();
    assert_eq!(op["operationType"], "patch");
    let after = sim.get_now(id).unwrap();
    assert_eq!(after["privateIpGoogleAccess"], true);
    assert_ne!(after["fingerprint"], json!(fp), "every write gives a new fingerprint");

    // The write model: update under the fingerprint read, remove likewise.
    let stale = Precondition::IfMatch(fp.clone());
    assert!(matches!(
        sim.update(id, json!({"description": "x"}), &stale).await,
        Err(CloudError::PreconditionFailed { .. })
    ));
    assert!(matches!(sim.remove(id, &stale).await, Err(CloudError::PreconditionFailed { .. })));
    let fresh = Precondition::of(&after);
    let updated = sim.update(id, json!({"description": "x"}), &fresh).await.unwrap();
    assert_eq!(updated["description"], "x");
    sim.remove(id, &Precondition::of(&updated)).await.unwrap();
    assert!(sim.get_now(id).is_none());
    sim.remove(id, &Precondition::None).await.expect("deleting what is gone succeeds");
}

/// Compute v1 gives networks, routers and firewalls no fingerprint: the simulator gave each one and
/// refused a PATCH without it (412 "changed since it was read (etag none)"), which no real client,
/// reading the resource with `get` first, could satisfy.
#[tokio::test]
async fn regression_a_router_firewall_or_network_read_with_get_patches_without_a_fingerprint() {
    let sim = with_vpc().await;
    let router = format!("{ROUTERS}/rtr");
    let firewall = format!("{FIREWALLS}/fw");
    let network = format!("{NETWORKS}/vpc-a");
    sim.insert(ROUTERS, json!({"name": "rtr", "network": "global/networks/vpc-a"})).await.unwrap();
    sim.insert(
        FIREWALLS,
        json!({"name": "fw", "network": "global/networks/vpc-a", "allowed": [{"IPProtocol": "tcp"}]}),
    )
    .await
    .unwrap();
    for (id, change) in [
        (&router, json!({"description": "egress"})),
        (&firewall, json!({"sourceRanges": ["10.0.0.0/8"]})),
        (&network, json!({"description": "shared"})),
    ] {
        let mut read = sim.get(id).await.unwrap().unwrap();
        assert!(read.get("fingerprint").is_none(), "{id}: no fingerprint in compute v1: {read}");
        json_merge(&mut read, &change);
        sim.patch(id, read).await.unwrap_or_else(|e| panic!("{id}: a PATCH of what GET answered: {e}"));
        let after = sim.get_now(id).unwrap();
        for (k, v) in change.as_object().unwrap() {
            assert_eq!(&after[k], v, "{id}: {k} patched");
        }
    }
    // Addresses and routes have none either; a subnetwork does.
    sim.insert(ADDRESSES, json!({"name": "ip"})).await.unwrap();
    assert!(sim.get_now(&format!("{ADDRESSES}/ip")).unwrap().get("fingerprint").is_none());
    subnet(&sim, "workers", "10.250.0.0/16").await;
    assert!(sim.get_now(&format!("{SUBNETS}/workers")).unwrap()["fingerprint"].is_string());
}

fn json_merge(into: &mut Value, patch: &Value) {
    for (k, v) in patch.as_object().unwrap() {
        into[k] = v.clone();
    }
}

/// Without a fingerprint, the write model guards a router's, firewall's or network's update with the
/// content version of what the caller read: a change someone makes between that read and the PATCH
/// refuses the write (412 class), and their change stays. The audit shows the GET right before the
/// PATCH, as a real client sends them.
#[tokio::test]
async fn a_change_between_the_read_and_the_patch_of_a_router_refuses_the_update() {
    let sim = with_vpc().await;
    let router = format!("{ROUTERS}/rtr");
    sim.insert(ROUTERS, json!({"name": "rtr", "network": "global/networks/vpc-a"})).await.unwrap();
    let read = sim.get(&router).await.unwrap().unwrap();
    let pre = GceIds.precondition(&read);
    assert!(matches!(&pre, Precondition::IfMatch(v) if v.starts_with("content:")), "{pre:?}");
    // Someone else adds a NAT to the router (a PATCH of the router as read by them).
    let theirs = json!({"name": "theirs", "natIpAllocateOption": "AUTO_ONLY",
        "sourceSubnetworkIpRangesToNat": "ALL_SUBNETWORKS_ALL_IP_RANGES"});
    sim.patch(&router, json!({"nats": [theirs]})).await.unwrap();
    let mut ours = read.clone();
    ours["description"] = json!("ours");
    match sim.update(&router, ours.clone(), &pre).await {
        Err(CloudError::PreconditionFailed { target, expected }) => {
            assert_eq!(
                (target.as_str(), &expected),
                (
                    router.as_str(),
                    match &pre {
                        Precondition::IfMatch(v) => v,
                        _ => unreachable!(),
                    }
                )
            )
        }
        other => panic!("expected a precondition failure, got {other:?}"),
    }
    let now = sim.get_now(&router).unwrap();
    assert_eq!(now["nats"][0]["name"], "theirs", "their NAT was not overwritten");
    assert!(now.get("description").is_none());
    let tail: Vec<String> = sim.calls().iter().rev().take(1).map(|c| c.method.clone()).collect();
    assert_eq!(tail, ["GET"], "refused after the GET, before any PATCH");
    // Read again: the write goes through under the new version.
    let fresh = sim.get(&router).await.unwrap().unwrap();
    let mut ours = fresh.clone();
    ours["description"] = json!("ours");
    let written = sim.update(&router, ours, &GceIds.precondition(&fresh)).await.unwrap();
    assert_eq!(written["description"], "ours");
    assert_eq!(written["nats"][0]["name"], "theirs");
    // A delete under a stale version is refused too; under the current one it goes.
    assert!(matches!(sim.remove(&router, &pre).await, Err(CloudError::PreconditionFailed { .. })));
    sim.remove(&router, &GceIds.precondition(&written)).await.unwrap();
    assert!(sim.get_now(&router).is_none());
}

#[tokio::test]
async fn routes_are_immutable() {
    let sim = with_vpc().await;
    sim.insert(
        ROUTES,
        json!({"name": "r", "network": "global/networks/vpc-a", "destRange": "10.0.0.0/8", "nextHopIp": "10.250.0.5"}),
    )
    .await
    .unwrap();
    let e = sim.patch("projects/p/global/routes/r", json!({"priority": 10})).await.unwrap_err();
    assert_eq!(code(&e), (405, "methodNotAllowed".into()));
}

#[tokio::test]
async fn a_network_that_is_used_cannot_be_deleted() {
    let sim = with_vpc().await;
    let net = "projects/p/global/networks/vpc-a";
    subnet(&sim, "workers", "10.250.0.0/16").await;
    let e = sim.delete_resource(net).await.unwrap_err();
    assert_eq!(code(&e), (400, "resourceInUseByAnotherResource".into()));
    assert!(e.to_string().contains("subnetworks/workers"), "{e}");
    sim.delete("projects/p/regions/europe-west1/subnetworks/workers").await.unwrap();

    sim.insert(
        FIREWALLS,
        json!({"name": "allow-ssh", "network": net, "allowed": [{"IPProtocol": "tcp", "ports": ["22"]}]}),
    )
    .await
    .unwrap();
    let e = sim.delete_resource(net).await.unwrap_err();
    assert!(e.to_string().contains("firewalls/allow-ssh"), "a firewall keeps its network: {e}");
    sim.delete("projects/p/global/firewalls/allow-ssh").await.unwrap();

    sim.insert(
        ROUTES,
        json!({"name": "to-onprem", "network": net, "destRange": "192.168.0.0/16", "nextHopIp": "10.250.0.9"}),
    )
    .await
    .unwrap();
    let e = sim.delete_resource(net).await.unwrap_err();
    assert!(e.to_string().contains("routes/to-onprem"), "a route keeps its network: {e}");
    sim.delete("projects/p/global/routes/to-onprem").await.unwrap();

    sim.insert(ROUTERS, json!({"name": "rtr", "network": net})).await.unwrap();
    let e = sim.delete_resource(net).await.unwrap_err();
    assert!(e.to_string().contains("routers/rtr"), "a router keeps its network: {e}");
    sim.delete("projects/p/regions/europe-west1/routers/rtr").await.unwrap();

    let op = sim.delete_resource(net).await.unwrap();
    assert_eq!(op["operationType"], "delete");
    assert!(sim.get_now(net).is_none());
    let e = sim.delete_resource(net).await.unwrap_err();
    assert_eq!(code(&e), (404, "notFound".into()));
}

#[tokio::test]
async fn a_nat_address_cannot_be_deleted_nor_the_router_while_its_nat_holds_addresses() {
    let sim = with_vpc().await;
    sim.insert(ADDRESSES, json!({"name": "nat-ip"})).await.unwrap();
    let addr = "projects/p/regions/europe-west1/addresses/nat-ip";
    assert_eq!(sim.get_now(addr).unwrap()["status"], "RESERVED");
    sim.insert(
        ROUTERS,
        json!({"name": "rtr", "network": "global/networks/vpc-a", "nats": [{
        "name": "nat", "natIpAllocateOption": "MANUAL_ONLY", "natIps": ["regions/europe-west1/addresses/nat-ip"],
        "sourceSubnetworkIpRangesToNat": "ALL_SUBNETWORKS_ALL_IP_RANGES"}]}),
    )
    .await
    .unwrap();
    let router = "projects/p/regions/europe-west1/routers/rtr";
    let a = sim.get_now(addr).unwrap();
    assert_eq!(a["status"], "IN_USE");
    assert_eq!(a["users"], json!([url(router)]));
    let nat = &sim.get_now(router).unwrap()["nats"][0];
    assert_eq!(nat["natIps"], json!([url(addr)]));
    assert_eq!(nat["minPortsPerVm"], 64);
    assert_eq!(nat["logConfig"], json!({"enable": false, "filter": "ALL"}));

    let e = sim.delete_resource(addr).await.unwrap_err();
    assert_eq!(code(&e), (400, "resourceInUseByAnotherResource".into()));
    let e = sim.delete_resource(router).await.unwrap_err();
    assert_eq!(code(&e), (400, "resourceInUseByAnotherResource".into()));
    assert!(e.to_string().contains("NAT 'nat' holds addresses"), "{e}");

    // Another router's NAT cannot take the same address.
    let e = sim
        .insert(
            ROUTERS,
            json!({"name": "rtr2", "network": "global/networks/vpc-a", "nats": [{
        "name": "nat", "natIpAllocateOption": "MANUAL_ONLY", "natIps": [addr],
        "sourceSubnetworkIpRangesToNat": "ALL_SUBNETWORKS_ALL_IP_RANGES"}]}),
        )
        .await
        .unwrap_err();
    assert_eq!(code(&e), (400, "resourceInUseByAnotherResource".into()));

    // Drop the NAT (PATCH replaces `nats` whole), then the router and the address can go.
    let r = sim.get_now(router).unwrap();
    sim.patch(router, json!({"nats": [], "fingerprint": r["fingerprint"]})).await.unwrap();
    assert_eq!(sim.get_now(addr).unwrap()["status"], "RESERVED");
    sim.delete_resource(router).await.unwrap();
    sim.delete_resource(addr).await.unwrap();
}

#[tokio::test]
async fn secondary_ranges_must_not_overlap_the_primary_nor_other_subnets() {
    let sim = with_vpc().await;
    let body = |name: &str, primary: &str, pods: &str| {
        json!({"name": name, "network": "global/networks/vpc-a", "ipCidrRange": primary,
               "secondaryIpRanges": [{"rangeName": "pods", "ipCidrRange": pods}]})
    };
    let e = sim.insert(SUBNETS, body("a", "10.0.0.0/16", "10.0.128.0/17")).await.unwrap_err();
    assert_eq!(code(&e), (400, "invalid".into()));
    assert!(e.to_string().contains("overlaps the primary range 10.0.0.0/16"), "{e}");
    sim.insert(SUBNETS, body("a", "10.0.0.0/16", "100.96.0.0/14")).await.unwrap();
    let e = sim.insert(SUBNETS, body("b", "10.1.0.0/16", "100.97.0.0/16")).await.unwrap_err();
    assert!(e.to_string().contains("conflicts with existing subnetwork 'a'"), "{e}");
    let e = sim.insert(SUBNETS, body("c", "10.2.0.1/16", "100.100.0.0/14")).await.unwrap_err();
    assert!(e.to_string().contains("host bits must be zero"), "{e}");
}

#[tokio::test]
async fn routes_and_firewalls_over_quota_fail_in_the_operation_with_403_quota_exceeded() {
    let sim = with_vpc().await;
    sim.set_quotas(Quotas { routes_per_network: 2, firewalls_per_project: 1 }).unwrap();
    let route = |n: usize| json!({"name": format!("shoot--p--s-{n}"), "network": "global/networks/vpc-a", "destRange": format!("100.96.{n}.0/24"), "nextHopIp": "10.250.0.5"});
    sim.insert(ROUTES, route(0)).await.unwrap();
    sim.insert(ROUTES, route(1)).await.unwrap();
    let op = sim.insert(ROUTES, route(2)).await.expect("GCE answers 200 with a failed operation");
    assert_eq!(op["status"], "DONE");
    assert_eq!(op["httpErrorStatusCode"], 403);
    assert_eq!(op["error"]["errors"][0]["code"], "QUOTA_EXCEEDED");
    assert_eq!(sim.calls().last().unwrap().status, 200);
    assert!(sim.get_now("projects/p/global/routes/shoot--p--s-2").is_none());

    let e = sim.create("projects/p/global/routes/shoot--p--s-2", route(2)).await.unwrap_err();
    assert_eq!(code(&e), (403, "QUOTA_EXCEEDED".into()), "the write model looks into the operation");

    sim.create(
        "projects/p/global/firewalls/one",
        json!({"network": "global/networks/vpc-a", "allowed": [{"IPProtocol": "icmp"}]}),
    )
    .await
    .unwrap();
    let e = sim
        .create(
            "projects/p/global/firewalls/two",
            json!({"network": "global/networks/vpc-a", "allowed": [{"IPProtocol": "icmp"}]}),
        )
        .await
        .unwrap_err();
    assert_eq!(code(&e), (403, "QUOTA_EXCEEDED".into()));
    assert!(e.to_string().contains("FIREWALLS"), "{e}");
    assert_eq!(Quotas::default(), Quotas { routes_per_network: 400, firewalls_per_project: 200 });
}

#[tokio::test]
async fn names_must_follow_rfc_1035() {
    let sim = GceSim::in_memory();
    let long = format!("a{}", "b".repeat(63));
    for bad in ["Vpc", "1vpc", "vpc-", "vpc_a", "", long.as_str()] {
        let e = sim.insert(NETWORKS, json!({"name": bad})).await.unwrap_err();
        assert_eq!(code(&e), (400, "invalid".into()), "{bad:?}");
        assert!(e.to_string().contains("RFC 1035"), "{e}");
        assert!(!e.to_string().contains('\n'));
    }
    sim.insert(NETWORKS, json!({"name": "a".repeat(63)})).await.unwrap();
    sim.insert(NETWORKS, json!({"name": "v"})).await.unwrap();
}

#[tokio::test]
async fn list_filters_by_name_regex_and_network() {
    let sim = with_vpc().await;
    sim.insert(NETWORKS, json!({"name": "vpc-b"})).await.unwrap();
    for (name, net) in [("shoot--p--s-a", "vpc-a"), ("shoot--p--s-b", "vpc-b"), ("user-route", "vpc-a")] {
        sim.insert(ROUTES, json!({"name": name, "network": format!("global/networks/{net}"), "destRange": "10.9.0.0/24", "nextHopIp": "10.250.0.5"})).await.unwrap();
    }
    let names = |page: &Value| -> Vec<String> {
        page["items"].as_array().unwrap().iter().map(|i| i["name"].as_str().unwrap().to_string()).collect()
    };
    let q = |f: &str| ListQuery { filter: Some(f.into()), ..ListQuery::default() };
    let page = sim.list_page(ROUTES, &q(r#"name eq "shoot--.*""#)).await.unwrap();
    assert_eq!(page["kind"], "compute#routeList");
    assert_eq!(names(&page), ["shoot--p--s-a", "shoot--p--s-b"]);
    let page = sim
        .list_page(ROUTES, &q(&format!(r#"network eq "{}""#, url("projects/p/global/networks/vpc-a"))))
        .await
        .unwrap();
    assert_eq!(names(&page), ["shoot--p--s-a", "user-route"]);
    let page = sim.list_page(ROUTES, &q(r#"(name eq "shoot--.*") (network eq ".*/vpc-b")"#)).await.unwrap();
    assert_eq!(names(&page), ["shoot--p--s-b"]);
    let page = sim.list_page(ROUTES, &q(r#"name != "user-route""#)).await.unwrap();
    assert_eq!(names(&page), ["shoot--p--s-a", "shoot--p--s-b"]);
    let e = sim.list_page(ROUTES, &q(r#"name eq "a" OR name eq "b""#)).await.unwrap_err();
    assert_eq!(code(&e), (400, "invalid".into()));
}

#[tokio::test]
async fn list_pages_with_max_results_and_next_page_token() {
    let sim = with_vpc().await;
    for i in 0..5 {
        sim.insert(
            FIREWALLS,
            json!({"name": format!("fw-{i}"), "network": "global/networks/vpc-a", "allowed": [{"IPProtocol": "tcp"}]}),
        )
        .await
        .unwrap();
    }
    let mut seen = Vec::new();
    let mut q = ListQuery { max_results: Some(2), page_token: Some(String::new()), ..ListQuery::default() };
    let mut pages = 0;
    loop {
        let page = sim.list_page(FIREWALLS, &q).await.unwrap();
        pages += 1;
        seen.extend(page["items"].as_array().unwrap().iter().map(|i| i["name"].as_str().unwrap().to_string()));
        match page.get("nextPageToken").and_then(Value::as_str) {
            Some(t) => q.page_token = Some(t.into()),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(seen, ["fw-0", "fw-1", "fw-2", "fw-3", "fw-4"]);
    let e = sim
        .list_page(FIREWALLS, &ListQuery { page_token: Some("bogus".into()), ..ListQuery::default() })
        .await
        .unwrap_err();
    assert_eq!(code(&e), (400, "invalid".into()));
    let e = sim.list_page(FIREWALLS, &ListQuery { max_results: Some(501), ..ListQuery::default() }).await.unwrap_err();
    assert_eq!(code(&e), (400, "invalid".into()));

    // CloudRead::list follows the pages (500 a page) and returns everything.
    let all = sim.list(&format!("{P}/global"), "firewalls").await.unwrap();
    assert_eq!(all.len(), 5);
    assert_eq!(sim.calls().last().unwrap().method, "LIST");
}

#[tokio::test]
async fn an_external_ipv6_subnet_gets_its_own_64_prefix() {
    let sim = with_vpc().await;
    let v6 = |name: &str, cidr: &str| json!({"name": name, "network": "global/networks/vpc-a", "ipCidrRange": cidr, "stackType": "IPV4_IPV6", "ipv6AccessType": "EXTERNAL"});
    sim.insert(SUBNETS, v6("a", "10.0.0.0/24")).await.unwrap();
    sim.insert(SUBNETS, v6("b", "10.0.1.0/24")).await.unwrap();
    let a = sim.get_now(&format!("{SUBNETS}/a")).unwrap();
    let b = sim.get_now(&format!("{SUBNETS}/b")).unwrap();
    assert_eq!(a["externalIpv6Prefix"], "2600:1900:4000:1::/64");
    assert_eq!(b["externalIpv6Prefix"], "2600:1900:4000:2::/64");
    // A patch keeps the prefix.
    sim.patch(&format!("{SUBNETS}/a"), json!({"description": "d", "fingerprint": a["fingerprint"]})).await.unwrap();
    assert_eq!(sim.get_now(&format!("{SUBNETS}/a")).unwrap()["externalIpv6Prefix"], "2600:1900:4000:1::/64");

    let e = sim.insert(SUBNETS, json!({"name": "c", "network": "global/networks/vpc-a", "ipCidrRange": "10.0.2.0/24", "stackType": "IPV4_IPV6"})).await.unwrap_err();
    assert!(e.to_string().contains("needs ipv6AccessType"), "{e}");
    let e = sim.insert(SUBNETS, json!({"name": "c", "network": "global/networks/vpc-a", "ipCidrRange": "10.0.2.0/24", "ipv6AccessType": "EXTERNAL"})).await.unwrap_err();
    assert!(e.to_string().contains("needs stackType IPV4_IPV6"), "{e}");
}

#[tokio::test]
async fn addresses_are_allocated_deterministically() {
    let sim = with_vpc().await;
    subnet(&sim, "workers", "10.250.0.0/24").await;
    sim.insert(ADDRESSES, json!({"name": "e1"})).await.unwrap();
    sim.insert(ADDRESSES, json!({"name": "e2", "address": "8.8.8.8"})).await.unwrap();
    assert_eq!(sim.get_now(&format!("{ADDRESSES}/e1")).unwrap()["address"], "35.190.0.1");
    assert_eq!(
        sim.get_now(&format!("{ADDRESSES}/e2")).unwrap()["address"],
        "35.190.0.2",
        "an external address is GCE's choice"
    );
    sim.delete(&format!("{ADDRESSES}/e1")).await.unwrap();
    sim.insert(ADDRESSES, json!({"name": "e1"})).await.unwrap();
    assert_eq!(sim.get_now(&format!("{ADDRESSES}/e1")).unwrap()["address"], "35.190.0.3", "never handed out twice");

    let internal = |name: &str| json!({"name": name, "addressType": "INTERNAL", "subnetwork": "regions/europe-west1/subnetworks/workers"});
    sim.insert(ADDRESSES, internal("i1")).await.unwrap();
    sim.insert(ADDRESSES, internal("i2")).await.unwrap();
    assert_eq!(sim.get_now(&format!("{ADDRESSES}/i1")).unwrap()["address"], "10.250.0.2");
    assert_eq!(sim.get_now(&format!("{ADDRESSES}/i2")).unwrap()["address"], "10.250.0.3");
    let e = sim.insert(ADDRESSES, json!({"name": "i3", "addressType": "INTERNAL", "subnetwork": "regions/europe-west1/subnetworks/workers", "address": "10.250.0.3"})).await.unwrap_err();
    assert!(matches!(e, CloudError::Rejected { status: 409, .. }), "{e:?}");
    let e = sim.delete_resource(&format!("{SUBNETS}/workers")).await.unwrap_err();
    assert_eq!(code(&e), (400, "resourceInUseByAnotherResource".into()), "an internal address keeps its subnet");
}

#[tokio::test]
async fn an_auto_mode_network_has_a_subnet_named_after_it_in_every_region() {
    let sim = GceSim::in_memory();
    sim.insert(NETWORKS, json!({"name": "default", "autoCreateSubnetworks": true})).await.unwrap();
    let s = sim.get_now("projects/p/regions/europe-west1/subnetworks/default").unwrap();
    assert_eq!(s["ipCidrRange"], "10.132.0.0/20");
    let central = sim.list("projects/p/regions/us-central1", "subnetworks").await.unwrap();
    assert_eq!(central[0]["ipCidrRange"], "10.128.0.0/20");
    let net = sim.get_now("projects/p/global/networks/default").unwrap();
    assert_eq!(net["subnetworks"].as_array().unwrap().len(), trellis_sim::gce::AUTO_MODE_SUBNETS.len());
    // Its own subnets go with it.
    sim.delete_resource("projects/p/global/networks/default").await.unwrap();
    assert!(sim.snapshot().is_empty(), "{:?}", sim.snapshot());
}

#[tokio::test]
async fn references_must_exist() {
    let sim = GceSim::in_memory();
    let e = sim
        .insert(SUBNETS, json!({"name": "s", "network": "global/networks/nope", "ipCidrRange": "10.0.0.0/24"}))
        .await
        .unwrap_err();
    assert_eq!(code(&e), (404, "notFound".into()));
    assert!(e.to_string().contains("projects/p/global/networks/nope"), "{e}");
    let e = sim.insert(FIREWALLS, json!({"name": "f", "allowed": [{"IPProtocol": "tcp"}]})).await.unwrap_err();
    assert!(e.to_string().contains("networks/default"), "a firewall defaults to the default network: {e}");
}

#[tokio::test]
async fn service_accounts_live_under_the_project() {
    let sim = GceSim::in_memory();
    let id = "projects/p/serviceAccounts/shoot-p-s@p.iam.gserviceaccount.com";
    let sa = sim.create(id, json!({"displayName": "shoot nodes"})).await.unwrap();
    assert_eq!(sa["email"], "shoot-p-s@p.iam.gserviceaccount.com");
    assert_eq!(sa["name"], id);
    assert_eq!(sa["projectId"], "p");
    assert!(sa["etag"].is_string());
    assert!(matches!(sim.create(id, json!({})).await, Err(CloudError::AlreadyExists { status: 409, .. })));
    let e = sim.insert("projects/p/serviceAccounts", json!({"accountId": "ab"})).await.unwrap_err();
    assert_eq!(code(&e), (400, "invalid".into()));
    let updated = sim.update(id, json!({"displayName": "nodes"}), &Precondition::of(&sa)).await.unwrap();
    assert_eq!(updated["displayName"], "nodes");
    assert_eq!(sim.list("projects/p", "serviceAccounts").await.unwrap().len(), 1);
    sim.delete(id).await.unwrap();
    assert!(sim.get_now(id).is_none());
}

#[tokio::test]
async fn every_call_is_audited_with_method_target_and_status() {
    let sim = with_vpc().await;
    let _ = sim.get("projects/p/global/networks/missing").await;
    let _ = sim.insert(NETWORKS, json!({"name": "vpc-a"})).await;
    let _ = sim.list_page(NETWORKS, &ListQuery::default()).await;
    let calls: Vec<(String, String, u16)> = sim.calls().into_iter().map(|c| (c.method, c.target, c.status)).collect();
    assert_eq!(
        calls,
        [
            ("POST".to_string(), "projects/p/global/networks/vpc-a".to_string(), 200),
            ("GET".into(), "projects/p/global/networks/missing".into(), 404),
            ("POST".into(), "projects/p/global/networks/vpc-a".into(), 409),
            ("LIST".into(), "projects/p/global/networks".into(), 200),
        ]
    );
}

#[tokio::test]
async fn malformed_ids_and_bodies_are_one_line_refusals() {
    let sim = GceSim::in_memory();
    for id in ["", "projects", "projects/p/global/widgets/w", "projects/p/regions/r/networks/n", "/subscriptions/s"] {
        let e = sim.get(id).await.unwrap_err();
        assert_eq!(code(&e).0, 400, "{id}");
        assert!(!e.to_string().contains('\n'));
    }
    let e = sim.insert(NETWORKS, json!([1])).await.unwrap_err();
    assert_eq!(code(&e), (400, "invalid".into()));
    let e = sim.insert(NETWORKS, json!({"name": "n", "mtu": 100})).await.unwrap_err();
    assert!(e.to_string().contains("between 1300 and 8896"), "{e}");
}

#[tokio::test]
async fn regression_an_auto_mode_subnet_in_use_keeps_its_network() {
    let sim = GceSim::in_memory();
    sim.insert(NETWORKS, json!({"name": "auto", "autoCreateSubnetworks": true})).await.unwrap();
    sim.insert(
        ADDRESSES,
        json!({"name": "ilb", "addressType": "INTERNAL", "subnetwork": "regions/europe-west1/subnetworks/auto"}),
    )
    .await
    .unwrap();
    let e = sim.delete_resource("projects/p/global/networks/auto").await.unwrap_err();
    assert_eq!(code(&e), (400, "resourceInUseByAnotherResource".into()));
    assert!(e.to_string().contains("addresses/ilb"), "{e}");
    assert!(sim.get_now("projects/p/regions/europe-west1/subnetworks/auto").is_some(), "nothing deleted");
}

#[tokio::test]
async fn regression_a_refused_subnet_insert_allocates_no_ipv6_prefix() {
    let sim = with_vpc().await;
    let body = |log: Value| json!({"name": "a", "network": "global/networks/vpc-a", "ipCidrRange": "10.0.0.0/24", "stackType": "IPV4_IPV6", "ipv6AccessType": "EXTERNAL", "logConfig": log});
    let e = sim.insert(SUBNETS, body(json!({"enable": true, "flowSampling": 2}))).await.unwrap_err();
    assert_eq!(code(&e), (400, "invalid".into()));
    sim.insert(SUBNETS, body(json!({"enable": true}))).await.unwrap();
    assert_eq!(sim.get_now(&format!("{SUBNETS}/a")).unwrap()["externalIpv6Prefix"], "2600:1900:4000:1::/64");
}

/// The executor's writer on the simulated GCE cloud, with someone else's write landing between the
/// executor's re-read and its own PATCH (after it built the body from what it read): the write is
/// refused as changed since it was read, naming the router, and their change stays — no lost update
/// although a router has no fingerprint.
#[tokio::test]
async fn a_router_changed_between_the_executors_read_and_its_patch_is_not_overwritten() {
    struct Interloper(GceSim);
    #[async_trait::async_trait]
    impl CloudRead for Interloper {
        async fn get(&self, id: &str) -> Result<Option<Value>, CloudError> {
            self.0.get(id).await
        }
        async fn list(&self, parent: &str, rtype: &str) -> Result<Vec<Value>, CloudError> {
            self.0.list(parent, rtype).await
        }
    }
    #[async_trait::async_trait]
    impl CloudWrite for Interloper {
        async fn create(&self, id: &str, body: Value) -> Result<Value, CloudError> {
            self.0.create(id, body).await
        }
        async fn update(&self, id: &str, body: Value, pre: &Precondition) -> Result<Value, CloudError> {
            let theirs = json!({"name": "theirs", "natIpAllocateOption": "AUTO_ONLY",
                "sourceSubnetworkIpRangesToNat": "ALL_SUBNETWORKS_ALL_IP_RANGES"});
            self.0.patch(id, json!({"nats": [theirs]})).await.unwrap();
            self.0.update(id, body, pre).await
        }
        async fn remove(&self, id: &str, pre: &Precondition) -> Result<(), CloudError> {
            self.0.remove(id, pre).await
        }
    }
    let sim = with_vpc().await;
    let router = format!("{ROUTERS}/rtr");
    sim.insert(ROUTERS, json!({"name": "rtr", "network": "global/networks/vpc-a"})).await.unwrap();
    let cloud = Interloper(sim.clone());
    let (retry, locks) = (RetryPolicy::default(), WriteLocks::new(&GceIds));
    let writer = Writer { cloud: &cloud, retry: &retry, locks: &locks };
    let read = writer.get(&router).await.unwrap().unwrap();
    let patch = json!({"description": "ours"});
    let mut body = read.clone();
    trellis_planner::json::merge_patch(&mut body, &patch);
    let e = writer.update(&router, &body, &read, Some(&patch)).await.unwrap_err();
    assert!(
        matches!(&e, NodeError::Cloud(CloudError::PreconditionFailed { target, .. }) if *target == router),
        "{e:?}"
    );
    assert!(e.to_string().starts_with(&format!("{router}: changed since it was read")), "{e}");
    let now = sim.get_now(&router).unwrap();
    assert_eq!(now["nats"][0]["name"], "theirs", "their NAT stays: {now}");
    assert!(now.get("description").is_none(), "ours was not written: {now}");
}
