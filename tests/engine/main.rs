//! The llama.cpp engine with a real model (SmolLM2-135M-Instruct Q4_1, the tests' model),
//! grouped by area: `generation`, `cache` (KV-cache reuse) and `prompts` (prompts as tokens).

// Shared with the other test files, so it stays one level up rather than beside main.rs.
#[path = "../common/mod.rs"]
mod common;

mod cache;
mod generation;
mod prompts;

use burrow::llm::{ChatMessage, Prompt};

fn chat(user: &str) -> Prompt {
    Prompt::chat(vec![ChatMessage::user(user)])
}
