//! Plan, apply and destroy over a fleet of shoots, one direction: manifests → per shoot: workspace from
//! state → provider plan (validate, discover, pre-flight, desired, diff, artifacts) → fleet-wide checks
//! → apply: lock, executor, state committed after every node, artifacts re-rendered from the cloud as
//! it is afterwards. Everything is re-exported here (`ops::plan_files`, `ops::apply`, …).
//!
//! - [`session`]: `Session` (state + the simulated cloud of every binding of its registry, and the
//!   cloud each provider's shoots talk to), `Clouds`.
//! - [`inputs`]: `ShootInput` (loaded Shoots and derived inputs), `ShootPlan`, listing manifest files.
//! - [`fleet`]: the fleet planner (`plan_fleet_streaming`, `plan_files`, `plan_fleet`, `plan_one`) and
//!   the fleet-wide checks.
//! - [`saved`]: `apply PLAN` — re-planning a saved plan's manifests and comparing.
//! - [`apply`](mod@apply): the executor over a fleet's plans and the workspace commits after every node.
//! - [`errors`]: errors that are lists (`FleetError`, `Lines`, `list_lines`).
//! - [`targeting`]: `--target` and `--replace` (`Targeting`, the per-shoot selection).
//! - [`export`]: `trellis world export` — the fleet planned through recording real clients, each
//!   binding's world-file section of what they read.

pub mod apply;
pub mod errors;
pub mod export;
pub mod fleet;
pub mod inputs;
pub mod saved;
pub mod session;
pub mod targeting;

pub use apply::*;
pub use errors::*;
pub use export::*;
pub use fleet::*;
pub use inputs::*;
pub use saved::*;
pub use session::*;
pub use targeting::{Matched, Targeting};
