//! Running the call a step decided on: the loop guard (no failed call again, no call more than
//! `repeat_limit` times, a repeated result said once), the meta-tools over the run's state,
//! and registered tools with retries of transient failures.

use std::time::Instant;

use super::events::AgentEvent;
use super::meta::{self, MetaContext};
use super::protocol::Action;
use super::run::Agent;
use super::state::{call_key, CallMemo, RunState};
use crate::tools::{Locator, ToolError, ToolOutput, ToolSpec};

/// A call as it was run: the observation, the items it shows, the error when it failed, and
/// the tool's time.
pub(super) struct Acted {
    pub text: String,
    pub items: Vec<Locator>,
    /// The call opened one item (see `ToolOutput::opened`).
    pub opened: bool,
    pub error: Option<String>,
    /// The result was the same as the last time, still in the prompt: the text points to it.
    pub repeated: bool,
    /// The loop guard will refuse this call from now on (it failed for good).
    pub failed_for_good: bool,
    pub tool_ms: f64,
}

/// What a call's observation shows.
struct Shown {
    text: String,
    items: Vec<Locator>,
    opened: bool,
    repeated: bool,
}

impl Agent<'_> {
    /// The tools the model sees: the active ones, and the meta-tools the protocol needs.
    pub(super) fn visible_specs(&self, state: &RunState) -> Vec<ToolSpec> {
        let active = &state.active;
        let mut specs: Vec<ToolSpec> = active.iter().filter_map(|n| self.tools.spec(n)).collect();
        if state.toolbelt {
            specs.extend(meta::toolbelt_specs(&self.tools.names(), active));
        }
        if !self.config.protocol.has_plan_field() {
            specs.push(meta::todo_write_spec());
        }
        if self.config.protocol.answers_with_tool() {
            specs.push(meta::final_answer_spec());
        }
        specs
    }

    /// Runs a call through the loop guard: a meta-tool, or a registered tool with retries.
    /// `cap`: a shorter bound on the observation than the model's own calls get.
    pub(super) fn act(
        &self,
        state: &mut RunState,
        action: &Action,
        cap: Option<usize>,
        on_event: &mut dyn FnMut(AgentEvent),
    ) -> Acted {
        let started = Instant::now();
        let key = call_key(&action.tool, &action.args);
        let failed_before = state.failed.contains_key(&key);
        let (shown, error) = match self.guarded(state, action, cap, on_event) {
            Ok(shown) => (shown, None),
            Err((text, error)) => (
                Shown {
                    text,
                    items: Vec::new(),
                    opened: false,
                    repeated: false,
                },
                Some(error),
            ),
        };
        Acted {
            text: shown.text,
            items: shown.items,
            opened: shown.opened,
            error,
            repeated: shown.repeated,
            failed_for_good: !failed_before && state.failed.contains_key(&key),
            tool_ms: started.elapsed().as_secs_f64() * 1000.0,
        }
    }

    /// The observation and the items it shows, or the observation and the error.
    fn guarded(
        &self,
        state: &mut RunState,
        action: &Action,
        cap_to: Option<usize>,
        on_event: &mut dyn FnMut(AgentEvent),
    ) -> Result<Shown, (String, String)> {
        let key = call_key(&action.tool, &action.args);
        // The loop guard: no call is repeated after it failed, nor more than `repeat_limit`
        // times; the model is told what it already learned instead.
        if let Some(error) = state.failed.get(&key) {
            let text = format!(
                "You already called {} with these arguments and it failed: {error}. Do not \
                 repeat it: change the arguments or try another tool.",
                action.tool
            );
            return Err((text, "repeated a failed call".into()));
        }
        if let Some(memo) = state.calls.get(&key) {
            if memo.count >= self.config.repeat_limit {
                let n = memo.count;
                // The result is quoted only when a summary took it out of the prompt: every
                // token quoted again is evaluated again.
                let learned = if state.shows_step(memo.step) {
                    "What it returned is above.".to_string()
                } else {
                    let quoted: String = memo.result.chars().take(600).collect();
                    format!("What it returned: {quoted}")
                };
                let text = format!(
                    "You are repeating yourself: {} was called with these arguments {n} times \
                     already. {learned}\nUse that, or do something else.",
                    action.tool
                );
                return Err((text, "repeated call".into()));
            }
        }
        match self.call_tool(state, action, on_event) {
            Ok((text, items, opened)) => {
                let limit = self.observation_chars();
                let limit = cap_to.map_or(limit, |c| c.min(limit));
                // Issue and pull request bodies come with Windows line ends: a model reads
                // lines, and with the CRs Qwen2.5-Coder-1.5B judged an issue it accepted
                // without them (issue 22) not to answer the question.
                let whole = text.replace("\r\n", "\n");
                let text = cap(&whole, limit);
                // What the cut left out was never seen: an item mentioned only there is not
                // one the answer may cite (the grammar offered it, and the check let it pass).
                let items = if text.len() < whole.len() {
                    items.into_iter().filter(|l| mentioned(&text, l)).collect()
                } else {
                    items
                };
                let step = state.steps.len();
                let shown = state
                    .calls
                    .get(&key)
                    .is_some_and(|m| m.result == text && state.shows_step(m.step));
                let memo = state.calls.entry(key).or_insert(CallMemo {
                    count: 0,
                    result: String::new(),
                    step,
                });
                memo.count += 1;
                // The same result, still in the prompt: said once is enough.
                if shown {
                    let same = format!(
                        "The same result as the last time {} was called with these \
                         arguments (above).",
                        action.tool
                    );
                    return Ok(Shown {
                        text: same,
                        items: Vec::new(),
                        opened: false,
                        repeated: true,
                    });
                }
                memo.result = text.clone();
                memo.step = step;
                Ok(Shown {
                    text,
                    items,
                    opened,
                    repeated: false,
                })
            }
            Err(e) => {
                let message = e.to_string();
                if !e.is_retryable() {
                    state.failed.insert(key, message.clone());
                }
                Err((format!("Error: {message}"), message))
            }
        }
    }

    fn call_tool(
        &self,
        state: &mut RunState,
        action: &Action,
        on_event: &mut dyn FnMut(AgentEvent),
    ) -> Result<(String, Vec<Locator>, bool), ToolError> {
        let plan_tool = !self.config.protocol.has_plan_field();
        let mut cx = MetaContext {
            state,
            tools: self.tools,
            on_event,
        };
        if let Some(result) = meta::call(&action.tool, &action.args, plan_tool, &mut cx) {
            return result.map(|text| (text, Vec::new(), false));
        }
        let name = action.tool.as_str();
        if !state.active.iter().any(|n| n == name) {
            let visible: Vec<String> = self
                .visible_specs(state)
                .into_iter()
                .map(|s| s.name)
                .collect();
            let hint = if state.toolbelt && self.tools.spec(name).is_some() {
                format!(" (add it first with {})", meta::TOOLBELT_ADD)
            } else {
                String::new()
            };
            return Err(ToolError::NotFound(format!(
                "no tool named {name:?} is available{hint}; the tools are: {}",
                visible.join(", ")
            )));
        }
        let args = serde_json::Value::Object(action.args.clone());
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.tools.call(name, args.clone()) {
                Ok(ToolOutput {
                    text,
                    items,
                    opened,
                    ..
                }) => return Ok((text, items, opened)),
                Err(e) if e.is_retryable() && attempt < self.config.tool_attempts => {
                    self.clock
                        .sleep(self.config.retry_base * 2u32.pow(attempt - 1));
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The characters an observation may take (see `AgentConfig::max_observation_chars`).
    fn observation_chars(&self) -> usize {
        let window = self.model.descriptor().context_length;
        if window == 0 {
            return self.config.max_observation_chars;
        }
        self.config.max_observation_chars.min(window / 2)
    }
}

/// At most `max` characters, with a note saying how much was cut.
/// Whether `text` names item `l` as the tools write it: `#12`, a path, a hash's first seven
/// characters.
fn mentioned(text: &str, l: &Locator) -> bool {
    match l {
        Locator::Issue { number, .. } | Locator::PullRequest { number, .. } => {
            let tag = format!("#{number}");
            text.match_indices(&tag).any(|(at, _)| {
                !text[at + tag.len()..]
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_digit())
            })
        }
        Locator::File { path, .. } => text.contains(path.as_str()),
        Locator::Commit { hash, .. } => {
            let short: String = hash.chars().take(7).collect();
            text.contains(&short)
        }
    }
}

fn cap(text: &str, max: usize) -> String {
    let total = text.chars().count();
    if total <= max {
        return text.to_string();
    }
    let kept: String = text.chars().take(max).collect();
    format!("{kept}\n{}", crate::notes::cut_chars(max, total))
}
