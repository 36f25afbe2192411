//! The ARM client against the simulated cloud served over HTTP (127.0.0.1, ephemeral port).

use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use trellis_azure_client::{ArmClient, ClientSecretCredential, EnvCredential, StaticToken, TokenSource, Url};
use trellis_planner::cloud::{CloudError, CloudRead, CloudWrite, Op};
use trellis_sim::{ArmSim, Fault, FaultRule, Faults, Matcher};
use trellis_sim_http::{RequestRecord, Running, ServerOptions, SimServer};

const SUB: &str = "00000000-0000-0000-0000-0000000000aa";

fn rg(name: &str) -> String {
    format!("/subscriptions/{SUB}/resourceGroups/{name}")
}

fn net(group: &str, rest: &str) -> String {
    format!("{}/providers/Microsoft.Network/{rest}", rg(group))
}

struct Fixture {
    sim: ArmSim,
    server: Running,
    client: ArmClient,
}

impl Fixture {
    async fn new(opts: ServerOptions) -> Fixture {
        let sim = ArmSim::in_memory(SUB);
        let server = SimServer::with_options(sim.clone(), opts).spawn_local().await.expect("server starts");
        let client = client_for(&server, Arc::new(StaticToken("test-token".into())));
        Fixture { sim, server, client }
    }

    fn requests(&self) -> Vec<RequestRecord> {
        self.server.server.requests()
    }

    async fn seed_network(&self) {
        self.client.put(&rg("rg"), json!({"location": "westeurope"})).await.expect("rg");
        let vnet =
            json!({"location": "westeurope", "properties": {"addressSpace": {"addressPrefixes": ["10.0.0.0/16"]}}});
        self.client.put(&net("rg", "virtualNetworks/vnet"), vnet).await.expect("vnet");
        let subnet = json!({"properties": {"addressPrefix": "10.0.1.0/24"}});
        self.client.put(&net("rg", "virtualNetworks/vnet/subnets/web"), subnet).await.expect("subnet");
    }
}

fn client_for(server: &Running, credential: Arc<dyn TokenSource>) -> ArmClient {
    ArmClient::new(Url::parse(&server.url()).unwrap(), credential)
        .expect("client")
        .with_lro_poll_cap(Duration::from_millis(50))
        .with_request_timeout(Duration::from_secs(10))
}

#[tokio::test]
async fn get_of_a_missing_resource_is_none() {
    let f = Fixture::new(ServerOptions::default()).await;
    assert_eq!(f.client.get(&rg("nope")).await.unwrap(), None);
    assert_eq!(f.client.get(&net("nope", "virtualNetworks/v")).await.unwrap(), None);
    f.client.put(&rg("rg"), json!({"location": "westeurope"})).await.unwrap();
    assert_eq!(f.client.get(&net("rg", "natGateways/ng")).await.unwrap(), None);
    let statuses: Vec<u16> = f.requests().iter().filter(|r| r.method == "GET").map(|r| r.status).collect();
    assert_eq!(statuses, vec![404, 404, 404]);
}

#[tokio::test]
async fn put_resource_group_vnet_subnet_polls_the_async_operation() {
    let f = Fixture::new(ServerOptions { in_progress_polls: 2, ..ServerOptions::default() }).await;
    let group = f.client.put(&rg("rg"), json!({"location": "westeurope"})).await.unwrap();
    assert_eq!(group["id"], rg("rg"));
    assert_eq!(group["properties"]["provisioningState"], "Succeeded");

    let vnet_id = net("rg", "virtualNetworks/vnet");
    let vnet = json!({"location": "westeurope", "properties": {"addressSpace": {"addressPrefixes": ["10.0.0.0/16"]}}});
    let got = f.client.put(&vnet_id, vnet).await.unwrap();
    assert_eq!(got["id"], vnet_id);
    assert_eq!(got["type"], "Microsoft.Network/virtualNetworks");

    let subnet_id = format!("{vnet_id}/subnets/web");
    let got = f.client.put(&subnet_id, json!({"properties": {"addressPrefix": "10.0.1.0/24"}})).await.unwrap();
    assert_eq!(got["properties"]["addressPrefix"], "10.0.1.0/24");
    assert_eq!(got["properties"]["provisioningState"], "Succeeded");

    // ARM paths are case-insensitive; the id comes back with its creation casing.
    let lower = f.client.get(&subnet_id.to_ascii_lowercase()).await.unwrap().expect("found");
    assert_eq!(lower["id"], subnet_id);

    let reqs = f.requests();
    let shape: Vec<(String, u16, Option<String>)> = reqs
        .iter()
        .map(|r| {
            let kind = if r.path.contains("/operations/") { "poll".to_string() } else { r.method.clone() };
            (kind, r.status, r.api_version.clone())
        })
        .collect();
    let v = |s: &str| Some(s.to_string());
    let (net_v, rg_v) = (v("2024-03-01"), v("2021-04-01"));
    assert_eq!(
        &shape[..9],
        &[
            ("PUT".into(), 201, rg_v.clone()), // resource groups are synchronous
            ("PUT".into(), 201, net_v.clone()),
            ("poll".into(), 200, net_v.clone()), // InProgress
            ("poll".into(), 200, net_v.clone()), // InProgress
            ("poll".into(), 200, net_v.clone()), // Succeeded
            ("GET".into(), 200, net_v.clone()),  // the resource, read back
            ("PUT".into(), 201, net_v.clone()),
            ("poll".into(), 200, net_v.clone()),
            ("poll".into(), 200, net_v.clone()),
        ]
    );
    // The served simulator's audit log saw the writes.
    let writes: Vec<String> = f.sim.calls().into_iter().filter(|c| c.op == Op::Write).map(|c| c.target).collect();
    assert_eq!(writes, vec![rg("rg"), vnet_id.clone(), subnet_id.clone()]);

    // A second PUT of the same resource is an update: 200.
    f.client.put(&subnet_id, json!({"properties": {"addressPrefix": "10.0.1.0/24"}})).await.unwrap();
    assert!(f.requests().iter().any(|r| r.method == "PUT" && r.status == 200));
}

#[tokio::test]
async fn list_follows_next_link_across_pages() {
    let f = Fixture::new(ServerOptions { page_size: Some(2), ..ServerOptions::default() }).await;
    f.seed_network().await;
    for name in ["a", "b", "c", "d", "e"] {
        let pip = json!({"location": "westeurope", "sku": {"name": "Standard"},
            "properties": {"publicIPAllocationMethod": "Static"}});
        f.client.put(&net("rg", &format!("publicIPAddresses/{name}")), pip).await.unwrap();
    }
    let mark = f.requests().len();
    let ips = f.client.list(&rg("rg"), "Microsoft.Network/publicIPAddresses").await.unwrap();
    let names: Vec<&str> = ips.iter().map(|v| v["name"].as_str().unwrap()).collect();
    assert_eq!(names, vec!["a", "b", "c", "d", "e"]);
    let pages = f.requests()[mark..].to_vec();
    assert_eq!(pages.len(), 3, "three pages of at most two: {pages:?}");
    assert!(pages.iter().all(|r| r.api_version.as_deref() == Some("2024-03-01")));

    for name in ["app", "db"] {
        let subnet = json!({"properties": {"addressPrefix": format!("10.0.{}.0/24", name.len())}});
        f.client.put(&net("rg", &format!("virtualNetworks/vnet/subnets/{name}")), subnet).await.unwrap();
    }
    let subnets =
        f.client.list(&net("rg", "virtualNetworks/vnet"), "Microsoft.Network/virtualNetworks/subnets").await.unwrap();
    let mut names: Vec<&str> = subnets.iter().map(|v| v["name"].as_str().unwrap()).collect();
    names.sort();
    assert_eq!(names, vec!["app", "db", "web"]);

    f.client.put(&rg("other"), json!({"location": "westeurope"})).await.unwrap();
    let groups = f.client.list(&format!("/subscriptions/{SUB}"), "Microsoft.Resources/resourceGroups").await.unwrap();
    assert_eq!(groups.len(), 2);
    assert!(f
        .requests()
        .iter()
        .any(|r| r.path.ends_with("/resourcegroups") && r.api_version.as_deref() == Some("2021-04-01")));

    assert!(f.client.list(&rg("rg"), "Microsoft.Network/natGateways").await.unwrap().is_empty());
    let err = f.client.list(&rg("missing"), "Microsoft.Network/natGateways").await.unwrap_err();
    assert!(
        matches!(&err, CloudError::Rejected { status: 404, code, .. } if code == "ResourceGroupNotFound"),
        "{err:?}"
    );
}

#[tokio::test]
async fn delete_of_a_resource_group_cascades_and_deleting_again_succeeds() {
    let f = Fixture::new(ServerOptions::default()).await;
    f.seed_network().await;
    let subnet = net("rg", "virtualNetworks/vnet/subnets/web");
    // A child first: Azure-AsyncOperation polling.
    f.client.delete(&subnet).await.unwrap();
    assert_eq!(f.client.get(&subnet).await.unwrap(), None);
    f.client.put(&subnet, json!({"properties": {"addressPrefix": "10.0.1.0/24"}})).await.unwrap();

    let mark = f.requests().len();
    f.client.delete(&rg("rg")).await.unwrap();
    let reqs = f.requests()[mark..].to_vec();
    assert_eq!((reqs[0].method.as_str(), reqs[0].status), ("DELETE", 202));
    // A resource group's DELETE is polled through Location: 202 while running, then 204.
    let polls: Vec<u16> = reqs.iter().filter(|r| r.path.contains("/operationResults/")).map(|r| r.status).collect();
    assert_eq!(polls, vec![202, 204]);
    for id in [rg("rg"), net("rg", "virtualNetworks/vnet"), subnet.clone()] {
        assert_eq!(f.client.get(&id).await.unwrap(), None, "{id} is gone");
        assert_eq!(f.sim.get_now(&id), None);
    }
    // ARM answers 204 for what does not exist; the client takes it (and a 404) as done.
    f.client.delete(&rg("rg")).await.unwrap();
    f.client.delete(&subnet).await.unwrap();
    assert!(f.requests().iter().rev().take(2).all(|r| r.method == "DELETE" && matches!(r.status, 204 | 404)));
}

#[tokio::test]
async fn throttling_surfaces_as_throttled_with_retry_after() {
    let f = Fixture::new(ServerOptions::default()).await;
    f.client.put(&rg("rg"), json!({"location": "westeurope"})).await.unwrap();
    f.sim.set_faults(Faults::none().with_rule(FaultRule::once_at(
        Matcher::method("GET"),
        1,
        Fault::Throttle { retry_after: Duration::from_millis(1500) },
    )));
    let err = f.client.get(&rg("rg")).await.unwrap_err();
    assert_eq!(err, CloudError::Throttled { target: rg("rg"), retry_after: Some(Duration::from_millis(1500)) });
    assert!(err.is_transient());
    assert_eq!(f.requests().last().unwrap().status, 429);
    assert_eq!(f.sim.calls().last().unwrap().status, 429);
    // The fault fired once; the next call goes through.
    assert!(f.client.get(&rg("rg")).await.unwrap().is_some());
}

#[tokio::test]
async fn server_errors_and_timeouts_are_transient() {
    let f = Fixture::new(ServerOptions { timeout_stall: Duration::from_secs(5), ..ServerOptions::default() }).await;
    f.client.put(&rg("rg"), json!({"location": "westeurope"})).await.unwrap();
    f.sim.set_faults(Faults::fail_call(1, Fault::ServerError));
    let err = f.client.get(&rg("rg")).await.unwrap_err();
    assert!(
        matches!(&err, CloudError::Server { status: 500, message, .. } if message == "InternalServerError: injected fault"),
        "{err:?}"
    );

    f.sim.set_faults(Faults::fail_call(1, Fault::Timeout));
    let client =
        client_for(&f.server, Arc::new(StaticToken("t".into()))).with_request_timeout(Duration::from_millis(300));
    let err = client.get(&rg("rg")).await.unwrap_err();
    assert_eq!(err, CloudError::Timeout { target: rg("rg") });
}

#[tokio::test]
async fn a_missing_parent_is_rejected_with_the_arm_code() {
    let f = Fixture::new(ServerOptions::default()).await;
    let vnet = json!({"location": "westeurope", "properties": {"addressSpace": {"addressPrefixes": ["10.0.0.0/16"]}}});
    let err = f.client.put(&net("nope", "virtualNetworks/vnet"), vnet).await.unwrap_err();
    assert!(
        matches!(&err, CloudError::Rejected { status: 404, code, .. } if code == "ResourceGroupNotFound"),
        "{err:?}"
    );

    f.client.put(&rg("rg"), json!({"location": "westeurope"})).await.unwrap();
    let subnet = net("rg", "virtualNetworks/missing/subnets/web");
    let err = f.client.put(&subnet, json!({"properties": {"addressPrefix": "10.0.1.0/24"}})).await.unwrap_err();
    match err {
        CloudError::Rejected { target, status, code, message } => {
            assert_eq!((target.as_str(), status, code.as_str()), (subnet.as_str(), 404, "ParentResourceNotFound"));
            assert!(!message.is_empty());
        }
        other => panic!("expected Rejected, got {other:?}"),
    }
    let err = f.client.put(&net("rg", "natGateways/ng"), json!({"properties": {}})).await.unwrap_err();
    assert!(matches!(&err, CloudError::Rejected { status: 400, code, .. } if code == "LocationRequired"), "{err:?}");
    assert!(!err.is_transient());
}

#[tokio::test]
async fn a_failed_operation_keeps_its_error_message() {
    let f = Fixture::new(ServerOptions { async_errors: true, ..ServerOptions::default() }).await;
    f.seed_network().await;
    let nsg = net("rg", "networkSecurityGroups/nsg");
    f.client.put(&nsg, json!({"location": "westeurope", "properties": {"securityRules": []}})).await.unwrap();
    let subnet = net("rg", "virtualNetworks/vnet/subnets/web");
    let body = json!({"properties": {"addressPrefix": "10.0.1.0/24", "networkSecurityGroup": {"id": nsg}}});
    f.client.put(&subnet, body).await.unwrap();
    // The DELETE is accepted (202); its operation fails because a subnet still uses the NSG.
    let err = f.client.delete(&nsg).await.unwrap_err();
    match &err {
        CloudError::Rejected { status: 409, code, message, .. } => {
            assert_eq!(code, "InUseNetworkSecurityGroupCannotBeDeleted");
            assert!(message.contains("web") || message.to_ascii_lowercase().contains("subnet"), "{message}");
        }
        other => panic!("expected Rejected from the failed operation, got {other:?}"),
    }
    assert!(f.requests().iter().any(|r| r.method == "DELETE" && r.status == 202));
    assert!(f.sim.get_now(&nsg).is_some());
}

#[tokio::test]
async fn requests_without_token_or_api_version_are_refused() {
    let f = Fixture::new(ServerOptions { required_token: Some("right".into()), ..ServerOptions::default() }).await;
    let anonymous = client_for(&f.server, Arc::new(StaticToken(String::new())));
    let err = anonymous.get(&rg("rg")).await.unwrap_err();
    assert!(
        matches!(&err, CloudError::Rejected { status: 401, code, .. } if code == "AuthenticationFailed"),
        "{err:?}"
    );
    let wrong = client_for(&f.server, Arc::new(StaticToken("wrong".into())));
    let err = wrong.get(&rg("rg")).await.unwrap_err();
    assert!(
        matches!(&err, CloudError::Rejected { status: 401, code, .. } if code == "InvalidAuthenticationToken"),
        "{err:?}"
    );

    let raw = reqwest::Client::new();
    let resp = raw.get(format!("{}{}", f.server.url(), rg("rg"))).bearer_auth("right").send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 400);
    assert_eq!(resp.headers()["x-ms-error-code"], "MissingApiVersionParameter");
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "MissingApiVersionParameter");
    // Nothing reached the simulator.
    assert!(f.sim.calls().is_empty());
}

#[tokio::test]
async fn client_secret_credential_gets_and_caches_a_token() {
    let opts = ServerOptions {
        required_token: Some("issued-by-sim".into()),
        issued_token: "issued-by-sim".into(),
        client_secret: Some("s3cret".into()),
        ..ServerOptions::default()
    };
    let sim = ArmSim::in_memory(SUB);
    let server = SimServer::with_options(sim, opts).spawn_local().await.unwrap();
    let authority = Url::parse(&server.url()).unwrap();
    let cred = ClientSecretCredential::new("my-tenant", "app-id", "s3cret")
        .unwrap()
        .with_authority(authority.clone())
        .unwrap();
    let client = client_for(&server, Arc::new(cred));
    client.put(&rg("rg"), json!({"location": "westeurope"})).await.unwrap();
    client.get(&rg("rg")).await.unwrap().expect("found");
    client.list(&format!("/subscriptions/{SUB}"), "Microsoft.Resources/resourceGroups").await.unwrap();
    assert_eq!(server.server.tokens_issued(), 1, "the token is cached");
    let token_reqs: Vec<RequestRecord> =
        server.server.requests().into_iter().filter(|r| r.path.ends_with("/oauth2/v2.0/token")).collect();
    assert_eq!(token_reqs.len(), 1);
    assert_eq!((token_reqs[0].path.as_str(), token_reqs[0].method.as_str()), ("/my-tenant/oauth2/v2.0/token", "POST"));

    // A wrong secret: the token endpoint's error, as a rejection of the call.
    let bad =
        ClientSecretCredential::new("my-tenant", "app-id", "wrong").unwrap().with_authority(authority.clone()).unwrap();
    let err = client_for(&server, Arc::new(bad)).get(&rg("rg")).await.unwrap_err();
    match &err {
        CloudError::Rejected { status: 401, code, message, target } => {
            assert_eq!(code, "invalid_client");
            assert!(message.starts_with("AADSTS7000215"), "{message}");
            assert!(target.contains("/my-tenant/oauth2/v2.0/token") && !target.contains("wrong"), "{target}");
        }
        other => panic!("expected Rejected, got {other:?}"),
    }
}

#[tokio::test]
async fn a_short_lived_token_is_fetched_again() {
    let opts = ServerOptions { token_lifetime_secs: 0, ..ServerOptions::default() };
    let server = SimServer::with_options(ArmSim::in_memory(SUB), opts).spawn_local().await.unwrap();
    let cred = EnvCredential::from_vars(|name| {
        Some(match name {
            "AZURE_TENANT_ID" => "t".to_string(),
            "AZURE_CLIENT_ID" => "c".to_string(),
            "AZURE_CLIENT_SECRET" => "s".to_string(),
            "AZURE_AUTHORITY_HOST" => server.url(),
            _ => return None,
        })
    })
    .unwrap();
    assert_eq!(cred.token().await.unwrap(), "sim-access-token");
    cred.token().await.unwrap();
    assert_eq!(server.server.tokens_issued(), 2);
}

#[tokio::test]
async fn regression_list_all_of_a_subscription_pages_and_answers_each_resource_as_its_get() {
    // A fleet's discovery (`trellis_planner::wide::FleetReads`) takes GETs' answers from the
    // subscription's lists: each item must be what a GET of it answers, a VNet with its subnets.
    let f = Fixture::new(ServerOptions { page_size: Some(2), ..ServerOptions::default() }).await;
    f.seed_network().await;
    for group in ["g1", "g2"] {
        f.client.put(&rg(group), json!({"location": "westeurope"})).await.unwrap();
        let vnet =
            json!({"location": "westeurope", "properties": {"addressSpace": {"addressPrefixes": ["10.1.0.0/16"]}}});
        f.client.put(&net(group, "virtualNetworks/v"), vnet).await.unwrap();
        let subnet = json!({"properties": {"addressPrefix": "10.1.1.0/24"}});
        f.client.put(&net(group, "virtualNetworks/v/subnets/s"), subnet).await.unwrap();
    }
    let sub = format!("/subscriptions/{SUB}");
    let mark = f.requests().len();
    let vnets = f.client.list(&sub, "Microsoft.Network/virtualNetworks").await.unwrap();
    assert_eq!(vnets.len(), 3, "every group's VNet: {vnets:#?}");
    assert_eq!(f.requests().len() - mark, 2, "two pages of at most two");
    for vnet in &vnets {
        let id = vnet["id"].as_str().unwrap();
        assert_eq!(Some(vnet), f.client.get(id).await.unwrap().as_ref(), "{id}: listed as its GET answers it");
        assert_eq!(vnet["properties"]["subnets"].as_array().map(Vec::len), Some(1), "subnets inline");
    }
    let groups = f.client.list(&sub, "Microsoft.Resources/resourceGroups").await.unwrap();
    assert_eq!(groups.len(), 3);
    for group in &groups {
        let id = group["id"].as_str().unwrap();
        assert_eq!(Some(group), f.client.get(id).await.unwrap().as_ref(), "{id}");
    }
}
