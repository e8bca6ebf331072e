//! One step: the prompt (older steps folded past the threshold), the model's output decoded
//! under the protocol's grammar, read by the protocol's parser, and what it decided handed to
//! `decision.rs`. A model's mistake becomes the step's observation; only Burrow's own failures
//! are errors.

use std::time::Instant;

use super::decision::CallShape;
use super::events::{AgentError, AgentEvent};
use super::grammar::{answer_room, step_grammar, StepShape};
use super::meta;
use super::protocol::{Decision, Step, ThoughtStream};
use super::record::StepRecord;
use super::run::{Agent, Next};
use super::state::RunState;
use crate::llm::engine::{CancelToken, GenerateRequest, LlmError, Prompt, StopReason, Usage};
use crate::tools::{Locator, ToolSpec};

impl Agent<'_> {
    pub(super) fn step(
        &self,
        state: &mut RunState,
        cancel: &CancelToken,
        on_event: &mut dyn FnMut(AgentEvent),
    ) -> Result<Next, AgentError> {
        let index = state.steps.len();
        on_event(AgentEvent::StepStarted { index });
        let specs = self.visible_specs(state);
        self.warm_start(state, &specs)?;
        let (prompt, prompt_tokens) = self.step_prompt(state, &specs, cancel, on_event)?;
        if let Some(reason) = self
            .hooks
            .stop_reason(|h| h.before_model(&self.hook_context(state)))
        {
            return Ok(Next::stopped_by_hook(reason));
        }
        // The run's last step answers: under the grammar it can be nothing else, so a run
        // that reaches its limit ends with an answer from what it saw, not with none (as
        // smolagents asks the model for one when it runs out of steps).
        // After a check the model said yes to, or Burrow's opening of a match in a run that
        // checks none, the step is its answer, citing that item.
        let confirmed = Self::confirmed(state)
            .or_else(|| self.answered_unchecked(state))
            .cloned();
        let last =
            index + 1 >= state.max_steps || confirmed.is_some() || Self::routed_answer_due(state);
        let allow_final = index + 1 >= self.config.min_steps || last;
        let quotes = if self.quote_answers {
            state.quotable()
        } else {
            Vec::new()
        };
        let cites: Vec<String> = match &confirmed {
            Some(item) => vec![item.cite()],
            None => quoted_or_seen(state, quotes.first()),
        };
        let made = state.calls_made();
        let openable = state.openable();
        let shape = StepShape {
            allow_final,
            todo_patch: self.config.protocol.has_plan_field(),
            cites: &cites,
            must_cite: confirmed.is_some(),
            made: &made,
            openable: &openable,
            repos: &self.config.repos,
            quotes: &quotes,
            verdict: !quotes.is_empty() && super::ground::asks_yes_or_no(&state.task),
            answer_chars: match self.model.descriptor().context_length {
                0 => None,
                window => Some(answer_room(
                    (window as u64).saturating_sub(prompt_tokens as u64),
                )),
            },
        };
        // The plan never takes two steps in a row: Qwen2.5-Coder-0.5B (tool-calls) rewrote
        // its plan at every step until the limit. After a plan step the next one acts or
        // answers.
        let planned_last = state
            .steps
            .last()
            .and_then(|s| s.action.as_ref())
            .is_some_and(|a| a.tool == meta::TODO_WRITE);
        let grammar_specs: Vec<ToolSpec> = specs
            .iter()
            .filter(|s| !(planned_last && s.name == meta::TODO_WRITE))
            .cloned()
            .collect();
        let request = self.step_request(prompt, &grammar_specs, shape, last)?;
        let started = Instant::now();
        let (output, usage, stop) = self.decode(state, &specs, request, cancel, on_event)?;
        let mut record = decoded(index, output, &usage, started);
        if stop == StopReason::Cancelled || cancel.is_cancelled() {
            return Ok(Next::cancelled());
        }
        if let Some(reason) = self
            .hooks
            .stop_reason(|h| h.after_model(&self.hook_context(state), &record.output))
        {
            return Ok(Next::stopped_by_hook(reason));
        }
        let Step {
            thought,
            decision,
            todo,
        } = match self.read(&record.output, stop) {
            Ok(step) => step,
            Err(message) => {
                record.error = Some(message.clone());
                return self.finish_step(state, record, None, Some(message), on_event);
            }
        };
        record.thought = thought;
        let mut notes: Vec<String> = Vec::new();
        if let Some(change) = todo {
            if let Err(e) = state.change_plan(&change, on_event) {
                notes.push(format!("The plan was not changed: {e}."));
            }
        }
        match decision {
            Decision::Finish {
                answer,
                status,
                citations,
            } => self.answer(
                state,
                record,
                notes,
                (answer, status, citations),
                allow_final,
                on_event,
            ),
            Decision::Act(action) => {
                self.call(state, record, notes, action, CallShape::default(), on_event)
            }
        }
    }

    /// The step's prompt, built, rendered and counted once (the engine decodes it as it was
    /// counted), with older steps summarized first when it passes the threshold.
    fn step_prompt(
        &self,
        state: &mut RunState,
        specs: &[ToolSpec],
        cancel: &CancelToken,
        on_event: &mut dyn FnMut(AgentEvent),
    ) -> Result<(Prompt, usize), AgentError> {
        let window = self.model.descriptor().context_length;
        let prepared = self.model.prepare(self.build_messages(state, specs)?)?;
        if window > 0
            && prepared.tokens as f64 > self.config.summarize_at * window as f64
            && self.summarize(state, specs, cancel, on_event)?
        {
            let again = self.model.prepare(self.build_messages(state, specs)?)?;
            return Ok((again.prompt, again.tokens));
        }
        Ok((prepared.prompt, prepared.tokens))
    }

    /// The generation request of a step: its sampling, limits, stop strings and grammar.
    fn step_request(
        &self,
        prompt: Prompt,
        specs: &[ToolSpec],
        shape: StepShape<'_>,
        final_only: bool,
    ) -> Result<GenerateRequest, AgentError> {
        let protocol = self.config.protocol;
        let request = GenerateRequest::new(prompt)
            .sampling(self.config.sampling.clone())
            .max_tokens(self.config.max_step_tokens)
            .stop(protocol.stop_strings().iter().copied());
        if !self.config.grammar {
            return Ok(request);
        }
        // `tool-calls` answers through the final_answer tool: it is left out instead.
        let grammar_specs: Vec<ToolSpec> = specs
            .iter()
            .filter(|s| {
                if final_only {
                    s.name == meta::FINAL_ANSWER
                } else {
                    shape.allow_final || s.name != meta::FINAL_ANSWER
                }
            })
            .cloned()
            .collect();
        Ok(request.grammar(step_grammar(protocol, &grammar_specs, shape)?))
    }

    /// Decodes the step, streaming its tokens and its thought. When the prompt did not fit,
    /// or the step ran into the end of the window, older steps are folded and the step is
    /// written once more.
    fn decode(
        &self,
        state: &mut RunState,
        specs: &[ToolSpec],
        mut request: GenerateRequest,
        cancel: &CancelToken,
        on_event: &mut dyn FnMut(AgentEvent),
    ) -> Result<(String, Usage, StopReason), AgentError> {
        let index = state.steps.len();
        let mut retried = false;
        loop {
            let mut thoughts = ThoughtStream::new(self.config.protocol);
            let mut on_token = |t: &str| {
                on_event(AgentEvent::Token {
                    index,
                    text: t.to_string(),
                });
                let delta = thoughts.push(t);
                if !delta.is_empty() {
                    on_event(AgentEvent::ThoughtDelta { index, text: delta });
                }
            };
            let result = self.generate(request.clone(), cancel, &mut on_token);
            // The output is all there: said, so the last of it is not held back while the
            // step's tool runs (`app::stream::Coalesce`).
            on_token("");
            let full = matches!(
                result,
                Err(AgentError::Model(LlmError::ContextFull { .. }))
                    | Ok((_, _, StopReason::ContextFull))
            );
            if full && !retried && self.summarize(state, specs, cancel, on_event)? {
                retried = true;
                request.prompt = self
                    .model
                    .prepare(self.build_messages(state, specs)?)?
                    .prompt;
                // The step starts over: what streamed of it so far is void.
                on_event(AgentEvent::StepStarted { index });
                continue;
            }
            return result.map_err(|e| match e {
                AgentError::Model(LlmError::ContextFull { needed, available }) => {
                    AgentError::ContextTooSmall { needed, available }
                }
                e => e,
            });
        }
    }

    /// Reads the step the model wrote. A step cut off by the token limit is not read, even
    /// where the tolerant parser could close its JSON: its last string (a final answer, say)
    /// would be cut short. The error is what the model is told.
    fn read(&self, output: &str, stop: StopReason) -> Result<Step, String> {
        let format = self.config.protocol.expected_format();
        match stop {
            StopReason::MaxTokens => Err(format!(
                "the step was cut off after {} tokens: write a shorter one. Write exactly one \
                 step in this format: {format}",
                self.config.max_step_tokens,
            )),
            StopReason::ContextFull => Err(format!(
                "the step was cut off: the context window is full. Write a short step, or \
                 give the final answer. Write exactly one step in this format: {format}"
            )),
            _ => self
                .config
                .protocol
                .parse(output)
                .map_err(|e| e.to_string()),
        }
    }

    /// One generation: text, usage and why it stopped; tokens streamed to `on_token`. The
    /// run's cancel token stops the generation, while the prompt is evaluated as well as
    /// between tokens: checked only as tokens came, a stop pressed during a long prompt's
    /// evaluation (seconds on a CPU) waited for it to end.
    pub(super) fn generate(
        &self,
        request: GenerateRequest,
        cancel: &CancelToken,
        on_token: &mut dyn FnMut(&str),
    ) -> Result<(String, Usage, StopReason), AgentError> {
        let generation = self.model.generate(request)?;
        let stop_generation = generation.cancel_token();
        let done = std::sync::atomic::AtomicBool::new(false);
        let c = std::thread::scope(|s| {
            let watcher = s.spawn(|| {
                while !done.load(std::sync::atomic::Ordering::SeqCst) {
                    if cancel.is_cancelled() {
                        stop_generation.cancel();
                        return;
                    }
                    std::thread::park_timeout(std::time::Duration::from_millis(20));
                }
            });
            let c = generation.wait(|t| {
                on_token(t);
                if cancel.is_cancelled() {
                    stop_generation.cancel();
                }
            });
            done.store(true, std::sync::atomic::Ordering::SeqCst);
            watcher.thread().unpark();
            c
        })?;
        Ok((c.text, c.usage, c.stop_reason))
    }
}

/// The record of a step as decoded: its tokens and timings, before it is read.
pub(super) fn decoded(index: usize, output: String, usage: &Usage, started: Instant) -> StepRecord {
    let model_ms = started.elapsed().as_secs_f64() * 1000.0;
    StepRecord {
        index,
        prompt_tokens: usage.prompt_tokens,
        cached_tokens: usage.cached_tokens,
        output,
        generated_tokens: usage.generated_tokens,
        setup_ms: usage.setup_ms,
        ttft_ms: usage.time_to_first_token_ms,
        decode_ms: (model_ms - usage.time_to_first_token_ms).max(0.0),
        unconstrained: usage.unconstrained,
        ..Default::default()
    }
}

/// What a final answer may cite: of the items the run saw, those the line it must quote
/// first names, when it names any; else all it saw. Free to cite the whole list a routed
/// call returned, Qwen2.5-Coder-0.5B cited five commits for "which commit last changed it".
fn quoted_or_seen(state: &RunState, lead: Option<&String>) -> Vec<String> {
    let seen = state.seen();
    let named: Vec<String> = lead
        .map(|line| crate::tools::locator::mentions(line))
        .map(|ms| {
            seen.iter()
                .filter(|item| ms.iter().any(|m| item.is_named_by(m)))
                .map(Locator::cite)
                .collect()
        })
        .unwrap_or_default();
    if named.is_empty() {
        seen.iter().map(Locator::cite).collect()
    } else {
        named
    }
}
