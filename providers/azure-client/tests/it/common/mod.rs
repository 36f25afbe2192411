//! The fake servers of the credential and hardening tests: trellis-http's (feature `fake`), shared
//! with the GCP client's tests; and what Entra ID answers.

#![allow(dead_code, unused_imports)]

pub use trellis_http::fake::*;

/// A successful Entra ID token answer.
pub fn token_answer(token: &str, lifetime_secs: u64) -> Answer {
    Answer::json(
        200,
        serde_json::json!({"token_type": "Bearer", "expires_in": lifetime_secs, "ext_expires_in": lifetime_secs,
            "access_token": token}),
    )
}
