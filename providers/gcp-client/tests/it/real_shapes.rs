//! Real GCE's shapes where the simulator differs: networks, routers and firewalls carry no
//! `fingerprint` on GCE (only subnetworks do), so the client must not send one for them. A small
//! stub server stands in for GCE here and records what the client sends.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{Method, Uri};
use axum::response::IntoResponse;
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use trellis_gcp_client::{Credentials, GcpClient, Url};
use trellis_planner::cloud::{CloudWrite, Precondition};

type Patches = Arc<Mutex<Vec<(String, Value)>>>;

async fn stub(State(patches): State<Patches>, method: Method, uri: Uri, body: Bytes) -> axum::response::Response {
    let path = uri.path().to_string();
    let op = json!({"kind": "compute#operation", "name": "op-1", "status": "DONE"});
    let answer = match (method, path.as_str()) {
        (Method::GET, "/compute/v1/projects/p/global/firewalls/fw") => {
            json!({"kind": "compute#firewall", "name": "fw", "selfLink": "https://www.googleapis.com/compute/v1/projects/p/global/firewalls/fw", "network": "global/networks/vpc", "sourceRanges": ["10.0.0.0/8"]})
        }
        (Method::GET, "/compute/v1/projects/p/regions/r/routers/rtr") => {
            json!({"kind": "compute#router", "name": "rtr", "selfLink": "https://www.googleapis.com/compute/v1/projects/p/regions/r/routers/rtr", "network": "global/networks/vpc", "nats": []})
        }
        (Method::GET, "/compute/v1/projects/p/regions/r/subnetworks/s") => {
            json!({"kind": "compute#subnetwork", "name": "s", "selfLink": "https://www.googleapis.com/compute/v1/projects/p/regions/r/subnetworks/s", "fingerprint": "q1w2e3r4t5Y=", "ipCidrRange": "10.0.0.0/24"})
        }
        // Someone changed the subnet between our GET and our PATCH.
        (Method::PATCH, "/compute/v1/projects/p/regions/r/subnetworks/s") => {
            let error = json!({"error": {"code": 412, "message": "Supplied fingerprint does not match current metadata fingerprint.",
                "errors": [{"reason": "conditionNotMet", "message": "Supplied fingerprint does not match current metadata fingerprint."}]}});
            return (
                axum::http::StatusCode::PRECONDITION_FAILED,
                [(axum::http::header::CONTENT_TYPE, "application/json")],
                error.to_string(),
            )
                .into_response();
        }
        (Method::PATCH, _) => {
            patches.lock().unwrap().push((path, serde_json::from_slice(&body).unwrap_or(Value::Null)));
            op
        }
        (Method::GET, p) if p.contains("/operations/") => op,
        _ => return (axum::http::StatusCode::NOT_FOUND, "{}").into_response(),
    };
    ([(axum::http::header::CONTENT_TYPE, "application/json")], answer.to_string()).into_response()
}

#[tokio::test]
async fn regression_no_fingerprint_is_sent_for_a_resource_that_has_none() {
    let patches: Patches = Arc::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = Url::parse(&format!("http://{}", listener.local_addr().unwrap())).unwrap();
    let app = axum::Router::new().fallback(stub).with_state(patches.clone());
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let c = GcpClient::new("p", Some(url), Credentials::Anonymous).await.unwrap();

    c.update("projects/p/global/firewalls/fw", json!({"sourceRanges": ["10.1.0.0/16"]}), &Precondition::None)
        .await
        .unwrap();
    // The stub's router never shows the NAT, so the read back after the patch fails; the patch is
    // what this test looks at.
    c.create("projects/p/regions/r/routers/rtr/nats/nat", json!({"natIpAllocateOption": "AUTO_ONLY"}))
        .await
        .unwrap_err();
    let sent = patches.lock().unwrap().clone();
    assert_eq!(sent.len(), 2, "{sent:?}");
    for (path, body) in &sent {
        assert!(body.get("fingerprint").is_none(), "{path}: GCE has no fingerprint here, none is sent: {body}");
    }
    assert_eq!(sent[1].1["nats"][0]["name"], "nat");
    server.abort();
}

#[tokio::test]
async fn a_412_from_gce_on_a_patch_is_a_precondition_failure() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = Url::parse(&format!("http://{}", listener.local_addr().unwrap())).unwrap();
    let app = axum::Router::new().fallback(stub).with_state(Patches::default());
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let c = GcpClient::new("p", Some(url), Credentials::Anonymous).await.unwrap();
    let pre = Precondition::IfMatch("q1w2e3r4t5Y=".into());
    let e = c.update("projects/p/regions/r/subnetworks/s", json!({"description": "x"}), &pre).await.unwrap_err();
    assert!(
        matches!(&e, trellis_planner::cloud::CloudError::PreconditionFailed { expected, .. } if expected == "q1w2e3r4t5Y="),
        "{e:?}"
    );
    server.abort();
}
