//! The ReAct loop, driven by a scripted model whose turns are given in each test (and
//! whose requests are counted and read), over small tools built here.
//!
//! By area: `answers` (searching first, citations), `routes` (the model's first call), `steps`
//! (what the model writes), `tools` (calling them), `plans` (the TODO plan),
//! `context` (the prompt as the run grows) and `runs` (how runs end, are kept and measured);
//! `support` holds what they share.

mod answers;
mod context;
mod plans;
mod routes;
mod runs;
mod steps;
mod support;
mod tools;
