//! Tiny HTTP servers on 127.0.0.1 for the real clients' tests (feature `fake`, test support only):
//! a [`Fake`] answers every request with a closure of the request and records what it received; a
//! [`Silent`] accepts connections and never answers. Both stop when dropped.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::net::TcpListener;

/// One request a [`Fake`] received.
#[derive(Clone, Debug)]
pub struct Hit {
    pub method: String,
    /// Path and query, as sent.
    pub uri: String,
    /// Header names lowercased.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Hit {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// The form fields of the body (`application/x-www-form-urlencoded`).
    pub fn form(&self, name: &str) -> Option<String> {
        form_urlencoded::parse(self.body.as_bytes()).find(|(k, _)| k == name).map(|(_, v)| v.into_owned())
    }

    /// A query parameter.
    pub fn query(&self, name: &str) -> Option<String> {
        let query = self.uri.split_once('?').map(|(_, q)| q).unwrap_or("");
        form_urlencoded::parse(query.as_bytes()).find(|(k, _)| k == name).map(|(_, v)| v.into_owned())
    }

    pub fn path(&self) -> &str {
        self.uri.split('?').next().unwrap_or("")
    }

    /// Everything received, as one text (what an echoing server would put in its answer).
    pub fn echo(&self) -> String {
        let headers: Vec<String> = self.headers.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        format!("{} {} | {} | {}", self.method, self.uri, headers.join(", "), self.body)
    }
}

/// An answer: status, headers, body.
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Answer {
    pub fn json(status: u16, body: serde_json::Value) -> Answer {
        Answer { status, headers: vec![("content-type".into(), "application/json".into())], body: body.to_string() }
    }

    pub fn text(status: u16, body: String) -> Answer {
        Answer { status, headers: vec![("content-type".into(), "text/plain".into())], body }
    }

    pub fn redirect(status: u16, location: &str) -> Answer {
        Answer { status, headers: vec![("location".into(), location.to_string())], body: String::new() }
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Answer {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }
}

type Handler = dyn Fn(&Hit) -> Answer + Send + Sync;

#[derive(Clone)]
struct Shared {
    hits: Arc<Mutex<Vec<Hit>>>,
    handler: Arc<Handler>,
}

/// A server on 127.0.0.1 (ephemeral port), stopped when dropped.
pub struct Fake {
    pub port: u16,
    hits: Arc<Mutex<Vec<Hit>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Fake {
    pub async fn start(handler: impl Fn(&Hit) -> Answer + Send + Sync + 'static) -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1");
        let port = listener.local_addr().expect("address").port();
        let shared = Shared { hits: Arc::new(Mutex::new(Vec::new())), handler: Arc::new(handler) };
        let hits = shared.hits.clone();
        let app = Router::new().fallback(handle).with_state(shared);
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Fake { port, hits, task }
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn hits(&self) -> Vec<Hit> {
        self.hits.lock().unwrap().clone()
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn handle(State(s): State<Shared>, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let hit = Hit {
        method: method.to_string(),
        uri: uri.to_string(),
        headers: headers
            .iter()
            .map(|(k, v)| (k.as_str().to_ascii_lowercase(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
            .collect(),
        body: String::from_utf8_lossy(&body).into_owned(),
    };
    s.hits.lock().unwrap().push(hit.clone());
    let answer = (s.handler)(&hit);
    let mut resp = (StatusCode::from_u16(answer.status).unwrap(), answer.body).into_response();
    for (k, v) in answer.headers {
        resp.headers_mut().insert(
            axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            axum::http::HeaderValue::from_str(&v).unwrap(),
        );
    }
    resp
}

/// A server on 127.0.0.1 that accepts connections and never answers (it holds them open).
pub struct Silent {
    pub port: u16,
    accepted: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Silent {
    pub async fn start() -> Silent {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1");
        let port = listener.local_addr().expect("address").port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        let task = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((socket, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                held.push(socket);
            }
        });
        Silent { port, accepted, task }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for Silent {
    fn drop(&mut self) {
        self.task.abort();
    }
}
