//! What `trellis sim serve` adds around the servers: writes answered only after the owner's flush
//! ([`flush_before_answer`]).

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
