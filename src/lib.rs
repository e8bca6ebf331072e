//! Burrow's core: local language models (`llm`) and, in later modules, the workspace index and
//! the agent. The desktop shell and the CLI are thin layers over this crate.

pub mod config;
pub mod llm;
