//! The ReAct agent: the loop that reasons and acts over the tools with a local model.
//!
//! - `run.rs`: the `Agent` and its loop; `step.rs`: one step, from prompt to what the model
//!   decided; `route.rs`: the model's first call, chosen under a grammar of the workspace's
//!   own values; `first.rs`: the search Burrow makes with the task, and its leading matches
//!   opened; `decision.rs`: a final answer or a call carried out, and the step recorded;
//!   `dispatch.rs`: the loop guard, the meta-tools and tool retries; `context.rs`: the prompt's
//!   messages and the summaries that fold older steps; `state.rs`: what a run carries from step
//!   to step; `config.rs`, `events.rs`: how a run behaves, what it reports, how it fails.
//! - `protocol/` (the ReAct dialects and their parsers), `grammar/` (each step's
//!   grammar), `prompt.rs` (the prompt template), `meta.rs` (the tools the loop answers
//!   itself), `toolbelt.rs` (the tools a run starts with), `todo/` (the plan), `hooks.rs`, `record.rs` and `store.rs` (runs as data, and
//!   where they are kept), `bench.rs` (`burrow bench --agent`).

pub mod bench;
pub mod config;
mod context;
mod decision;
mod dispatch;
pub mod events;
pub mod first;
mod follow;
pub mod grammar;
mod ground;
pub mod hooks;
pub mod meta;
pub mod prompt;
pub mod protocol;
pub mod record;
mod route;
pub mod run;
mod state;
mod step;
pub mod store;
pub mod todo;
mod toolbelt;

pub use config::{AgentConfig, Clock, SystemClock};
pub use events::{AgentError, AgentEvent, RunOutcome};
pub use run::Agent;
pub use store::RunStore;
