//! The ReAct agent: the loop that reasons and acts over the tools with a local model.

pub mod grammar;
pub mod prompt;
pub mod protocol;
pub mod record;
pub mod store;
pub mod todo;
