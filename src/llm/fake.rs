//! A scripted `LanguageModel` for deterministic tests of everything above the engine (the agent
//! loop, the CLI, the app). Each call to `generate` plays the next scripted turn, streamed in the
//! chunks given, with stop strings and token limits applied as the real engine applies them, and
//! records the request so a test can assert what the model was asked.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::engine::{
    GenerateRequest, Generation, GenerationEvent, LanguageModel, LlmError, ModelDescriptor, Prompt,
    SamplingParams, StopReason, Usage,
};
use super::grammar::Grammar;
use super::stream::StopMatcher;
use super::template::{ChatContext, ChatMessage, ChatTemplate, TemplateError};
use super::tokens::estimate_tokens;

/// One scripted model turn.
#[derive(Debug, Clone, PartialEq)]
pub enum FakeTurn {
    /// Text streamed in the given chunks (each chunk counts as one token).
    Chunks(Vec<String>),
    /// The generation fails with this message (an `Error` event, after any chunks).
    Error(String),
}

impl FakeTurn {
    /// Text streamed word by word (whitespace stays attached to the following word).
    pub fn text(text: &str) -> Self {
        let mut chunks = Vec::new();
        let mut cur = String::new();
        for c in text.chars() {
            if c.is_whitespace() && !cur.trim().is_empty() {
                chunks.push(std::mem::take(&mut cur));
            }
            cur.push(c);
        }
        if !cur.is_empty() {
            chunks.push(cur);
        }
        FakeTurn::Chunks(chunks)
    }
}

/// A request as the fake saw it.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// The prompt as text (chat prompts rendered with ChatML).
    pub prompt: String,
    pub stop: Vec<String>,
    pub max_tokens: Option<usize>,
    pub has_grammar: bool,
    /// The grammar as text (GBNF, Lark, or the JSON Schema), for tests to read.
    pub grammar: Option<String>,
    /// The contents a chat prompt marks as data (tokenized without special tokens by a real
    /// model), tool results included.
    pub untrusted: Vec<String>,
    pub sampling: SamplingParams,
}

#[derive(Default)]
struct State {
    turns: VecDeque<FakeTurn>,
    requests: Vec<RecordedRequest>,
    last_prompt: String,
}

/// A model that plays a script. Clones share the script and the record.
#[derive(Clone)]
pub struct FakeModel {
    name: String,
    context_length: usize,
    state: Arc<Mutex<State>>,
    template: Arc<Result<ChatTemplate, TemplateError>>,
    /// How long evaluating each prompt takes before the first token (stopped by a cancel,
    /// as the engine's prefill is).
    prefill: std::time::Duration,
}

impl std::fmt::Debug for FakeModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeModel")
            .field("name", &self.name)
            .finish()
    }
}

impl FakeModel {
    pub fn new(turns: impl IntoIterator<Item = FakeTurn>) -> Self {
        FakeModel {
            name: "fake".into(),
            context_length: 8192,
            state: Arc::new(Mutex::new(State {
                turns: turns.into_iter().collect(),
                ..Default::default()
            })),
            template: Arc::new(ChatTemplate::chatml()),
            prefill: std::time::Duration::ZERO,
        }
    }

    /// Takes `d` to evaluate each prompt before its first token, as a long prompt on a CPU does.
    pub fn with_prefill(mut self, d: std::time::Duration) -> Self {
        self.prefill = d;
        self
    }

    pub fn with_context_length(mut self, n: usize) -> Self {
        self.context_length = n;
        self
    }

    /// Renders chat prompts with this chat template instead of ChatML (which ignores tools).
    pub fn with_template(mut self, source: &str) -> Self {
        self.template = Arc::new(ChatTemplate::new(source));
        self
    }

    pub fn push_turn(&self, turn: FakeTurn) {
        self.lock().turns.push_back(turn);
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.lock().requests.clone()
    }

    pub fn remaining_turns(&self) -> usize {
        self.lock().turns.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn prompt_text(&self, prompt: &Prompt) -> Result<String, LlmError> {
        match prompt {
            Prompt::Text(t) => Ok(t.clone()),
            Prompt::Segments(s) => Ok(s.iter().map(|s| s.text.as_str()).collect()),
            Prompt::Chat {
                messages, tools, ..
            } => self.render_chat(messages, tools.as_deref()),
        }
    }
}

impl LanguageModel for FakeModel {
    fn descriptor(&self) -> ModelDescriptor {
        ModelDescriptor {
            name: self.name.clone(),
            path: None,
            context_length: self.context_length,
            has_chat_template: true,
        }
    }

    fn generate(&self, request: GenerateRequest) -> Result<Generation, LlmError> {
        let started = Instant::now();
        request.sampling.validate()?;
        if let Some(g) = &request.grammar {
            g.validate()?;
        }
        let prompt = self.prompt_text(&request.prompt)?;
        if prompt.is_empty() {
            return Err(LlmError::EmptyPrompt);
        }
        let prompt_tokens = estimate_tokens(&prompt)?;
        if prompt_tokens >= self.context_length {
            return Err(LlmError::ContextFull {
                needed: prompt_tokens + 1,
                available: self.context_length,
            });
        }
        let (turn, cached) = {
            let mut st = self.lock();
            let common: String = st
                .last_prompt
                .chars()
                .zip(prompt.chars())
                .take_while(|(a, b)| a == b)
                .map(|(a, _)| a)
                .collect();
            st.last_prompt = prompt.clone();
            st.requests.push(RecordedRequest {
                prompt: prompt.clone(),
                stop: request.stop.clone(),
                max_tokens: request.max_tokens,
                sampling: request.sampling.clone(),
                has_grammar: request.grammar.is_some(),
                grammar: request.grammar.as_ref().map(|g| match g {
                    Grammar::Gbnf(s) | Grammar::Lark(s) => s.clone(),
                    Grammar::JsonSchema(v) => v.to_string(),
                }),
                untrusted: match &request.prompt {
                    Prompt::Chat {
                        messages,
                        untrusted,
                        ..
                    } => messages
                        .iter()
                        .enumerate()
                        .filter(|(i, m)| m.role == "tool" || untrusted.contains(i))
                        .map(|(_, m)| m.content.clone())
                        .collect(),
                    _ => Vec::new(),
                },
            });
            let turn = st.turns.pop_front().ok_or_else(|| {
                LlmError::Script(format!(
                    "no scripted turn left for request {}",
                    st.requests.len()
                ))
            })?;
            (turn, estimate_tokens(&common)?)
        };
        let setup_ms = started.elapsed().as_secs_f64() * 1000.0;
        let (generation, sink) = Generation::channel();
        let stop = request.stop.clone();
        let max_tokens = request.max_tokens;
        let window = self.context_length;
        let prefill = self.prefill;
        // A thread, like the real engine: events arrive asynchronously and cancellation races
        // with generation the same way.
        std::thread::spawn(move || {
            let mut usage = Usage {
                prompt_tokens,
                cached_tokens: cached,
                setup_ms,
                ..Default::default()
            };
            let mut stops = StopMatcher::new(&stop);
            let (chunks, error) = match turn {
                FakeTurn::Chunks(c) => (c, None),
                FakeTurn::Error(e) => (Vec::new(), Some(e)),
            };
            let mut reason = StopReason::EndOfTurn;
            let evaluated = Instant::now() + prefill;
            while Instant::now() < evaluated && !sink.is_cancelled() {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            for chunk in chunks {
                if sink.is_cancelled() {
                    reason = StopReason::Cancelled;
                    break;
                }
                if usage.generated_tokens == 0 {
                    usage.time_to_first_token_ms = started.elapsed().as_secs_f64() * 1000.0;
                }
                usage.generated_tokens += 1;
                let step = stops.push(&chunk);
                if !step.emit.is_empty() {
                    sink.send(GenerationEvent::Token(step.emit));
                }
                if step.stopped.is_some() {
                    reason = StopReason::StopString;
                    break;
                }
                if max_tokens.is_some_and(|m| usage.generated_tokens >= m) {
                    reason = StopReason::MaxTokens;
                    break;
                }
                // As the engine does when the window fills up mid-reply.
                if prompt_tokens + usage.generated_tokens >= window {
                    reason = StopReason::ContextFull;
                    break;
                }
            }
            if reason != StopReason::StopString {
                let rest = stops.finish();
                if !rest.is_empty() {
                    sink.send(GenerationEvent::Token(rest));
                }
            }
            sink.send(GenerationEvent::Usage(usage));
            match error {
                Some(e) => sink.send(GenerationEvent::Error(LlmError::Script(e))),
                None => sink.send(GenerationEvent::Done(reason)),
            };
        });
        Ok(generation)
    }

    fn count_tokens(&self, text: &str) -> Result<usize, LlmError> {
        estimate_tokens(text)
    }

    fn render_chat(
        &self,
        messages: &[ChatMessage],
        tools: Option<&[serde_json::Value]>,
    ) -> Result<String, LlmError> {
        let template = self.template.as_ref().as_ref().map_err(|e| e.clone())?;
        Ok(template.render(&ChatContext::for_reply(messages, tools, "", ""))?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::engine::GenerateRequest;

    #[test]
    fn plays_turns_in_order_and_records_requests() {
        let fake = FakeModel::new([
            FakeTurn::text("Thought: hi\nAction: x"),
            FakeTurn::text("done"),
        ]);
        let first = fake
            .generate(GenerateRequest::text("prompt one").stop(["\nAction:"]))
            .unwrap()
            .complete()
            .unwrap();
        assert_eq!(first.text, "Thought: hi");
        assert_eq!(first.stop_reason, StopReason::StopString);
        let second = fake
            .generate(GenerateRequest::text("prompt one, two"))
            .unwrap()
            .complete()
            .unwrap();
        assert_eq!(second.text, "done");
        assert!(
            second.usage.cached_tokens > 0,
            "shared prefix is reported as reused"
        );
        let reqs = fake.requests();
        assert_eq!(reqs.len(), 2);
        assert_eq!(reqs[0].stop, vec!["\nAction:".to_string()]);
        let e = fake.generate(GenerateRequest::text("again")).unwrap_err();
        assert!(e.to_string().contains("no scripted turn"), "{e}");
    }

    #[test]
    fn max_tokens_and_errors() {
        let fake = FakeModel::new([
            FakeTurn::Chunks(vec!["a".into(), "b".into(), "c".into()]),
            FakeTurn::Error("boom".into()),
        ]);
        let c = fake
            .generate(GenerateRequest::text("p").max_tokens(2))
            .unwrap()
            .complete()
            .unwrap();
        assert_eq!(
            (c.text.as_str(), c.stop_reason),
            ("ab", StopReason::MaxTokens)
        );
        let e = fake
            .generate(GenerateRequest::text("p"))
            .unwrap()
            .complete()
            .unwrap_err();
        assert!(e.to_string().contains("boom"));
    }

    #[test]
    fn chat_prompts_are_rendered() {
        let fake = FakeModel::new([FakeTurn::text("ok")]);
        fake.generate(GenerateRequest::new(Prompt::chat(vec![ChatMessage::user(
            "hi",
        )])))
        .unwrap()
        .complete()
        .unwrap();
        assert_eq!(
            fake.requests()[0].prompt,
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
        );
    }
}
