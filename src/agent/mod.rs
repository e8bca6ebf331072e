//! The ReAct agent: the loop that reasons and acts over the tools with a local model.

pub mod bench;
pub mod grammar;
pub mod hooks;
pub mod meta;
pub mod prompt;
pub mod protocol;
pub mod record;
pub mod run;
pub mod store;
pub mod todo;

pub use run::{Agent, AgentConfig, AgentError, AgentEvent, RunOutcome};
