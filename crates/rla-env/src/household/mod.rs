//! The household setting: an ALFWorld-compatible text world.
//!
//! - [`game`]: reading ALFWorld's `game.tw-pddl` and `traj_data.json`, and the [`HouseholdGame`]
//!   environment.
//! - [`world`]: the scene, the state, admissible commands, effects and ALFWorld's text.
//! - [`goal`]: goal formulas compiled and evaluated on the state.
//! - [`vocab`]: the kinds, entities and predicates that the world and its goals share.
//! - [`pddl`]: the PDDL reader.
//! - [`trace`]: replaying traces recorded from the real engine.
//! - [`source`]: a task from the generator or from a game folder, opened alike.
//! - [`perturb`] and [`harder`]: a generated task's rewrites, harder or easier.

pub mod data;
pub mod expert;
pub mod game;
pub mod goal;
pub mod harder;
pub mod kinds;
pub mod pddl;
pub mod regame;
pub mod source;
pub mod splits;
pub mod stats;
pub mod task;
pub mod trace;
pub mod vocab;
pub mod world;

pub use expert::{plan, GoalSpec};
pub use game::{GameFile, HouseholdGame, StepResult, TrajData};
pub use source::{GameTask, HouseTask, HouseholdTask};
pub use task::{GoalKind, Room, TaskSpec};
pub use world::{Action, State, World};
pub mod batch;
pub mod perturb;
