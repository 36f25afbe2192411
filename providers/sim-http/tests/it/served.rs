//! What `trellis sim serve` relies on: writes answered only after the owner's flush
//! ([`flush_before_answer`]), loopback `Host` names only, a bearer token on every GCE call.

use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use trellis_sim::{ArmSim, GceSim, SharedFlush, DEFAULT_SUBSCRIPTION};
use trellis_sim_http::gce::GceServer;
use trellis_sim_http::{both, flush_before_answer, SimServer};

const NETWORKS: &str = "/compute/v1/projects/p/global/networks";

/// Serves both clouds on 127.0.0.1 behind `flush`; the base URL.
async fn serve(flush: SharedFlush) -> (String, tokio::task::JoinHandle<()>) {
    let router = flush_before_answer(
        both(SimServer::new(ArmSim::in_memory(DEFAULT_SUBSCRIPTION)), GceServer::new(GceSim::in_memory())),
        flush,
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    (url, task)
}

fn group(url: &str, name: &str) -> String {
    format!("{url}/subscriptions/{DEFAULT_SUBSCRIPTION}/resourceGroups/{name}?api-version=2021-04-01")
}

async fn send(r: reqwest::RequestBuilder) -> (u16, Value) {
    let resp = r.bearer_auth("t").send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json::<Value>().await.unwrap_or(Value::Null))
}

/// A write is answered after a flush, a read without one; a failed flush is a 500 in the cloud's
/// error shape, not the write's answer.
#[tokio::test]
async fn regression_writes_are_answered_after_the_owners_flush() {
    let flushes = Arc::new(AtomicUsize::new(0));
    let failing = Arc::new(AtomicBool::new(false));
    let (counted, fail) = (Arc::clone(&flushes), Arc::clone(&failing));
    let flush: SharedFlush = Arc::new(move || {
        counted.fetch_add(1, Ordering::SeqCst);
        if fail.load(Ordering::SeqCst) {
            Err("disk full".to_string())
        } else {
            Ok(())
        }
    });
    let (url, task) = serve(flush).await;
    let http = reqwest::Client::new();
    let (status, _) = send(http.put(group(&url, "rg-a")).json(&json!({"location": "westeurope"}))).await;
    assert_eq!((status, flushes.load(Ordering::SeqCst)), (201, 1), "answered after one flush");
    let (status, _) = send(http.get(group(&url, "rg-a"))).await;
    assert_eq!((status, flushes.load(Ordering::SeqCst)), (200, 1), "a read waits for no flush");

    failing.store(true, Ordering::SeqCst);
    let (status, err) = send(http.put(group(&url, "rg-b")).json(&json!({"location": "westeurope"}))).await;
    assert_eq!(status, 500, "{err}");
    assert_eq!(err["error"]["code"], "InternalServerError");
    let message = err["error"]["message"].as_str().unwrap();
    assert!(message.contains("could not make the write durable: disk full") && !message.contains('\n'), "{message}");
    let (status, err) = send(http.post(format!("{url}{NETWORKS}")).json(&json!({"name": "vpc-a"}))).await;
    assert_eq!((status, err["error"]["code"].as_u64()), (500, Some(500)), "GCE's error shape: {err}");
    assert_eq!(err["error"]["errors"][0]["reason"], "backendError");
    task.abort();
}

/// Serves both clouds on 127.0.0.1 as `trellis sim serve` does, over in-memory simulators.
async fn serve_both() -> (String, ArmSim, tokio::task::JoinHandle<()>) {
    let arm = ArmSim::in_memory(DEFAULT_SUBSCRIPTION);
    let flush: SharedFlush = Arc::new(|| Ok(()));
    let router = flush_before_answer(both(SimServer::new(arm.clone()), GceServer::new(GceSim::in_memory())), flush);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    (url, arm, task)
}

/// Found in the hardening review: the emulator answered any `Host` and built the operation URLs it
/// hands out from it (`Azure-AsyncOperation: http://attacker.example/…`), so a web page whose name
/// was rebound to 127.0.0.1 could drive it (DNS rebinding). Only loopback names are answered; any
/// other is 421 with a one-line error in the cloud's shape, and nothing is written.
#[tokio::test]
async fn regression_a_request_for_another_host_is_misdirected() {
    let (url, arm, task) = serve_both().await;
    let port = url.rsplit(':').next().unwrap().to_string();
    let http = reqwest::Client::new();
    let body = json!({"location": "westeurope"});
    for host in ["attacker.example", &format!("attacker.example:{port}"), "127.0.0.1.nip.io", "localhost.attacker"] {
        let resp =
            http.put(group(&url, "rg-x")).header("host", host).bearer_auth("t").json(&body).send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 421, "{host}");
        let text = resp.text().await.unwrap();
        assert!(!text.contains('\n'), "one line: {text}");
        let err: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(err["error"]["code"], "MisdirectedRequest", "ARM's error shape: {err}");
        assert!(err["error"]["message"].as_str().unwrap().contains(host), "names the host: {err}");
        let resp = http.get(format!("{url}{NETWORKS}")).header("host", host).bearer_auth("t").send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 421, "{host}");
        let err: Value = resp.json().await.unwrap();
        assert_eq!(err["error"]["code"], 421, "GCE's error shape: {err}");
    }
    assert!(arm.get_now(&format!("/subscriptions/{DEFAULT_SUBSCRIPTION}/resourceGroups/rg-x")).is_none());

    // Loopback names are answered, and the operation URLs are theirs.
    for host in [format!("localhost:{port}"), format!("127.0.0.2:{port}"), format!("[::1]:{port}"), "localhost".into()]
    {
        let resp =
            http.put(group(&url, "rg-ok")).header("host", &host).bearer_auth("t").json(&body).send().await.unwrap();
        assert!(resp.status().is_success(), "{host}: {}", resp.status());
    }
    let vnet = format!(
        "{url}/subscriptions/{DEFAULT_SUBSCRIPTION}/resourceGroups/rg-ok/providers/Microsoft.Network/virtualNetworks/v?api-version=2024-05-01"
    );
    let vnet_body =
        json!({"location": "westeurope", "properties": {"addressSpace": {"addressPrefixes": ["10.0.0.0/16"]}}});
    let resp = http
        .put(vnet)
        .header("host", format!("localhost:{port}"))
        .bearer_auth("t")
        .json(&vnet_body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 201);
    let op = resp.headers()["azure-asyncoperation"].to_str().unwrap();
    assert!(op.starts_with(&format!("http://localhost:{port}/")), "{op}");
    task.abort();
}

/// Found in the hardening review: the GCE side answered calls without a token (the ARM side needs
/// `Authorization: Bearer …`). Every compute and IAM call needs one; the token endpoint, which is
/// how a client gets one, needs none.
#[tokio::test]
async fn regression_gce_calls_need_a_bearer_token() {
    let (url, _, task) = serve_both().await;
    let http = reqwest::Client::new();
    let sa = json!({"accountId": "shoot-sa", "serviceAccount": {"displayName": "x"}});
    let calls = [
        http.get(format!("{url}{NETWORKS}")),
        http.get(format!("{url}{NETWORKS}/vpc-a")),
        http.post(format!("{url}{NETWORKS}")).json(&json!({"name": "vpc-a"})),
        http.get(format!("{url}/compute/v1/projects/p/global/operations/op-1")),
        http.post(format!("{url}/v1/projects/p/serviceAccounts")).json(&sa),
    ];
    for call in calls {
        let resp = call.send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 401);
        assert!(resp.headers().contains_key("www-authenticate"));
        let err: Value = resp.json().await.unwrap();
        assert_eq!(err["error"]["status"], "UNAUTHENTICATED", "{err}");
    }
    let resp = http.get(format!("{url}{NETWORKS}")).header("authorization", "Bearer ").send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 401, "an empty token");
    let form = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=h.p.s";
    let resp = http
        .post(format!("{url}/token"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200, "the token endpoint needs no token");
    let token: Value = resp.json().await.unwrap();
    let token = token["access_token"].as_str().unwrap();
    let (status, _) = send_as(http.post(format!("{url}{NETWORKS}")).json(&json!({"name": "vpc-a"})), token).await;
    assert_eq!(status, 200);
    let (status, page) = send_as(http.get(format!("{url}{NETWORKS}")), token).await;
    assert_eq!((status, page["items"][0]["name"].as_str()), (200, Some("vpc-a")));
    task.abort();
}

async fn send_as(r: reqwest::RequestBuilder, token: &str) -> (u16, Value) {
    let resp = r.bearer_auth(token).send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json::<Value>().await.unwrap_or(Value::Null))
}
