pub mod ask;
pub mod runs;
pub mod workspace;
