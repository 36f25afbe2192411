//! `Credentials::FromEnv`: the key file named by GOOGLE_APPLICATION_CREDENTIALS. One test in its own
//! binary, because it changes the process environment.

use serde_json::json;
use std::path::PathBuf;
use trellis_gcp_client::{Credentials, GcpClient, GcpClientError, Url, CREDENTIALS_ENV};
use trellis_planner::cloud::{CloudRead, CloudWrite};
use trellis_sim::GceSim;
use trellis_sim_http::gce::GceServer;

#[tokio::test]
async fn the_key_file_comes_from_google_application_credentials() {
    let srv = GceServer::new(GceSim::in_memory()).spawn_local().await.unwrap();
    let url = || Some(Url::parse(&srv.url()).unwrap());
    std::env::remove_var(CREDENTIALS_ENV);
    let e = GcpClient::new("p", url(), Credentials::FromEnv).await.unwrap_err();
    assert!(matches!(e, GcpClientError::NoCredentials), "{e}");
    assert!(e.to_string().contains(CREDENTIALS_ENV), "{e}");

    let key = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/throwaway-service-account.json");
    std::env::set_var(CREDENTIALS_ENV, &key);
    let c = GcpClient::new("p", url(), Credentials::FromEnv).await.unwrap();
    c.create("projects/p/global/networks/vpc-a", json!({"autoCreateSubnetworks": false})).await.unwrap();
    assert!(c.get("projects/p/global/networks/vpc-a").await.unwrap().is_some());
    assert!(srv.server.authorizations().iter().all(|a| a.starts_with("Bearer ")));
}
