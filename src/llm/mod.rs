//! Language models: GGUF files, chat templates, grammars, and inference with llama.cpp.

pub mod arch;
pub mod bench;
pub mod convert;
pub mod embed;
pub mod engine;
// A scripted model for tests, here and in the shells' tests: not part of the product.
#[cfg(any(test, feature = "testing"))]
pub mod fake;
pub mod gguf;
pub mod grammar;
pub mod library;
pub mod llama;
mod llama_log;
pub mod memory;
pub mod remote;
pub mod stream;
pub mod template;
pub mod tokens;

pub use engine::{
    CancelToken, Completion, GenerateRequest, Generation, GenerationEvent, LanguageModel, LlmError,
    ModelDescriptor, PreparedPrompt, Prompt, PromptSegment, SamplingParams, StopReason, Usage,
    WarmStart,
};
pub use grammar::Grammar;
pub use llama::{LlamaEngine, LoadEvent, LoadOptions, LoadState, LoadedModel};
pub use template::{ChatMessage, ChatTemplate};

/// `msg` followed by the causes of `e`, each after ": ", for errors whose `Display` leaves
/// their sources out (minijinja's, reqwest's).
pub(crate) fn with_causes(mut msg: String, e: &dyn std::error::Error) -> String {
    let mut source = e.source();
    while let Some(s) = source {
        msg.push_str(": ");
        msg.push_str(&s.to_string());
        source = s.source();
    }
    msg
}
