//! Azure Resource Manager, simulated: one cloud module on the simulator core.
//!
//! - [`id`](ArmId): ARM ids (case-insensitive, casing kept) and the resource kinds the rules know;
//! - `rules`: what GET, PUT, DELETE and list do to the store, and ARM's error answers;
//! - `defaults`: ARM's defaults and normal forms in a PUT's answer;
//! - `world`: the `azure:` section of world files;
//! - `sim`: [`crate::ArmSim`]'s ARM call paths (the bodies behind `CloudRead` / `CloudWrite`);
//! - [`runtime`]: the controllers that write into the cloud after apply (CCM, bastion).

mod defaults;
mod id;
pub(crate) mod rules;
pub mod runtime;
mod sim;
pub(crate) mod world;

pub use id::{canonical_type, ArmId, Kind};
pub(crate) use sim::Arm;
