//! llguidance's C API (its `#[no_mangle]` functions), bundled into one static library.
pub use llguidance::*;
