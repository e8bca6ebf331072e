//! Token counting without a local model (remote backends, budgeting before a model is loaded):
//! an estimate with OpenAI's cl100k_base encoding. With a model loaded, use its own tokenizer
//! (`LanguageModel::count_tokens`), which is exact.

use std::sync::OnceLock;

use tiktoken_rs::CoreBPE;

use super::engine::LlmError;

fn encoder() -> Result<&'static CoreBPE, LlmError> {
    static BPE: OnceLock<Result<CoreBPE, String>> = OnceLock::new();
    BPE.get_or_init(|| tiktoken_rs::cl100k_base().map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|e| LlmError::Worker(format!("tiktoken: {e}")))
}

/// Estimated token count of `text` (special-token markup counts as plain text).
pub fn estimate_tokens(text: &str) -> Result<usize, LlmError> {
    Ok(encoder()?.encode_ordinary(text).len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates_are_tokens_not_bytes() {
        assert_eq!(estimate_tokens("").unwrap(), 0);
        assert_eq!(estimate_tokens("hello world").unwrap(), 2);
        let long = "the quick brown fox ".repeat(50);
        let n = estimate_tokens(&long).unwrap();
        assert!((150..=250).contains(&n), "{n}");
        // Markup is not parsed as a special token.
        assert!(estimate_tokens("<|endoftext|>").unwrap() > 1);
    }
}
