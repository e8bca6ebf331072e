//! The `burrow` command line: one module per command, each a shell over the core (`src/app`
//! and the library), printing what it returns.

pub mod ask;
pub mod bench;
pub mod chat;
pub mod eval;
pub mod models;
pub mod runs;
pub mod template;
pub mod workspace;
