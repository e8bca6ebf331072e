//! A prompt as tokens: each segment tokenized on its own, special tokens parsed only in trusted
//! ones, and the part that continues what the KV cache holds kept as the cache has it.

use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;

use super::LoadedModel;
use crate::llm::engine::{LlmError, Prompt, PromptSegment};
use crate::llm::llama::worker::LastSequence;
use crate::llm::llama::{lock, MAX_PROMPT_BYTES};

impl LoadedModel {
    pub(super) fn tokenize(
        &self,
        model: &LlamaModel,
        segments: &[PromptSegment],
    ) -> Result<Vec<LlamaToken>, LlmError> {
        self.check_size(segments)?;
        Ok(append_tokens(model, Vec::new(), segments))
    }

    fn check_size(&self, segments: &[PromptSegment]) -> Result<(), LlmError> {
        let total: usize = segments.iter().map(|s| s.text.len()).sum();
        if total > MAX_PROMPT_BYTES {
            return Err(LlmError::ContextFull {
                needed: total / 4,
                available: self.options.context_size as usize,
            });
        }
        Ok(())
    }

    /// Tokenizes a prompt for generation: where it continues the sequence the KV cache holds
    /// through what the model wrote (the last prompt, then its reply replayed), that part keeps
    /// the cached tokens, the generated ones as sampled, and only the rest is tokenized. A
    /// prompt that only extends the last prompt's text is tokenized whole, as it would be
    /// alone, and the cache reuses the tokens it shares: spliced at the old prompt's end, a
    /// prompt extending it mid-word ("… of Fr" then "… of France is") was split there, and the
    /// same greedy request answered otherwise than it did alone.
    pub(super) fn tokenize_after_last(
        &self,
        model: &LlamaModel,
        segments: &[PromptSegment],
    ) -> Result<Vec<LlamaToken>, LlmError> {
        let reuse = lock(&self.last)
            .as_ref()
            .and_then(|last| continuation(last, segments).map(|(n, rest)| (last, n, rest)))
            .filter(|(_, n, _)| *n > 0)
            .map(|(last, n, rest)| {
                let mut tokens = last.prompt.clone();
                tokens.extend(last.generated[..n].iter().map(|(t, _)| *t));
                (tokens, rest)
            });
        self.check_size(segments)?;
        Ok(match reuse {
            Some((prefix, rest)) => append_tokens(model, prefix, &rest),
            None => append_tokens(model, Vec::new(), segments),
        })
    }

    pub(super) fn segments(&self, prompt: &Prompt) -> Result<Vec<PromptSegment>, LlmError> {
        match prompt {
            Prompt::Text(t) => Ok(vec![PromptSegment {
                text: t.clone(),
                trusted: true,
            }]),
            Prompt::Segments(s) => Ok(s.clone()),
            Prompt::Chat {
                messages,
                tools,
                untrusted,
            } => self.chat_segments(messages, tools.as_deref(), untrusted),
        }
    }

    /// The tokens a prompt becomes (for inspection and tests).
    pub fn prompt_tokens(&self, prompt: &Prompt) -> Result<Vec<i32>, LlmError> {
        let model = self.llama_model()?;
        let segments = self.segments(prompt)?;
        Ok(self
            .tokenize(&model, &segments)?
            .into_iter()
            .map(|t| t.0)
            .collect())
    }

    /// The id of a special token given by its text (`<|im_end|>`), if the vocabulary has one.
    pub fn special_token_id(&self, text: &str) -> Option<i32> {
        let model = self.llama_model().ok()?;
        match model
            .vocab()
            .tokenize(text.as_bytes(), false, true)
            .as_slice()
        {
            [one] => Some(one.0),
            _ => None,
        }
    }
}

/// Appends the tokens of `segments` to `tokens` (the prompt so far), each segment tokenized on
/// its own, with special tokens parsed only in trusted ones; a prompt that starts here gets the
/// model's BOS.
fn append_tokens(
    model: &LlamaModel,
    mut tokens: Vec<LlamaToken>,
    segments: &[PromptSegment],
) -> Vec<LlamaToken> {
    let vocab = model.vocab();
    for seg in segments.iter().filter(|s| !s.text.is_empty()) {
        vocab.tokenize_into(seg.text.as_bytes(), &mut tokens, false, seg.trusted);
    }
    if vocab.should_add_bos() && tokens.first() != Some(&vocab.bos()) {
        tokens.insert(0, vocab.bos());
    }
    tokens
}

/// Whether `segments` continue `last`: the same segments up to the last one, which extends the
/// last one with the same trust. Returns how many of the generated tokens the continuation
/// spells out (each within one segment, as separate tokenization of segments would have it,
/// and ending on a character boundary), and the segments that remain to be tokenized.
/// Control tokens have no text in `generated` and so end the match: the model's own
/// end-of-turn is the template's to write.
fn continuation(
    last: &LastSequence,
    segments: &[PromptSegment],
) -> Option<(usize, Vec<PromptSegment>)> {
    let n = last.segments.len();
    if n == 0 || segments.len() < n || last.segments[..n - 1] != segments[..n - 1] {
        return None;
    }
    let (old, new) = (&last.segments[n - 1], &segments[n - 1]);
    if old.trusted != new.trusted || !new.text.starts_with(&old.text) {
        return None;
    }
    let (mut seg, mut off) = (n - 1, old.text.len());
    // Where each matched token ended, to back off to a character boundary.
    let mut ends: Vec<(usize, usize)> = Vec::new();
    for (_, piece) in &last.generated {
        while seg < segments.len() && off == segments[seg].text.len() {
            seg += 1;
            off = 0;
        }
        let Some(s) = segments.get(seg) else { break };
        if piece.is_empty() || !s.text.as_bytes()[off..].starts_with(piece) {
            break;
        }
        off += piece.len();
        ends.push((seg, off));
    }
    while let Some(&(s, o)) = ends.last() {
        if segments[s].text.is_char_boundary(o) {
            break;
        }
        ends.pop();
    }
    let (seg, off) = ends.last().copied().unwrap_or((n - 1, old.text.len()));
    let mut rest = vec![PromptSegment {
        text: segments[seg].text[off..].to_string(),
        trusted: segments[seg].trusted,
    }];
    rest.extend(segments[seg + 1..].iter().cloned());
    Some((ends.len(), rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(text: &str, trusted: bool) -> PromptSegment {
        PromptSegment {
            text: text.into(),
            trusted,
        }
    }

    fn last(segments: Vec<PromptSegment>, pieces: &[&[u8]]) -> LastSequence {
        LastSequence {
            segments,
            prompt: vec![LlamaToken(1), LlamaToken(2)],
            generated: pieces
                .iter()
                .enumerate()
                .map(|(i, p)| (LlamaToken(100 + i as i32), p.to_vec()))
                .collect(),
        }
    }

    #[test]
    fn a_prompt_that_replays_the_output_continues_through_the_generated_tokens() {
        let l = last(
            vec![seg("sys", true), seg("<a>", true)],
            &[b"{", b"\"x", b"\":1}", b"\n", b"Obs"],
        );
        // The output is replayed up to the stop string the model went on to write.
        let new = vec![
            seg("sys", true),
            seg("<a>{\"x\":1}<e><u>", true),
            seg("data", false),
            seg("<e>", true),
        ];
        let (n, rest) = continuation(&l, &new).unwrap();
        assert_eq!(n, 3);
        assert_eq!(
            rest,
            vec![seg("<e><u>", true), seg("data", false), seg("<e>", true)]
        );
        // Into the next segment, one whole token at a time.
        let l = last(vec![seg("a", true)], &[b"x", b"y", b"zz"]);
        let (n, rest) = continuation(&l, &[seg("a", true), seg("xyz", false)]).unwrap();
        assert_eq!((n, rest), (2, vec![seg("z", false)]));
    }

    #[test]
    fn a_prompt_that_does_not_continue_the_cache_is_tokenized_anew() {
        let l = last(vec![seg("sys", true), seg("<a>", true)], &[b"x"]);
        assert_eq!(
            continuation(&l, &[seg("SYS", true), seg("<a>x", true)]),
            None
        );
        assert_eq!(
            continuation(&l, &[seg("sys", true), seg("<a>x", false)]),
            None
        );
        assert_eq!(
            continuation(&l, &[seg("sys", true), seg("<b>x", true)]),
            None
        );
        assert_eq!(continuation(&l, &[seg("sys", true)]), None);
        // The same prefix, other text after it: nothing generated is reused.
        let (n, rest) = continuation(&l, &[seg("sys", true), seg("<a>y", true)]).unwrap();
        assert_eq!((n, rest), (0, vec![seg("y", true)]));
    }

    #[test]
    fn the_reused_tokens_end_on_a_character_and_before_a_control_token() {
        // "é" is two bytes; a token may hold one of them.
        let l = last(vec![seg("a", true)], &[b"\xc3", b"\xa9", b"!"]);
        let (n, _) = continuation(&l, &[seg("aé!", true)]).unwrap();
        assert_eq!(n, 3);
        let (n, rest) = continuation(&l, &[seg("aé?", true)]).unwrap();
        assert_eq!((n, rest), (2, vec![seg("?", true)]));
        let l = last(vec![seg("a", true)], &[b"\xc3", b"x"]);
        let (n, rest) = continuation(&l, &[seg("aé", true)]).unwrap();
        assert_eq!((n, rest), (0, vec![seg("é", true)]));
        // A control token has no text: the match ends there.
        let l = last(vec![seg("a", true)], &[b"x", b"", b"y"]);
        let (n, rest) = continuation(&l, &[seg("axy", true)]).unwrap();
        assert_eq!((n, rest), (1, vec![seg("y", true)]));
    }
}
