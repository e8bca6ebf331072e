//! Burrow's core: local language models (`llm`), the workspace index of the user's repositories
//! and issues (`workspace`), and the tools the agent uses over it (`tools`). The desktop shell and
//! the CLI are thin layers over this crate.

pub mod agent;
pub mod app;
pub mod config;
#[doc(hidden)]
pub mod fuzz;
pub mod llm;
pub mod notes;
pub mod safe_open;
pub mod tools;
pub mod workspace;
