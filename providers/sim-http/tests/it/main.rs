//! The integration tests of trellis-sim-http in one binary (one link instead of one per file).

mod arm_dns;
mod arm_http;
mod clouddns_http;
mod gce_http;
mod served;
