//! Serves an in-memory simulated cloud over ARM REST, for trying `trellis --cloud azure` by hand:
//!
//! ```text
//! cargo run -p trellis-sim-http --example serve -- 127.0.0.1:8080 [SUBSCRIPTION]
//! AZURE_TENANT_ID=t AZURE_CLIENT_ID=c AZURE_CLIENT_SECRET=s AZURE_AUTHORITY_HOST=http://127.0.0.1:8080 \
//!   trellis plan -f shoot.yaml --cloud azure --azure-endpoint http://127.0.0.1:8080 --subscription SUBSCRIPTION
//! ```

use trellis_sim::{ArmSim, DEFAULT_SUBSCRIPTION};
use trellis_sim_http::SimServer;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:0".to_string());
    let subscription = args.next().unwrap_or_else(|| DEFAULT_SUBSCRIPTION.to_string());
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    println!("serving the simulated cloud (subscription {subscription}) on http://{}", listener.local_addr()?);
    SimServer::new(ArmSim::in_memory(&subscription)).serve(listener).await
}
