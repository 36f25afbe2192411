//! Azure Resource Manager, simulated: one cloud module on the simulator core.
//!
//! - [`id`](ArmId): ARM ids (case-insensitive, casing kept) and the resource kinds the rules know;
//! - `rules`: what GET, PUT, DELETE and list do to the store, and ARM's error answers;
//! - `defaults`: ARM's defaults and normal forms in a PUT's answer; `default_rules`: the six rules
//!   Azure shows in every NSG (computed on GET); `validate`: the network resource provider's refusals
//!   of a write (security rules, routes, a VNet's address space);
//! - `store`: the resources by lowercased id, with a reverse index of references, read lazily from
//!   the tree; `persist`: that store's sled tree layout (read through writes left to the owner);
//! - `world`: the `azure:` section of world files;
//! - `sim`: ARM's part of the shared call pipeline (`Arm`, a `SimCloud`) and [`crate::ArmSim`]'s
//!   call paths (the bodies behind `CloudRead` / `CloudWrite`);
//! - [`runtime`]: the controllers that write into the cloud after apply (CCM, bastion).

mod default_rules;
mod defaults;
mod id;
pub(crate) mod persist;
pub(crate) mod rules;
pub mod runtime;
mod sim;
pub(crate) mod store;
mod validate;
pub mod world;

pub use id::{canonical_type, ArmId, Kind};
pub(crate) use sim::Arm;
