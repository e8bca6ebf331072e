pub mod runs;
pub mod workspace;
